package qwen

import (
	"fmt"
	"strings"

	"github.com/lanehq/lane/internal/record"
	"github.com/lanehq/lane/internal/runtimes/claude/streamjson"
)

// A Tally keeps lane's accounting of one Qwen Code run from its events: usage,
// cost, turns, tool calls, the result, and a verdict on how it ended. Feed it
// every event in order with Observe. The zero value is ready to use; it is not
// safe for concurrent use.
type Tally struct {
	all  streamjson.Tally // every event: session, results, tool calls, cost
	msgs streamjson.Tally // every event but results: usage per message, once

	results   int
	reported  bool            // a result carried a cost of Qwen Code's own
	priced    map[string]bool // main-agent messages that reported usage
	outputs   map[string]bool // main-agent messages with model output
	apiErr    string          // the last main-agent API error's text, "" after a recovery
	apiStatus int             // its HTTP status, 0 when none
	apiKind   record.ErrorKind
}

// Observe takes the next event of the run.
func (t *Tally) Observe(ev record.Event) {
	t.all.Observe(ev)
	if ev.Kind != record.KindResult {
		t.msgs.Observe(ev)
	}
	main := ev.ParentToolUseID == ""
	switch ev.Kind {
	case record.KindResult:
		t.results++
		if r := ev.Result; r != nil {
			if r.TotalCostUSD != nil || r.RunCostUSD != nil {
				t.reported = true
			}
			if status, ok := APIErrorStatus(r.Text); ok && t.apiErr == "" {
				t.setAPIError(r.Text, status, "")
			}
		}
	case record.KindError:
		if main && ev.Subtype == "api_error" {
			status, _ := APIErrorStatus(ev.Text)
			t.setAPIError(ev.Text, status, ev.ErrorKind)
		}
	case record.KindText, record.KindThinking, record.KindToolCall, record.KindUsage:
		if !main || ev.MessageID == "" {
			break
		}
		t.apiErr = "" // the model answered after the error
		if t.outputs == nil {
			t.outputs, t.priced = make(map[string]bool), make(map[string]bool)
		}
		t.outputs[ev.MessageID] = true
		if ev.Kind == record.KindUsage && ev.Usage != nil && !ev.Usage.IsZero() {
			t.priced[ev.MessageID] = true
		}
	}
}

func (t *Tally) setAPIError(text string, status int, kind record.ErrorKind) {
	if kind == "" {
		kind = record.ErrorAPI
		if status == 401 || status == 403 {
			kind = record.ErrorAuth
		}
	}
	t.apiErr, t.apiStatus, t.apiKind = text, status, kind
}

// Usage is the run's token usage: the sum of its assistant messages' usage,
// each message counted once.
//
// The result line's usage is not used: it is Qwen Code's session telemetry,
// which counts requests that print nothing (the memory-extraction request)
// and, after --resume, the earlier runs of the session as well (a resumed run
// with one 100-token turn reports 400). Subagents' messages report zero
// usage, so their tokens are missing here; ReportedUsage has Qwen Code's
// figure.
func (t *Tally) Usage() record.Usage { return t.msgs.Usage() }

// ReportedUsage is the usage of the last result line, Qwen Code's own figure
// for the whole session so far, and whether there was one.
func (t *Tally) ReportedUsage() (record.Usage, bool) {
	if r := t.all.LastResult(); r != nil {
		return r.Usage, true
	}
	return record.Usage{}, false
}

// SessionID is the session id of the init or result line, the same one
// after --resume.
func (t *Tally) SessionID() string { return t.all.SessionID() }

// Turns is the number of the main agent's turns: the result's num_turns
// when there was a result, else the number of main-agent assistant messages
// that reported usage (Qwen Code splits the text before a tool call into a
// message of its own, without usage), or with output when none did.
func (t *Tally) Turns() int {
	if t.results > 0 {
		return t.all.Turns()
	}
	if n := len(t.priced); n > 0 {
		return n
	}
	return len(t.outputs)
}

// ToolCalls is the number of distinct tool calls, subagents' included.
func (t *Tally) ToolCalls() int { return t.all.ToolCalls() }

// ResultText is the last result's text, "" without a result.
func (t *Tally) ResultText() string {
	if r := t.all.LastResult(); r != nil {
		return r.Text
	}
	return ""
}

// LastResult is the last result seen, or nil.
func (t *Tally) LastResult() *record.Result { return t.all.LastResult() }

// Cost is what the run cost in USD. Qwen Code 0.15.10 reports no cost, so it
// is the messages' usage priced by price (per message, with the message's
// model or else the session's), with estimate set; should a result carry a
// cost of its own, that is the answer.
func (t *Tally) Cost(price func(model string, u record.Usage) (float64, bool)) (usd float64, estimate bool) {
	if t.reported {
		usd, _, _ = t.all.Cost(0, price)
		return usd, false
	}
	usd, _, _ = t.msgs.Cost(0, price)
	return usd, true
}

