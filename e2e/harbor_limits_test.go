package e2e

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lanehq/lane/internal/record"
	"github.com/lanehq/lane/internal/testkit/anthropictest"
)

// procsHook is a collect hook's command: it runs in the task's container
// once the agent's run is over, and writes into /logs/artifacts/after.txt
// whether the long command began (begun.txt) and finished (slept.txt),
// then the command line of every other process still in the container.
const procsHook = `{ if [ -e /app/begun.txt ]; then echo begun; else echo unbegun; fi
if [ -e /app/slept.txt ]; then echo slept; else echo awake; fi
for p in /proc/[0-9]*; do [ "${p#/proc/}" = "$$" ] || { tr '\0' ' ' < "$p/cmdline"; echo; }; done; } > /logs/artifacts/after.txt 2>/dev/null`

// limitsTask writes a Harbor task named name under dir: one step, whose
// collect hook (procsHook) says what the agent left running.
func limitsTask(t *testing.T, dir, name string) string {
	t.Helper()
	task := filepath.Join(dir, name)
	writeTree(t, task, map[string]string{
		"task.toml": `schema_version = "1.4"

[agent]
timeout_sec = 600

[verifier]
timeout_sec = 300

[[verifier.collect]]
command = '''` + procsHook + `'''

[environment]
allow_internet = false
workdir = "/app"
`,
		"environment/Dockerfile": "ARG BASE=lane-test-base\nFROM ${BASE}\nRUN mkdir -p /app\n",
		"instruction.md":         "Run the long job.\n",
		"tests/test.sh":          "#!/bin/bash\nmkdir -p /logs/verifier\necho 1 > /logs/verifier/reward.txt\n",
	})
	return task
}

// longCommand begins (begun.txt), sleeps 30 s, then says it slept
// (slept.txt). Claude Code refuses a command that begins with a long
// sleep: it begins with an echo.
const longCommand = "echo begun > /app/begun.txt && sleep 30 && echo slept > /app/slept.txt"

// Claude Code inside a Harbor task's container under lane bench
// --token-limit, against a scripted model whose every reply reports 170
// tokens: lane stops the agent at the reply that passes the limit, in the
// container too. The attempt fails as token_limit (in the report's
// failures and on its run); the long command never finished; no process
// of the agent is left in the container when the collect hooks run after
// it, and none on this machine once the bench is over.
func TestHarborTokenLimitStopsClaudeInItsContainer(t *testing.T) {
	t.Parallel()
	vars, base := containerVars(t)

	// The second reply passes 200 as it calls the long command: lane stops
	// Claude Code before the command can end (it may not even begin), and
	// its call gets no result.
	t.Run("as the long command is called", func(t *testing.T) {
		t.Parallel()
		l := limitInContainer(t, vars, base, "200",
			anthropictest.Tools(anthropictest.Bash("", "echo one > /app/one.txt")),
			anthropictest.Tools(anthropictest.Bash("", longCommand)))
		for id, input := range l.calls {
			if strings.Contains(input, "sleep 30") == l.results[id] {
				t.Errorf("tool call %s (%s): result %v; want one for the first command only", id, input, l.results[id])
			}
		}
		if len(l.calls) != 2 || l.requests != 2 {
			t.Errorf("%d model requests, tool calls %v; want 2 and the two commands", l.requests, l.calls)
		}
	})

}

// The same with what the agent left running: lane stops Claude Code and
// what it started in the container. Long: two more containers, whose
// stop TestHarborTokenLimitStopsClaudeInItsContainer shows in make test.
func TestHarborTokenLimitStopsWhatClaudeLeftRunningLong(t *testing.T) {
	t.Parallel()
	vars, base := containerVars(t)

	// The long command runs on its own from the first reply on, out of
	// Claude Code's sight; the second passes 200 while it sleeps: lane
	// stops Claude Code and what it started in the container.
	t.Run("while a detached long command runs", func(t *testing.T) {
		t.Parallel()
		l := limitInContainer(t, vars, base, "200",
			anthropictest.Tools(anthropictest.Bash("", "("+longCommand+") >/dev/null 2>&1 &")),
			anthropictest.Tools(anthropictest.Bash("", slowCommand("two"))))
		if !l.begun {
			t.Error("the long command never began")
		}
		if l.requests != 2 {
			t.Errorf("%d model requests; want 2: the agent stopped at the reply that passed the limit", l.requests)
		}
	})

	// The same with a command Claude Code runs in the background, from the
	// second reply on; the third passes 400.
	t.Run("while the long command runs in the background", func(t *testing.T) {
		t.Parallel()
		l := limitInContainer(t, vars, base, "400",
			anthropictest.Tools(anthropictest.Bash("", "echo one > /app/one.txt")),
			anthropictest.Tools(anthropictest.Call("", "Bash", map[string]any{"command": longCommand, "run_in_background": true})),
			anthropictest.Tools(anthropictest.Bash("", slowCommand("three"))))
		if !l.begun {
			t.Error("the long command never began")
		}
		if l.requests != 3 {
			t.Errorf("%d model requests; want 3: the agent stopped at the reply that passed the limit", l.requests)
		}
	})
}

