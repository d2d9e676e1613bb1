package runner_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lanehq/lane/internal/record"
	"github.com/lanehq/lane/internal/runner"
	"github.com/lanehq/lane/internal/runtimes"
	"github.com/lanehq/lane/internal/runtimes/gemini"
	"github.com/lanehq/lane/internal/runtimes/qwen"
	"github.com/lanehq/lane/internal/testkit/runtest"
)

// fakeCLI runs the test binary as the runtime, playing scenario.
func fakeCLI(t *testing.T, runtime, scenario string, wd runner.Watchdogs, extraEnv ...string) (*record.Run, *runtest.MemRecorder) {
	t.Helper()
	rec := runtest.NewMemRecorder()
	o := runner.Options{
		Found: &runner.Binary{Path: os.Args[0]}, Shim: os.Args[0], Dir: t.TempDir(), Prompt: "fix it", Model: "m",
		Env:       append(append(os.Environ(), "LANE_FAKE_RUNTIME="+scenario), extraEnv...),
		Watchdogs: wd, TempDir: t.TempDir(),
	}
	for _, kv := range extraEnv {
		if v, ok := strings.CutPrefix(kv, "MAX_TURNS="); ok {
			o.MaxTurns = len(v)
		}
	}
	run, err := runOn(context.Background(), runtime, o, rec)
	if err != nil {
		t.Fatal(err)
	}
	return run, rec
}

func TestOpencodeOpenStepHoldsOffTheIdleWatchdog(t *testing.T) {
	t.Parallel()
	// A step silent for 4× the idle timeout is a tool at work, not a hang.
	run, rec := fakeCLI(t, "opencode", "opencode-long-step", runner.Watchdogs{Idle: 250 * time.Millisecond, Hard: time.Minute}, "LANE_FAKE_TOOL_TIME=1s")
	if run.Status != record.StatusSucceeded {
		t.Fatalf("status %s (%s: %s), want succeeded", run.Status, run.ErrorKind, run.ErrorMessage)
	}
	if run.Turns != 2 || run.ToolCalls != 1 || run.ResultText != "Done" || run.CostUSD < 0.00099 || run.CostEstimate {
		t.Errorf("turns %d, tool calls %d, result %q, cost %v (estimate %v)", run.Turns, run.ToolCalls, run.ResultText, run.CostUSD, run.CostEstimate)
	}
	if ks := rec.Kinds(run.ID); !slices.Contains(ks, record.KindToolResult) {
		t.Errorf("events %v", ks)
	}
}

func TestOpencodeSilenceBetweenStepsIsAnIdleTimeout(t *testing.T) {
	t.Parallel()
	run, _ := fakeCLI(t, "opencode", "opencode-hang-between-steps", runner.Watchdogs{Idle: 300 * time.Millisecond, Hard: time.Minute})
	if run.Status != record.StatusTimedOut || !strings.Contains(run.ErrorMessage, "idle") {
		t.Fatalf("status %s: %s, want an idle timeout", run.Status, run.ErrorMessage)
	}
}

func TestRetriesAloneAreAnIdleTimeout(t *testing.T) {
	t.Parallel()
	run, rec := fakeCLI(t, "codex", "retries-forever", runner.Watchdogs{Idle: 400 * time.Millisecond, Hard: time.Minute})
	if run.Status != record.StatusTimedOut || !strings.Contains(run.ErrorMessage, "idle") {
		t.Fatalf("status %s: %s, want an idle timeout", run.Status, run.ErrorMessage)
	}
	if ks := rec.Kinds(run.ID); !slices.Contains(ks, record.KindRetry) {
		t.Errorf("the reconnect notices were not recorded as retries: %v", ks)
	}
}

func TestMaxTurnsStopsARunawayCLI(t *testing.T) {
	t.Parallel()
	start := time.Now()
	run, rec := fakeCLI(t, "codex", "codex-runaway", runner.Watchdogs{Hard: time.Minute}, "MAX_TURNS=xxx")
	if run.Status != record.StatusFailed || run.ErrorKind != record.ErrorTurnLimit {
		t.Fatalf("status %s/%s: %s, want failed/max_turns", run.Status, run.ErrorKind, run.ErrorMessage)
	}
	calls := 0
	for _, k := range rec.Kinds(run.ID) {
		if k == record.KindToolCall {
			calls++
		}
	}
	// Stopped at the 4th turn; what the runtime printed in the moment
	// before the kill is recorded too, but a runaway it is not.
	if calls < 4 || calls > 20 || !strings.Contains(run.ErrorMessage, "turn 4 of a run limited to 3") {
		t.Errorf("%d tool calls recorded, %q: want a stop at the 4th of 3 turns", calls, run.ErrorMessage)
	}
	if !strings.Contains(run.ErrorHint, "--max-turns") {
		t.Errorf("hint %q", run.ErrorHint)
	}
	t.Logf("stopped after %s", time.Since(start))
}

