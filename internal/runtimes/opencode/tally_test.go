package opencode

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/lanehq/lane/internal/record"
)

// tallyOf decodes a stream and feeds every event to a Tally.
func tallyOf(t *testing.T, data []byte, maxSteps int) *Tally {
	t.Helper()
	tl := &Tally{Model: "mock/mock-model", MaxSteps: maxSteps}
	for _, ev := range decodeAll(t, NewDecoder(bytes.NewReader(data))) {
		tl.Observe(ev)
	}
	return tl
}

func TestTallyCaptures(t *testing.T) {
	step := record.Usage{InputTokens: 50, OutputTokens: 20, CacheReadTokens: 50}
	times := func(n int64) record.Usage {
		return record.Usage{InputTokens: n * step.InputTokens, OutputTokens: n * step.OutputTokens, CacheReadTokens: n * step.CacheReadTokens}
	}
	tests := []struct {
		name      string
		turns     int
		toolCalls int
		usage     record.Usage
		text      string
	}{
		{"a_tool_then_text", 2, 1, times(2), "Done: wrote hello.txt"},
		{"b_parallel_tools", 2, 2, times(2), "Both commands ran: one, two"},
		{"c_tool_error_bash", 2, 1, times(2), "The command failed as expected."},
		{"c_tool_error_read", 2, 1, times(2), "The file does not exist."},
		{"d_http401", 0, 0, record.Usage{}, ""},
		{"e_flaky500_then_ok", 2, 1, times(2), "Done: wrote hello.txt"},
		{"g_resume_second", 1, 0, times(1), "I have seen 2 scenario prompts and 2 earlier assistant turns."},
		{"h_max_steps_1_ignored_by_model_truncated", 5, 4, times(4), ""},
		{"j_subagent", 2, 1, times(2), "Main agent: subagent finished."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tl := tallyOf(t, readCapture(t, tt.name), 0)
			if got := tl.Turns(); got != tt.turns {
				t.Errorf("turns %d, want %d", got, tt.turns)
			}
			if got := tl.ToolCalls(); got != tt.toolCalls {
				t.Errorf("tool calls %d, want %d", got, tt.toolCalls)
			}
			if got := tl.Usage(); got != tt.usage {
				t.Errorf("usage %+v, want %+v", got, tt.usage)
			}
			if got := tl.ResultText(); got != tt.text {
				t.Errorf("result text %q, want %q", got, tt.text)
			}
			if !strings.HasPrefix(tl.SessionID(), "ses_") {
				t.Errorf("session id %q", tl.SessionID())
			}
			// Every finished step reported 0.000465; the price is never asked.
			usd, est := tl.Cost(func(string, record.Usage) (float64, bool) {
				t.Error("price asked although opencode reported a cost")
				return 0, false
			})
			steps := tt.usage.InputTokens / step.InputTokens
			if want := float64(steps) * 0.000465; est || math.Abs(usd-want) > 1e-12 {
				t.Errorf("cost %v (estimate %t), want %v", usd, est, want)
			}
		})
	}
}

func TestTallyResult(t *testing.T) {
	r := tallyOf(t, readCapture(t, "a_tool_then_text"), 0).Result()
	if r == nil || r.Subtype != "success" || r.IsError || r.NumTurns != 2 || r.StopReason != "stop" ||
		r.Text != "Done: wrote hello.txt" || r.RunCostUSD == nil || math.Abs(*r.RunCostUSD-0.00093) > 1e-12 ||
		r.Usage.InputTokens != 100 {
		t.Errorf("result %+v", r)
	}
	r = tallyOf(t, readCapture(t, "d_http401"), 0).Result()
	if r == nil || r.Subtype != "error" || !r.IsError || r.APIErrorStatus != 401 || len(r.Errors) != 1 || r.RunCostUSD != nil {
		t.Errorf("401 result %+v", r)
	}
	r = tallyOf(t, readCapture(t, "h_loop_unbounded_timeout_truncated"), 0).Result()
	if r == nil || r.Subtype != "error" || r.NumTurns != 18 {
		t.Errorf("cut-off loop result %+v", r)
	}
	if r := tallyOf(t, nil, 0).Result(); r != nil {
		t.Errorf("empty stream: result %+v, want nil", r)
	}
}

