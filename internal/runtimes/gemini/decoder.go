// Package gemini decodes the stream-json output of Gemini CLI 0.61 (`gemini -p
// … --output-format stream-json`) into trace events, and keeps the
// Gemini-specific accounting of a run (Tally): usage, turns, tool calls, an
// estimated cost, and lane's verdict on how it ended.
//
// Gemini CLI prints one JSON object a line: init, message (user or assistant;
// assistant text arrives as delta chunks), tool_use, tool_result, error and a
// final result with token stats. It reports no cost and no retries: its
// retries of a failing API happen silently, and an API failure shows only in
// the result's error and in the exit code (the HTTP status mod 256).
//
// The package is pure: it reads from an io.Reader it is given, starts no
// goroutines and runs no processes. Bad input never stops it.
package gemini

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/lanehq/lane/internal/jsonl"
	"github.com/lanehq/lane/internal/record"
)

// DefaultMaxLineSize is the longest line a Decoder decodes unless told
// otherwise.
const DefaultMaxLineSize = jsonl.DefaultMaxLineSize

// A Decoder reads Gemini CLI's stream-json lines and turns each into trace
// events.
//
// Assistant text arrives in delta chunks. Each chunk becomes a KindDelta
// event; the whole message becomes one KindText event once it is over, that
// is at the next JSON line that is not another chunk of it. That KindText is
// the first event of that line's events. When the input ends inside a
// message, Next gives it as one last KindText, of the last line given out and
// without Raw, before io.EOF.
type Decoder struct {
	// MaxLineSize is the longest line, in bytes without its end of line, that
	// is decoded; a longer one is reported as a KindError event and skipped
	// without being held in memory. Zero or less means DefaultMaxLineSize.
	// Set it before the first call to Next.
	MaxLineSize int
	// MaxOutputSize, when positive, bounds the Output of tool_result events
	// (see record.Event.CapOutput); Raw keeps the whole line.
	MaxOutputSize int

	lines    *jsonl.Reader
	lastLine int64 // the line of the last events given out

	text     strings.Builder // the assistant message being assembled
	textOpen bool            // a message is being assembled
	lastText string          // the last assembled message, for the result

	tools  map[string]string // tool name by tool_id, while the call is open
	inTurn bool              // the model's output has begun and no tool has answered yet
	turns  int
}

// NewDecoder returns a Decoder reading from r.
func NewDecoder(r io.Reader) *Decoder {
	return &Decoder{lines: jsonl.NewReader(r)}
}

// Next returns the events of the next non-empty line: one or more, each with
// Line set, the first with Raw set to a copy of the line that the caller may
// keep (except the KindError of an over-long line, and the last open message
// at the end of the input; see Decoder). It returns io.EOF at the end of the
// input, and other read errors wrapped. Seq, Time and RunID are left for the
// caller to set.
func (d *Decoder) Next() ([]record.Event, error) {
	d.lines.MaxLineSize = d.MaxLineSize
	evs, err := d.lines.Decode("gemini", d.decode)
	if err != nil && d.textOpen {
		// The input ended with a message still open: give it out first; the
		// reader keeps the error for the next call.
		return []record.Event{d.flush(d.lastLine)}, nil
	}
	if len(evs) > 0 {
		d.lastLine = evs[0].Line
	}
	return evs, err
}

// wireLine is what lane reads from any line; each type fills its part.
type wireLine struct {
	Type      string `json:"type"`
	SessionID string `json:"session_id"`
	Model     string `json:"model"`

	// message
	Role    string `json:"role"`
	Content string `json:"content"`
	Delta   bool   `json:"delta"`

	// tool_use, tool_result
	ToolName   string          `json:"tool_name"`
	ToolID     string          `json:"tool_id"`
	Parameters json.RawMessage `json:"parameters"`
	Status     string          `json:"status"` // also on result
	Output     string          `json:"output"`
	Error      wireError       `json:"error"` // also on result

	// error
	Severity string `json:"severity"`
	Message  string `json:"message"`

	// result
	Stats json.RawMessage `json:"stats"`
}

// wireError is a tool_result's or a result's error: {type, message}, or a
// plain string.
type wireError struct {
	Type    string
	Message string
}

func (e *wireError) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		*e = wireError{Message: s}
		return nil
	}
	var o struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	}
	if err := json.Unmarshal(b, &o); err != nil {
		if bytes.Equal(b, []byte("null")) {
			return nil
		}
		*e = wireError{Message: string(b)}
		return nil
	}
	*e = wireError{Type: o.Type, Message: o.Message}
	return nil
}

type wireStats struct {
	wireTokens
	DurationMS int64                 `json:"duration_ms"`
	Models     map[string]wireTokens `json:"models"`
}

// wireTokens counts tokens as Gemini CLI does: input_tokens includes the
// cached ones; input is the rest.
type wireTokens struct {
	InputTokens  int64  `json:"input_tokens"`
	OutputTokens int64  `json:"output_tokens"`
	Cached       int64  `json:"cached"`
	Input        *int64 `json:"input"`
}

