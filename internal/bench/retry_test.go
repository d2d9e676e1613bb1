package bench

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/lanehq/lane/internal/record"
)

// The decision table: Harbor's default exclusions, --retry-include, and
// --retry-exclude replacing the defaults.
func TestRetryDecision(t *testing.T) {
	t.Parallel()
	defaults := &RetryPolicy{Max: 2, Exclude: DefaultRetryExclude}
	include := &RetryPolicy{Max: 2, Include: []string{FailEnvironment, "crash"}, Exclude: DefaultRetryExclude}
	exclude := &RetryPolicy{Max: 2, Exclude: []string{FailEnvironment}} // replaces the defaults
	failed := func(kind string) *record.Attempt {
		return &record.Attempt{Status: record.AttemptFailed, FailureKind: kind}
	}
	errored := func(kind string) *record.Attempt {
		return &record.Attempt{Status: record.AttemptErrored, FailureKind: kind}
	}
	for _, c := range []struct {
		name string
		p    *RetryPolicy
		a    *record.Attempt
		want bool
	}{
		{"no policy", nil, errored(FailEnvironment), false},
		{"no retries", &RetryPolicy{}, errored(FailEnvironment), false},
		{"passed", defaults, &record.Attempt{Status: record.AttemptPassed}, false},
		{"skipped over budget", defaults, &record.Attempt{Status: record.AttemptSkipped}, false},
		// What Harbor retries by default.
		{"environment error", defaults, errored(FailEnvironment), true},
		{"image build", defaults, errored(FailImage), true},
		{"container start", defaults, errored(FailStart), true},
		{"agent crash", defaults, failed("crash"), true},
		{"agent error", defaults, failed(FailAgent), true},
		{"model API", defaults, failed("api"), true},
		{"lane error", defaults, failed(FailLane), true},
		// Harbor's default exclusions.
		{"agent timeout", defaults, failed("timeout"), false},
		{"verifier timeout", defaults, errored(FailVerifierTime), false},
		{"no reward file", defaults, errored(FailNoReward), false},
		{"unreadable reward", defaults, errored(FailBadReward), false},
		{"reward without the pass key", defaults, errored(FailNoPassKey), false},
		{"usage limit", defaults, &record.Attempt{Status: record.AttemptSkipped, FailureKind: FailRateLimited}, false},
		{"auth", defaults, failed("auth"), false},
		{"configuration refused", defaults, failed("usage"), false},
		// lane's per-attempt limits, excluded as the agent's timeout is.
		{"token limit", defaults, failed("token_limit"), false},
		{"cost limit", defaults, failed("cost_limit"), false},
		{"turn limit", defaults, failed("turn_limit"), false},
		// Never: a score, and the bench's end.
		{"check failed", defaults, failed(FailCheck), false},
		{"check failed, excluded nothing", &RetryPolicy{Max: 1}, failed(FailCheck), false},
		{"cancelled", &RetryPolicy{Max: 1}, failed(FailCancelled), false},
		// --retry-include: only those, the defaults still excluded.
		{"included", include, errored(FailEnvironment), true},
		{"included crash", include, failed("crash"), true},
		{"not included", include, failed(FailAgent), false},
		// --retry-exclude replaces the defaults.
		{"excluded", exclude, errored(FailEnvironment), false},
		{"agent timeout, defaults replaced", exclude, failed("timeout"), true},
		{"verifier timeout, defaults replaced", exclude, errored(FailVerifierTime), true},
		{"cost limit, defaults replaced", exclude, failed("cost_limit"), true},
		{"exclude wins over include", &RetryPolicy{Max: 1, Include: []string{"crash"}, Exclude: []string{"crash"}}, failed("crash"), false},
	} {
		if got := c.p.Retries(c.a); got != c.want {
			t.Errorf("%s: Retries(%s %s) = %v, want %v", c.name, c.a.Status, c.a.FailureKind, got, c.want)
		}
	}
}

func TestParseKinds(t *testing.T) {
	t.Parallel()
	got, err := ParseKinds("--retry-exclude", []string{"agent_timeout", "environment_error", "timeout"}, RetryableKinds())
	if err != nil || !slices.Equal(got, []string{"timeout", "environment_error"}) {
		t.Errorf("ParseKinds = %v, %v; want timeout (agent_timeout's), environment_error", got, err)
	}
	// The turn limit's old name is still understood.
	if got, err := ParseKinds("--rerun", []string{"max_turns", "token_limit"}, FailureKinds()); err != nil || !slices.Equal(got, []string{"turn_limit", "token_limit"}) {
		t.Errorf("ParseKinds = %v, %v; want turn_limit (max_turns's), token_limit", got, err)
	}
	_, err = ParseKinds("--rerun", []string{"enviroment_error"}, FailureKinds())
	if err == nil || !strings.Contains(err.Error(), `--rerun: unknown failure kind "enviroment_error"`) ||
		!strings.Contains(err.Error(), "environment_error, no_oracle") {
		t.Errorf("a misspelt kind: %v; want it named, with the valid kinds", err)
	}
	// A score is no failure to retry, though a rerun may run it again.
	if _, err := ParseKinds("--retry-include", []string{"check_failed"}, RetryableKinds()); err == nil {
		t.Error("--retry-include check_failed was accepted")
	}
	if _, err := ParseKinds("--rerun", []string{"check_failed"}, FailureKinds()); err != nil {
		t.Errorf("--rerun check_failed: %v", err)
	}
}

