package streamjson

import (
	"fmt"
	"strings"

	"github.com/lanehq/lane/internal/record"
)

// A Tally keeps Claude Code's accounting of one run from its events: usage,
// cost, turns, tool calls, and the last result, from which Judge decides how
// the run ended. Feed it every event in order with Observe. The zero value is
// ready to use; it is not safe for concurrent use.
type Tally struct {
	results   int
	resUsage  record.Usage // sum of the results' usage
	resTurns  int          // sum of the results' num_turns
	runCost   float64      // sum of the results' RunCostUSD
	haveRun   bool         // a result had RunCostUSD
	lastTotal *float64     // the last result's TotalCostUSD that was set, since the last conversation_reset
	// closedTotals are the session totals at each conversation_reset:
	// Claude Code's totals start again from 0 after one.
	closedTotals []float64
	last         *record.Result

	sessionID string
	model     string // the session's model, for messages that name none

	msgs      map[string]*message // by message id
	msgOrder  []string            // ids in first-seen order, for stable sums
	mainMsgs  int                 // distinct main-agent message ids
	toolCalls map[string]bool     // tool_use ids seen
	anonCalls int                 // tool calls without an id

	retries  int               // api_retry events
	apiError record.ErrorKind  // kind of the last synthetic API error message
	limit    *record.RateLimit // the last rate_limit_event
}

type message struct {
	usage  record.Usage // field-wise max over the lines of the message
	model  string
	parent string // ParentToolUseID: the subagent's Agent/Task call
	priced bool   // usage was reported
}

// Observe takes the next event of the run.
func (t *Tally) Observe(ev record.Event) {
	switch ev.Kind {
	case record.KindSession:
		if ev.SessionID != "" {
			t.sessionID = ev.SessionID
		}
		if ev.Model != "" {
			t.model = ev.Model
		}
	case record.KindResult:
		if ev.SessionID != "" {
			t.sessionID = ev.SessionID
		}
		if r := ev.Result; r != nil {
			t.results++
			t.resUsage = t.resUsage.Add(r.Usage)
			t.resTurns += r.NumTurns
			if r.RunCostUSD != nil {
				t.runCost += *r.RunCostUSD
				t.haveRun = true
			}
			if r.TotalCostUSD != nil {
				v := *r.TotalCostUSD
				t.lastTotal = &v
			}
			t.last = r
		}
	case record.KindToolCall:
		if ev.ToolUseID == "" {
			t.anonCalls++
		} else {
			if t.toolCalls == nil {
				t.toolCalls = make(map[string]bool)
			}
			t.toolCalls[ev.ToolUseID] = true
		}
	case record.KindRetry:
		t.retries++
	case record.KindRaw:
		if ev.Subtype == "conversation_reset" {
			t.closedTotals = append(t.closedTotals, ptrOr(t.lastTotal))
			t.lastTotal = nil
		}
	case record.KindRateLimit:
		t.limit = ev.RateLimit
	case record.KindError:
		if ev.MessageID != "" && ev.ErrorKind != "" {
			t.apiError = ev.ErrorKind
		}
	}
	switch ev.Kind {
	case record.KindText, record.KindThinking, record.KindToolCall, record.KindUsage, record.KindError:
		if ev.MessageID != "" {
			t.observeMessage(ev)
		}
	}
}

func (t *Tally) observeMessage(ev record.Event) {
	m := t.msgs[ev.MessageID]
	if m == nil {
		if t.msgs == nil {
			t.msgs = make(map[string]*message)
		}
		m = &message{parent: ev.ParentToolUseID}
		t.msgs[ev.MessageID] = m
		t.msgOrder = append(t.msgOrder, ev.MessageID)
		if m.parent == "" {
			t.mainMsgs++
		}
	}
	if ev.Kind != record.KindUsage || ev.Usage == nil {
		return
	}
	if ev.Model != "" {
		m.model = ev.Model
	}
	u := *ev.Usage
	m.usage = record.Usage{
		InputTokens:           max(m.usage.InputTokens, u.InputTokens),
		OutputTokens:          max(m.usage.OutputTokens, u.OutputTokens),
		CacheReadTokens:       max(m.usage.CacheReadTokens, u.CacheReadTokens),
		CacheCreationTokens:   max(m.usage.CacheCreationTokens, u.CacheCreationTokens),
		CacheCreation1hTokens: max(m.usage.CacheCreation1hTokens, u.CacheCreation1hTokens),
	}
	m.priced = true
}

