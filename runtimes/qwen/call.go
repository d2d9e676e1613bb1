package qwen

import (
	"encoding/json"

	"lane/trace"
)

// Call is what a call of one of Qwen Code's tools does, named for the
// permission rules as Claude Code names its tools.
func Call(tool string, input json.RawMessage) *trace.Call {
	var in struct {
		Command      string            `json:"command"`
		FilePath     string            `json:"file_path"`
		AbsolutePath string            `json:"absolute_path"`
		Path         string            `json:"path"`
		Pattern      string            `json:"pattern"`
		URL          string            `json:"url"`
		Query        string            `json:"query"`
		Description  string            `json:"description"`
		SubagentType string            `json:"subagent_type"`
		Name         string            `json:"skill"`
		Todos        []json.RawMessage `json:"todos"`
	}
	_ = json.Unmarshal(input, &in)
	c := &trace.Call{Kind: trace.CallOther, Tool: tool}
	switch tool {
	case "run_shell_command":
		c.Kind, c.Tool, c.Command = trace.CallShell, "Bash", in.Command
		return c
	case "read_file":
		c.Kind, c.Tool = trace.CallRead, "Read"
	case "list_directory":
		c.Kind, c.Tool = trace.CallRead, "LS"
	case "write_file":
		c.Kind, c.Tool = trace.CallWrite, "Write"
	case "edit":
		c.Kind, c.Tool = trace.CallEdit, "Edit"
	case "glob":
		c.Kind, c.Tool, c.Target = trace.CallSearch, "Glob", in.Pattern
	case "grep_search":
		c.Kind, c.Tool, c.Target = trace.CallSearch, "Grep", in.Pattern
	case "web_fetch":
		c.Kind, c.Tool, c.URL = trace.CallFetch, "WebFetch", in.URL
		return c
	case "web_search":
		c.Kind, c.Tool, c.URL = trace.CallFetch, "WebSearch", in.Query
		return c
	case "agent", "task":
		c.Kind, c.Target = trace.CallTask, trace.TaskTarget(in.Description, in.SubagentType)
		return c
	case "todo_write":
		if in.Todos != nil {
			c.Target = trace.Count(len(in.Todos), "todo")
		}
		return c
	case "skill":
		c.Target = in.Name
		return c
	default:
		return c
	}
	for _, p := range []string{in.FilePath, in.AbsolutePath, in.Path} {
		if p != "" {
			c.Paths = append(c.Paths, p)
		}
	}
	return c
}
