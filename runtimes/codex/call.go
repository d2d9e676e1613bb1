package codex

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"

	"lane/changes"
	"lane/trace"
)

// Call is what one of Codex's tool items does, from the tool_call events
// the Decoder makes (command_execution, file_change, web_search, an MCP
// tool) and the calls of its session files (apply_patch, update_plan), named
// for the permission rules as Claude Code names its tools: a command is
// Bash, a change that only adds files Write, any other Edit.
func Call(tool string, input json.RawMessage) *trace.Call {
	var in struct {
		Command json.RawMessage `json:"command"`
		Changes json.RawMessage `json:"changes"`
		Query   string          `json:"query"`
		Input   string          `json:"input"`
	}
	var patch string
	if json.Unmarshal(input, &patch) != nil {
		_ = json.Unmarshal(input, &in)
		patch = in.Input
	}
	c := &trace.Call{Kind: trace.CallOther, Tool: tool}
	switch tool {
	case "command_execution":
		c.Kind, c.Tool, c.Command = trace.CallShell, "Bash", commandLine(in.Command)
	case "file_change":
		c.Kind, c.Tool = trace.CallWrite, "Write"
		for _, fc := range fileChanges(in.Changes) {
			c.Paths = append(c.Paths, fc.Path)
			if fc.Kind != "add" {
				c.Kind, c.Tool = trace.CallEdit, "Edit"
			}
		}
		if len(c.Paths) == 0 {
			c.Kind, c.Tool = trace.CallEdit, "Edit"
		}
	case "apply_patch":
		c.Kind, c.Tool, c.Paths = trace.CallEdit, "Edit", changes.PatchPaths(patch)
	case "web_search":
		c.Kind, c.Tool, c.URL = trace.CallFetch, "WebSearch", in.Query
	}
	return c
}

// commandLine is a command as a string, or as a list of words (Codex's
// session files) joined by spaces.
func commandLine(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var words []string
	if json.Unmarshal(raw, &words) == nil {
		return strings.Join(words, " ")
	}
	return ""
}

// fileChanges are a file_change's changes: a list of {path, kind}, or the
// older map of path to change.
func fileChanges(raw json.RawMessage) []FileChange {
	var list []FileChange
	if json.Unmarshal(raw, &list) == nil {
		return list
	}
	var byPath map[string]json.RawMessage
	if json.Unmarshal(raw, &byPath) != nil {
		return nil
	}
	for _, p := range slices.Sorted(maps.Keys(byPath)) {
		list = append(list, FileChange{Path: p, Kind: "update"})
	}
	return list
}
