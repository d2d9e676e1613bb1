package gemini

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/lanehq/lane/internal/record"
)

// tallyOf decodes a stream and feeds every event to a Tally.
func tallyOf(t *testing.T, data []byte) *Tally {
	t.Helper()
	var tally Tally
	for _, ev := range decodeAll(t, NewDecoder(bytes.NewReader(data))) {
		tally.Observe(ev)
	}
	return &tally
}

// indexExitCodes reads the exit code of each capture from INDEX.md.
func indexExitCodes(t *testing.T) map[string]int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(captureDir, "INDEX.md"))
	if err != nil {
		t.Fatal(err)
	}
	codes := map[string]int{}
	for _, m := range regexp.MustCompile(`case=(\S+) .*exit=(\d+)`).FindAllStringSubmatch(string(b), -1) {
		codes[m[1]], _ = strconv.Atoi(m[2])
	}
	return codes
}

// TestJudgeCaptures judges every capture with the exit code its run had.
func TestJudgeCaptures(t *testing.T) {
	type want struct {
		exit     int
		status   record.Status
		kind     record.ErrorKind
		message  string // a substring of the message
		hint     string // a substring of the hint
		contrary bool   // a contradiction is named
	}
	ok := func(exit int) want { return want{exit: exit, status: record.StatusSucceeded} }
	tests := map[string]want{
		"a_tool_then_text":  ok(0),
		"b_parallel_tools":  ok(0),
		"c_tool_error_bash": ok(0), // the agent saw the failure and went on
		"c_tool_error_read": ok(0),
		"d_http401": {exit: 145, status: record.StatusFailed, kind: record.ErrorAuth,
			message: "invalid x-api-key", hint: "GEMINI_API_KEY"},
		"e_flaky500_then_ok": ok(0),
		"e_http429": {exit: 173, status: record.StatusFailed, kind: record.ErrorAPI,
			message: "HTTP 429: [API Error: rate limited]", hint: "rate-limiting"},
		"e_http500": {exit: 244, status: record.StatusFailed, kind: record.ErrorAPI,
			message: "internal server error", hint: "retry later"},
		// Killed by the capture's timeout before any result: the runner
		// decides timeouts; Judge sees a crash.
		"e_http529": {exit: 124, status: record.StatusFailed, kind: record.ErrorCrash,
			message: "without a result line", hint: "stderr"},
		"g_resume_first":  ok(0),
		"g_resume_latest": ok(0),
		"g_resume_second": ok(0),
		// Gemini CLI's loop detection stopped the model; its result says
		// success, lane does not.
		"h_loop_detected_no_limit": {exit: 0, status: record.StatusFailed, kind: record.ErrorAgent,
			message: "Loop detected", hint: "repeating itself", contrary: true},
		"h_max_turns_1": {exit: 53, status: record.StatusFailed, kind: record.ErrorTurnLimit,
			message: "max session turns", hint: "maxSessionTurns"},
		"i_hang": {exit: 1, status: record.StatusFailed, kind: record.ErrorAPI,
			message: "fetch failed", hint: "GOOGLE_GEMINI_BASE_URL"},
		"i_hangmid": {exit: 124, status: record.StatusFailed, kind: record.ErrorCrash,
			message: "without a result line"},
		"j_subagent": ok(0),
		"x_http401_rep1": {exit: 145, status: record.StatusFailed, kind: record.ErrorAuth,
			message: "401", hint: "GEMINI_API_KEY"},
		"x_http401_rep2": {exit: 145, status: record.StatusFailed, kind: record.ErrorAuth,
			message: "401", hint: "GEMINI_API_KEY"},
		"x_model_flag_text": ok(0),
		"x_text_only":       ok(0),
	}
	codes := indexExitCodes(t)
	for _, name := range captures(t) {
		t.Run(name, func(t *testing.T) {
			w, found := tests[name]
			if !found {
				t.Fatalf("no expected verdict for capture %s", name)
			}
			if c, ok := codes[name]; !ok || c != w.exit {
				t.Fatalf("INDEX.md gives exit %d (found %v), the table %d", c, ok, w.exit)
			}
			v := tallyOf(t, readCapture(t, name)).Judge(w.exit)
			if v.Status != w.status || v.ErrorKind != w.kind {
				t.Fatalf("verdict %+v, want %s/%s", v, w.status, w.kind)
			}
			if !strings.Contains(v.Message, w.message) || !strings.Contains(v.Hint, w.hint) {
				t.Errorf("message %q hint %q, want %q and %q", v.Message, v.Hint, w.message, w.hint)
			}
			if (v.Contradiction != "") != w.contrary {
				t.Errorf("contradiction %q", v.Contradiction)
			}
			if w.status != record.StatusSucceeded && v.Message == "" {
				t.Error("a failure without a message")
			}
		})
	}
}

