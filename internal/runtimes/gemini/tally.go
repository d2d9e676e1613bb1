package gemini

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/lanehq/lane/internal/record"
)

// A Tally keeps Gemini CLI's accounting of one run from its events: usage,
// turns, tool calls, the result, and from them lane's verdict (Judge). Feed it
// every event in order with Observe. The zero value is ready to use; it is not
// safe for concurrent use.
type Tally struct {
	sessionID string
	model     string // the init line's model ("auto" lets Gemini CLI choose)

	last      *record.Result
	resErr    record.ErrorKind // kind of the result's error
	errKind   record.ErrorKind // kind of the last error event
	errLine   int64            // and its line
	resCalls  int              // the result's stats.tool_calls
	perModel  []modelUsage     // the last result's stats per model
	usageLine int64            // the line they came from
	lastText  string           // the last assistant message
	stopError string           // an error line that stopped the run (loop detected, …)

	toolCalls map[string]bool // tool_use ids seen
	anonCalls int             // tool calls without an id
	turns     int
	inTurn    bool
}

type modelUsage struct {
	model string
	usage record.Usage
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
	case record.KindDelta, record.KindText, record.KindThinking:
		t.startTurn()
		if ev.Kind == record.KindText {
			t.lastText = ev.Text
		}
	case record.KindToolCall:
		t.startTurn()
		if ev.ToolUseID == "" {
			t.anonCalls++
			break
		}
		if t.toolCalls == nil {
			t.toolCalls = make(map[string]bool)
		}
		t.toolCalls[ev.ToolUseID] = true
	case record.KindToolResult:
		t.inTurn = false
	case record.KindError:
		if ev.Line == 0 {
			break // lane's own
		}
		t.errKind, t.errLine = ev.ErrorKind, ev.Line
		if stopsRun(ev) {
			t.stopError = ev.Text
		}
	case record.KindUsage:
		if ev.Subtype != "stats" || ev.Usage == nil {
			break
		}
		if t.usageLine != ev.Line {
			t.perModel, t.usageLine = t.perModel[:0], ev.Line // a later result's stats replace these
		}
		t.perModel = append(t.perModel, modelUsage{ev.Model, *ev.Usage})
	case record.KindResult:
		if ev.Result == nil {
			break
		}
		t.last = ev.Result
		t.resErr = ""
		if t.errLine == ev.Line {
			// The result's error, given just before it.
			t.resErr = t.errKind
		}
		t.resCalls = 0
		var stats struct {
			ToolCalls int `json:"tool_calls"`
		}
		if json.Unmarshal(ev.Result.ModelUsage, &stats) == nil {
			t.resCalls = stats.ToolCalls
		}
	}
}

// stopsRun reports whether an error line of Gemini CLI means that it gave up
// on the task even if its result then says success: a severity "error", or
// its loop detection.
func stopsRun(ev record.Event) bool {
	return ev.Subtype == "error" || (ev.Subtype == "warning" && strings.Contains(ev.Text, "Loop detected"))
}

func (t *Tally) startTurn() {
	if !t.inTurn {
		t.inTurn = true
		t.turns++
	}
}

// Usage is the run's token usage: the total of the result's stats, taken
// once. Gemini CLI reports no usage before its result, so a run without one
// has none.
func (t *Tally) Usage() record.Usage {
	if t.last == nil {
		return record.Usage{}
	}
	return t.last.Usage
}

// SessionID is the session id of the init line.
func (t *Tally) SessionID() string { return t.sessionID }

// Turns is the number of the model's turns: each run of its output (text and
// tool calls) up to the next tool result counts once. Gemini CLI does not
// count turns itself; a routing call of model "auto" is not one.
func (t *Tally) Turns() int {
	if t.last != nil && t.last.NumTurns > t.turns {
		return t.last.NumTurns
	}
	return t.turns
}

// ToolCalls is the number of tool calls: the result's count when there was a
// result (it includes the calls of subagents, which the stream does not
// show), else the distinct calls seen.
func (t *Tally) ToolCalls() int {
	return max(t.resCalls, len(t.toolCalls)+t.anonCalls)
}

// LastResult is the result seen, or nil.
func (t *Tally) LastResult() *record.Result { return t.last }

// ResultText is the run's final answer: the last assistant message.
func (t *Tally) ResultText() string {
	if t.last != nil && t.last.Text != "" {
		return t.last.Text
	}
	return t.lastText
}

