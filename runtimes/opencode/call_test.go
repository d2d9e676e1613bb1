package opencode

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
		{"bash", `{"command":"go test ./...","description":"test"}`, trace.Call{Kind: trace.CallShell, Tool: "Bash", Command: "go test ./..."}},
		{"read", `{"filePath":"/p/a.go"}`, trace.Call{Kind: trace.CallRead, Tool: "Read", Paths: []string{"/p/a.go"}}},
		{"write", `{"filePath":"/p/b.go","content":"x"}`, trace.Call{Kind: trace.CallWrite, Tool: "Write", Paths: []string{"/p/b.go"}}},
		{"edit", `{"filePath":"/p/a.go","oldString":"x","newString":"y"}`, trace.Call{Kind: trace.CallEdit, Tool: "Edit", Paths: []string{"/p/a.go"}}},
		{"patch", `{"patchText":"*** Begin Patch\n*** Add File: c.go\n+x\n*** End Patch"}`, trace.Call{Kind: trace.CallEdit, Tool: "Edit", Paths: []string{"c.go"}}},
		{"grep", `{"pattern":"func","path":"cmd"}`, trace.Call{Kind: trace.CallSearch, Tool: "Grep", Target: "func", Paths: []string{"cmd"}}},
		{"webfetch", `{"url":"https://go.dev"}`, trace.Call{Kind: trace.CallFetch, Tool: "WebFetch", URL: "https://go.dev"}},
		{"task", `{"description":"explore","subagent_type":"general"}`, trace.Call{Kind: trace.CallTask, Tool: "task", Target: "explore (general)"}},
		{"todowrite", `{"todos":[{},{},{}]}`, trace.Call{Kind: trace.CallOther, Tool: "todowrite", Target: "3 todos"}},
	} {
		if got := Call(tc.tool, json.RawMessage(tc.input)); !reflect.DeepEqual(*got, tc.want) {
			t.Errorf("Call(%s, %s) = %+v, want %+v", tc.tool, tc.input, *got, tc.want)
		}
	}
	if code, ok := ACPExitCode(map[string]any{"metadata": map[string]any{"exit": 2.0}}, ""); !ok || code != 2 {
		t.Errorf("ACPExitCode of metadata.exit 2 = %d, %v", code, ok)
	}
	if _, ok := ACPExitCode(map[string]any{}, "Exit Code: 1"); ok {
		t.Error("ACPExitCode read the output text: that is Gemini CLI's way, not opencode's")
	}
}
