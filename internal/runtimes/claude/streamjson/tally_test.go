package streamjson

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/lanehq/lane/internal/record"
)

func tallyOf(t *testing.T, data []byte) *Tally {
	t.Helper()
	var tl Tally
	for _, ev := range decodeAll(t, NewDecoder(bytes.NewReader(data))) {
		tl.Observe(ev)
	}
	return &tl
}

// flatPrice prices every token at $1 per million, any model.
func flatPrice(model string, u record.Usage) (float64, bool) {
	return float64(u.InputTokens+u.OutputTokens+u.CacheReadTokens+u.CacheCreationTokens) / 1e6, true
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-12 }

func TestTallyFixtures(t *testing.T) {
	// killed: the fixture was recorded until lane killed claude.
	const killed = -1
	type want struct {
		exit          int
		status        record.Status
		kind          record.ErrorKind
		contradiction string // a substring; "" means none
		hint          string // a substring
		message       string // a substring
		usage         record.Usage
		turns, tools  int
		results       int
		cost, total   float64
		estimate      bool
		session       string
	}
	ok := func(u record.Usage, turns, tools int, cost float64) want {
		return want{status: record.StatusSucceeded, usage: u, turns: turns, tools: tools, results: 1, cost: cost, total: cost}
	}
	u2 := record.Usage{InputTokens: 200, OutputTokens: 40, CacheReadTokens: 100}
	u1 := record.Usage{InputTokens: 100, OutputTokens: 20, CacheReadTokens: 50}
	apiFail := func(exit int, hint string) want {
		return want{exit: exit, status: record.StatusFailed, kind: record.ErrorAPI, hint: hint, turns: 1, results: 1,
			contradiction: "subtype=success but is_error=true, terminal_reason=api_error"}
	}
	crash := want{exit: killed, status: record.StatusFailed, kind: record.ErrorCrash, message: "exited (code -1) without a result line"}

	tests := map[string]want{
		"a_tool_then_text":  ok(u2, 2, 1, 0.00081),
		"b_parallel_tools":  ok(u2, 3, 2, 0.00081),
		"c_tool_error_bash": ok(u2, 2, 1, 0.00081),
		"c_tool_error_read": ok(u2, 2, 1, 0.00081),
		"d_http401": {exit: 1, status: record.StatusFailed, kind: record.ErrorAuth, turns: 1, results: 1,
			contradiction: "subtype=success but is_error=true, terminal_reason=api_error, api_error_status=401, exit code 1",
			hint:          "ANTHROPIC_API_KEY", message: "Invalid API key"},
		"d_http401_retries0": {exit: 1, status: record.StatusFailed, kind: record.ErrorAuth, turns: 1, results: 1,
			contradiction: "subtype=success but is_error=true", hint: "claude /login", message: "Invalid API key"},
		"e_flaky500_then_ok":    ok(u2, 2, 1, 0.00081),
		"e_http500_default":     apiFail(1, "retried 10 times"),
		"e_http500_retries2":    apiFail(1, "retried 2 times"),
		"e_http529_default":     apiFail(1, "overloaded"),
		"e_http529_retries2":    apiFail(1, "overloaded"),
		"f_partial_messages":    ok(u2, 2, 1, 0.00081),
		"g_continue_third":      {status: record.StatusSucceeded, usage: u1, turns: 1, results: 1, cost: 0.000405, total: 0.00162},
		"g_resume_first":        ok(u2, 2, 1, 0.00081),
		"g_resume_second":       {status: record.StatusSucceeded, usage: u1, turns: 1, results: 1, cost: 0.000405, total: 0.001215},
		"g_resume_unknown_id":   {exit: 1, status: record.StatusFailed, kind: record.ErrorAgent, results: 1, hint: "not in Claude Code's history", message: "No conversation found with session ID", session: "00000000-0000-0000-0000-000000000000"},
		"h_max_turns_1":         {exit: 1, status: record.StatusFailed, kind: record.ErrorTurnLimit, hint: "raise --max-turns", message: "Reached maximum number of turns (1)", usage: u1, turns: 2, tools: 1, results: 1, cost: 0.000405, total: 0.000405},
		"i_hang_default":        crash,
		"i_hang_timeout20s":     apiFail(1, "did not answer in time"),
		"i_hangmid_default":     crash,
		"i_hangmid_idle15s":     crash,
		"i_hangmid_timeout20s":  apiFail(1, "API_TIMEOUT_MS"),
		"i_hangmid_watchdog15s": crash,
		"j_subagent": {status: record.StatusSucceeded, usage: record.Usage{InputTokens: 300, OutputTokens: 60, CacheReadTokens: 150},
			turns: 3, tools: 2, results: 2, cost: 0.002025, total: 0.002025},
		"j_subagent_foreground": ok(u2, 2, 2, 0.00162),
		"l_rate_limit_rejected": {exit: 1, status: record.StatusFailed, kind: record.ErrorRateLimited, turns: 1, results: 1,
			message: "the five_hour usage limit refused the request; it resets at 2026-12-04 03:34 UTC", hint: "lane limits"},
		"m_conversation_reset":    {status: record.StatusSucceeded, usage: u2, turns: 2, results: 3, cost: 0.00162, total: 0.00081},
		"l_rate_limit_warning":    ok(u2, 2, 1, 0.00081),
		"k_long_bash_task_events": ok(record.Usage{InputTokens: 2000, OutputTokens: 100, CacheReadTokens: 400, CacheCreationTokens: 200}, 2, 1, 0.00554),
	}
	// Two-way runs (runner's interactive tests): a follow-up is a turn and a
	// result of its own, summed; an interrupted turn's result does not
	// decide when another follows it.
	u4 := record.Usage{InputTokens: 400, OutputTokens: 80, CacheReadTokens: 200}
	twoResults := func(turns, tools int, cost, total float64) want {
		return want{status: record.StatusSucceeded, usage: u2, turns: turns, tools: tools, results: 2, cost: cost, total: total}
	}
	tests["dialog_approve"] = ok(u2, 2, 1, 0.00081)
	tests["dialog_deny"] = ok(u2, 2, 1, 0.00081)
	tests["dialog_always"] = ok(u4, 4, 3, 0.00162)
	tests["dialog_message_during_tool"] = ok(u2, 2, 1, 0.00081)
	tests["dialog_message_end_of_turn"] = twoResults(2, 0, 0.00081, 0.00081)
	// Claude Code counts an interrupted turn of one model call as 3 in its
	// num_turns (the call, the refused tool, the interruption).
	tests["dialog_interrupt_follow_up"] = twoResults(4, 1, 0.00081, 0.00081)
	tests["dialog_interrupt_while_asking"] = twoResults(4, 1, 0.00081, 0.00081)
	tests["dialog_message_now"] = twoResults(4, 1, 0.00081, 0.00081)
	tests["i_hangmid_timeout20s"] = func() want {
		w := apiFail(1, "API_TIMEOUT_MS")
		w.usage = record.Usage{InputTokens: 1, OutputTokens: 1}
		w.cost, w.total = 1.2e-5, 1.2e-5
		return w
	}()

	names := fixtures(t)
	if len(names) != len(tests) {
		t.Errorf("%d fixtures, %d cases", len(names), len(tests))
	}
	for _, name := range names {
		w, found := tests[name]
		if !found {
			t.Errorf("%s: no case", name)
			continue
		}
		t.Run(name, func(t *testing.T) {
			tl := tallyOf(t, readFixture(t, name))
			v := tl.Judge(w.exit)
			if v.Status != w.status || v.ErrorKind != w.kind {
				t.Errorf("verdict %s/%s, want %s/%s (%+v)", v.Status, v.ErrorKind, w.status, w.kind, v)
			}
			if (w.contradiction == "") != (v.Contradiction == "") || !strings.Contains(v.Contradiction, w.contradiction) {
				t.Errorf("contradiction %q, want %q", v.Contradiction, w.contradiction)
			}
			if !strings.Contains(v.Hint, w.hint) || !strings.Contains(v.Message, w.message) {
				t.Errorf("message %q hint %q, want %q / %q", v.Message, v.Hint, w.message, w.hint)
			}
			if v.Status == record.StatusFailed && (v.Message == "" || v.ErrorKind == "") {
				t.Errorf("a failure without message or kind: %+v", v)
			}
			if got := tl.Usage(); got != w.usage {
				t.Errorf("usage %+v, want %+v", got, w.usage)
			}
			if tl.Turns() != w.turns || tl.ToolCalls() != w.tools || tl.Results() != w.results {
				t.Errorf("turns/tools/results %d/%d/%d, want %d/%d/%d", tl.Turns(), tl.ToolCalls(), tl.Results(), w.turns, w.tools, w.results)
			}
			cost, est, total := tl.Cost(0, flatPrice)
			if !near(cost, w.cost) || est != w.estimate || !near(total, w.total) {
				t.Errorf("cost %v estimate %v total %v, want %v %v %v", cost, est, total, w.cost, w.estimate, w.total)
			}
			if w.session != "" && tl.SessionID() != w.session {
				t.Errorf("session %q, want %q", tl.SessionID(), w.session)
			}
			if (tl.LastResult() == nil) != (w.results == 0) {
				t.Errorf("LastResult %v with %d results", tl.LastResult(), w.results)
			}
		})
	}
}