func TestCodexRunIsPricedAsAnEstimate(t *testing.T) {
	t.Parallel()
	rec := runtest.NewMemRecorder()
	o := runner.Options{
		Found: &runner.Binary{Path: os.Args[0]}, Shim: os.Args[0], Dir: t.TempDir(), Prompt: "p", Model: "gpt-5-codex", Label: "gpt-5-codex",
		Env: append(os.Environ(), "LANE_FAKE_RUNTIME=codex-ok"),
		Price: func(model string, u record.Usage) (float64, bool) {
			return float64(u.InputTokens+u.OutputTokens) / 1e6, model == "gpt-5-codex"
		},
		// A resumed thread: Codex reports the thread's total, 1000 of it
		// from before.
		PriorSessionUsage: record.Usage{InputTokens: 1000, OutputTokens: 100},
	}
	run, err := runOn(context.Background(), "codex", o, rec)
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != record.StatusSucceeded || run.SessionID != "thread-1" || run.Runtime != "codex" {
		t.Fatalf("%+v", run)
	}
	if run.Usage.InputTokens != 200 || run.Usage.OutputTokens != 40 {
		t.Errorf("usage %+v, want this run's own 200 in / 40 out", run.Usage)
	}
	if !run.CostEstimate || run.CostUSD < 0.000239 || run.CostUSD > 0.000241 {
		t.Errorf("cost %v estimate %v", run.CostUSD, run.CostEstimate)
	}
}

func TestTurnCounter(t *testing.T) {
	t.Parallel()
	text := record.Event{Kind: record.KindText}
	call := record.Event{Kind: record.KindToolCall}
	result := record.Event{Kind: record.KindToolResult}
	subCall := record.Event{Kind: record.KindToolCall, ParentToolUseID: "toolu_1"}
	step := record.Event{Kind: record.KindTask, Subtype: "step_start"}
	tests := []struct {
		name   string
		steps  bool
		limit  int
		events []record.Event
		stopAt int // index of the event that stops the run; -1 none
	}{
		{"text then parallel calls are one turn", false, 1, []record.Event{text, call, call, result, result}, -1},
		{"a call after results begins a turn", false, 1, []record.Event{call, result, call}, 2},
		{"the final answer counts", false, 2, []record.Event{call, result, call, result, text}, 4},
		{"subagents' calls are not the main agent's turns", false, 1, []record.Event{call, subCall, result, subCall, result}, -1},
		{"no limit", false, 0, []record.Event{call, result, call, result, call}, -1},
		{"opencode counts steps", true, 2, []record.Event{step, call, result, call, result, step, text, step}, 7},
	}
	for _, tt := range tests {
		c := runner.TurnCounter{Limit: tt.limit, Steps: tt.steps}
		got := -1
		for i, ev := range tt.events {
			if err := c.Observe(ev); err != nil && got < 0 {
				got = i
			}
		}
		if got != tt.stopAt {
			t.Errorf("%s: stopped at %d, want %d", tt.name, got, tt.stopAt)
		}
	}
}

func TestFindRuntimeChecksTheVersion(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fake := filepath.Join(dir, "codex")
	os.WriteFile(fake, []byte("#!/bin/sh\necho 'codex-cli 0.171.0'\n"), 0o755)
	path, version, err := findRuntime(context.Background(), "codex", fake, os.Environ(), "")
	if err != nil || path != fake || version != "codex-cli 0.171.0" {
		t.Fatalf("FindRuntime = %q %q %v", path, version, err)
	}
	wrong := filepath.Join(dir, "gemini")
	os.WriteFile(wrong, []byte("#!/bin/sh\necho 'something else'\n"), 0o755)
	_, _, err = findRuntime(context.Background(), "gemini", wrong, os.Environ(), "")
	var me *runner.MissingError
	if !errors.As(err, &me) || !strings.Contains(me.Hint, "@google/gemini-cli") {
		t.Fatalf("err %v", err)
	}

}

