package console

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/lanehq/lane/internal/record"
)

var started = time.Date(2026, 11, 29, 16, 44, 41, 0, time.UTC)

func runs() []*record.Run {
	exit := func(n int) *int { return &n }
	return []*record.Run{
		{
			ID: "3f2a9c1b0d4e5f60", Status: record.StatusSucceeded, Runtime: "claude", Model: "claude-sonnet-5-5",
			Dir: "/home/dev/proj", Prompt: "write hello.txt and list the folder", SessionID: sess,
			CostUSD: 0.0081, Usage: record.Usage{InputTokens: 200, OutputTokens: 40, CacheReadTokens: 100},
			Turns: 2, ToolCalls: 3, StartedAt: started, DurationMS: 4213, ExitCode: exit(0),
			Changes: &record.Changes{Files: 3, Insertions: 58, Deletions: 12},
		},
		{
			ID: "77aa01bc9d3e4f11", Status: record.StatusSucceeded, Runtime: "claude", Model: "claude-opus-5",
			Dir: "/home/dev/big", Prompt: "refactor the store package\n\nkeep the API", SessionID: "0d1e2f3a-aaaa",
			CostUSD: 1.23456, CostEstimate: true, Worker: "gpu-box-1", Changes: &record.Changes{},
			Usage: record.Usage{InputTokens: 12345, OutputTokens: 6789, CacheReadTokens: 1_234_567, CacheCreationTokens: 45_000},
			Turns: 1, ToolCalls: 1, StartedAt: started.Add(-26 * time.Hour), DurationMS: 185_000,
		},
		{
			ID: "d401d401d401d401", Status: record.StatusFailed, Runtime: "claude", Model: "claude-sonnet-5-5",
			Dir: "/home/dev/proj", Prompt: "say hi", SessionID: "e93929fe-b72b-452e-9e02-ad0769c73614",
			Turns: 0, StartedAt: started.Add(-2 * time.Hour), DurationMS: 179_412, ExitCode: exit(1),
			ErrorKind: record.ErrorAuth, ErrorMessage: "API error 401: authentication_failed",
			ErrorHint: "check ANTHROPIC_API_KEY or run `claude login`",
		},
		{
			ID: "c0c0c0c0c0c0c0c0", Status: record.StatusFailed, Runtime: "claude", Model: "claude-sonnet-5-5",
			Dir: "/srv/work", Prompt: "\x1b]0;pwned\x07fix\tthe \x1b[31mbuild\x1b[0m", SessionID: "abc",
			CostUSD: 0.002, Usage: record.Usage{InputTokens: 100, OutputTokens: 1},
			Turns: 1, StartedAt: started.Add(-10 * 24 * time.Hour), DurationMS: 850,
			ErrorKind: record.ErrorContradiction, ErrorMessage: "the runtime said success but is_error was true\nterminal_reason: api_error",
			Contradiction: `subtype "success" with is_error true`,
		},
		{
			ID: "71m3d0u7", Status: record.StatusTimedOut, Model: "claude-sonnet-5-5", Dir: "/home/dev/proj",
			Prompt: "hang", StartedAt: started.Add(-5 * time.Minute), DurationMS: 600_000,
			ErrorKind: record.ErrorTimeout, ErrorMessage: "no output for 15s (idle watchdog)",
		},
		{
			ID: "ca11ed00ca11ed00", Status: record.StatusCancelled, Model: "claude-sonnet-5-5", Dir: "/home/dev",
			Prompt: "long task", CostUSD: 0.0003, Usage: record.Usage{InputTokens: 10, OutputTokens: 2},
			StartedAt: started.Add(-90 * time.Second), EndedAt: started.Add(-80 * time.Second),
			ErrorKind: record.ErrorCancelled, ErrorMessage: "interrupted by signal",
		},
		{
			ID: "1e7e7e7e7e7e7e7e", Status: record.StatusInterrupted, Model: "claude-sonnet-5-5", Dir: "/home/dev/proj",
			Prompt: "日本語のプロンプトはとても長くなることがありますので切り詰めます。さらに続きます", StartedAt: started.Add(-3 * time.Hour),
			ErrorMessage: "lane exited while the run was live",
		},
		{
			ID: "a1b2c3d4e5f60718", Status: record.StatusFailed, Model: "claude-sonnet-5-5", Dir: "/home/dev/proj",
			Prompt: strings.Repeat("keep calling tools ", 5), CostUSD: 0.0123,
			Usage: record.Usage{InputTokens: 900, OutputTokens: 120}, Turns: 2, ToolCalls: 1,
			StartedAt: started.Add(-45 * time.Second), DurationMS: 5100,
			ErrorKind: record.ErrorTurnLimit, ErrorMessage: "reached the turn limit (1)", ErrorHint: "raise --max-turns",
		},
		{
			ID: "0000running0000", Status: record.StatusRunning, Model: "claude-sonnet-5-5", Dir: "/home/dev/proj",
			Prompt: "still going", StartedAt: started.Add(-185 * time.Second), Turns: 1,
		},
		{
			ID: "c0dec0dec0dec0de", Status: record.StatusSucceeded, Runtime: "codex", Model: "gpt-5-codex", Via: "acp",
			Dir:    "/home/dev/proj",
			Prompt: "fix the flaky test", StartedAt: started.Add(-30 * time.Second), EndedAt: started.Add(-20 * time.Second), DurationMS: 10000,
			CostUSD: 0.0042, CostEstimate: true, Usage: record.Usage{InputTokens: 900, OutputTokens: 80}, Turns: 3, ToolCalls: 2,
		},
	}
}