func TestTallySubagentUsage(t *testing.T) {
	tl := tallyOf(t, readFixture(t, "j_subagent"))
	got := tl.SubagentUsage()
	want := record.Usage{InputTokens: 200, OutputTokens: 2, CacheReadTokens: 100}
	if len(got) != 1 || got["toolu_call_1"] != want {
		t.Errorf("SubagentUsage %+v, want toolu_call_1: %+v", got, want)
	}
	if tl.SessionID() != "da681463-1021-437a-b1d3-f43a52519eaa" {
		t.Errorf("session %q", tl.SessionID())
	}
	if u := tallyOf(t, readFixture(t, "a_tool_then_text")).SubagentUsage(); u != nil {
		t.Errorf("SubagentUsage without subagents: %+v", u)
	}
}

// withoutResults drops the result lines of a fixture, as when claude is killed.
func withoutResults(data []byte) []byte {
	var out [][]byte
	for _, l := range bytes.Split(data, []byte("\n")) {
		if !bytes.Contains(l, []byte(`"type":"result"`)) {
			out = append(out, l)
		}
	}
	return bytes.Join(out, []byte("\n"))
}

func TestTallyWithoutResult(t *testing.T) {
	// b_parallel_tools repeats message msg_5e16… on three lines: counted once.
	tl := tallyOf(t, withoutResults(readFixture(t, "b_parallel_tools")))
	want := record.Usage{InputTokens: 200, OutputTokens: 2, CacheReadTokens: 100}
	if got := tl.Usage(); got != want {
		t.Errorf("usage %+v, want %+v", got, want)
	}
	if tl.Turns() != 2 || tl.ToolCalls() != 2 {
		t.Errorf("turns %d tools %d, want 2 2", tl.Turns(), tl.ToolCalls())
	}
	var models []string
	price := func(model string, u record.Usage) (float64, bool) {
		models = append(models, model)
		return flatPrice(model, u)
	}
	cost, est, total := tl.Cost(5, price)
	if !near(cost, 302e-6) || !est || total != 0 {
		t.Errorf("cost %v estimate %v total %v, want 0.000302 true 0", cost, est, total)
	}
	if strings.Join(models, ",") != "claude-sonnet-5-5,claude-sonnet-5-5" {
		t.Errorf("priced models %q", models)
	}
	if v := tl.Judge(0); v.ErrorKind != record.ErrorCrash || v.Status != record.StatusFailed {
		t.Errorf("verdict %+v, want a crash", v)
	}

	// Subagent messages count in the total, once each.
	tl = tallyOf(t, withoutResults(readFixture(t, "j_subagent")))
	if got := tl.Usage(); got.InputTokens != 500 || got.OutputTokens != 5 {
		t.Errorf("j_subagent usage %+v, want 500 in, 5 out", got)
	}
	if tl.Turns() != 3 {
		t.Errorf("j_subagent turns %d, want 3 main-agent messages", tl.Turns())
	}
}

