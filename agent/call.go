package agent

import (
	"encoding/json"

	"lane/trace"
)

// Call is what a call of one of the loop's tools does, on the tool_call
// events the loop emits and for the permission rules, which name tools as
// Claude Code does (bash is Bash, read_file Read, …). A search without a
// path searches the folder.
func Call(tool string, args json.RawMessage) *trace.Call {
	var in struct {
		Command     string            `json:"command"`
		Path        string            `json:"path"`
		Pattern     string            `json:"pattern"`
		Description string            `json:"description"`
		Name        string            `json:"name"`
		Items       []json.RawMessage `json:"items"`
	}
	_ = json.Unmarshal(args, &in) // arguments that do not fit are the tool's to refuse
	c := &trace.Call{Kind: trace.CallOther, Tool: tool}
	switch tool {
	case "bash":
		c.Kind, c.Tool, c.Command = trace.CallShell, "Bash", in.Command
	case "read_file":
		c.Kind, c.Tool = trace.CallRead, "Read"
	case "write_file":
		c.Kind, c.Tool = trace.CallWrite, "Write"
	case "edit_file":
		c.Kind, c.Tool = trace.CallEdit, "Edit"
	case "glob", "grep":
		c.Kind, c.Tool, c.Target = trace.CallSearch, map[string]string{"glob": "Glob", "grep": "Grep"}[tool], in.Pattern
	case "task":
		c.Kind, c.Target = trace.CallTask, in.Description
	case "todo":
		if in.Items != nil {
			c.Target = trace.Count(len(in.Items), "todo")
		}
	case "load_skill":
		c.Target = in.Name
	}
	if c.Kind == trace.CallRead || c.Kind == trace.CallWrite || c.Kind == trace.CallEdit || c.Kind == trace.CallSearch {
		c.Paths = trace.Paths(in.Path)
	}
	return c
}