// slowCommand is the call of the reply that passes the limit: it takes
// long enough that an agent lane failed to stop at once would finish it
// and ask the model again (Claude Code refuses a command that begins with
// a long sleep).
func slowCommand(word string) string {
	return "echo " + word + " && sleep 20 && echo " + word + " > /app/" + word + ".txt"
}

// limitRun is what limitInContainer saw of an attempt stopped by its
// token limit.
type limitRun struct {
	calls    map[string]string // the run's tool calls' inputs by id
	results  map[string]bool   // which of them had a result
	requests int               // the model's requests
	begun    bool              // the long command began in the container
}

// limitInContainer runs lane bench with Claude Code on a task of its own
// under --token-limit limit, its scripted model answering with turns then
// "done", and checks what every case of the limit must hold.
func limitInContainer(t *testing.T, vars []string, base, limit string, turns ...anthropictest.Turn) limitRun {
	t.Helper()
	e := newLocalEnv(t)
	cs := anthropictest.NewServer(t, append(turns, anthropictest.Text("done"))...) // had lane let it go on
	home := filepath.Join(t.TempDir(), "home")
	if err := os.Mkdir(home, 0o755); err != nil {
		t.Fatal(err)
	}
	claude := anthropictest.ClaudeBin(t)
	e.vars = append(e.vars, vars...)
	e.vars = append(e.vars, anthropictest.ClaudeEnv(cs.URL(), home)...)
	e.vars = append(e.vars, "LANE_CLAUDE_BIN="+claude, "HOME="+home, "LANE_DB="+e.db)
	// The task's name, in its container's, finds what of its attempt runs
	// on this machine.
	name := fmt.Sprintf("runaway-%08x", rand.Uint32())
	task := limitsTask(t, t.TempDir(), name)

	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	wantExit(t, e.lane(ctx, "bench", task, "--models", "sonnet", "--token-limit", limit, "--build-arg", "BASE="+base), 0)
	for _, pid := range pidsWith("lane-" + name) {
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if strings.HasPrefix(string(cmdline), "/usr/bin/conmon\x00") {
			continue // the engine's monitor of the removed container, on its way out
		}
		t.Errorf("process %d of the attempt still runs on this machine: %q", pid, strings.ReplaceAll(string(cmdline), "\x00", " "))
	}
	st := e.openStore()
	defer st.Close()
	a := latestBenchAttempts(t, st, 1)[0]
	if a.Status != record.AttemptFailed || a.FailureKind != string(record.ErrorTokenLimit) {
		t.Errorf("attempt %s %s: %q; want failed, token_limit", a.Status, a.FailureKind, a.CheckOutput)
	}
	if failures, errs := reportedFailures(t, e.env, a.BenchID); !maps.Equal(failures, map[string]int{"token_limit": 1}) || len(errs) > 0 {
		t.Errorf("the report's failures %v, errors %v; want one token_limit", failures, errs)
	}
	run := showRun(t, e, a.RunID)
	if run.Status != record.StatusFailed || run.ErrorKind != record.ErrorTokenLimit || run.Dir != "/app" {
		t.Errorf("run %s %s in %s: %s; want failed, token_limit, in /app", run.Status, run.ErrorKind, run.Dir, run.ErrorMessage)
	}
	l := limitRun{calls: map[string]string{}, results: map[string]bool{}, requests: len(cs.MainRequests())}
	if err := st.Events(context.Background(), a.RunID, 0, func(ev record.Event) error {
		switch ev.Kind {
		case record.KindToolCall:
			l.calls[ev.ToolUseID] = string(ev.Input)
		case record.KindToolResult:
			l.results[ev.ToolUseID] = true
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}

	// What the collect hook saw in the container after the run.
	out := filepath.Join(t.TempDir(), "artifacts")
	wantExit(t, e.lane(context.Background(), "bench", "artifacts", a.BenchID[:8], "--out", out), 0)
	after, err := os.ReadFile(filepath.Join(out, name, "sonnet", "1", "logs", "artifacts", "after.txt"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(after), "\n")
	if len(lines) < 2 || lines[1] != "awake" {
		t.Errorf("the long command finished (%q): lane did not stop it", after)
	}
	l.begun = lines[0] == "begun"
	for _, p := range lines[min(2, len(lines)):] {
		if strings.Contains(p, "sleep 30") || strings.Contains(p, claude) || strings.Contains(p, "claude") {
			t.Errorf("a process of the agent is left in the container: %q\nall of them:\n%s", p, after)
		}
	}
	return l
}
