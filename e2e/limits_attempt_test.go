package e2e

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lanehq/lane/internal/record"
	"github.com/lanehq/lane/internal/testkit/anthropictest"
	"github.com/lanehq/lane/internal/testkit/geminitest"
	"github.com/lanehq/lane/internal/testkit/openaitest"
)

// The per-attempt limits on every runtime lane runs: each case is a
// runaway (a shell call every turn, whose output of some 9 KB the model
// reads back) on a scripted model whose every reply reports the same
// usage (170 tokens for Claude Code's server, 120 for the others), priced
// so that the second turn passes a cost limit of $0.001 and the first does
// not. The fourth
// request is never answered: a lane that did not stop the run would wait
// on it until the test's deadline.

// runaway is the command of every turn: it leaves a line in loop.txt,
// prints about 9 KB for the model to read, and takes a second, as a real
// command does: a runtime that tells of a turn only as its tool runs
// (Qwen Code) is stopped there, not after the next request has gone.
const runaway = "echo again >> loop.txt; seq 1 2000; sleep 1"

// limitCase is one limit's flags, the kind of failure it ends in, and how
// many of the runaway's commands may have run by then.
type limitCase struct {
	flags    []string
	kind     record.ErrorKind
	commands int
}

var limitCases = map[string]limitCase{
	// The second turn's usage (240 or 340 tokens, or lane's estimate of
	// over 2000 from the stream) passes 200; the first's does not.
	"token limit": {[]string{"--token-limit", "200"}, record.ErrorTokenLimit, 2},
	"cost limit":  {[]string{"--cost-limit", "0.001"}, record.ErrorCostLimit, 2},
	// The third turn is stopped as it begins: its command may have run.
	"max turns": {[]string{"--max-turns", "2"}, record.ErrorTurnLimit, 3},
}

// limitRig starts a runtime's world for the runaway: the env to run lane
// in, the arguments of lane run before the flags, and how many requests
// of the main agent its server saw.
type limitRig struct {
	runtime string
	start   func(t *testing.T) (e *env, args []string, requests func() int)
}

// pricesFor writes the config file under home with the scripted models'
// prices: input USD per million tokens, and 15 for output.
func pricesFor(t *testing.T, home string, input string, models ...string) {
	t.Helper()
	dir := filepath.Join(home, ".config", "lane")
	os.MkdirAll(dir, 0o755)
	var b strings.Builder
	b.WriteString("prices:\n")
	for _, m := range slices.Compact(slices.Sorted(slices.Values(models))) {
		b.WriteString("  \"" + m + "\": {input: " + input + ", output: 15}\n")
	}
	if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
}

// cliLimitRig is the rig of an agent CLI of runtimes_test.go.
func cliLimitRig(r rig) limitRig {
	return limitRig{runtime: r.runtime, start: func(t *testing.T) (*env, []string, func() int) {
		loop := shell(runaway)
		e := newCLIEnv(t, r, loop, loop, loop, hangForever())
		home := filepath.Join(filepath.Dir(e.proj), "home")
		// Gemini's price is lower than the others': the same for all.
		pricesFor(t, home, "3", r.model, openaitest.Model, geminitest.Model)
		args := []string{"run", "--dir", e.proj, "--model", r.runtime + ":" + r.model, "--base-url", e.srv.baseURL(), "-o", "json"}
		return e.env, args, func() int { return len(e.srv.mainBodies()) }
	}}
}

var limitRigs = []limitRig{
	{runtime: "claude", start: func(t *testing.T) (*env, []string, func() int) {
		loop := anthropictest.Tools(anthropictest.Bash("", runaway))
		e := newEnv(t, loop, loop, loop, anthropictest.Hang())
		// Claude Code reports a message's output tokens only at its end:
		// what lane sees of a turn as it goes is its input, priced higher.
		pricesFor(t, filepath.Join(filepath.Dir(e.proj), "home"), "6", "claude-sonnet-5-5")
		return e, []string{"run", "--dir", e.proj, "-o", "json"}, func() int { return len(e.srv.MainRequests()) }
	}},
	{runtime: "local", start: func(t *testing.T) (*env, []string, func() int) {
		loop := openaitest.ToolCalls(openaitest.Call("", "bash", map[string]string{"command": runaway}))
		e := newLocalEnv(t, loop, loop, loop, openaitest.Hang())
		pricesFor(t, filepath.Join(filepath.Dir(e.proj), "home"), "3", strings.TrimPrefix(localModel, "ollama:"))
		return e.env, []string{"run", "--dir", e.proj, "--model", localModel, "-o", "json"}, func() int { return len(e.model.MainRequests()) }
	}},
}

func init() {
	for _, r := range rigs {
		limitRigs = append(limitRigs, cliLimitRig(r))
	}
}

// TestAttemptLimits: --token-limit stops the runaway on its second turn
// on Claude Code, Codex and lane's own loop. Every other limit and
// runtime is TestAttemptLimitsEveryRuntimeLong's (make test-long).
func TestAttemptLimits(t *testing.T) {
	runLimitCases(t, quickLimit)
}

// TestAttemptLimitsEveryRuntimeLong: each limit stops the runaway on its
// second turn on every runtime, but for TestAttemptLimits' cases.
func TestAttemptLimitsEveryRuntimeLong(t *testing.T) {
	runLimitCases(t, func(runtime, limit string) bool { return !quickLimit(runtime, limit) })
}

// quickLimit says which runtime and limit TestAttemptLimits runs.
func quickLimit(runtime, limit string) bool {
	return limit == "token limit" && slices.Contains([]string{"claude", "codex", "local"}, runtime)
}

