package acp

import (
	"encoding/json"
	"errors"
	"testing"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/lanehq/lane/internal/approval"
	"github.com/lanehq/lane/internal/record"
)

func TestCallUsesClaudeCodesToolNames(t *testing.T) {
	empty := ""
	tests := []struct {
		name string
		tc   ToolCall
		want record.Call
	}{
		{"gemini's shell: the title is the command", ToolCall{Name: "run_shell_command", Kind: sdk.ToolKindExecute, Title: "git status"},
			record.Call{Tool: "Bash", Kind: record.CallShell, Command: "git status"}},
		{"opencode's shell: rawInput, its folder as a location", ToolCall{Name: "bash", Kind: sdk.ToolKindExecute, Title: "ls",
			Input: json.RawMessage(`{"command":"ls -la","cwd":"/p"}`), Locations: []string{"/p"}},
			record.Call{Tool: "Bash", Kind: record.CallShell, Command: "ls -la"}},
		{"a write by name", ToolCall{Name: "write_file", Kind: sdk.ToolKindEdit, Locations: []string{"/p/a.go"}},
			record.Call{Tool: "Write", Kind: record.CallWrite, Paths: []string{"/p/a.go"}}},
		{"a write by input", ToolCall{Name: "write", Kind: sdk.ToolKindEdit, Input: json.RawMessage(`{"filePath":"a.go","content":"x"}`)},
			record.Call{Tool: "Write", Kind: record.CallWrite, Paths: []string{"a.go"}}},
		{"a new file's diff", ToolCall{Name: "replace", Kind: sdk.ToolKindEdit, Locations: []string{"b.go"},
			Content: []sdk.ToolCallContent{{Diff: &sdk.ToolCallContentDiff{Path: "b.go", OldText: &empty, NewText: "x"}}}},
			record.Call{Tool: "Write", Kind: record.CallWrite, Paths: []string{"b.go"}}},
		{"an edit", ToolCall{Name: "edit", Kind: sdk.ToolKindEdit, Input: json.RawMessage(`{"filePath":"a.go","oldString":"x","newString":"y"}`)},
			record.Call{Tool: "Edit", Kind: record.CallEdit, Paths: []string{"a.go"}}},
		{"a delete is an edit", ToolCall{Name: "rm", Kind: sdk.ToolKindDelete, Locations: []string{"c.go"}},
			record.Call{Tool: "Edit", Kind: record.CallEdit, Paths: []string{"c.go"}}},
		{"a read", ToolCall{Name: "read_file", Kind: sdk.ToolKindRead, Input: json.RawMessage(`{"absolute_path":"/p/x"}`)},
			record.Call{Tool: "Read", Kind: record.CallRead, Paths: []string{"/p/x"}}},
		{"a glob", ToolCall{Name: "glob", Kind: sdk.ToolKindSearch}, record.Call{Tool: "Glob", Kind: record.CallSearch}},
		{"a grep", ToolCall{Name: "grep", Kind: sdk.ToolKindSearch, Input: json.RawMessage(`{"path":"src"}`)},
			record.Call{Tool: "Grep", Kind: record.CallSearch, Paths: []string{"src"}}},
		{"a fetch", ToolCall{Name: "webfetch", Kind: sdk.ToolKindFetch, Input: json.RawMessage(`{"url":"https://go.dev/x"}`)},
			record.Call{Tool: "WebFetch", Kind: record.CallFetch, URL: "https://go.dev/x"}},
		{"a search of the web", ToolCall{Name: "google_web_search", Kind: sdk.ToolKindFetch, Title: "golang acp"},
			record.Call{Tool: "WebSearch", Kind: record.CallFetch, URL: "golang acp"}},
		{"anything else keeps its name", ToolCall{Name: "todowrite", Kind: sdk.ToolKindOther},
			record.Call{Tool: "todowrite", Kind: record.CallOther}},
	}
	for _, tt := range tests {
		got := tt.tc.Call()
		if b, w := mustJSON(t, got), mustJSON(t, tt.want); b != w {
			t.Errorf("%s:\ngot  %s\nwant %s", tt.name, b, w)
		}
	}
	// The rules see them as Claude Code's calls.
	p := approval.NewPolicy(approval.ModeDefault, []approval.Rule{{Tool: "Bash", Pattern: "git status:*"}}, nil, []string{"/p"})
	if v, _ := p.Judge(tests[0].tc.Call()); v != approval.Allow {
		t.Errorf("Bash(git status:*) does not allow Gemini CLI's git status: %v", v)
	}
}