func (w wireTokens) usage() record.Usage {
	in := w.InputTokens - w.Cached
	if w.Input != nil {
		in = *w.Input
	}
	return record.Usage{InputTokens: max(in, 0), OutputTokens: w.OutputTokens, CacheReadTokens: w.Cached}
}

// decode turns one non-blank line into its events.
func (d *Decoder) decode(n int64, line []byte) []record.Event {
	if !isObject(line) {
		var v any
		if err := json.Unmarshal(line, &v); err != nil {
			return []record.Event{{Kind: record.KindRaw, Line: n, Text: fmt.Sprintf("line %d: invalid JSON: %v", n, err)}}
		}
		return []record.Event{{Kind: record.KindRaw, Line: n, Text: fmt.Sprintf("line %d: not a JSON object", n)}}
	}
	var w wireLine
	if err := json.Unmarshal(line, &w); !wellTyped(err) {
		return []record.Event{{Kind: record.KindRaw, Line: n, Text: fmt.Sprintf("line %d: invalid JSON: %v", n, err)}}
	}

	base := record.Event{Line: n}
	if w.Type == "message" && w.Role == "assistant" && w.Delta {
		d.startTurn()
		if !d.textOpen {
			d.text.Reset()
			d.textOpen = true
		}
		d.text.WriteString(w.Content)
		ev := base
		ev.Kind, ev.Subtype, ev.Text = record.KindDelta, "text_delta", w.Content
		return []record.Event{ev}
	}

	var evs []record.Event
	if d.textOpen {
		evs = append(evs, d.flush(n))
	}
	switch w.Type {
	case "init":
		ev := base
		ev.Kind, ev.Subtype, ev.SessionID, ev.Model = record.KindSession, "init", w.SessionID, w.Model
		evs = append(evs, ev)
	case "message":
		ev := base
		switch w.Role {
		case "assistant": // a whole message at once
			d.startTurn()
			d.lastText = w.Content
			ev.Kind, ev.Text = record.KindText, w.Content
		default: // the prompt, echoed
			ev.Kind, ev.Subtype, ev.Text = record.KindRaw, w.Role, w.Content
		}
		evs = append(evs, ev)
	case "tool_use":
		evs = append(evs, d.toolCall(base, &w))
	case "tool_result":
		evs = append(evs, d.toolResult(base, &w))
	case "error":
		ev := base
		ev.Kind, ev.Subtype, ev.Text = record.KindError, w.Severity, w.Message
		ev.ErrorKind, _ = classify("", w.Message)
		evs = append(evs, ev)
	case "result":
		evs = append(evs, d.resultEvents(base, &w)...)
	default:
		ev := base
		ev.Kind, ev.Subtype = record.KindRaw, w.Type
		evs = append(evs, ev)
	}
	return evs
}

// toolCall is a tool_use line's event; the tool's name is kept for its
// result.
func (d *Decoder) toolCall(base record.Event, w *wireLine) record.Event {
	d.startTurn()
	if d.tools == nil {
		d.tools = make(map[string]string)
	}
	d.tools[w.ToolID] = w.ToolName
	ev := base
	ev.Kind, ev.ToolUseID, ev.ToolName = record.KindToolCall, w.ToolID, w.ToolName
	if len(w.Parameters) > 0 && string(w.Parameters) != "null" {
		ev.Input = w.Parameters
	}
	ev.Call = Call(w.ToolName, ev.Input)
	return ev
}

// toolResult is a tool_result line's event, which ends the model's turn.
func (d *Decoder) toolResult(base record.Event, w *wireLine) record.Event {
	d.inTurn = false
	name, seen := d.tools[w.ToolID]
	delete(d.tools, w.ToolID)
	ev := base
	ev.Kind, ev.ToolUseID, ev.Output = record.KindToolResult, w.ToolID, w.Output
	ev.IsError = w.Status != "success" || failedCommand(name, seen, w.Output)
	if ev.Output == "" {
		ev.Output = w.Error.Message
	}
	if w.Status != "success" {
		ev.Subtype = w.Error.Type
	}
	if d.MaxOutputSize > 0 {
		ev.CapOutput(d.MaxOutputSize)
	}
	return ev
}

func (d *Decoder) startTurn() {
	if !d.inTurn {
		d.inTurn = true
		d.turns++
	}
}

// flush ends the message being assembled: its KindText, at line n.
func (d *Decoder) flush(n int64) record.Event {
	d.textOpen = false
	d.lastText = d.text.String()
	d.text.Reset()
	return record.Event{Kind: record.KindText, Line: n, Text: d.lastText}
}

