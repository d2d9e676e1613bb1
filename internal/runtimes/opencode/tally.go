package opencode

import (
	"fmt"
	"strings"

	"github.com/lanehq/lane/internal/record"
)

// A Tally keeps opencode's accounting of one run from its events: usage,
// cost, steps, tool calls and the last text, from which Judge decides how the
// run ended. Feed it every event in order with Observe. The zero value is
// ready to use; it is not safe for concurrent use.
type Tally struct {
	// Model is the model lane asked opencode for ("provider/model"), used to
	// price the usage when opencode reported no cost: its output never
	// names the model.
	Model string
	// MaxSteps is the step limit lane gave opencode (agent.<name>.steps), 0
	// when none. opencode's limit is only advice to the model; Judge fails a
	// run whose model ran past it.
	MaxSteps int

	sessionID string

	steps     map[string]*step // by message id
	stepOrder []string         // ids in first-seen order, for stable sums
	anonSteps []*step          // steps without a message id
	open      *step            // the step started and not yet finished
	finished  int              // step_finish events
	last      *step            // the last step finished

	toolCalls map[string]bool // tool call ids seen
	anonCalls int             // tool calls without an id

	textMsg string   // message id of the last text
	texts   []string // the texts of that message

	err       *record.Event // the last runtime error event
	errStatus int           // its HTTP status
}

// step is one step of opencode: one request to the model and its answer.
type step struct {
	usage    record.Usage
	cost     float64
	hasCost  bool
	reason   string
	finished bool
}

func (t *Tally) step(id string) *step {
	if id == "" {
		s := &step{}
		t.anonSteps = append(t.anonSteps, s)
		return s
	}
	if s := t.steps[id]; s != nil {
		return s
	}
	if t.steps == nil {
		t.steps = make(map[string]*step)
	}
	s := &step{}
	t.steps[id] = s
	t.stepOrder = append(t.stepOrder, id)
	return s
}

// Observe takes the next event of the run.
func (t *Tally) Observe(ev record.Event) {
	if ev.Kind == record.KindSession && ev.SessionID != "" {
		t.sessionID = ev.SessionID
	}
	switch ev.Kind {
	case record.KindTask:
		switch ev.Subtype {
		case "step_start":
			t.open = t.step(ev.MessageID)
		case "step_finish":
			s := t.stepOf(ev.MessageID)
			s.finished = true
			if r := ev.Result; r != nil {
				s.reason = r.StopReason
				if r.RunCostUSD != nil {
					// A repeated step_finish replaces, never adds.
					s.cost, s.hasCost = *r.RunCostUSD, true
				}
			}
			t.finished++
			t.last = s
			if t.open == s {
				t.open = nil
			}
		}
	case record.KindUsage:
		if ev.Usage != nil {
			t.stepOf(ev.MessageID).usage = *ev.Usage
		}
	case record.KindText:
		s := strings.TrimSpace(ev.Text)
		if s == "" {
			break
		}
		if ev.MessageID != t.textMsg {
			t.textMsg, t.texts = ev.MessageID, t.texts[:0]
		}
		t.texts = append(t.texts, s)
	case record.KindToolCall:
		if ev.ToolUseID == "" {
			t.anonCalls++
			break
		}
		if t.toolCalls == nil {
			t.toolCalls = make(map[string]bool)
		}
		t.toolCalls[ev.ToolUseID] = true
	case record.KindError:
		// Errors of the runtime have a kind; lane's own (an over-long
		// line) have none.
		if ev.ErrorKind != "" {
			e := ev
			e.Raw = nil
			t.err = &e
			t.errStatus = 0
			if ev.Result != nil {
				t.errStatus = ev.Result.APIErrorStatus
			}
		}
	}
}

// stepOf is the step of a message id; a usage or step_finish without one
// belongs to the open step, if any.
func (t *Tally) stepOf(id string) *step {
	if id == "" && t.open != nil {
		return t.open
	}
	return t.step(id)
}

func (t *Tally) eachStep(f func(*step)) {
	for _, id := range t.stepOrder {
		f(t.steps[id])
	}
	for _, s := range t.anonSteps {
		f(s)
	}
}

// Usage is the run's token usage: the sum over its steps, each step counted
// once however many lines repeated it. Subagents' steps are not in opencode's
// output, so their tokens are not counted.
func (t *Tally) Usage() record.Usage {
	var u record.Usage
	t.eachStep(func(s *step) { u = u.Add(s.usage) })
	return u
}

// reportedCost is the sum of the steps' costs and whether any step had one.
func (t *Tally) reportedCost() (usd float64, ok bool) {
	t.eachStep(func(s *step) {
		if s.hasCost {
			usd += s.cost
			ok = true
		}
	})
	return usd, ok
}

// SessionID is the session opencode named last.
func (t *Tally) SessionID() string { return t.sessionID }

// Turns is the number of steps started or finished: opencode's requests to
// the model that answered.
func (t *Tally) Turns() int { return len(t.stepOrder) + len(t.anonSteps) }

// ToolCalls is the number of distinct tool calls of the main agent (a
// subagent's are not in opencode's output).
func (t *Tally) ToolCalls() int { return len(t.toolCalls) + t.anonCalls }

// ResultText is the text of the last message that had any, its parts joined
// by blank lines.
func (t *Tally) ResultText() string { return strings.Join(t.texts, "\n\n") }

