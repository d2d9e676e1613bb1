package qwen

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/lanehq/lane/internal/record"
)

// tallyOf feeds a capture's events to a Tally.
func tallyOf(t *testing.T, data []byte) *Tally {
	t.Helper()
	var tl Tally
	for _, ev := range decodeAll(t, NewDecoder(bytes.NewReader(data))) {
		tl.Observe(ev)
	}
	return &tl
}

// TestJudgeCaptures judges every capture with the exit code INDEX.md records
// for it.
func TestJudgeCaptures(t *testing.T) {
	tests := []struct {
		name     string
		exit     int
		status   record.Status
		kind     record.ErrorKind
		hint     string // a substring of the hint
		contra   bool   // a contradiction is reported
		msgMatch string // a substring of the message
	}{
		{name: "a_tool_then_text", exit: 0, status: record.StatusSucceeded},
		{name: "b_parallel_tools", exit: 0, status: record.StatusSucceeded},
		// The failing command's result says is_error false: the agent's
		// business, not a failed run.
		{name: "c_tool_error_bash", exit: 0, status: record.StatusSucceeded},
		{name: "c_tool_error_read", exit: 0, status: record.StatusSucceeded},
		{name: "d_http401", exit: 0, status: record.StatusFailed, kind: record.ErrorAuth, hint: "OPENAI_API_KEY", contra: true, msgMatch: "API Error: 401 invalid x-api-key"},
		{name: "e_flaky500_then_ok", exit: 0, status: record.StatusSucceeded},
		// Killed by the capture's timeout while Qwen Code retried 429 in silence.
		{name: "e_http429", exit: 124, status: record.StatusFailed, kind: record.ErrorCrash, hint: "429", msgMatch: "code 124"},
		{name: "e_http500", exit: 0, status: record.StatusFailed, kind: record.ErrorAPI, hint: "retries", contra: true, msgMatch: "500 internal server error"},
		{name: "f_partial_messages", exit: 0, status: record.StatusSucceeded},
		{name: "g_resume_first", exit: 0, status: record.StatusSucceeded},
		{name: "g_resume_second", exit: 0, status: record.StatusSucceeded},
		{name: "h_max_turns_1", exit: 53, status: record.StatusFailed, kind: record.ErrorTurnLimit, hint: "--max-session-turns"},
		{name: "i_hang", exit: 0, status: record.StatusFailed, kind: record.ErrorAPI, hint: "contentGenerator.timeout", contra: true, msgMatch: "Request timeout after 483s"},
		{name: "i_hangmid", exit: 124, status: record.StatusFailed, kind: record.ErrorCrash, msgMatch: "without a result line"},
		{name: "j_subagent", exit: 0, status: record.StatusSucceeded},
	}
	seen := map[string]bool{}
	for _, tt := range tests {
		seen[tt.name] = true
		t.Run(tt.name, func(t *testing.T) {
			v := tallyOf(t, readCapture(t, tt.name)).Judge(tt.exit)
			if v.Status != tt.status || v.ErrorKind != tt.kind {
				t.Fatalf("verdict = %s/%s (%q, hint %q), want %s/%s", v.Status, v.ErrorKind, v.Message, v.Hint, tt.status, tt.kind)
			}
			if !strings.Contains(v.Hint, tt.hint) {
				t.Errorf("hint = %q, want it to contain %q", v.Hint, tt.hint)
			}
			if !strings.Contains(v.Message, tt.msgMatch) {
				t.Errorf("message = %q, want it to contain %q", v.Message, tt.msgMatch)
			}
			if (v.Contradiction != "") != tt.contra {
				t.Errorf("contradiction = %q, want one: %t", v.Contradiction, tt.contra)
			}
			if tt.status == record.StatusFailed && v.Message == "" {
				t.Error("a failure without a message")
			}
		})
	}
	for _, name := range captures(t) {
		if !seen[name] {
			t.Errorf("capture %s is not judged", name)
		}
	}
}

func TestJudgeOther(t *testing.T) {
	const init = `{"type":"system","subtype":"init","session_id":"s","model":"mock-model"}`
	tests := []struct {
		name   string
		in     string
		exit   int
		status record.Status
		kind   record.ErrorKind
	}{
		{"success then a failing exit", init + "\n" + goodText + "\n" + goodResult + "\n", 1, record.StatusFailed, record.ErrorCrash},
		{"truncated result", init + "\n" + goodText + "\n" + goodResult[:40] + "\n", 0, record.StatusFailed, record.ErrorCrash},
		{"auth exit code without result", init + "\n", 41, record.StatusFailed, record.ErrorAuth},
		{"error result", init + "\n" + `{"type":"result","subtype":"error_during_execution","is_error":true,"num_turns":1,"result":"boom"}` + "\n", 1, record.StatusFailed, record.ErrorAgent},
		{"API error without result", init + "\n" + `{"type":"assistant","message":{"id":"m","content":[{"type":"text","text":"[API Error: 503 unavailable]"}]}}` + "\n", 1, record.StatusFailed, record.ErrorAPI},
		{"recovered after an API error", init + "\n" + `{"type":"assistant","message":{"id":"m","content":[{"type":"text","text":"[API Error: 503 unavailable]"}]}}` + "\n" + goodText + "\n" + goodResult + "\n", 0, record.StatusSucceeded, ""},
		{"a subagent's API error", init + "\n" + `{"type":"assistant","parent_tool_use_id":"call_1","message":{"id":"m","content":[{"type":"text","text":"[API Error: 500 x]"}]}}` + "\n" + goodText + "\n" + goodResult + "\n", 0, record.StatusSucceeded, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := tallyOf(t, []byte(tt.in)).Judge(tt.exit)
			if v.Status != tt.status || v.ErrorKind != tt.kind {
				t.Fatalf("verdict = %s/%s (%q, hint %q), want %s/%s", v.Status, v.ErrorKind, v.Message, v.Hint, tt.status, tt.kind)
			}
		})
	}
}