// resultEvents gives a result line's events: a KindError for the runtime's
// error, one KindUsage per model of its stats that used tokens (sorted by
// name), then the KindResult. The result's Usage is the stats' total, its
// NumTurns the turns counted so far (Gemini CLI does not count them), its Text
// the last assistant message, and its ModelUsage Gemini CLI's stats object as
// printed (tokens per model, tool_calls with a subagent's calls included,
// duration_ms).
func (d *Decoder) resultEvents(base record.Event, w *wireLine) []record.Event {
	r := &record.Result{
		Subtype:  w.Status,
		IsError:  w.Status != "success",
		Text:     d.lastText,
		NumTurns: d.turns,
	}
	var evs []record.Event
	if w.Error.Message != "" || w.Error.Type != "" {
		r.Errors = []string{w.Error.Message}
		kind, status := classify(w.Error.Type, w.Error.Message)
		r.APIErrorStatus = status
		ev := base
		ev.Kind, ev.Subtype, ev.Text, ev.ErrorKind = record.KindError, w.Error.Type, w.Error.Message, kind
		evs = append(evs, ev)
	}
	var s wireStats
	if isObject(w.Stats) && wellTyped(json.Unmarshal(w.Stats, &s)) {
		r.Usage = s.usage()
		r.DurationMS = s.DurationMS
		r.ModelUsage = w.Stats
		for _, m := range slices.Sorted(maps.Keys(s.Models)) {
			u := s.Models[m].usage()
			if u.IsZero() {
				continue // a model that was asked and never answered
			}
			ev := base
			ev.Kind, ev.Subtype, ev.Model, ev.Usage = record.KindUsage, "stats", m, &u
			evs = append(evs, ev)
		}
	}
	ev := base
	ev.Kind, ev.Subtype, ev.Result = record.KindResult, w.Status, r
	return append(evs, ev)
}

// wellTyped reports whether an error of json.Unmarshal is none, or only a
// member of an unexpected type, which is then left unset.
func wellTyped(err error) bool {
	_, typeErr := errors.AsType[*json.UnmarshalTypeError](err)
	return err == nil || typeErr
}

func isObject(b []byte) bool {
	b = bytes.TrimLeft(b, " \t\r\n")
	return len(b) > 0 && b[0] == '{'
}

// shellTool is Gemini CLI's shell tool.
const shellTool = "run_shell_command"

// exitCodeLine is the line of a shell tool's output that reports a
// non-zero exit code, as Gemini CLI writes it to the model (and to its
// session log) and Qwen Code, its fork, too.
var exitCodeLine = regexp.MustCompile(`(?m)^Exit Code: (-?\d+)\s*$`)

// ShellExitCode is the exit code that a shell tool's output reports in
// its "Exit Code: N" line; false when it has none (Gemini CLI writes the
// line only when N is not 0).
func ShellExitCode(out string) (int, bool) {
	m := exitCodeLine.FindStringSubmatch(out)
	if m == nil {
		return 0, false
	}
	code, err := strconv.Atoi(m[1])
	return code, err == nil
}

var exitCodeRE = regexp.MustCompile(`(?m)^(?:Command exited with code: |Exit Code: )(-?\d+)\s*$`)

// failedCommand reports whether a shell step that Gemini CLI calls a success
// failed. Its output is what the shell printed, and only when the command
// printed nothing does Gemini CLI write "Command exited with code: N" (or a
// signal, or a failure to start) instead; a command that failed after
// printing something cannot be told from one that succeeded.
func failedCommand(name string, seen bool, out string) bool {
	if seen && name != shellTool {
		return false
	}
	if strings.HasPrefix(out, "Command terminated by signal: ") || strings.HasPrefix(out, "Command failed: ") {
		return true
	}
	for _, m := range exitCodeRE.FindAllStringSubmatch(out, -1) {
		if c, err := strconv.Atoi(m[1]); err == nil && c != 0 {
			return true
		}
	}
	return false
}

var (
	codeRE   = regexp.MustCompile(`"code"\s*:\s*(\d{3})\b`)
	statusRE = regexp.MustCompile(`(?i)\bstatus(?: code)?:? (\d{3})\b`)
)

// classify decodes an error of Gemini CLI, by its type and message, into an
// error kind and the HTTP status it names (0 when none).
func classify(typ, msg string) (record.ErrorKind, int) {
	status := 0
	if m := codeRE.FindStringSubmatch(msg); m != nil {
		status, _ = strconv.Atoi(m[1])
	} else if m := statusRE.FindStringSubmatch(msg); m != nil {
		status, _ = strconv.Atoi(m[1])
	}
	if status < 400 || status > 599 {
		status = 0
	}
	switch {
	case typ == "FatalAuthenticationError" || status == 401 || status == 403 ||
		strings.Contains(msg, "UNAUTHENTICATED") || strings.Contains(msg, "PERMISSION_DENIED") ||
		strings.Contains(msg, "API key not valid"):
		return record.ErrorAuth, status
	case typ == "FatalTurnLimitedError" || strings.Contains(msg, "max session turns"):
		return record.ErrorTurnLimit, status
	case status != 0 || strings.HasPrefix(msg, "[API Error"):
		return record.ErrorAPI, status
	case typ == "FatalCancellationError":
		return record.ErrorCancelled, status
	case typ == "FatalConfigError" || typ == "FatalInputError":
		return record.ErrorUsage, status
	case typ == "FatalSandboxError":
		return record.ErrorPermission, status
	}
	return record.ErrorAgent, status
}

// ACPExitCode is a shell call's exit code over ACP: the "Exit Code: N" line
// of its output (acp.Decoder.ExitCode).
func ACPExitCode(_ any, output string) (int, bool) { return ShellExitCode(output) }