func TestJudgeExitCodes(t *testing.T) {
	const (
		success = `{"type":"result","status":"success","stats":{"input_tokens":1,"output_tokens":1}}`
		failure = `{"type":"result","status":"error","error":{"type":"unknown","message":"something broke"}}`
	)
	tests := []struct {
		name   string
		in     string
		exit   int
		status record.Status
		kind   record.ErrorKind
		text   string // in the message
		hint   string
		contra string
	}{
		{"auth not configured", "", 41, record.StatusFailed, record.ErrorAuth, "auth is not configured", "security.auth.selectedType", ""},
		{"529 overloaded", goodInit, 17, record.StatusFailed, record.ErrorAPI, "HTTP 529", "overloaded", ""},
		{"403", "", 147, record.StatusFailed, record.ErrorAuth, "HTTP 403", "GEMINI_API_KEY", ""},
		{"config", "", 52, record.StatusFailed, record.ErrorUsage, "configuration", "settings.json", ""},
		{"interrupted", goodInit, 130, record.StatusCancelled, record.ErrorCancelled, "interrupted", "", ""},
		{"no result, exit 0", goodInit, 0, record.StatusFailed, record.ErrorCrash, "code 0", "stderr", ""},
		{"success then a crash", success, 1, record.StatusFailed, record.ErrorCrash, "then exited with code 1", "stderr", "status=success but exit code 1"},
		{"error with exit 0", failure, 0, record.StatusFailed, record.ErrorAgent, "something broke", "", "exit code 0 but status=error"},
		{"error with a known exit", failure, 53, record.StatusFailed, record.ErrorTurnLimit, "something broke", "maxSessionTurns", ""},
		{"an error line of severity error", `{"type":"error","severity":"error","message":"gave up"}` + "\n" + success, 0,
			record.StatusFailed, record.ErrorAgent, "gave up", "", "status=success, exit code 0 but error line"},
		{"a warning alone", `{"type":"error","severity":"warning","message":"slow"}` + "\n" + success, 0,
			record.StatusSucceeded, "", "", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := tallyOf(t, []byte(tt.in)).Judge(tt.exit)
			if v.Status != tt.status || v.ErrorKind != tt.kind {
				t.Fatalf("verdict %+v, want %s/%s", v, tt.status, tt.kind)
			}
			if !strings.Contains(v.Message, tt.text) || !strings.Contains(v.Hint, tt.hint) || !strings.HasPrefix(v.Contradiction, tt.contra) {
				t.Errorf("verdict %+v", v)
			}
		})
	}
}

func TestTallyAccounts(t *testing.T) {
	price := func(model string, u record.Usage) (float64, bool) {
		per := map[string]float64{"gemini-3.8-flash": 1, "gemini-2.5-pro": 10}
		p, ok := per[model]
		return p * float64(u.InputTokens+u.OutputTokens+u.CacheReadTokens), ok
	}
	tests := []struct {
		name      string
		usage     record.Usage
		turns     int
		toolCalls int
		cost      float64
		estimate  bool
		text      string
	}{
		// "auto" routed to two models; only one has a price.
		{"a_tool_then_text", record.Usage{InputTokens: 150, OutputTokens: 60, CacheReadTokens: 150}, 2, 1, 240, true, "Done: wrote hello.txt"},
		{"b_parallel_tools", record.Usage{InputTokens: 150, OutputTokens: 60, CacheReadTokens: 150}, 2, 2, 240, true, "Both commands ran: one, two"},
		{"x_model_flag_text", record.Usage{InputTokens: 50, OutputTokens: 20, CacheReadTokens: 50}, 1, 0, 1200, true, "Hello from the mock model."},
		// The subagent's two calls show only in the result's count.
		{"j_subagent", record.Usage{InputTokens: 200, OutputTokens: 80, CacheReadTokens: 200}, 2, 3, 4800, true, "Main agent: subagent finished."},
		{"h_max_turns_1", record.Usage{InputTokens: 50, OutputTokens: 20, CacheReadTokens: 50}, 1, 1, 1200, true, ""},
		{"h_loop_detected_no_limit", record.Usage{InputTokens: 2100, OutputTokens: 840, CacheReadTokens: 2100}, 38, 38, 45600, true, ""},
		{"d_http401", record.Usage{}, 0, 0, 0, false, ""},
		{"i_hangmid", record.Usage{}, 0, 0, 0, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tally := tallyOf(t, readCapture(t, tt.name))
			if tally.SessionID() == "" {
				t.Error("no session id")
			}
			if u := tally.Usage(); u != tt.usage {
				t.Errorf("usage %+v, want %+v", u, tt.usage)
			}
			if n := tally.Turns(); n != tt.turns {
				t.Errorf("turns %d, want %d", n, tt.turns)
			}
			if n := tally.ToolCalls(); n != tt.toolCalls {
				t.Errorf("tool calls %d, want %d", n, tt.toolCalls)
			}
			if c, est := tally.Cost(price); c != tt.cost || est != tt.estimate {
				t.Errorf("cost %v (estimate %v), want %v (%v)", c, est, tt.cost, tt.estimate)
			}
			if s := tally.ResultText(); s != tt.text {
				t.Errorf("result text %q, want %q", s, tt.text)
			}
		})
	}
}

func TestTallyWithoutResult(t *testing.T) {
	in := goodInit + "\n" + goodText + "\n" +
		`{"type":"tool_use","tool_name":"run_shell_command","tool_id":"c1","parameters":{}}` + "\n" +
		`{"type":"tool_use","tool_name":"run_shell_command","parameters":{}}` + "\n"
	tally := tallyOf(t, []byte(in))
	if tally.SessionID() != "s" || tally.Turns() != 1 || tally.ToolCalls() != 2 || tally.ResultText() != "hi" || !tally.Usage().IsZero() {
		t.Fatalf("session %q turns %d calls %d text %q usage %+v",
			tally.SessionID(), tally.Turns(), tally.ToolCalls(), tally.ResultText(), tally.Usage())
	}
	if c, est := tally.Cost(nil); c != 0 || est {
		t.Fatalf("cost %v %v", c, est)
	}
}

func TestTallyCostWithoutModels(t *testing.T) {
	tally := tallyOf(t, []byte(goodInit+"\n"+goodResult))
	var asked string
	c, est := tally.Cost(func(m string, u record.Usage) (float64, bool) {
		asked = m
		return float64(u.InputTokens), true
	})
	if c != 2 || !est || asked != "gemini-2.5-pro" {
		t.Fatalf("cost %v %v, model %q", c, est, asked)
	}
}