// Cost is what the run cost in USD: the sum of the steps' costs as opencode
// reported them. opencode reports 0 for a model it has no prices for; when
// every step said 0 (or none said anything) and tokens were used, the usage is
// priced by price for Model instead, with estimate set. When price cannot
// price it either, the answer is opencode's figure, 0.
func (t *Tally) Cost(price func(model string, u record.Usage) (float64, bool)) (usd float64, estimate bool) {
	usd, ok := t.reportedCost()
	u := t.Usage()
	if (ok && usd > 0) || u.IsZero() || price == nil {
		return usd, false
	}
	if c, ok := price(t.Model, u); ok {
		return c, true
	}
	return usd, false
}

// Result summarises the run as opencode's missing result line would have:
// Subtype "success" when the last step finished with reason "stop" and no
// error was printed, else "error". It is nil when the run printed neither a
// step nor an error. The exit code is not considered; see Judge.
func (t *Tally) Result() *record.Result {
	if t.Turns() == 0 && t.err == nil {
		return nil
	}
	r := &record.Result{
		Subtype:        "success",
		Text:           t.ResultText(),
		Usage:          t.Usage(),
		NumTurns:       t.Turns(),
		APIErrorStatus: t.errStatus,
	}
	if t.last != nil {
		r.StopReason = t.last.reason
	}
	if usd, ok := t.reportedCost(); ok {
		r.RunCostUSD = &usd
	}
	if t.err != nil {
		r.Errors = []string{t.err.Text}
	}
	if t.err != nil || t.open != nil || r.StopReason != "stop" {
		r.Subtype, r.IsError = "error", true
	}
	return r
}

// Hints, kept together so that their wording stays consistent.
const (
	// AuthHint is what to check when the model API refuses opencode's
	// credentials (runner's hint for such a run too).
	AuthHint     = "the model API refused opencode's credentials: check the provider's apiKey (or the {env:VAR} it names) in ~/.config/opencode/opencode.json, or run `opencode auth login`"
	hintRate     = "the API is rate-limiting these credentials: wait, run fewer agents at once, or raise the limits"
	hintServer   = "the model API is failing or overloaded and opencode's own retries (about a minute) did not get through: retry later"
	hintNoAnswer = "the model API did not answer: check the provider's baseURL in opencode.json and the network"
	hintMaxSteps = "opencode's step limit is only advice to the model and this model ignored it: use lane's timeout, or a model that stops when told"
	hintCrash    = "see the runtime's stderr"
	hintHang     = "opencode waits silently for 20+ minutes on a model API that does not answer: check the model server, or shorten lane's timeout"
	hintBusy     = "the agent was still stepping when the timeout fired: raise lane's timeout, or give it a smaller task"
)

// Judge is lane's own judgement of how the run ended, from the events and
// the exit code; opencode's exit code alone says little (0 after a model that
// stopped early, 1 for any error). In order:
//
//   - an error event → failed, of the error's kind (auth for 401/403, api for
//     429 and 5xx, …), whatever the exit code;
//   - more steps finished than MaxSteps → failed, max_turns;
//   - an exit code other than 0 → failed, crash (a timeout's 124 included:
//     timeouts are the runner's to decide);
//   - no step finished, a step still open, or a last step that finished for
//     another reason than "stop" → failed, crash or agent;
//   - else succeeded.
func (t *Tally) Judge(exitCode int) record.Verdict {
	fail := func(kind record.ErrorKind, msg, hint string) record.Verdict {
		return record.Verdict{Status: record.StatusFailed, ErrorKind: kind, Message: msg, Hint: hint}
	}
	if e := t.err; e != nil {
		v := fail(e.ErrorKind, e.Text, "")
		switch {
		case e.ErrorKind == record.ErrorAuth:
			v.Hint = AuthHint
		case e.ErrorKind == record.ErrorAPI && t.errStatus == 429:
			v.Hint = hintRate
		case e.ErrorKind == record.ErrorAPI && t.errStatus >= 500:
			v.Hint = hintServer
		case e.ErrorKind == record.ErrorAPI:
			v.Hint = hintNoAnswer
		}
		if exitCode == 0 {
			v.Contradiction = "exit code 0 but an error event"
		}
		return v
	}
	if t.MaxSteps > 0 && t.finished > t.MaxSteps {
		return fail(record.ErrorTurnLimit,
			fmt.Sprintf("the model ran %d steps past opencode's limit of %d", t.finished-t.MaxSteps, t.MaxSteps),
			hintMaxSteps)
	}
	var reason string
	if t.last != nil {
		reason = t.last.reason
	}
	if exitCode != 0 {
		var where string
		switch {
		case t.open != nil:
			where = fmt.Sprintf(" with a step in flight (after %d steps finished)", t.finished)
		case t.finished == 0:
			where = " before any step finished"
		default:
			where = fmt.Sprintf(" after %d steps", t.finished)
		}
		if exitCode == 124 {
			hint := hintBusy
			if t.finished == 0 {
				hint = hintHang
			}
			return fail(record.ErrorCrash, "opencode was stopped by a timeout (exit code 124)"+where, hint)
		}
		v := fail(record.ErrorCrash, fmt.Sprintf("opencode exited with code %d", exitCode)+where, hintCrash)
		if reason == "stop" && t.open == nil {
			v.Contradiction = fmt.Sprintf("last step reason=stop but exit code %d", exitCode)
		}
		return v
	}
	switch {
	case t.finished == 0:
		return fail(record.ErrorCrash, "opencode exited 0 without finishing a step", hintCrash)
	case t.open != nil:
		return fail(record.ErrorCrash, "opencode exited 0 with a step still in flight", hintCrash)
	case reason != "stop":
		if reason == "" {
			reason = "none"
		}
		return fail(record.ErrorAgent, "opencode exited 0 but its last step finished with reason "+reason, "")
	}
	return record.Verdict{Status: record.StatusSucceeded}
}
