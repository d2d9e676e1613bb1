package acp

import (
	"fmt"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/lanehq/lane/internal/record"
)

// A Tally keeps the accounting of one ACP run from its events: usage,
// turns, tool calls, the result lane made at the end of the last prompt,
// and from them lane's verdict (Judge). Feed it every event in order with
// Observe. It is not safe for concurrent use.
type Tally struct {
	// Model is what usage the agent did not name a model for is priced as.
	Model string

	session  string
	usage    record.Usage
	models   map[string]record.Usage
	result   *record.Result
	lastText string
	errKind  record.ErrorKind // the agent's last error
	errText  string
	calls    map[string]bool
	turns    int
	inTurn   bool
}

// Observe takes the next event of the run.
func (t *Tally) Observe(ev record.Event) {
	switch ev.Kind {
	case record.KindSession:
		if ev.SessionID != "" {
			t.session = ev.SessionID
		}
	case record.KindDelta, record.KindText, record.KindThinking:
		t.startTurn()
		if ev.Kind == record.KindText {
			t.lastText = ev.Text
		}
	case record.KindToolCall:
		t.startTurn()
		if t.calls == nil {
			t.calls = map[string]bool{}
		}
		t.calls[ev.ToolUseID] = true
	case record.KindToolResult:
		t.inTurn = false
	case record.KindUsage:
		if ev.Usage == nil {
			break
		}
		t.usage = t.usage.Add(*ev.Usage)
		if t.models == nil {
			t.models = map[string]record.Usage{}
		}
		t.models[ev.Model] = t.models[ev.Model].Add(*ev.Usage)
	case record.KindError:
		if ev.Line > 0 { // the agent's, not lane's
			t.errKind, t.errText = ev.ErrorKind, ev.Text
		}
	case record.KindResult:
		t.result = ev.Result
	case record.KindUserMessage:
		t.inTurn = false
	}
}

func (t *Tally) startTurn() {
	if !t.inTurn {
		t.inTurn = true
		t.turns++
	}
}

// SessionID is the session's id.
func (t *Tally) SessionID() string { return t.session }

// Usage is the run's token usage: every response's or every prompt's, as
// the agent reports them (opencode reports only each prompt's last model
// response, so its usage falls short when a prompt took several).
func (t *Tally) Usage() record.Usage { return t.usage }

// Turns is the number of the model's turns: each run of its output up to
// a tool result or a message counts once.
func (t *Tally) Turns() int { return t.turns }

// ToolCalls is the number of distinct tool calls.
func (t *Tally) ToolCalls() int { return len(t.calls) }

// ResultText is the agent's last message.
func (t *Tally) ResultText() string {
	if t.result != nil && t.result.Text != "" {
		return t.result.Text
	}
	return t.lastText
}

// Cost is the session's cost as the agent reported it (opencode, when its
// models have prices), else an estimate: each model's tokens priced by
// price, usage of a model price does not know priced as t.Model.
func (t *Tally) Cost(price func(model string, u record.Usage) (float64, bool)) (usd float64, estimate bool) {
	if r := t.result; r != nil && r.TotalCostUSD != nil && *r.TotalCostUSD > 0 {
		return *r.TotalCostUSD, false
	}
	if price == nil {
		return 0, !t.usage.IsZero()
	}
	for model, u := range t.models {
		if u.IsZero() {
			continue
		}
		estimate = true
		c, ok := price(model, u)
		if !ok && model != t.Model {
			c, ok = price(t.Model, u)
		}
		if ok {
			usd += c
		}
	}
	return usd, estimate
}

// Hints, kept together so that their wording stays consistent.
const (
	hintAuth     = "the model API refused the credentials: check the key the runtime was given"
	hintAPI      = "the model API failed: check that it is reachable, or retry later"
	hintCrash    = "see the runtime's stderr"
	hintMaxTurns = "the agent hit its own limit of model requests for one prompt: raise it in its settings, or split the task"
)

// Judge decides how the run ended. A run succeeds when its last prompt
// ended its turn (end_turn) and the agent then exited 0; a prompt that
// failed is the failure of its error (auth, API, the agent's); a turn a
// person interrupted, with no message after it, is cancelled. Timeouts
// and stops by lane are not decided here.
func (t *Tally) Judge(exitCode int) record.Verdict {
	r := t.result
	if r == nil {
		v := record.Verdict{Status: record.StatusFailed, ErrorKind: record.ErrorCrash, Hint: hintCrash,
			Message: fmt.Sprintf("the runtime exited (code %d) before its turn ended", exitCode)}
		if t.errKind != "" {
			v.ErrorKind, v.Message, v.Hint = t.errKind, t.errText, hintFor(t.errKind)
		}
		return v
	}
	if r.IsError {
		kind, msg := t.errKind, ""
		if len(r.Errors) > 0 {
			msg = r.Errors[0]
		}
		if kind == "" {
			kind = classify(msg, r.APIErrorStatus)
		}
		if r.APIErrorStatus != 0 && !containsStatus(msg, r.APIErrorStatus) {
			msg = fmt.Sprintf("HTTP %d: %s", r.APIErrorStatus, msg)
		}
		return record.Verdict{Status: record.StatusFailed, ErrorKind: kind, Message: msg, Hint: hintFor(kind)}
	}
	switch sdk.StopReason(r.StopReason) {
	case sdk.StopReasonCancelled:
		return record.Verdict{Status: record.StatusCancelled, ErrorKind: record.ErrorCancelled,
			Message: "the turn was interrupted and no message followed"}
	case sdk.StopReasonMaxTurnRequests:
		return record.Verdict{Status: record.StatusFailed, ErrorKind: record.ErrorTurnLimit, Hint: hintMaxTurns,
			Message: "the agent stopped at its limit of model requests (stop reason max_turn_requests)"}
	case sdk.StopReasonMaxTokens:
		return record.Verdict{Status: record.StatusFailed, ErrorKind: record.ErrorAgent,
			Message: "the model's answer hit its token limit (stop reason max_tokens)"}
	case sdk.StopReasonRefusal:
		return record.Verdict{Status: record.StatusFailed, ErrorKind: record.ErrorAgent,
			Message: "the model refused to go on (stop reason refusal)"}
	}
	if exitCode != 0 {
		return record.Verdict{Status: record.StatusFailed, ErrorKind: record.ErrorCrash, Hint: hintCrash,
			Contradiction: fmt.Sprintf("stop reason %s but exit code %d", r.StopReason, exitCode),
			Message:       fmt.Sprintf("the runtime ended its turn, then exited with code %d", exitCode)}
	}
	return record.Verdict{Status: record.StatusSucceeded}
}

func hintFor(kind record.ErrorKind) string {
	switch kind {
	case record.ErrorAuth:
		return hintAuth
	case record.ErrorAPI:
		return hintAPI
	}
	return ""
}

func containsStatus(msg string, status int) bool {
	return statusInText.FindString(msg) == fmt.Sprint(status)
}