func runLimitCases(t *testing.T, pick func(runtime, limit string) bool) {
	t.Parallel()
	for _, r := range limitRigs {
		t.Run(r.runtime, func(t *testing.T) {
			for name, c := range limitCases {
				if !pick(r.runtime, name) {
					continue
				}
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					testLimit(t, r, c)
				})
			}
		})
	}
}

// testLimit runs the runaway under c's limit: the run fails of c's kind,
// with its budget recorded, after its second turn and before its fourth,
// and leaves no process behind.
func testLimit(t *testing.T, r limitRig, c limitCase) {
	e, args, requests := r.start(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	res := e.lane(ctx, append(append(args, c.flags...), "keep going")...)
	if res.code != 1 {
		t.Fatalf("exit %d, want 1; stderr:\n%s", res.code, res.stderr)
	}
	run := lastRun(t, res)
	if run.ErrorKind != c.kind || run.Status != record.StatusFailed {
		t.Fatalf("run %s/%s: %s; want failed, %s", run.Status, run.ErrorKind, run.ErrorMessage, c.kind)
	}
	if run.Budget == nil || run.Budget.IsZero() {
		t.Errorf("the run's budget is not recorded: %+v", run.Budget)
	}
	if n := requests(); n < 2 || n > 3 {
		t.Errorf("%d model requests: want the second turn's, and the third's at the most", n)
	}
	b, _ := os.ReadFile(filepath.Join(e.proj, "loop.txt"))
	if n := strings.Count(string(b), "again"); n > c.commands {
		t.Errorf("the runaway ran its command %d times, want %d at the most", n, c.commands)
	}
	assertNoProcessIn(t, e.proj)
	t.Logf("%s: %s after %s (%d tokens, $%.5f)", r.runtime, run.ErrorMessage, res.took, run.Usage.Total(), run.CostUSD)
}

// In a bench, a limit ends an attempt as the agent's failure, of the
// limit's kind, as the report's JSON shows: the command line's limit for
// the task that sets none, each task's own for the others.
func TestBenchAttemptLimits(t *testing.T) {
	t.Parallel()
	e := newLocalEnv(t)
	pricesFor(t, filepath.Join(filepath.Dir(e.proj), "home"), "3", strings.TrimPrefix(localModel, "ollama:"))
	benchLimits(t, e)
}

// The same on the pool of workers: the limits travel with each attempt to
// the worker that runs it (which is given none of its own). Long: a pool
// on PostgreSQL, whose path the pool's own tests cover in make test.
func TestBenchAttemptLimitsOnWorkersLong(t *testing.T) {
	t.Parallel()
	e := poolEnv(t)
	pricesFor(t, filepath.Join(filepath.Dir(e.proj), "home"), "3", strings.TrimPrefix(localModel, "ollama:"))
	e.startWorker(t, "--parallel", "3")
	benchLimits(t, e, "--workers")
}

// benchLimits runs the bench of TestBenchAttemptLimits in e, its local
// model priced, with extra flags.
func benchLimits(t *testing.T, e *localEnv, extra ...string) {
	// Every task is a runaway, each reply reporting 120 tokens.
	e.model.SetResponder(func(openaitest.Request) (openaitest.Turn, bool) {
		return openaitest.ToolCalls(openaitest.Call("", "bash", map[string]string{"command": runaway})), true
	})
	suite := filepath.Join(t.TempDir(), "suite.yaml")
	os.WriteFile(suite, []byte(`name: limits
models: ["`+localModel+`"]
defaults:
  max-turns: 10
tasks:
  - {id: tokens, prompt: "TASK tokens: go", check: "true"}
  - {id: cost, prompt: "TASK cost: go", check: "true", cost-limit: 0.001, token-limit: 1000000}
  - {id: turns, prompt: "TASK turns: go", check: "true", max-turns: 2, token-limit: 1000000}
`), 0o644)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	r := e.lane(ctx, append([]string{"bench", suite, "--parallel", "3", "--token-limit", "200"}, extra...)...)
	wantExit(t, r, 0)
	st := e.openStore()
	defer st.Close()
	b, attempts := onlyBenchAttempts(t, st, 3)
	want := map[string]record.ErrorKind{"tokens": record.ErrorTokenLimit, "cost": record.ErrorCostLimit, "turns": record.ErrorTurnLimit}
	for _, a := range attempts {
		if a.Status != record.AttemptFailed || a.FailureKind != string(want[a.TaskID]) {
			t.Errorf("%s: %s %q, want failed %s", a.TaskID, a.Status, a.FailureKind, want[a.TaskID])
		}
		if onWorkers := len(extra) > 0; onWorkers != (a.Worker != "") {
			t.Errorf("%s ran on worker %q", a.TaskID, a.Worker)
		}
	}
	failures, errs := reportedFailures(t, e.env, b.ID)
	if !maps.Equal(failures, map[string]int{"token_limit": 1, "cost_limit": 1, "turn_limit": 1}) || len(errs) > 0 {
		t.Errorf("the report's failures %v, errors %v; want one of each limit's kind, and no error", failures, errs)
	}
}

// reportedFailures are the failures and errors, by kind, of the one model
// of bench id, as lane bench report -o json gives them.
func reportedFailures(t *testing.T, e *env, id string) (failures, errs map[string]int) {
	t.Helper()
	rep := e.lane(context.Background(), "bench", "report", id[:8], "-o", "json")
	wantExit(t, rep, 0)
	var report struct {
		Models []struct {
			Failures map[string]int `json:"failures"`
			Errors   map[string]int `json:"errors"`
		}
	}
	if err := json.Unmarshal([]byte(rep.stdout), &report); err != nil || len(report.Models) != 1 {
		t.Fatalf("lane bench report -o json: %v\n%s", err, rep.stdout)
	}
	return report.Models[0].Failures, report.Models[0].Errors
}
