package e2e

import (
	"context"
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

// runaway is the command of every turn: it leaves a line in loop.txt and
// prints about 9 KB for the model to read.
const runaway = "echo again >> loop.txt; seq 1 2000"

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
	costly  bool
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
	return limitRig{runtime: r.runtime, costly: r.costly, start: func(t *testing.T) (*env, []string, func() int) {
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

// TestAttemptLimits: each limit stops the runaway on its second turn,
// on every runtime but the costly ones (TestAttemptLimitsCostlyLong).
func TestAttemptLimits(t *testing.T) {
	runLimitCases(t, false)
}

func TestAttemptLimitsCostlyLong(t *testing.T) {
	runLimitCases(t, true)
}

func runLimitCases(t *testing.T, costly bool) {
	t.Parallel()
	for _, r := range limitRigs {
		if r.costly != costly {
			continue
		}
		t.Run(r.runtime, func(t *testing.T) {
			for name, c := range limitCases {
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