func f64(v float64) *float64 { return &v }

func TestTallyCost(t *testing.T) {
	res := func(run, total *float64) record.Event {
		return record.Event{Kind: record.KindResult, Result: &record.Result{Subtype: "success", RunCostUSD: run, TotalCostUSD: total, NumTurns: 1}}
	}
	usage := func(id, model string, in int64) record.Event {
		return record.Event{Kind: record.KindUsage, MessageID: id, Model: model, Usage: &record.Usage{InputTokens: in}}
	}
	session := record.Event{Kind: record.KindSession, SessionID: "s", Model: "session-model"}
	perModel := func(model string, u record.Usage) (float64, bool) {
		switch model {
		case "a":
			return float64(u.InputTokens), true
		case "session-model":
			return 10 * float64(u.InputTokens), true
		}
		return 0, false
	}
	tests := []struct {
		name        string
		evs         []record.Event
		prior       float64
		price       func(string, record.Usage) (float64, bool)
		cost, total float64
		estimate    bool
	}{
		{name: "run costs are summed", evs: []record.Event{res(f64(0.25), f64(1)), res(f64(0.5), f64(1.5))}, prior: 9, cost: 0.75, total: 1.5},
		{name: "an empty run cost is 0", evs: []record.Event{res(f64(0), f64(2))}, prior: 1, cost: 0, total: 2},
		{name: "total less prior", evs: []record.Event{res(nil, f64(0.5))}, prior: 0.2, cost: 0.3, total: 0.5},
		{name: "total below prior clamps", evs: []record.Event{res(nil, f64(0.5))}, prior: 0.7, cost: 0, total: 0.5},
		{name: "the last total counts", evs: []record.Event{res(nil, f64(0.5)), res(nil, nil), res(nil, f64(0.9))}, cost: 0.9, total: 0.9},
		{
			name:  "estimate, repeated ids once, max per field, session model as fallback",
			evs:   []record.Event{session, usage("m1", "a", 3), usage("m1", "a", 5), usage("m1", "a", 4), usage("m2", "", 2), usage("m3", "unknown", 100)},
			price: perModel, cost: 5 + 20, estimate: true,
		},
		{name: "estimate without a price function", evs: []record.Event{usage("m1", "a", 3)}, cost: 0, estimate: true},
		{name: "nothing at all", cost: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var tl Tally
			for _, ev := range tt.evs {
				tl.Observe(ev)
			}
			cost, est, total := tl.Cost(tt.prior, tt.price)
			if !near(cost, tt.cost) || est != tt.estimate || !near(total, tt.total) {
				t.Errorf("Cost = %v, %v, %v; want %v, %v, %v", cost, est, total, tt.cost, tt.estimate, tt.total)
			}
		})
	}
}