// Usage is the run's token usage: the sum of the results' usage when there was
// a result, else the sum of the assistant messages' usage, each message counted
// once however many lines repeated it.
//
// Claude Code's result usage covers the main agent only; subagents' tokens are
// in SubagentUsage.
func (t *Tally) Usage() record.Usage {
	if t.results > 0 {
		return t.resUsage
	}
	var u record.Usage
	for _, id := range t.msgOrder {
		u = u.Add(t.msgs[id].usage)
	}
	return u
}

// SubagentUsage is the usage of subagents' messages, keyed by the tool call
// (ParentToolUseID) that started each subagent, each message counted once. It
// is nil when no subagent reported usage.
func (t *Tally) SubagentUsage() map[string]record.Usage {
	var out map[string]record.Usage
	for _, id := range t.msgOrder {
		m := t.msgs[id]
		if m.parent == "" || !m.priced {
			continue
		}
		if out == nil {
			out = make(map[string]record.Usage)
		}
		out[m.parent] = out[m.parent].Add(m.usage)
	}
	return out
}

// SessionID is the latest session id seen on an init or a result line; they
// differ after --resume of a session that Claude Code forks.
func (t *Tally) SessionID() string { return t.sessionID }

// Turns is the number of turns: the sum of the results' num_turns when there
// was a result (a run that resumes after a background task prints one result
// per part), else the number of distinct main-agent assistant messages.
func (t *Tally) Turns() int {
	if t.results > 0 {
		return t.resTurns
	}
	return t.mainMsgs
}

// ToolCalls is the number of distinct tool calls, subagents' included.
func (t *Tally) ToolCalls() int { return len(t.toolCalls) + t.anonCalls }

// LastResult is the last result seen, or nil.
func (t *Tally) LastResult() *record.Result { return t.last }

// Results is the number of result lines seen.
func (t *Tally) Results() int { return t.results }

// Cost is what the run cost in USD. When Claude Code said what this invocation
// cost (model_usage_since_last_result) that is the answer; else when it gave
// its session total, that total less priorSessionCostUSD (the total at the end
// of the run this one resumed); else an estimate from the messages' usage
// priced by price, with estimate set. sessionTotal is the last session total
// Claude Code reported, 0 if none, to be passed as priorSessionCostUSD to a run
// that resumes this one.
func (t *Tally) Cost(priorSessionCostUSD float64, price func(model string, u record.Usage) (float64, bool)) (usd float64, estimate bool, sessionTotal float64) {
	if t.lastTotal != nil {
		sessionTotal = *t.lastTotal
	}
	switch {
	case t.haveRun:
		return t.runCost, false, sessionTotal
	case t.lastTotal != nil || len(t.closedTotals) > 0:
		// Each conversation's total counts from where it began: the
		// first from the session total this run resumed, the others
		// from 0 (a conversation_reset starts the totals again).
		prior := priorSessionCostUSD
		for _, total := range append(t.closedTotals, ptrOr(t.lastTotal)) {
			usd += max(0, total-prior)
			prior = 0
		}
		return usd, false, sessionTotal
	}
	for _, id := range t.msgOrder {
		m := t.msgs[id]
		if !m.priced {
			continue
		}
		estimate = true
		model := m.model
		if model == "" {
			model = t.model
		}
		if price != nil {
			if c, ok := price(model, m.usage); ok {
				usd += c
			}
		}
	}
	return usd, estimate, sessionTotal
}

func ptrOr(v *float64) float64 {
	if v == nil {
		return 0
	}
	return *v
}

// Hints, kept together so that their wording stays consistent.
const (
	// AuthHint is what to check when the model API refuses Claude Code's
	// credentials (runner's hint for such a run too).
	AuthHint     = "check ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN / ANTHROPIC_BASE_URL), or log in with `claude /login`"
	hintRate     = "the API is rate-limiting these credentials: wait, run fewer agents at once, or raise the limits"
	hintServer   = "the model API is failing or overloaded: retry later"
	hintTimeout  = "the model API did not answer in time: check the network and ANTHROPIC_BASE_URL, or raise API_TIMEOUT_MS"
	hintMaxTurns = "raise --max-turns"
	hintNoConv   = "that session id is not in Claude Code's history for this folder: resume from the folder the session was started in, or start a new session"
	hintCrash    = "see the runtime's stderr"
	hintFields   = "Claude Code's status fields disagree; see the run's events"
)

