package qwen

import (
	"encoding/json"
	"reflect"
	"testing"

	"lane/trace"
)

func TestCall(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		tool, input string
		want        trace.Call
	}{
		{"run_shell_command", `{"command":"ls"}`, trace.Call{Kind: trace.CallShell, Tool: "Bash", Command: "ls"}}, // Gemini CLI's
		{"edit", `{"file_path":"/p/a.go","old_string":"x","new_string":"y"}`, trace.Call{Kind: trace.CallEdit, Tool: "Edit", Paths: []string{"/p/a.go"}}},
		{"grep_search", `{"pattern":"TODO","path":"src"}`, trace.Call{Kind: trace.CallSearch, Tool: "Grep", Target: "TODO", Paths: []string{"src"}}},
		{"web_search", `{"query":"qwen"}`, trace.Call{Kind: trace.CallFetch, Tool: "WebSearch", URL: "qwen"}},
		{"agent", `{"description":"look","subagent_type":"explore"}`, trace.Call{Kind: trace.CallTask, Tool: "agent", Target: "look (explore)"}},
		{"todo_write", `{"todos":[{}]}`, trace.Call{Kind: trace.CallOther, Tool: "todo_write", Target: "1 todo"}},
		{"skill", `{"skill":"release"}`, trace.Call{Kind: trace.CallOther, Tool: "skill", Target: "release"}},
	} {
		if got := Call(tc.tool, json.RawMessage(tc.input)); !reflect.DeepEqual(*got, tc.want) {
			t.Errorf("Call(%s, %s) = %+v, want %+v", tc.tool, tc.input, *got, tc.want)
		}
	}
}