// Cost is what the run cost in USD. Gemini CLI reports no cost, so it is
// always an estimate: each model's tokens in the result's stats priced by
// price (models price does not know add nothing). It is 0 and no estimate
// when no tokens were reported.
func (t *Tally) Cost(price func(model string, u record.Usage) (float64, bool)) (usd float64, estimate bool) {
	priced := t.perModel
	if len(priced) == 0 && !t.Usage().IsZero() {
		priced = []modelUsage{{t.model, t.Usage()}}
	}
	for _, m := range priced {
		if m.usage.IsZero() {
			continue
		}
		estimate = true
		if price == nil {
			continue
		}
		if c, ok := price(m.model, m.usage); ok {
			usd += c
		}
	}
	return usd, estimate
}

// Hints, kept together so that their wording stays consistent.
const (
	hintAuthConfig = `Gemini CLI found no usable auth: set security.auth.selectedType to "gemini-api-key" in ~/.gemini/settings.json and export GEMINI_API_KEY (with GOOGLE_GEMINI_BASE_URL set, it otherwise switches auth mode), or log in by running gemini once`
	hintAuthKey    = "the model API refused the credentials: check GEMINI_API_KEY (and GOOGLE_GEMINI_BASE_URL), or log in again by running gemini once"
	hintRate       = "the API is rate-limiting these credentials (Gemini CLI retried for minutes): wait, run fewer agents at once, or raise the quota"
	hintServer     = "the model API is failing or overloaded (Gemini CLI retried for minutes): retry later"
	hintNetwork    = "Gemini CLI could not reach the model API: check the network and GOOGLE_GEMINI_BASE_URL"
	hintMaxTurns   = "raise maxSessionTurns in ~/.gemini/settings.json (or lane's turn limit), or split the task"
	hintLoop       = "Gemini CLI stopped the model for repeating itself: see the run's events, reword the task, or split it"
	hintConfig     = "Gemini CLI refused its settings or arguments: check ~/.gemini/settings.json, the folder's .gemini/settings.json and the flags; see its stderr"
	hintSandbox    = "Gemini CLI's sandbox failed: check its sandbox settings (GEMINI_SANDBOX, --sandbox); see its stderr"
	hintTool       = "a tool failed in a way Gemini CLI cannot recover from (a full disk, for one): see its stderr"
	hintCrash      = "see the runtime's stderr"
)

// exitMeaning decodes an exit code of Gemini CLI: its own fatal errors, and an
// API failure, for which it exits with the HTTP status mod 256 (401 → 145,
// 429 → 173, 500 → 244, 529 → 17). status is that HTTP status, or 0.
func exitMeaning(code int) (kind record.ErrorKind, status int, hint, what string) {
	switch code {
	case 41:
		return record.ErrorAuth, 0, hintAuthConfig, "its auth is not configured"
	case 42:
		return record.ErrorUsage, 0, hintConfig, "its input was refused"
	case 44:
		return record.ErrorPermission, 0, hintSandbox, "its sandbox failed"
	case 52:
		return record.ErrorUsage, 0, hintConfig, "its configuration was refused"
	case 53:
		return record.ErrorTurnLimit, 0, hintMaxTurns, "it reached its turn limit"
	case 54:
		return record.ErrorAgent, 0, hintTool, "a tool failed fatally"
	case 130:
		return record.ErrorCancelled, 0, "", "it was interrupted"
	case 17:
		status = 529
	}
	if code >= 144 && code <= 255 { // 400…511
		status = code + 256
	}
	if status == 0 {
		return "", 0, "", ""
	}
	kind, hint = statusMeaning(status)
	return kind, status, hint, fmt.Sprintf("the model API answered HTTP %d", status)
}

func statusMeaning(status int) (record.ErrorKind, string) {
	switch {
	case status == 401 || status == 403:
		return record.ErrorAuth, hintAuthKey
	case status == 429:
		return record.ErrorAPI, hintRate
	case status >= 500:
		return record.ErrorAPI, hintServer
	}
	return record.ErrorAPI, ""
}