func TestSummaryGolden(t *testing.T) {
	for _, color := range []bool{false, true} {
		var buf bytes.Buffer
		p := NewPrinter(&buf, color)
		for _, r := range runs() {
			if err := p.Summary(r); err != nil {
				t.Fatal(err)
			}
		}
		if err := p.Summary(nil); err != nil {
			t.Fatal(err)
		}
		name := "summary.golden"
		if color {
			name = "summary_color.golden"
		}
		golden(t, name, buf.String())
		checkSafe(t, buf.String())
		if !color && strings.Contains(buf.String(), "\x1b") {
			t.Error("plain summary holds an escape sequence")
		}
	}
}

func TestRunsTableGolden(t *testing.T) {
	t.Setenv("HOME", "/home/dev")
	now := started.Add(time.Minute)
	for _, color := range []bool{false, true} {
		var buf bytes.Buffer
		if err := RunsTable(&buf, append(runs(), nil), now, color); err != nil {
			t.Fatal(err)
		}
		name := "runs.golden"
		if color {
			name = "runs_color.golden"
		}
		golden(t, name, buf.String())
		checkSafe(t, buf.String())
	}
	// Colour must not move the columns.
	var plain, colored bytes.Buffer
	if err := RunsTable(&plain, runs(), now, false); err != nil {
		t.Fatal(err)
	}
	if err := RunsTable(&colored, runs(), now, true); err != nil {
		t.Fatal(err)
	}
	if got := sgr.ReplaceAllString(colored.String(), ""); got != plain.String() {
		t.Errorf("colour table differs from plain table beyond its colours:\n%s", got)
	}
}

func TestRunsTableEmpty(t *testing.T) {
	var buf bytes.Buffer
	if err := RunsTable(&buf, nil, started, false); err != nil {
		t.Fatal(err)
	}
	if got := strings.Fields(buf.String()); len(got) != 12 || got[0] != "ID" {
		t.Errorf("empty table = %q, want the header alone", buf.String())
	}
}

func TestUseColorEnv(t *testing.T) {
	tests := []struct {
		env      map[string]string
		terminal bool
		want     bool
	}{
		{nil, true, true},
		{nil, false, false},
		{map[string]string{"NO_COLOR": "1"}, true, false},
		{map[string]string{"NO_COLOR": "0"}, true, false},
		{map[string]string{"NO_COLOR": ""}, true, true},
		{map[string]string{"TERM": "dumb"}, true, false},
		{map[string]string{"TERM": "xterm-256color"}, true, true},
	}
	for _, tt := range tests {
		if got := useColor(func(k string) string { return tt.env[k] }, tt.terminal); got != tt.want {
			t.Errorf("useColor(%v, %v) = %v, want %v", tt.env, tt.terminal, got, tt.want)
		}
	}
}

func TestUseColorFiles(t *testing.T) {
	t.Setenv("NO_COLOR", "")
	t.Setenv("TERM", "xterm")
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if UseColor(w) {
		t.Error("UseColor(pipe) = true")
	}
	if UseColor(nil) {
		t.Error("UseColor(nil) = true")
	}
	f, err := os.Create(t.TempDir() + "/out")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if UseColor(f) {
		t.Error("UseColor(regular file) = true")
	}
}

