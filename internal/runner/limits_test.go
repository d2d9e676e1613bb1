package runner

import (
	"errors"
	"strings"
	"testing"

	"github.com/lanehq/lane/internal/record"
)

// usageEv is a model call's usage, as lane's own loop reports it.
func usageEv(in, out, cacheRead, cacheWrite int64) record.Event {
	return record.Event{Kind: record.KindUsage, Model: "m", Usage: &record.Usage{
		InputTokens: in, OutputTokens: out, CacheReadTokens: cacheRead, CacheCreationTokens: cacheWrite}}
}

// feed hands evs to m in order and returns the index of the first that
// named a cause to stop on (-1: none), and that cause.
func feed(m *Meter, evs ...record.Event) (int, error) {
	for i, ev := range evs {
		if err := m.Observe(ev); err != nil {
			return i, err
		}
	}
	return -1, nil
}

// Summed usage (lane's own loop): all four kinds count, and the event that
// passes the limit is the one that stops the run, once.
func TestMeterTokenLimit(t *testing.T) {
	m := NewMeter(Options{TokenLimit: 1000}, nil, false)
	evs := []record.Event{
		usageEv(300, 50, 100, 50), // 500
		{Kind: record.KindToolCall, ToolName: "bash"},
		usageEv(300, 50, 100, 50), // 1000: at the limit, not past it
		usageEv(1, 0, 0, 0),       // 1001
		usageEv(500, 0, 0, 0),
	}
	i, err := feed(m, evs...)
	var tl *TokenLimitError
	if i != 3 || !errors.As(err, &tl) || tl.Used != 1001 || tl.Limit != 1000 || tl.Estimated {
		t.Fatalf("stopped at event %d with %v; want event 3, 1001 tokens of 1000", i, err)
	}
	if err := m.Observe(usageEv(500, 0, 0, 0)); err != nil {
		t.Errorf("the meter named a cause twice: %v", err)
	}
}

// The cost is each call's usage priced as its model; a model without a
// price adds nothing.
func TestMeterCostLimit(t *testing.T) {
	price := func(model string, u record.Usage) (float64, bool) {
		if model != "m" {
			return 0, false
		}
		return float64(u.InputTokens)*3e-6 + float64(u.OutputTokens)*15e-6, true
	}
	m := NewMeter(Options{CostLimit: 0.02, Price: price}, nil, false)
	unpriced := usageEv(1_000_000, 0, 0, 0)
	unpriced.Model = "other"
	i, err := feed(m, usageEv(1000, 500, 0, 0), unpriced, usageEv(1000, 500, 0, 0), usageEv(1000, 500, 0, 0))
	var cl *CostLimitError
	// 0.0105 a call: the second priced call (0.021) passes 0.02.
	if i != 2 || !errors.As(err, &cl) || cl.Used < 0.0209 || cl.Used > 0.0211 {
		t.Fatalf("stopped at event %d with %v; want event 2 at $0.021", i, err)
	}
	if !strings.Contains(err.Error(), "--cost-limit of $0.0200") {
		t.Errorf("message %q", err)
	}
}

// With a judge, the meter goes by the judge's own account of the run so
// far: a runtime that repeats a message's usage is counted once.
func TestMeterGoesByTheJudge(t *testing.T) {
	seen := map[string]record.Usage{}
	account := func(run *record.Run) {
		for _, u := range seen {
			run.Usage = run.Usage.Add(u)
		}
	}
	m := NewMeter(Options{TokenLimit: 150}, account, false)
	msg := func(id string, out int64) record.Event {
		ev := usageEv(0, out, 0, 0)
		ev.MessageID = id
		seen[id] = *ev.Usage
		return ev
	}
	for _, ev := range []record.Event{msg("a", 100), msg("a", 100), msg("a", 100)} {
		if err := m.Observe(ev); err != nil {
			t.Fatalf("one message of 100 tokens repeated stopped the run: %v", err)
		}
	}
	if err := m.Observe(msg("b", 60)); err == nil {
		t.Error("160 tokens did not pass a limit of 150")
	}
}

// A runtime that reports usage at its end only is metered by lane's
// estimate from the stream: each turn sends the conversation so far.
func TestMeterEstimatesFromTheStream(t *testing.T) {
	m := NewMeter(Options{TokenLimit: 3000, Prompt: strings.Repeat("p", 400)}, func(*record.Run) {}, true)
	big := strings.Repeat("x", 8000) // a tool's output of 2000 tokens
	evs := []record.Event{
		{Kind: record.KindToolCall, ToolName: "shell", ToolUseID: "1", Input: []byte(`{"cmd":"seq 1 2000"}`)}, // turn 1: 100 tokens in
		{Kind: record.KindToolResult, ToolUseID: "1", Output: big},
		{Kind: record.KindText, Text: "more"}, // turn 2: about 2100 in
		{Kind: record.KindToolCall, ToolName: "shell", ToolUseID: "2", Input: []byte(`{"cmd":"seq 1 2000"}`)},
		{Kind: record.KindToolResult, ToolUseID: "2", Output: big},
		{Kind: record.KindText, Text: "again"}, // turn 3: about 4100 in, past 3000 in all
	}
	i, err := feed(m, evs...)
	var tl *TokenLimitError
	if i != 5 || !errors.As(err, &tl) || !tl.Estimated {
		t.Fatalf("stopped at event %d with %v; want the third turn's start, estimated", i, err)
	}
	// Subagents' events are the subagent's: a sidechain adds nothing.
	s := NewStreamEstimate("task")
	if s.Observe(record.Event{Kind: record.KindText, Text: big, ParentToolUseID: "t"}) || !s.Usage.IsZero() {
		t.Errorf("a subagent's text counted: %+v", s.Usage)
	}
}

// The limits stop a run as limits, each with its kind; other causes are
// left to judgeStop's other cases.
func TestJudgeLimit(t *testing.T) {
	for _, c := range []struct {
		cause error
		kind  record.ErrorKind
		hint  string
	}{
		{&MaxTurnsError{Limit: 2}, record.ErrorTurnLimit, "--max-turns"},
		{&TokenLimitError{Limit: 10, Used: 11}, record.ErrorTokenLimit, "--token-limit"},
		{&CostLimitError{Limit: 1, Used: 1.5}, record.ErrorCostLimit, "--cost-limit"},
	} {
		var run record.Run
		if !judgeLimit(&run, c.cause) || run.Status != record.StatusFailed || run.ErrorKind != c.kind || !strings.Contains(run.ErrorHint, c.hint) {
			t.Errorf("%v: run %s/%s hint %q", c.cause, run.Status, run.ErrorKind, run.ErrorHint)
		}
	}
	if judgeLimit(&record.Run{}, ErrCancelled) {
		t.Error("a cancel was judged a limit")
	}
	if NewMeter(Options{MaxTurns: 3}, nil, false) != nil {
		t.Error("a meter without a token or cost limit")
	}
	if b := (Options{TokenLimit: 5}).Budget(); b == nil || b.Tokens != 5 || (Options{}).Budget() != nil {
		t.Errorf("budget %+v", b)
	}
}