func mustJSON(t *testing.T, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestOutcomeAnswersWithTheAgentsOptions(t *testing.T) {
	gemini := []sdk.PermissionOption{
		{OptionId: "proceed_always", Kind: sdk.PermissionOptionKindAllowAlways},
		{OptionId: "proceed_once", Kind: sdk.PermissionOptionKindAllowOnce},
		{OptionId: "cancel", Kind: sdk.PermissionOptionKindRejectOnce},
	}
	onlyAlways := []sdk.PermissionOption{{OptionId: "yes", Kind: sdk.PermissionOptionKindAllowAlways}}
	tests := []struct {
		options []sdk.PermissionOption
		v       Verdict
		want    string // option id, "" for the cancelled outcome
	}{
		{gemini, Allow, "proceed_once"},
		{gemini, Reject, "cancel"},
		{gemini, Cancel, ""},
		{onlyAlways, Allow, "yes"},
		{onlyAlways, Reject, ""},
	}
	for _, tt := range tests {
		o := outcome(tt.options, tt.v)
		got := ""
		if o.Selected != nil {
			got = string(o.Selected.OptionId)
		}
		if got != tt.want || (tt.want == "") != (o.Cancelled != nil) {
			t.Errorf("verdict %d over %v: %+v, want %q", tt.v, tt.options, o, tt.want)
		}
	}
}

func TestErrorEventClassifies(t *testing.T) {
	tests := []struct {
		code    int
		message string
		data    string
		kind    record.ErrorKind
		status  int
	}{
		{401, `{"error":{"code":401,"message":"API key not valid.","status":"UNAUTHENTICATED"}}`, "", record.ErrorAuth, 401},
		{-32603, "Internal error", `{"details":"401 Incorrect API key provided."}`, record.ErrorAuth, 401},
		{-32603, "Internal error: Incorrect API key provided.", `{"errorName":"APIError"}`, record.ErrorAuth, 0},
		{-32603, "Internal error: Cannot connect to API: Unable to connect.", "", record.ErrorAPI, 0},
		{429, "Rate limit exceeded. Try again later.", "", record.ErrorAPI, 429},
		{-32602, "Session not found: x", "", record.ErrorAgent, 0},
	}
	for _, tt := range tests {
		ev := ErrorEvent(sdk.AgentMethodSessionPrompt, tt.code, tt.message, json.RawMessage(tt.data))
		status := 0
		if ev.Result != nil {
			status = ev.Result.APIErrorStatus
		}
		if ev.ErrorKind != tt.kind || status != tt.status {
			t.Errorf("%d %q %s: %s, status %d; want %s, %d", tt.code, tt.message, tt.data, ev.ErrorKind, status, tt.kind, tt.status)
		}
	}
}

func TestPlanIsATodoList(t *testing.T) {
	d := NewDecoder()
	d.Sent([]byte(`{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{}}`))
	evs := d.Received(1, []byte(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"plan","entries":[`+
		`{"content":"read","priority":"high","status":"completed"},{"content":"fix","priority":"high","status":"in_progress"},{"content":"test","priority":"low","status":"pending"}]}}}`))
	if len(evs) != 1 || evs[0].Kind != record.KindTodo || evs[0].Text != "[x] read\n[>] fix\n[ ] test\n(1/3 done)" {
		t.Errorf("%+v", evs)
	}
}

func TestThinkingThenTextAreTwoMessages(t *testing.T) {
	d := NewDecoder()
	chunk := func(kind, text string) []byte {
		return []byte(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"` + kind + `","content":{"type":"text","text":"` + text + `"}}}}`)
	}
	var evs []record.Event
	evs = append(evs, d.Received(1, chunk("agent_thought_chunk", "hm"))...)
	evs = append(evs, d.Received(2, chunk("agent_message_chunk", "Hel"))...)
	evs = append(evs, d.Received(3, chunk("agent_message_chunk", "lo"))...)
	evs = append(evs, d.Result(sdk.StopReasonEndTurn, nil))
	var kinds []record.Kind
	for _, ev := range evs {
		kinds = append(kinds, ev.Kind)
	}
	want := []record.Kind{record.KindDelta, record.KindThinking, record.KindDelta, record.KindDelta, record.KindResult}
	if mustJSON(t, kinds) != mustJSON(t, want) || evs[1].Text != "hm" {
		t.Errorf("kinds %v, thinking %q", kinds, evs[1].Text)
	}
}

