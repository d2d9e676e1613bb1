package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lanehq/lane/internal/record"
	"github.com/lanehq/lane/internal/testkit/anthropictest"
)

// A Harbor task whose [environment.healthcheck] never passes, benched
// with Claude Code against a scripted model: the attempt is an error of
// the environment that says what the check printed, and the agent never
// ran (no run recorded, no request to the model).
func TestHarborHealthcheckThatNeverPasses(t *testing.T) {
	t.Parallel()
	vars, base := containerVars(t)
	e := newLocalEnv(t)
	claude := anthropictest.ClaudeBin(t)
	cs := anthropictest.NewServer(t)
	home := filepath.Join(t.TempDir(), "home")
	os.Mkdir(home, 0o755)
	e.vars = append(e.vars, vars...)
	e.vars = append(e.vars, anthropictest.ClaudeEnv(cs.URL(), home)...)
	e.vars = append(e.vars, "LANE_CLAUDE_BIN="+claude, "HOME="+home, "LANE_DB="+e.db)
	cs.SetTurns(anthropictest.Text("done"))

	task := filepath.Join(t.TempDir(), "write-hello")
	if err := os.CopyFS(task, os.DirFS("testdata/harbor/write-hello")); err != nil {
		t.Fatal(err)
	}
	toml, err := os.ReadFile(filepath.Join(task, "task.toml"))
	if err != nil {
		t.Fatal(err)
	}
	toml = append(toml, "\n[environment.healthcheck]\ncommand = \"echo the service is down; exit 1\"\ninterval_sec = 0.2\nretries = 2\n"...)
	if err := os.WriteFile(filepath.Join(task, "task.toml"), toml, 0o644); err != nil {
		t.Fatal(err)
	}

	r := e.lane(context.Background(), "bench", task, "--models", "sonnet", "--build-arg", "BASE="+base, "-o", "json")
	wantExit(t, r, 0)
	st := e.openStore()
	defer st.Close()
	a := latestBenchAttempts(t, st, 1)[0]
	if a.Status != record.AttemptErrored || a.FailureKind != "environment_error" ||
		!strings.Contains(a.CheckOutput, "healthcheck did not pass") || !strings.Contains(a.CheckOutput, "the service is down") {
		t.Errorf("attempt %s %s: %q; want an environment_error saying what the healthcheck printed", a.Status, a.FailureKind, a.CheckOutput)
	}
	if a.RunID != "" {
		t.Errorf("the agent ran (run %s)", a.RunID)
	}
	if reqs := cs.Requests(); len(reqs) != 0 {
		t.Errorf("the model got %d requests", len(reqs))
	}
}

// A Harbor task whose healthcheck passes only after its start period,
// under the oracle: its first try starts a process that makes the file it
// looks for 2 s later, so that try fails, and with retries = 1 it would
// fail the check had it counted. The attempt runs and passes. Long:
// harbor's TestHealthcheckInTheContainer counts the tries in make test.
func TestHarborHealthcheckPassesAfterItsStartPeriodLong(t *testing.T) {
	t.Parallel()
	vars, base := containerVars(t)
	e := newLocalEnv(t)
	e.vars = append(e.vars, vars...)
	e.vars = append(e.vars, "LANE_DB="+e.db)
	task := filepath.Join(t.TempDir(), "write-hello")
	if err := os.CopyFS(task, os.DirFS("testdata/harbor/write-hello")); err != nil {
		t.Fatal(err)
	}
	toml, err := os.ReadFile(filepath.Join(task, "task.toml"))
	if err != nil {
		t.Fatal(err)
	}
	toml = append(toml, `
[environment.healthcheck]
command = "[ -e /tmp/started ] || { touch /tmp/started; (sleep 2; touch /tmp/ready) >/dev/null 2>&1 </dev/null & }; test -e /tmp/ready"
start_period_sec = 120
start_interval_sec = 0.2
retries = 1
`...)
	if err := os.WriteFile(filepath.Join(task, "task.toml"), toml, 0o644); err != nil {
		t.Fatal(err)
	}
	r := e.lane(context.Background(), "bench", task, "--models", "oracle", "--build-arg", "BASE="+base)
	wantExit(t, r, 0)
	st := e.openStore()
	defer st.Close()
	if a := latestBenchAttempts(t, st, 1)[0]; a.Status != record.AttemptPassed || a.Reward == nil || *a.Reward != 1 {
		t.Errorf("attempt %s %s reward %v: %q", a.Status, a.FailureKind, a.Reward, a.CheckOutput)
	}
}