// Judge decides how the run ended, from the result and the exit code
// together. A run succeeds only when the result says success, the exit code
// is 0, and no error line said Gemini CLI gave up (it reports a run its loop
// detection stopped as a success). Otherwise the exit code says why when
// Gemini CLI encoded a reason in it, else the result's error does. Timeouts
// and cancellation by lane are not decided here.
func (t *Tally) Judge(exitCode int) record.Verdict {
	exitKind, exitStatus, exitHint, exitWhat := exitMeaning(exitCode)
	r := t.last
	if r == nil {
		return noResultVerdict(exitCode)
	}

	var ok, bad []string
	claim := func(good bool, s string) {
		if good {
			ok = append(ok, s)
		} else {
			bad = append(bad, s)
		}
	}
	claim(r.Subtype == "success" && !r.IsError, "status="+r.Subtype)
	claim(exitCode == 0, fmt.Sprintf("exit code %d", exitCode))
	if t.stopError != "" {
		bad = append(bad, fmt.Sprintf("error line %q", t.stopError))
	}
	if len(bad) == 0 {
		return record.Verdict{Status: record.StatusSucceeded}
	}

	v := record.Verdict{Status: record.StatusFailed}
	if len(ok) > 0 {
		v.Contradiction = strings.Join(ok, ", ") + " but " + strings.Join(bad, ", ")
	}
	status := r.APIErrorStatus
	if status == 0 {
		status = exitStatus
	}
	switch {
	case exitKind != "":
		v.ErrorKind, v.Hint = exitKind, exitHint
	case t.resErr == record.ErrorAPI && status == 0:
		v.ErrorKind, v.Hint = record.ErrorAPI, hintNetwork
	case t.resErr == record.ErrorAPI || t.resErr == record.ErrorAuth:
		v.ErrorKind, v.Hint = statusMeaning(status)
		if t.resErr == record.ErrorAuth && status == 0 {
			v.ErrorKind, v.Hint = record.ErrorAuth, hintAuthKey
		}
	case t.resErr == record.ErrorTurnLimit:
		v.ErrorKind, v.Hint = record.ErrorTurnLimit, hintMaxTurns
	case t.resErr != "":
		v.ErrorKind = t.resErr
	case t.stopError != "":
		v.ErrorKind, v.Hint = record.ErrorAgent, hintLoop
	case r.Subtype == "success" && !r.IsError:
		// The result was a plain success, then the process failed.
		v.ErrorKind, v.Hint = record.ErrorCrash, hintCrash
	default:
		v.ErrorKind = record.ErrorAgent
	}
	if v.ErrorKind == record.ErrorCancelled {
		v.Status = record.StatusCancelled
	}

	switch {
	case len(r.Errors) > 0 && r.Errors[0] != "":
		v.Message = apiMessage(r.Errors[0])
	case t.stopError != "":
		v.Message = t.stopError
	case exitWhat != "":
		v.Message = fmt.Sprintf("Gemini CLI exited with code %d: %s", exitCode, exitWhat)
	case v.ErrorKind == record.ErrorCrash:
		v.Message = fmt.Sprintf("the runtime reported success, then exited with code %d", exitCode)
	default:
		v.Message = fmt.Sprintf("the runtime reported an error (status %s)", r.Subtype)
	}
	if status != 0 && !strings.Contains(v.Message, fmt.Sprint(status)) {
		v.Message = fmt.Sprintf("HTTP %d: %s", status, v.Message)
	}
	return v
}

// noResultVerdict is the verdict on a run that ended with exitCode and
// no result line: a crash, unless the exit code says why.
func noResultVerdict(exitCode int) record.Verdict {
	exitKind, _, exitHint, exitWhat := exitMeaning(exitCode)
	v := record.Verdict{Status: record.StatusFailed, ErrorKind: record.ErrorCrash, Hint: hintCrash,
		Message: fmt.Sprintf("the runtime exited (code %d) without a result line", exitCode)}
	if exitKind != "" {
		v.ErrorKind, v.Hint = exitKind, exitHint
		v.Message = fmt.Sprintf("Gemini CLI exited with code %d without a result line: %s", exitCode, exitWhat)
	}
	if exitKind == record.ErrorCancelled {
		v.Status = record.StatusCancelled
	}
	return v
}

// apiMessage shortens Gemini CLI's `[API Error: {"error":{…}}]` to the API's
// own words, "HTTP 401 UNAUTHENTICATED: invalid x-api-key"; other messages
// are kept as they are.
func apiMessage(msg string) string {
	body, ok := strings.CutPrefix(msg, "[API Error: ")
	if !ok {
		return msg
	}
	body, _, _ = strings.Cut(body, "\n")
	var e struct {
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
			Status  string `json:"status"`
		} `json:"error"`
	}
	if json.Unmarshal([]byte(strings.TrimSuffix(body, "]")), &e) != nil || e.Error.Code == 0 {
		return msg
	}
	return strings.TrimSpace(fmt.Sprintf("HTTP %d %s", e.Error.Code, e.Error.Status)) + ": " + e.Error.Message
}

// AuthHint is what to check when the model API refuses Gemini CLI's key.
const AuthHint = "the model API refused the key: check GEMINI_API_KEY (or log in with `gemini`)"