// TestTallyCountsStepsOnce checks that a repeated step_finish line, or a
// usage repeated for one message, is not counted twice.
func TestTallyCountsStepsOnce(t *testing.T) {
	in := goodStart + "\n" + goodFinish + "\n" + goodFinish + "\n"
	tl := tallyOf(t, []byte(in), 0)
	want := record.Usage{InputTokens: 1, OutputTokens: 5, CacheReadTokens: 4, CacheCreationTokens: 5}
	if got := tl.Usage(); got != want {
		t.Errorf("usage %+v, want %+v", got, want)
	}
	if usd, est := tl.Cost(nil); usd != 0.5 || est {
		t.Errorf("cost %v (estimate %t), want 0.5", usd, est)
	}
	if tl.Turns() != 1 {
		t.Errorf("turns %d, want 1", tl.Turns())
	}
}

func TestTallyCost(t *testing.T) {
	zero := strings.Replace(goodFinish, `"cost":0.5`, `"cost":0`, 1)
	none := strings.Replace(goodFinish, `,"cost":0.5`, ``, 1)
	price := func(model string, u record.Usage) (float64, bool) {
		if model != "mock/mock-model" {
			return 0, false
		}
		return float64(u.InputTokens+u.OutputTokens) / 100, true
	}
	noPrice := func(string, record.Usage) (float64, bool) { return 0, false }
	tests := []struct {
		name  string
		in    string
		price func(string, record.Usage) (float64, bool)
		usd   float64
		est   bool
	}{
		{"reported", goodStart + "\n" + goodFinish, price, 0.5, false},
		{"reported zero: estimated", goodStart + "\n" + zero, price, 0.06, true},
		{"not reported: estimated", goodStart + "\n" + none, price, 0.06, true},
		{"reported zero, no price", goodStart + "\n" + zero, noPrice, 0, false},
		{"reported zero, nil price", goodStart + "\n" + zero, nil, 0, false},
		{"no tokens", goodStart, price, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			usd, est := tallyOf(t, []byte(tt.in), 0).Cost(tt.price)
			if math.Abs(usd-tt.usd) > 1e-12 || est != tt.est {
				t.Errorf("cost %v (estimate %t), want %v (%t)", usd, est, tt.usd, tt.est)
			}
		})
	}
}