func TestJudge(t *testing.T) {
	type res = record.Result
	authErr := record.Event{Kind: record.KindError, MessageID: "x", ErrorKind: record.ErrorAuth, Text: "Invalid API key"}
	tests := []struct {
		name          string
		before        []record.Event
		r             *res // nil: no result line
		exit          int
		status        record.Status
		kind          record.ErrorKind
		contradiction string // exact; "*" for any
		message, hint string // substrings
	}{
		{name: "plain success", r: &res{Subtype: "success", TerminalReason: "completed", NumTurns: 2}, status: record.StatusSucceeded},
		{name: "success without terminal_reason", r: &res{Subtype: "success", NumTurns: 1}, status: record.StatusSucceeded},
		{name: "success but no turn", r: &res{Subtype: "success", TerminalReason: "completed", Text: ""}, kind: record.ErrorContradiction,
			contradiction: "subtype=success, is_error=false, terminal_reason=completed, exit code 0 but num_turns=0", message: "without taking a turn"},
		{name: "success then a failing exit", r: &res{Subtype: "success", TerminalReason: "completed", NumTurns: 3, Text: "done"}, exit: 1, kind: record.ErrorCrash,
			contradiction: "subtype=success, is_error=false, terminal_reason=completed but exit code 1", message: "done", hint: "stderr"},
		{name: "success and is_error with exit 0", r: &res{Subtype: "success", IsError: true, TerminalReason: "api_error", APIErrorStatus: 401, NumTurns: 1}, kind: record.ErrorAuth,
			contradiction: "subtype=success, exit code 0 but is_error=true, terminal_reason=api_error, api_error_status=401", message: "HTTP 401", hint: "ANTHROPIC_API_KEY"},
		{name: "403", r: &res{Subtype: "success", IsError: true, TerminalReason: "api_error", APIErrorStatus: 403, NumTurns: 1}, exit: 1, contradiction: "*", kind: record.ErrorAuth},
		{name: "auth known from the synthetic message only", before: []record.Event{authErr}, r: &res{Subtype: "success", IsError: true, TerminalReason: "api_error", NumTurns: 1}, exit: 1, contradiction: "*", kind: record.ErrorAuth},
		{name: "429", r: &res{Subtype: "success", IsError: true, TerminalReason: "api_error", APIErrorStatus: 429, NumTurns: 1}, exit: 1, contradiction: "*", kind: record.ErrorAPI, hint: "rate-limiting"},
		{name: "529", r: &res{Subtype: "success", IsError: true, TerminalReason: "api_error", APIErrorStatus: 529, NumTurns: 1}, exit: 1, contradiction: "*", kind: record.ErrorAPI, hint: "overloaded"},
		{name: "api timeout", r: &res{Subtype: "success", IsError: true, TerminalReason: "api_error", NumTurns: 1}, exit: 1, contradiction: "*", kind: record.ErrorAPI, hint: "did not answer in time"},
		{name: "400 is the agent's", r: &res{Subtype: "success", IsError: true, TerminalReason: "api_error", APIErrorStatus: 400, NumTurns: 1, Text: "prompt is too long"}, exit: 1, contradiction: "*", kind: record.ErrorAgent, message: "prompt is too long"},
		{name: "max turns without errors or text", r: &res{Subtype: "error_max_turns", IsError: true, NumTurns: 5}, exit: 1, kind: record.ErrorTurnLimit, message: "maximum number of turns", hint: "raise --max-turns"},
		{name: "max turns by terminal_reason", r: &res{Subtype: "error_during_execution", IsError: true, TerminalReason: "max_turns", NumTurns: 5, Errors: []string{"limit"}}, exit: 1, kind: record.ErrorTurnLimit, message: "limit"},
		{name: "max turns that says is_error=false", r: &res{Subtype: "error_max_turns", TerminalReason: "max_turns", NumTurns: 5}, exit: 1, kind: record.ErrorTurnLimit,
			contradiction: "is_error=false but subtype=error_max_turns, terminal_reason=max_turns, exit code 1"},
		{name: "unknown session", r: &res{Subtype: "error_during_execution", IsError: true, Errors: []string{"No conversation found with session ID: x"}}, exit: 1, kind: record.ErrorAgent, hint: "history"},
		{name: "errors joined", r: &res{Subtype: "error_during_execution", IsError: true, NumTurns: 2, Errors: []string{"boom", "bang"}, Text: "ignored"}, exit: 1, kind: record.ErrorAgent, message: "boom; bang"},
		{name: "generic error", r: &res{Subtype: "error_during_execution", IsError: true, NumTurns: 2}, exit: 1, kind: record.ErrorAgent, message: "subtype error_during_execution"},
		{name: "no subtype", r: &res{TerminalReason: "completed", NumTurns: 1}, kind: record.ErrorContradiction,
			contradiction: "is_error=false, terminal_reason=completed, exit code 0 but no subtype"},
		{name: "errors on a success", r: &res{Subtype: "success", NumTurns: 1, Errors: []string{"odd"}}, kind: record.ErrorAgent, message: "odd",
			contradiction: "subtype=success, is_error=false, exit code 0 but errors present"},
		{name: "no result", exit: 2, kind: record.ErrorCrash, message: "the runtime exited (code 2) without a result line"},
		{name: "no result, exit 0", exit: 0, kind: record.ErrorCrash, message: "(code 0)"},
		{name: "the last result decides", before: []record.Event{{Kind: record.KindResult, Result: &res{Subtype: "error_max_turns", IsError: true}}},
			r: &res{Subtype: "success", NumTurns: 1}, status: record.StatusSucceeded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var tl Tally
			for _, ev := range tt.before {
				tl.Observe(ev)
			}
			if tt.r != nil {
				tl.Observe(record.Event{Kind: record.KindResult, Result: tt.r})
			}
			v := tl.Judge(tt.exit)
			wantStatus := tt.status
			if wantStatus == "" {
				wantStatus = record.StatusFailed
			}
			if v.Status != wantStatus || v.ErrorKind != tt.kind {
				t.Errorf("verdict %s/%s, want %s/%s (%+v)", v.Status, v.ErrorKind, wantStatus, tt.kind, v)
			}
			if v.Contradiction != tt.contradiction && !(tt.contradiction == "*" && v.Contradiction != "") {
				t.Errorf("contradiction %q, want %q", v.Contradiction, tt.contradiction)
			}
			if !strings.Contains(v.Message, tt.message) || !strings.Contains(v.Hint, tt.hint) {
				t.Errorf("message %q hint %q, want %q / %q", v.Message, v.Hint, tt.message, tt.hint)
			}
			if v.Status == record.StatusSucceeded && (v.Message != "" || v.ErrorKind != "" || v.Contradiction != "") {
				t.Errorf("a success with remarks: %+v", v)
			}
		})
	}
}

