package streamjson

import (
	"encoding/json"
	"strings"

	"lane/trace"
)

// Call is what a call of one of Claude Code's tools does, for the tool_call
// events the Decoder makes and the permission requests Claude Code sends.
// Its names are the ones lane's permission rules use.
func Call(tool string, input json.RawMessage) *trace.Call {
	var in struct {
		Command      string            `json:"command"`
		FilePath     string            `json:"file_path"`
		NotebookPath string            `json:"notebook_path"`
		Path         string            `json:"path"`
		Pattern      string            `json:"pattern"`
		URL          string            `json:"url"`
		Query        string            `json:"query"`
		Description  string            `json:"description"`
		SubagentType string            `json:"subagent_type"`
		Todos        []json.RawMessage `json:"todos"`
	}
	_ = json.Unmarshal(input, &in) // an input that does not fit is the tool's to refuse
	c := &trace.Call{Kind: kindOf(tool), Tool: tool}
	switch c.Kind {
	case trace.CallShell:
		c.Command = in.Command
		return c
	case trace.CallFetch:
		c.URL = in.URL
		if tool == "WebSearch" {
			c.URL = in.Query
		}
		return c
	case trace.CallTask:
		c.Target = trace.TaskTarget(in.Description, in.SubagentType)
		return c
	case trace.CallSearch:
		c.Target = in.Pattern
	}
	if tool == "TodoWrite" && in.Todos != nil {
		c.Target = trace.Count(len(in.Todos), "todo")
	}
	c.Paths = trace.Paths(in.FilePath, in.NotebookPath, in.Path)
	return c
}

// kindOf is the kind of one of Claude Code's tools.
func kindOf(tool string) trace.CallKind {
	switch tool {
	case "Read", "NotebookRead", "LS":
		return trace.CallRead
	case "Glob", "Grep":
		return trace.CallSearch
	case "Write":
		return trace.CallWrite
	case "Edit", "MultiEdit", "NotebookEdit":
		return trace.CallEdit
	case "Bash", "BashOutput", "KillShell", "KillBash":
		return trace.CallShell
	case "WebFetch", "WebSearch":
		return trace.CallFetch
	case "Task", "Agent":
		return trace.CallTask
	}
	return trace.CallOther
}

// Edits is what a call of Claude Code's Edit, MultiEdit or Write puts in
// place of what; nil for the other tools.
func Edits(tool string, input json.RawMessage) []trace.TextEdit {
	type edit struct {
		Old string `json:"old_string"`
		New string `json:"new_string"`
	}
	var in struct {
		FilePath string `json:"file_path"`
		Content  string `json:"content"`
		edit
		Edits []edit `json:"edits"`
	}
	if json.Unmarshal(input, &in) != nil || in.FilePath == "" {
		return nil
	}
	switch tool {
	case "Write":
		return []trace.TextEdit{{Path: in.FilePath, New: in.Content}}
	case "Edit":
		return []trace.TextEdit{{Path: in.FilePath, Old: in.Old, New: in.New}}
	case "MultiEdit":
		out := make([]trace.TextEdit, 0, len(in.Edits))
		for _, e := range in.Edits {
			out = append(out, trace.TextEdit{Path: in.FilePath, Old: e.Old, New: e.New})
		}
		return out
	}
	return nil
}

// todoText is the list a TodoWrite call sets, rendered as every runtime's
// todo events are ("[x] done", "[>] under way", "[ ] to do", a line each);
// false for another tool or an input that is no list.
func todoText(tool string, input json.RawMessage) (string, bool) {
	if tool != "TodoWrite" {
		return "", false
	}
	var in struct {
		Todos []struct {
			Content string `json:"content"`
			Status  string `json:"status"`
		} `json:"todos"`
	}
	if json.Unmarshal(input, &in) != nil || in.Todos == nil {
		return "", false
	}
	var b strings.Builder
	for _, t := range in.Todos {
		switch t.Status {
		case "completed":
			b.WriteString("[x] ")
		case "in_progress":
			b.WriteString("[>] ")
		default:
			b.WriteString("[ ] ")
		}
		b.WriteString(t.Content)
		b.WriteByte('\n')
	}
	return b.String(), true
}