func TestShellLogFindsTheExitCodeTheStreamLeftOut(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	chats := filepath.Join(home, ".qwen", "projects", "-tmp-proj", "chats")
	os.MkdirAll(chats, 0o755)
	logLine := func(id, out string) string {
		b, _ := json.Marshal(map[string]any{"type": "tool_result", "message": map[string]any{"role": "user", "parts": []any{
			map[string]any{"functionResponse": map[string]any{"id": id, "name": "run_shell_command", "response": map[string]any{"output": out}}}}}})
		return string(b) + "\n"
	}
	path := filepath.Join(chats, "sess-1234-abcd.jsonl")
	os.WriteFile(path, []byte(logLine("c1", "Command: false\nOutput: (empty)\nExit Code: 1\nSignal: 0")+logLine("c2", "Command: true\nOutput: ok\nExit Code: 0")), 0o600)

	qwenEntry, _ := runtimes.Entries().Lookup("qwen")
	l := runner.NewShellLog(qwenEntry.Process.ShellLog.Files([]string{"HOME=" + home}), gemini.ShellExitCode)
	evs := []record.Event{
		{Kind: record.KindSession, SessionID: "sess-1234-abcd"},
		{Kind: record.KindToolCall, ToolUseID: "c1", ToolName: "run_shell_command", Call: qwen.Call("run_shell_command", nil)},
		{Kind: record.KindToolResult, ToolUseID: "c1", Output: "oops"},
		{Kind: record.KindToolCall, ToolUseID: "c2", ToolName: "run_shell_command", Call: qwen.Call("run_shell_command", nil)},
		{Kind: record.KindToolResult, ToolUseID: "c2", Output: "ok"},
		{Kind: record.KindToolCall, ToolUseID: "c3", ToolName: "read_file", Call: qwen.Call("read_file", nil)},
		{Kind: record.KindToolResult, ToolUseID: "c3", Output: "Exit Code: 9"},
	}
	for i := range evs {
		l.Amend(&evs[i])
	}
	if !evs[2].IsError || !strings.Contains(evs[2].Output, "exit code 1") {
		t.Errorf("c1: %+v, want an error with its exit code", evs[2])
	}
	if evs[4].IsError || evs[6].IsError {
		t.Errorf("exit 0 or another tool marked failed: %+v %+v", evs[4], evs[6])
	}

	// A log line written after the stream's is still found, and only the
	// new bytes are read.
	go func() {
		time.Sleep(50 * time.Millisecond)
		f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
		f.WriteString(logLine("c4", "Output: x\nExit Code: 2"))
		f.Close()
	}()
	call := record.Event{Kind: record.KindToolCall, ToolUseID: "c4", ToolName: "run_shell_command", Call: qwen.Call("run_shell_command", nil)}
	res := record.Event{Kind: record.KindToolResult, ToolUseID: "c4", Output: "x"}
	l.Amend(&call)
	l.Amend(&res)
	if !res.IsError {
		t.Errorf("c4 written late: %+v", res)
	}
}

// The captures in testdata/sessionlogs are real: a stream and the session
// log the same run wrote, for a command that fails after printing and one
// that succeeds.
func TestShellLogOnRealCaptures(t *testing.T) {
	t.Parallel()
	for _, rt := range []string{"gemini-0.61.0", "qwen-0.15.10"} {
		t.Run(rt, func(t *testing.T) {
			stream, err := os.Open(filepath.Join("testdata", "sessionlogs", rt+".stream.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			defer stream.Close()
			name, _, _ := strings.Cut(rt, "-")
			entry, _ := runtimes.Entries().Lookup(name)
			src := entry.Process.NewSource(stream)
			logPath := filepath.Join("testdata", "sessionlogs", rt+".session.jsonl")
			l := runner.NewShellLog(func(string) []string { return []string{logPath} }, gemini.ShellExitCode)
			var failed, passed []string
			for {
				evs, err := src.Next()
				for i := range evs {
					before := evs[i].IsError
					l.Amend(&evs[i])
					if evs[i].Kind != record.KindToolResult {
						continue
					}
					if before {
						t.Errorf("the stream itself already said %s failed: this capture shows nothing", evs[i].ToolUseID)
					}
					if evs[i].IsError {
						failed = append(failed, evs[i].Output)
					} else {
						passed = append(passed, evs[i].Output)
					}
				}
				if err != nil {
					break
				}
			}
			if len(failed) != 1 || !strings.Contains(failed[0], "No such file") || !strings.Contains(failed[0], "(exit code 2)") {
				t.Errorf("failed tools %q, want the ls of a missing folder, exit code 2", failed)
			}
			if len(passed) != 1 || !strings.Contains(passed[0], "ok") {
				t.Errorf("passed tools %q, want the echo", passed)
			}
		})
	}
}

func TestVersionsAreRememberedUntilTheBinaryChanges(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	calls := filepath.Join(dir, "calls")
	bin := filepath.Join(dir, "gemini")
	script := "#!/bin/sh\necho x >> " + calls + "\necho 0.61.0\n"
	os.WriteFile(bin, []byte(script), 0o755)
	cache := filepath.Join(dir, "versions.json")

	asked := func() int {
		b, _ := os.ReadFile(calls)
		return strings.Count(string(b), "x")
	}
	for i := 0; i < 3; i++ {
		if _, v, err := findRuntime(context.Background(), "gemini", bin, os.Environ(), cache); err != nil || v != "0.61.0" {
			t.Fatalf("FindRuntime: %q %v", v, err)
		}
	}
	if n := asked(); n != 1 {
		t.Errorf("--version asked %d times for an unchanged binary, want 1", n)
	}
	// A changed binary (an update) is asked again.
	os.WriteFile(bin, []byte(script+"# updated\n"), 0o755)
	if _, _, err := findRuntime(context.Background(), "gemini", bin, os.Environ(), cache); err != nil {
		t.Fatal(err)
	}
	if n := asked(); n != 2 {
		t.Errorf("--version asked %d times after the binary changed, want 2", n)
	}
	// The remembered answer is still checked: it does not make a gemini a codex.
	if _, _, err := findRuntime(context.Background(), "codex", bin, os.Environ(), cache); err == nil {
		t.Error("a remembered gemini version passed as codex")
	}
}
