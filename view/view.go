// Package view shows a run to a person: its events as they arrive, the summary
// at its end, and the table of past runs. Everything taken from a run (tool
// output, text, paths) is stripped of escape sequences and control characters
// before it is shown; the only escape sequences written are lane's own colours,
// and none at all when colour is off.
package view

import (
	"encoding/json"
	"io"
	"strconv"
	"strings"

	"lane/trace"
)

// lineWidth is the most columns a one-line summary (a tool call, a tool
// result, a thinking line) takes, not counting its indent.
const lineWidth = 120

// thinkingLines is how many lines of reasoning are shown.
const thinkingLines = 3

// Printer writes a run's events as they arrive. It remembers the tool calls it
// has shown so that results and subagent work can be placed under them. A
// Printer is not safe for concurrent use.
type Printer struct {
	w     io.Writer
	color bool

	cwd         string          // the session's working directory; paths under it are shown relative
	lastSession string          // the session line last shown, so a repeated init prints nothing
	calls       map[string]call // tool_use_id → the call
	lastCall    string          // tool_use_id of the call just shown, "" once anything else was
	lastError   string          // the text of the error event just shown, "" once anything else was shown

	// Asking: the person at this terminal is asked each request directly
	// (lane run's own terminal), so the request itself is not shown again.
	Asking bool
}

type call struct {
	name  string
	depth int
}

// NewPrinter returns a Printer writing to w, with colours when color is true.
func NewPrinter(w io.Writer, color bool) *Printer {
	return &Printer{w: w, color: color, calls: make(map[string]call)}
}

// Event prints one event. Kinds that the summary covers (usage, result) and
// those not meant for a person (delta, raw) print nothing. Each event is
// written with a single Write.
func (p *Printer) Event(ev trace.Event) error {
	var b strings.Builder
	p.render(&b, ev)
	if b.Len() == 0 {
		return nil
	}
	if ev.Kind != trace.KindToolCall {
		p.lastCall = ""
	}
	_, err := io.WriteString(p.w, b.String())
	return err
}

func (p *Printer) render(b *strings.Builder, ev trace.Event) {
	if ev.Kind != trace.KindError {
		defer func(shown int) {
			if b.Len() > shown {
				p.lastError = ""
			}
		}(b.Len())
	}
	depth := p.depth(ev)
	switch ev.Kind {
	case trace.KindSession:
		p.session(b, ev)
	case trace.KindText:
		ls := lines(ev.Text)
		if len(ls) == 0 {
			return
		}
		for _, l := range ls {
			p.line(b, depth, "", l)
		}
	case trace.KindThinking:
		p.thinking(b, depth, ev.Text)
	case trace.KindToolCall:
		p.toolCall(b, depth, ev)
	case trace.KindToolResult:
		p.toolResult(b, depth, ev)
	case trace.KindError:
		p.error(b, depth, ev)
	case trace.KindRetry:
		p.line(b, depth, yellow, truncate(retryText(ev), lineWidth))
	case trace.KindTask:
		if bookkeeping[ev.Subtype] {
			return
		}
		if c, ok := p.calls[ev.ToolUseID]; ok {
			depth = c.depth + 1 // the task's own call: show it as that call's work
		}
		label := "task"
		if ev.Subtype != "" {
			label = flat(strings.ReplaceAll(strings.TrimPrefix(ev.Subtype, "task_"), "_", " "))
			if !strings.HasPrefix(label, "task") {
				label = "task " + label
			}
		}
		if t, _ := firstLine(ev.Text); t != "" {
			label += ": " + t
		}
		p.line(b, depth, dim, truncate(label, lineWidth))
	case trace.KindCompact:
		p.line(b, depth, dim, "── context compacted ──")
	case trace.KindTodo:
		for _, l := range lines(ev.Text) {
			p.line(b, depth, dim, l)
		}
	case trace.KindStderr:
		for _, l := range lines(ev.Text) {
			p.line(b, depth, dim, "stderr: "+l)
		}
	case trace.KindPermissionRequest, trace.KindPermissionDecision, trace.KindUserMessage, trace.KindInterrupt:
		p.person(b, depth, ev)
	}
	// usage, result, delta, raw, tool_output (the result sums it up),
	// transcript and kinds this version does not know: nothing.
}

// depth is how far ev is indented: one level under the call that started the
// subagent it belongs to.
func (p *Printer) depth(ev trace.Event) int {
	if ev.ParentToolUseID == "" {
		return 0
	}
	if c, ok := p.calls[ev.ParentToolUseID]; ok {
		return c.depth + 1
	}
	return 1
}

