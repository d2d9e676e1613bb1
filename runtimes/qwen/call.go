package qwen

import (
	"encoding/json"

	"lane/runtimes/gemini"
	"lane/trace"
)

// Call is what a call of one of Qwen Code's tools does, named for the
// permission rules as Claude Code names its tools. Qwen Code is a fork of
// Gemini CLI: the tools they share read as gemini.Call says; these are its
// own.
func Call(tool string, input json.RawMessage) *trace.Call {
	var in struct {
		FilePath     string            `json:"file_path"`
		Path         string            `json:"path"`
		Pattern      string            `json:"pattern"`
		Query        string            `json:"query"`
		Description  string            `json:"description"`
		SubagentType string            `json:"subagent_type"`
		Skill        string            `json:"skill"`
		Todos        []json.RawMessage `json:"todos"`
	}
	_ = json.Unmarshal(input, &in)
	c := &trace.Call{Kind: trace.CallOther, Tool: tool}
	switch tool {
	case "edit":
		c.Kind, c.Tool, c.Paths = trace.CallEdit, "Edit", trace.Paths(in.FilePath)
	case "grep_search":
		c.Kind, c.Tool, c.Target, c.Paths = trace.CallSearch, "Grep", in.Pattern, trace.Paths(in.Path)
	case "web_search":
		c.Kind, c.Tool, c.URL = trace.CallFetch, "WebSearch", in.Query
	case "agent", "task":
		c.Kind, c.Target = trace.CallTask, trace.TaskTarget(in.Description, in.SubagentType)
	case "todo_write":
		if in.Todos != nil {
			c.Target = trace.Count(len(in.Todos), "todo")
		}
	case "skill":
		c.Target = in.Skill
	default:
		return gemini.Call(tool, input)
	}
	return c
}