// Hints, kept together so that their wording stays consistent.
const (
	hintAuth     = "check OPENAI_API_KEY (and OPENAI_BASE_URL, OPENAI_MODEL) and that qwen runs with --auth-type openai"
	hintRate     = "the API is rate-limiting these credentials (Qwen Code retries HTTP 429 without end): wait, run fewer agents at once, or raise the limits"
	hintServer   = "the model API kept failing after Qwen Code's retries: retry later, or check OPENAI_BASE_URL"
	hintTimeout  = "the model API did not answer in time: check the network and OPENAI_BASE_URL, or raise contentGenerator.timeout in Qwen Code's settings"
	hintAPI      = "the model API call failed: check OPENAI_BASE_URL and OPENAI_MODEL"
	hintMaxTurns = "raise --max-session-turns"
	hintCrash    = "see the runtime's stderr"
	hintSilent   = "Qwen Code printed nothing after starting: it retries a failing model API in silence (HTTP 429 without end) and waits minutes on a stalled one; check OPENAI_BASE_URL and the API's limits, and see its stderr"
	hintFields   = "Qwen Code's status fields disagree; see the run's events"
)

// Exit codes of Qwen Code (inherited from Gemini CLI) that lane recognizes.
const (
	exitAuth     = 41 // FatalAuthenticationError
	exitMaxTurns = 53 // FatalTurnLimitedError: --max-session-turns reached
)

// Judge decides how the run ended. It is lane's judgement, not Qwen Code's:
// a failed API call ends the run with a result of subtype success, is_error
// false and exit code 0 whose text is "[API Error: …]", which Judge calls a
// failure (auth for 401/403, else api). Without a result, exit code 53 is the
// turn limit and 41 an authentication failure; otherwise it judges as
// streamjson.Tally.Judge does, with Qwen Code's hints. Timeouts and
// cancellation are not decided here.
func (t *Tally) Judge(exitCode int) record.Verdict {
	r := t.all.LastResult()
	if t.apiErr != "" {
		v := record.Verdict{
			Status:    record.StatusFailed,
			ErrorKind: t.apiKind,
			Message:   apiErrorMessage(t.apiErr),
			Hint:      t.apiHint(),
		}
		if r != nil && r.Subtype == "success" && !r.IsError {
			v.Contradiction = fmt.Sprintf("subtype=success, is_error=false, exit code %d but the result is an API error", exitCode)
		}
		return v
	}
	if r == nil {
		v := record.Verdict{
			Status:    record.StatusFailed,
			ErrorKind: record.ErrorCrash,
			Message:   fmt.Sprintf("the runtime exited (code %d) without a result line", exitCode),
			Hint:      hintCrash,
		}
		switch {
		case exitCode == exitMaxTurns:
			v.ErrorKind, v.Hint = record.ErrorTurnLimit, hintMaxTurns
			v.Message = "the runtime reached its maximum number of turns (--max-session-turns)"
		case exitCode == exitAuth:
			v.ErrorKind, v.Hint = record.ErrorAuth, hintAuth
			v.Message = fmt.Sprintf("the runtime could not authenticate (exit code %d)", exitCode)
		case len(t.outputs) == 0 && t.ToolCalls() == 0:
			v.Hint = hintSilent
		}
		return v
	}
	v := t.all.Judge(exitCode)
	switch v.ErrorKind {
	case record.ErrorAuth:
		v.Hint = hintAuth
	case record.ErrorTurnLimit:
		v.Hint = hintMaxTurns
	case record.ErrorContradiction:
		v.Hint = hintFields
	case record.ErrorAPI:
		v.Hint = t.apiHint()
	}
	return v
}

func (t *Tally) apiHint() string {
	s := t.apiStatus
	switch {
	case s == 401 || s == 403 || t.apiKind == record.ErrorAuth:
		return hintAuth
	case s == 429:
		return hintRate
	case s >= 500:
		return hintServer
	case strings.Contains(strings.ToLower(t.apiErr), "timeout"):
		return hintTimeout
	}
	return hintAPI
}

// apiErrorMessage is the first line of an "[API Error: …]" text, without its
// brackets: "API Error: 401 invalid x-api-key".
func apiErrorMessage(text string) string {
	msg, _, _ := strings.Cut(text, "\n")
	msg = strings.TrimPrefix(msg, "[")
	msg = strings.TrimSuffix(msg, "]")
	return strings.TrimSpace(msg)
}

// AuthHint is what to check when the model API refuses Qwen Code's key.
const AuthHint = "the model API refused the key: check OPENAI_API_KEY (or `qwen auth`)"