// TestJudge judges every capture with the exit code INDEX.md gives it.
func TestJudge(t *testing.T) {
	tests := []struct {
		name     string // capture, or "" for an empty stream
		exit     int
		maxSteps int
		status   record.Status
		kind     record.ErrorKind
		message  string // a substring of the message
		hint     string // a substring of the hint
	}{
		{name: "a_tool_then_text", status: record.StatusSucceeded},
		{name: "b_parallel_tools", status: record.StatusSucceeded},
		// The model saw the failed tool and finished: the run succeeded.
		{name: "c_tool_error_bash", status: record.StatusSucceeded},
		{name: "c_tool_error_read", status: record.StatusSucceeded},
		{name: "d_http401", exit: 1, status: record.StatusFailed, kind: record.ErrorAuth, message: "invalid x-api-key (HTTP 401)", hint: "apiKey"},
		{name: "e_flaky500_then_ok", status: record.StatusSucceeded},
		{name: "e_http500", exit: 1, status: record.StatusFailed, kind: record.ErrorAPI, message: "HTTP 500", hint: "retry later"},
		{name: "e_http529", exit: 1, status: record.StatusFailed, kind: record.ErrorAPI, message: "Overloaded (HTTP 529)", hint: "retry later"},
		{name: "g_continue_third", status: record.StatusSucceeded},
		{name: "g_resume_first", status: record.StatusSucceeded},
		{name: "g_resume_second", status: record.StatusSucceeded},
		{name: "h_loop_unbounded_timeout_truncated", exit: 124, status: record.StatusFailed, kind: record.ErrorCrash, message: "timeout (exit code 124) with a step in flight", hint: "still stepping"},
		// Without the limit lane gave, the stream alone shows no loop.
		{name: "h_max_steps_1_ignored_by_model_truncated", exit: 124, status: record.StatusFailed, kind: record.ErrorCrash, message: "timeout"},
		{name: "h_max_steps_1_ignored_by_model_truncated", exit: 124, maxSteps: 1, status: record.StatusFailed, kind: record.ErrorTurnLimit, message: "3 steps past opencode's limit of 1", hint: "advice"},
		{name: "h_max_steps_2_compliant", maxSteps: 2, status: record.StatusSucceeded},
		{name: "j_subagent", status: record.StatusSucceeded},
		// i_hang and i_hangmid printed nothing before the timeout killed them.
		{name: "", exit: 124, status: record.StatusFailed, kind: record.ErrorCrash, message: "before any step finished", hint: "20+ minutes"},
		{name: "", exit: 0, status: record.StatusFailed, kind: record.ErrorCrash, message: "without finishing a step"},
		// A clean stream and a failing exit code disagree.
		{name: "a_tool_then_text", exit: 1, status: record.StatusFailed, kind: record.ErrorCrash, message: "exited with code 1 after 2 steps"},
	}
	for _, tt := range tests {
		name := tt.name
		if name == "" {
			name = "empty"
		}
		t.Run(name, func(t *testing.T) {
			var data []byte
			if tt.name != "" {
				data = readCapture(t, tt.name)
			}
			v := tallyOf(t, data, tt.maxSteps).Judge(tt.exit)
			if v.Status != tt.status || v.ErrorKind != tt.kind {
				t.Fatalf("verdict %+v, want %s/%s", v, tt.status, tt.kind)
			}
			if !strings.Contains(v.Message, tt.message) {
				t.Errorf("message %q, want it to contain %q", v.Message, tt.message)
			}
			if !strings.Contains(v.Hint, tt.hint) {
				t.Errorf("hint %q, want it to contain %q", v.Hint, tt.hint)
			}
			if tt.status == record.StatusSucceeded && (v.Message != "" || v.Hint != "") {
				t.Errorf("a success with message %q, hint %q", v.Message, v.Hint)
			}
		})
	}
}

func TestJudgeSynthetic(t *testing.T) {
	toolStop := strings.Replace(goodFinish, `"reason":"stop"`, `"reason":"tool-calls"`, 1)
	errLine := `{"type":"error","sessionID":"s","error":{"name":"APIError","data":{"message":"slow down","statusCode":429,"isRetryable":true}}}`
	tests := []struct {
		name          string
		in            string
		exit          int
		kind          record.ErrorKind
		message, hint string
		contradiction bool
	}{
		{"last step not stop", goodStart + "\n" + toolStop, 0, record.ErrorAgent, "reason tool-calls", "", false},
		{"a step left open", goodStart + "\n" + goodFinish + "\n" + goodStart, 0, record.ErrorCrash, "step still in flight", "", false},
		{"an error with exit 0", goodStart + "\n" + goodFinish + "\n" + errLine, 0, record.ErrorAPI, "slow down", "rate-limiting", true},
		{"stop then exit 1", goodStart + "\n" + goodFinish, 1, record.ErrorCrash, "code 1", "stderr", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := tallyOf(t, []byte(tt.in), 0).Judge(tt.exit)
			if v.Status != record.StatusFailed || v.ErrorKind != tt.kind {
				t.Fatalf("verdict %+v, want failed/%s", v, tt.kind)
			}
			if !strings.Contains(v.Message, tt.message) || !strings.Contains(v.Hint, tt.hint) {
				t.Errorf("verdict %+v, want message ~%q hint ~%q", v, tt.message, tt.hint)
			}
			if (v.Contradiction != "") != tt.contradiction {
				t.Errorf("contradiction %q, want one: %t", v.Contradiction, tt.contradiction)
			}
		})
	}
}