// Judge decides how the run ended from all the fields of the last result
// together with the runtime's exit code, because Claude Code's own fields
// disagree at times (subtype success with is_error true, for one). A run
// succeeds only when the last result says subtype success, is_error false,
// terminal_reason completed (or none) and at least one turn, and the exit code
// is 0. Timeouts and cancellation are not decided here.
func (t *Tally) Judge(exitCode int) record.Verdict {
	r := t.last
	if r == nil {
		return record.Verdict{
			Status:    record.StatusFailed,
			ErrorKind: record.ErrorCrash,
			Message:   fmt.Sprintf("the runtime exited (code %d) without a result line", exitCode),
			Hint:      hintCrash,
		}
	}

	// Each field either claims success or claims failure.
	var ok, bad []string
	claim := func(good bool, s string) {
		if good {
			ok = append(ok, s)
		} else {
			bad = append(bad, s)
		}
	}
	if r.Subtype == "" {
		bad = append(bad, "no subtype")
	} else {
		claim(r.Subtype == "success", "subtype="+r.Subtype)
	}
	claim(!r.IsError, fmt.Sprintf("is_error=%t", r.IsError))
	if r.TerminalReason != "" {
		claim(r.TerminalReason == "completed", "terminal_reason="+r.TerminalReason)
	}
	if r.NumTurns <= 0 {
		bad = append(bad, fmt.Sprintf("num_turns=%d", r.NumTurns))
	}
	if r.APIErrorStatus != 0 {
		bad = append(bad, fmt.Sprintf("api_error_status=%d", r.APIErrorStatus))
	}
	if len(r.Errors) > 0 {
		bad = append(bad, "errors present")
	}
	claim(exitCode == 0, fmt.Sprintf("exit code %d", exitCode))

	if len(bad) == 0 {
		return record.Verdict{Status: record.StatusSucceeded}
	}
	if t.limit.Refused() && (r.APIErrorStatus == 429 || r.TerminalReason == "api_error") {
		// Not a contradiction: Claude Code calls the refusal a success
		// that is an error, and the rate_limit_event says why.
		return record.RateLimitedVerdict(t.limit)
	}
	v := record.Verdict{Status: record.StatusFailed}
	if len(ok) > 0 && len(bad) > 0 {
		v.Contradiction = strings.Join(ok, ", ") + " but " + strings.Join(bad, ", ")
	}
	v.ErrorKind, v.Hint = t.failureKind(r, exitCode)
	v.Message = failureMessage(r, v.ErrorKind, exitCode)
	if v.ErrorKind == record.ErrorAPI && t.retries > 0 {
		v.Hint += fmt.Sprintf(" (Claude Code retried %d times)", t.retries)
	}
	return v
}

func (t *Tally) failureKind(r *record.Result, exitCode int) (record.ErrorKind, string) {
	s := r.APIErrorStatus
	apiErr := r.TerminalReason == "api_error"
	switch {
	case s == 401 || s == 403 || (apiErr && s == 0 && t.apiError == record.ErrorAuth):
		return record.ErrorAuth, AuthHint
	case s == 429:
		return record.ErrorAPI, hintRate
	case s >= 500:
		return record.ErrorAPI, hintServer
	case apiErr && s == 0:
		return record.ErrorAPI, hintTimeout
	case r.Subtype == "error_max_turns" || r.TerminalReason == "max_turns":
		return record.ErrorTurnLimit, hintMaxTurns
	case noConversation(r):
		return record.ErrorAgent, hintNoConv
	case r.IsError || s != 0 || len(r.Errors) > 0 || (r.Subtype != "success" && r.Subtype != ""):
		return record.ErrorAgent, ""
	case r.Subtype == "success" && exitCode != 0 && r.NumTurns > 0 &&
		(r.TerminalReason == "" || r.TerminalReason == "completed"):
		// The result was a plain success, then the process failed.
		return record.ErrorCrash, hintCrash
	}
	return record.ErrorContradiction, hintFields
}

func noConversation(r *record.Result) bool {
	for _, e := range r.Errors {
		if strings.Contains(e, "No conversation found") {
			return true
		}
	}
	return false
}

func failureMessage(r *record.Result, kind record.ErrorKind, exitCode int) string {
	switch {
	case len(r.Errors) > 0:
		return strings.Join(r.Errors, "; ")
	case r.Text != "":
		return r.Text
	}
	switch kind {
	case record.ErrorTurnLimit:
		return "the runtime reached its maximum number of turns"
	case record.ErrorCrash:
		return fmt.Sprintf("the runtime reported success, then exited with code %d", exitCode)
	case record.ErrorContradiction:
		if r.NumTurns <= 0 {
			return "the runtime reported success without taking a turn"
		}
		return "the runtime's result contradicts itself"
	}
	if r.APIErrorStatus != 0 {
		return fmt.Sprintf("the model API answered HTTP %d", r.APIErrorStatus)
	}
	return fmt.Sprintf("the runtime reported an error (subtype %s)", r.Subtype)
}