func TestUseColorTerminal(t *testing.T) {
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal here: %v", err)
	}
	defer ptmx.Close()
	defer tty.Close()
	t.Setenv("TERM", "xterm-256color")
	t.Setenv("NO_COLOR", "")
	if !UseColor(tty) {
		t.Error("UseColor(terminal) = false")
	}
	t.Setenv("NO_COLOR", "1")
	if UseColor(tty) {
		t.Error("UseColor(terminal) with NO_COLOR=1 = true")
	}
	t.Setenv("NO_COLOR", "")
	t.Setenv("TERM", "dumb")
	if UseColor(tty) {
		t.Error("UseColor(terminal) with TERM=dumb = true")
	}
}

func TestSummarySaysTheFinalErrorOnce(t *testing.T) {
	var out strings.Builder
	p := NewPrinter(&out, false)
	msg := "idle timeout: no output for 2s while no tool was running"
	p.Event(record.Event{Kind: record.KindError, ErrorKind: record.ErrorTimeout, Text: msg})
	p.Summary(&record.Run{ID: "r1", Status: record.StatusTimedOut, ErrorKind: record.ErrorTimeout, ErrorMessage: msg, ErrorHint: "raise --idle-timeout"})
	if n := strings.Count(out.String(), msg); n != 1 {
		t.Errorf("the error shows %d times:\n%s", n, out.String())
	}
	if !strings.Contains(out.String(), "hint: raise --idle-timeout") {
		t.Errorf("no hint:\n%s", out.String())
	}
	// Shown from the record alone (no error event before), the summary says it.
	var alone strings.Builder
	NewPrinter(&alone, false).Summary(&record.Run{ID: "r2", Status: record.StatusFailed, ErrorMessage: msg})
	if !strings.Contains(alone.String(), msg) {
		t.Errorf("summary without the event lacks the error:\n%s", alone.String())
	}
}

// The summary says what the run changed in its folder, or why lane could
// not tell; a run lane did not look at says nothing.
func TestSummaryChanges(t *testing.T) {
	tests := []struct {
		changes *record.Changes
		want    []string
		not     string
	}{
		{&record.Changes{Files: 3, Insertions: 58, Deletions: 12}, []string{"changed 3 files (+58 −12)"}, "note"},
		{&record.Changes{Files: 1, Insertions: 1, Note: "1 file over 8 MiB compared by size and mtime only"},
			[]string{"changed 1 file (+1 −0)", "note: 1 file over 8 MiB"}, ""},
		{&record.Changes{}, []string{"no files changed"}, "note"},
		{&record.Changes{Error: "snapshot before the run: folder vanished"},
			[]string{"note: changes not recorded: snapshot before the run: folder vanished"}, "changed"},
		{nil, nil, "changed"},
	}
	for _, tt := range tests {
		var b strings.Builder
		r := &record.Run{ID: "r1", Status: record.StatusSucceeded, Changes: tt.changes}
		if err := NewPrinter(&b, false).Summary(r); err != nil {
			t.Fatal(err)
		}
		for _, w := range tt.want {
			if !strings.Contains(b.String(), w) {
				t.Errorf("summary %q lacks %q", b.String(), w)
			}
		}
		if tt.not != "" && strings.Contains(b.String(), tt.not) {
			t.Errorf("summary %q holds %q", b.String(), tt.not)
		}
	}
}

// A run stopped at a limit says which, and what it was allowed; a run
// without limits says nothing of them.
func TestSummaryBudget(t *testing.T) {
	var b strings.Builder
	NewPrinter(&b, false).Summary(&record.Run{ID: "r1", Status: record.StatusFailed, ErrorKind: record.ErrorTokenLimit,
		ErrorMessage: "the run used 412000 tokens, past its --token-limit of 400000",
		Budget:       &record.Budget{Tokens: 400_000, CostUSD: 2, Turns: 30}})
	for _, w := range []string{"failed (token_limit)", "limits: 400k tokens · $2.00 · 30 turns"} {
		if !strings.Contains(b.String(), w) {
			t.Errorf("summary lacks %q:\n%s", w, b.String())
		}
	}
	var none strings.Builder
	NewPrinter(&none, false).Summary(&record.Run{ID: "r2", Status: record.StatusSucceeded})
	if strings.Contains(none.String(), "limits") {
		t.Errorf("a run without limits:\n%s", none.String())
	}
}