// A retried attempt replaces the failed one and counts it; a kind the
// policy excludes is not retried; the retries stop at Max.
func TestRunRetries(t *testing.T) {
	st := openStore(t)
	suite := makeSuite(t, `
models: [m]
tasks:
  - {id: flaky, prompt: p, check: 'test -f ok'}
  - {id: slow, prompt: p, check: 'test -f ok'}
  - {id: broken, prompt: p, check: 'test -f ok'}
`, nil)
	var mu sync.Mutex
	runs := map[string]int{}
	agent := &fakeAgent{st: st}
	agent.act = func(_ context.Context, spec RunSpec) outcome {
		mu.Lock()
		runs[spec.TaskID]++
		n := runs[spec.TaskID]
		mu.Unlock()
		switch {
		case spec.TaskID == "flaky" && n == 1:
			return outcome{status: record.StatusFailed, kind: record.ErrorCrash, cost: 0.25}
		case spec.TaskID == "slow":
			return outcome{status: record.StatusTimedOut, kind: record.ErrorTimeout}
		case spec.TaskID == "broken":
			return outcome{status: record.StatusFailed, kind: record.ErrorAPI}
		}
		return outcome{edit: writeFile("ok", ""), cost: 0.5}
	}
	b, err := Run(context.Background(), Config{Suite: suite, Run: agent.run, Store: st, WorkDir: t.TempDir(),
		Retry: &RetryPolicy{Max: 2, Exclude: DefaultRetryExclude}})
	if err != nil {
		t.Fatal(err)
	}
	got := attemptsOf(t, st, b.ID)
	check := func(key string, status record.AttemptStatus, kind string, retries, ran int) {
		t.Helper()
		a := got[key]
		task := strings.Split(key, "/")[0]
		if a.Status != status || a.FailureKind != kind || a.Retries != retries || runs[task] != ran {
			t.Errorf("%s: %s %q, %d retries, %d runs; want %s %q, %d retries, %d runs",
				key, a.Status, a.FailureKind, a.Retries, runs[task], status, kind, retries, ran)
		}
	}
	check("flaky/m/1", record.AttemptPassed, "", 1, 2)
	check("slow/m/1", record.AttemptFailed, "timeout", 0, 1)
	check("broken/m/1", record.AttemptFailed, "api", 2, 3)
	if a := got["flaky/m/1"]; a.CostUSD != 0.5 {
		t.Errorf("the retried attempt costs %v, want its last run's 0.5", a.CostUSD)
	}
}

// lane bench --resume --rerun KIND runs again exactly the attempts that
// ended with KIND.
func TestResumeRerun(t *testing.T) {
	st := openStore(t)
	suite := makeSuite(t, `
models: [m]
tasks:
  - {id: env, prompt: p, check: 'test -f ok'}
  - {id: wrong, prompt: p, check: 'test -f ok'}
  - {id: right, prompt: p, check: 'test -f ok'}
`, nil)
	first := &fakeAgent{st: st, act: func(_ context.Context, spec RunSpec) outcome {
		switch spec.TaskID {
		case "env":
			return outcome{status: record.StatusFailed, kind: record.ErrorCrash}
		case "wrong":
			return outcome{}
		}
		return outcome{edit: writeFile("ok", "")}
	}}
	b, err := Run(context.Background(), Config{Suite: suite, Run: first.run, Store: st, WorkDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	before := attemptsOf(t, st, b.ID)
	stored, err := st.GetBench(context.Background(), b.ID)
	if err != nil {
		t.Fatal(err)
	}
	second := &fakeAgent{st: st, act: func(_ context.Context, spec RunSpec) outcome {
		return outcome{edit: writeFile("ok", "")}
	}}
	if _, err := Run(context.Background(), Config{Resume: stored, Rerun: []string{"crash"}, Run: second.run, Store: st,
		WorkDir: t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	if got := second.ran(); !slices.Equal(got, []string{"env/m/1"}) {
		t.Errorf("--rerun crash ran %v, want env/m/1 alone", got)
	}
	after := attemptsOf(t, st, b.ID)
	if a := after["env/m/1"]; a.Status != record.AttemptPassed || a.RunID == before["env/m/1"].RunID {
		t.Errorf("env/m/1 after the rerun: %+v", a)
	}
	for _, k := range []string{"wrong/m/1", "right/m/1"} {
		if after[k].RunID != before[k].RunID || after[k].Status != before[k].Status {
			t.Errorf("%s changed: %+v, was %+v", k, after[k], before[k])
		}
	}
}