// The split of cache writes between the 5-minute and the 1-hour cache is
// read live, from the messages and from the result, as the importer reads
// it from the transcript.
func TestTallyKeepsTheOneHourCacheWrites(t *testing.T) {
	t.Parallel()
	usage := `"usage":{"input_tokens":10,"output_tokens":5,"cache_creation_input_tokens":1000,"cache_creation":{"ephemeral_5m_input_tokens":400,"ephemeral_1h_input_tokens":600}}`
	for name, stream := range map[string]string{
		"messages": `{"type":"assistant","message":{"id":"m1","model":"claude-sonnet-4-5","content":[{"type":"text","text":"hi"}],` + usage + `}}` + "\n",
		"result":   `{"type":"result","subtype":"success","is_error":false,"num_turns":1,"total_cost_usd":0.01,` + usage + `}` + "\n",
	} {
		tl := tallyOf(t, []byte(stream))
		if u := tl.Usage(); u.CacheCreationTokens != 1000 || u.CacheCreation1hTokens != 600 {
			t.Errorf("%s: usage %+v, want 1000 cache writes, 600 of them for an hour", name, u)
		}
	}
}

// A conversation_reset (/clear in a two-way run) starts Claude Code's
// session totals again: the run's cost adds each conversation's, and never
// goes below what it spent.
func TestTallyCostAcrossAConversationReset(t *testing.T) {
	t.Parallel()
	stream := `{"type":"result","subtype":"success","is_error":false,"num_turns":1,"total_cost_usd":0.5}` + "\n" +
		`{"type":"conversation_reset","new_conversation_id":"c2","trigger":"clear","session_id":"s1"}` + "\n" +
		`{"type":"result","subtype":"success","is_error":false,"num_turns":1,"total_cost_usd":0.2}` + "\n"
	tl := tallyOf(t, []byte(stream))
	// This run resumed a session that had cost 0.1 before it.
	if usd, estimate, total := tl.Cost(0.1, nil); !near(usd, 0.6) || estimate || !near(total, 0.2) {
		t.Errorf("cost %v (estimate %v), session total %v; want 0.4 + 0.2, total 0.2", usd, estimate, total)
	}
}