// line writes one line at depth, painted with style.
func (p *Printer) line(b *strings.Builder, depth int, style, s string) {
	b.WriteString(strings.Repeat("  ", depth))
	b.WriteString(p.paint(style, s))
	b.WriteByte('\n')
}

func (p *Printer) paint(style, s string) string {
	return paint(p.color, style, s)
}

func paint(color bool, style, s string) string {
	if !color || style == "" || s == "" {
		return s
	}
	return style + s + reset
}

func (p *Printer) session(b *strings.Builder, ev trace.Event) {
	parts := []string{"session"}
	if ev.SessionID != "" {
		parts[0] += " " + flat(ev.SessionID)
	}
	for _, s := range []string{ev.Model, ev.Cwd} {
		if s != "" {
			parts = append(parts, flat(s))
		}
	}
	s := strings.Join(parts, " · ")
	if ev.Cwd != "" {
		p.cwd = ev.Cwd
	}
	if s == p.lastSession {
		return
	}
	p.lastSession = s
	p.line(b, 0, dim, s)
}

func (p *Printer) thinking(b *strings.Builder, depth int, text string) {
	var ls []string
	for _, l := range lines(text) {
		if strings.TrimSpace(l) != "" {
			ls = append(ls, flat(l))
		}
	}
	if len(ls) == 0 {
		return
	}
	for i, l := range ls {
		if i == thinkingLines {
			p.line(b, depth, dim, "  … +"+plural(len(ls)-i, "line"))
			break
		}
		prefix := "  "
		if i == 0 {
			prefix = "✻ "
		}
		p.line(b, depth, dim, prefix+truncate(l, lineWidth-2))
	}
}

func (p *Printer) toolCall(b *strings.Builder, depth int, ev trace.Event) {
	name := flat(ev.ToolName)
	if name == "" {
		name = "tool"
	}
	if ev.ToolUseID != "" {
		p.calls[ev.ToolUseID] = call{name: name, depth: depth}
	}
	p.lastCall = ev.ToolUseID
	s := p.paint(cyan, "●") + " " + p.paint(bold, name)
	if sum := toolSummary(ev.ToolName, ev.Input, p.cwd); sum != "" {
		s += " " + truncate(sum, max(lineWidth-2-width(name)-1, 10))
	}
	p.line(b, depth, "", s)
}

func (p *Printer) toolResult(b *strings.Builder, depth int, ev trace.Event) {
	c, known := p.calls[ev.ToolUseID]
	if known {
		depth = c.depth
	}
	head := "⎿ "
	if ev.IsError {
		head += "✘ "
	}
	// Name the tool when the result does not follow its call directly (parallel
	// calls, a subagent in between).
	if known && ev.ToolUseID != p.lastCall {
		head += c.name + ": "
	}
	out := ev.Output
	if t := strings.TrimSpace(out); strings.HasPrefix(t, "<tool_use_error>") && strings.HasSuffix(t, "</tool_use_error>") {
		out = strings.TrimSuffix(strings.TrimPrefix(t, "<tool_use_error>"), "</tool_use_error>")
	}
	first, more := firstLine(out)
	first = strings.TrimSpace(first)
	if first == "" {
		first = "(no output)"
	}
	tail := ""
	if more {
		tail = " … +" + plural(len(lines(out))-1, "line")
	}
	first = truncate(first, max(lineWidth-2-width(head)-width(tail), 10))
	style := dim
	if ev.IsError {
		style = red
	}
	p.line(b, depth, "", "  "+p.paint(style, head+first+tail))
}

func (p *Printer) error(b *strings.Builder, depth int, ev trace.Event) {
	// Claude Code says a failure in its reply and again when it exits, with
	// only silent lines between: the person reads it once.
	if ev.Text != "" && ev.Text == p.lastError {
		return
	}
	p.lastError = ev.Text
	head := "error"
	if ev.ErrorKind != "" {
		head += " (" + flat(string(ev.ErrorKind)) + ")"
	}
	ls := lines(ev.Text)
	if len(ls) == 0 {
		p.line(b, depth, boldRed, head)
		return
	}
	p.line(b, depth, boldRed, head+": "+ls[0])
	for _, l := range ls[1:] {
		p.line(b, depth, red, "  "+l)
	}
}