func TestTallyJudges(t *testing.T) {
	result := func(stop sdk.StopReason, err error) record.Event { return NewDecoder().Result(stop, err) }
	authErr := record.Event{Kind: record.KindError, Line: 4, ErrorKind: record.ErrorAuth, Text: "API key not valid"}
	tests := []struct {
		name   string
		events []record.Event
		exit   int
		status record.Status
		kind   record.ErrorKind
	}{
		{"end_turn, exit 0", []record.Event{result(sdk.StopReasonEndTurn, nil)}, 0, record.StatusSucceeded, ""},
		{"end_turn, then a crash", []record.Event{result(sdk.StopReasonEndTurn, nil)}, 1, record.StatusFailed, record.ErrorCrash},
		{"no result", nil, 137, record.StatusFailed, record.ErrorCrash},
		{"a failed prompt", []record.Event{authErr, result("", &sdk.RequestError{Code: 401, Message: "API key not valid"})}, 0, record.StatusFailed, record.ErrorAuth},
		{"setup failed", []record.Event{result("", errors.New("initialize: peer disconnected"))}, 0, record.StatusFailed, record.ErrorAgent},
		{"interrupted, nothing followed", []record.Event{result(sdk.StopReasonCancelled, nil)}, 0, record.StatusCancelled, record.ErrorCancelled},
		{"its own request limit", []record.Event{result(sdk.StopReasonMaxTurnRequests, nil)}, 0, record.StatusFailed, record.ErrorTurnLimit},
		{"refusal", []record.Event{result(sdk.StopReasonRefusal, nil)}, 0, record.StatusFailed, record.ErrorAgent},
	}
	for _, tt := range tests {
		var tally Tally
		for _, ev := range tt.events {
			tally.Observe(ev)
		}
		v := tally.Judge(tt.exit)
		if v.Status != tt.status || v.ErrorKind != tt.kind {
			t.Errorf("%s: %s (%s: %s), want %s (%s)", tt.name, v.Status, v.ErrorKind, v.Message, tt.status, tt.kind)
		}
	}
}

func TestTallyCost(t *testing.T) {
	price := func(model string, u record.Usage) (float64, bool) {
		return float64(u.InputTokens) / 1e6, model == "m1"
	}
	var tally Tally
	tally.Model = "m1"
	tally.Observe(record.Event{Kind: record.KindUsage, Model: "$runtime|openai|m1(openai)", Usage: &record.Usage{InputTokens: 1000}})
	tally.Observe(record.Event{Kind: record.KindUsage, Model: "m1", Usage: &record.Usage{InputTokens: 2000}})
	if usd, est := tally.Cost(price); usd < 0.00299 || usd > 0.00301 || !est {
		t.Errorf("cost %v estimate %v, want 0.003 estimated (the agent's own name for the model priced as Model)", usd, est)
	}
	reported := 0.5
	tally.Observe(record.Event{Kind: record.KindResult, Result: &record.Result{TotalCostUSD: &reported}})
	if usd, est := tally.Cost(price); usd != 0.5 || est {
		t.Errorf("cost %v estimate %v, want the reported 0.5", usd, est)
	}
	if u := tally.Usage(); u.InputTokens != 3000 {
		t.Errorf("usage %+v", u)
	}
}