func TestTallyCounts(t *testing.T) {
	perCall := record.Usage{InputTokens: 100, OutputTokens: 20, CacheReadTokens: 50}
	times := func(n int64) record.Usage {
		return record.Usage{InputTokens: n * 100, OutputTokens: n * 20, CacheReadTokens: n * 50}
	}
	tests := []struct {
		name      string
		usage     record.Usage
		reported  record.Usage
		turns     int
		toolCalls int
		session   string
		result    string
	}{
		{"a_tool_then_text", times(2), times(2), 2, 1, "55052319-4540-411e-83d9-48ed1407be8e", "Done: wrote hello.txt"},
		// The text before the tool calls is a message of its own without usage.
		{"b_parallel_tools", times(2), times(2), 2, 2, "3794aefd-0bdb-4c0c-b235-9a85a4d9639f", "Both commands ran: one, two"},
		{"f_partial_messages", times(2), times(2), 2, 1, "ec28edc7-9bac-48b2-b396-c91dc7ce2190", "Done: wrote hello.txt"},
		// The result counts the session so far, earlier run included.
		{"g_resume_second", perCall, times(4), 1, 0, "d92472dd-0845-4652-9293-8e962e62072b", "I have seen 2 scenario prompts and 3 earlier assistant turns."},
		// The subagent's messages report no usage; the result has its tokens.
		{"j_subagent", times(2), times(4), 2, 2, "4b6a2614-ad08-413f-b020-bedb70301ce2", "Main agent: subagent finished."},
		{"d_http401", record.Usage{}, record.Usage{}, 1, 0, "d272b3bb-6124-4066-b43a-7baa3f08bc96", "[API Error: 401 invalid x-api-key]"},
		// No result: turns counted from the messages.
		{"h_max_turns_1", perCall, record.Usage{}, 1, 1, "af5789fd-cf60-4a7c-b731-75b979667865", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tl := tallyOf(t, readCapture(t, tt.name))
			if got := tl.Usage(); got != tt.usage {
				t.Errorf("Usage = %+v, want %+v", got, tt.usage)
			}
			if got, _ := tl.ReportedUsage(); got != tt.reported {
				t.Errorf("ReportedUsage = %+v, want %+v", got, tt.reported)
			}
			if got := tl.Turns(); got != tt.turns {
				t.Errorf("Turns = %d, want %d", got, tt.turns)
			}
			if got := tl.ToolCalls(); got != tt.toolCalls {
				t.Errorf("ToolCalls = %d, want %d", got, tt.toolCalls)
			}
			if got := tl.SessionID(); got != tt.session {
				t.Errorf("SessionID = %q, want %q", got, tt.session)
			}
			if got := tl.ResultText(); got != tt.result {
				t.Errorf("ResultText = %q, want %q", got, tt.result)
			}
		})
	}
}

func TestTallyCost(t *testing.T) {
	var models []string
	price := func(model string, u record.Usage) (float64, bool) {
		models = append(models, model)
		if model != "mock-model" {
			return 0, false
		}
		return float64(u.InputTokens)*1e-6 + float64(u.OutputTokens)*4e-6 + float64(u.CacheReadTokens)*0.1e-6, true
	}
	tl := tallyOf(t, readCapture(t, "a_tool_then_text"))
	usd, est := tl.Cost(price)
	if want := 2 * (100e-6 + 80e-6 + 5e-6); math.Abs(usd-want) > 1e-12 || !est {
		t.Errorf("Cost = %g, %t, want %g, true", usd, est, want)
	}
	if len(models) != 2 {
		t.Errorf("priced %d messages (%v), want 2", len(models), models)
	}

	// A failed call reports no usage: nothing to price, still an estimate.
	usd, est = tallyOf(t, readCapture(t, "d_http401")).Cost(price)
	if usd != 0 || !est {
		t.Errorf("401: Cost = %g, %t, want 0, true", usd, est)
	}

	// Should Qwen Code report a cost, it is taken as it is.
	in := goodText + "\n" + `{"type":"result","subtype":"success","is_error":false,"num_turns":1,"result":"hi","total_cost_usd":0.25}` + "\n"
	usd, est = tallyOf(t, []byte(in)).Cost(price)
	if usd != 0.25 || est {
		t.Errorf("reported: Cost = %g, %t, want 0.25, false", usd, est)
	}
}