// retryText reads like "retry 2/10 after 617ms: 401 authentication_failed".
func retryText(ev trace.Event) string {
	r := ev.Retry
	if r == nil {
		if t, _ := firstLine(ev.Text); t != "" {
			return "retry: " + t
		}
		return "retry"
	}
	s := "retry"
	if r.Attempt > 0 {
		s += " " + strconv.Itoa(r.Attempt)
		if r.MaxRetries > 0 {
			s += "/" + strconv.Itoa(r.MaxRetries)
		}
	}
	if r.DelayMS > 0 {
		s += " after " + humanMS(r.DelayMS)
	}
	var detail []string
	if r.ErrorStatus != 0 {
		detail = append(detail, strconv.Itoa(r.ErrorStatus))
	}
	if r.Error != "" {
		detail = append(detail, flat(r.Error))
	}
	if len(detail) > 0 {
		s += ": " + strings.Join(detail, " ")
	}
	return s
}

// bookkeeping are task events that mark a runtime's own rhythm (Codex's
// turns, opencode's steps) rather than work a person follows: they stay in
// the record and the stream-json output, not on the terminal.
var bookkeeping = map[string]bool{"turn.started": true, "step_start": true, "step_finish": true}

// toolSummary is a one-line account of a tool's input: the command of a Bash
// call, the file of a Read, the pattern of a Grep; compact JSON for tools it
// does not know. Paths under cwd are shown relative to it.
func toolSummary(name string, input json.RawMessage, cwd string) string {
	var in struct {
		Command      string            `json:"command"`
		FilePath     string            `json:"file_path"`
		FilePathJS   string            `json:"filePath"` // opencode
		AbsolutePath string            `json:"absolute_path"`
		NotebookPath string            `json:"notebook_path"`
		Pattern      string            `json:"pattern"`
		Path         string            `json:"path"`
		Description  string            `json:"description"`
		SubagentType string            `json:"subagent_type"`
		URL          string            `json:"url"`
		Query        string            `json:"query"`
		Todos        []json.RawMessage `json:"todos"`
		Items        []json.RawMessage `json:"items"`
		Name         string            `json:"name"`
	}
	s := ""
	if len(input) > 0 && json.Unmarshal(input, &in) == nil {
		switch name {
		// Claude Code, lane's loop and opencode; Codex; Gemini CLI and Qwen Code.
		case "Bash", "bash", "command_execution", "shell", "run_shell_command":
			first, more := firstLine(in.Command)
			s = strings.TrimSpace(first)
			if more {
				s += " …"
			}
		case "Read", "Write", "Edit", "MultiEdit", "NotebookEdit":
			s = relPath(in.FilePath, cwd)
			if s == "" {
				s = relPath(in.NotebookPath, cwd)
			}
		case "read_file", "write_file", "edit_file", "replace", "read", "write", "edit", "multiedit":
			for _, p := range []string{in.Path, in.FilePath, in.FilePathJS, in.AbsolutePath} {
				if p != "" {
					s = relPath(p, cwd)
					break
				}
			}
		case "Glob", "Grep", "glob", "grep":
			s = flat(in.Pattern)
			if s != "" && in.Path != "" {
				s += " in " + relPath(in.Path, cwd)
			}
		case "Task", "Agent", "task":
			s = flat(in.Description)
			if s != "" && in.SubagentType != "" {
				s += " (" + flat(in.SubagentType) + ")"
			}
		case "WebFetch":
			s = flat(in.URL)
		case "WebSearch":
			s = flat(in.Query)
		case "TodoWrite":
			if in.Todos != nil {
				s = plural(len(in.Todos), "todo")
			}
		case "todo":
			if in.Items != nil {
				s = plural(len(in.Items), "todo")
			}
		case "load_skill":
			s = flat(in.Name)
		}
	}
	if s == "" && len(input) > 0 {
		s = flat(compactJSON(input))
		if s == "{}" || s == "null" {
			s = ""
		}
	}
	return s
}

// relPath shows p relative to cwd when it lies under it.
func relPath(p, cwd string) string {
	cwd = strings.TrimSuffix(cwd, "/")
	if cwd != "" && strings.HasPrefix(p, cwd+"/") && len(p) > len(cwd)+1 {
		p = p[len(cwd)+1:]
	}
	return flat(p)
}

func plural(n int, noun string) string {
	s := strconv.Itoa(n) + " " + noun
	if n != 1 {
		s += "s"
	}
	return s
}
