package store

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"testing"

	"github.com/lanehq/lane/internal/record"
)

// An attempt at a multi-step task comes back with its steps as they were
// saved, on both backends; an attempt of one step comes back without.
func TestAttemptSteps(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, be backend) {
		ctx := context.Background()
		s := be.open(t)
		createBenchT(t, s, testBench(t, "b1", t0))
		steps := record.Attempt{BenchID: "b1", TaskID: "ledger", Model: "oracle", N: 1, Status: record.AttemptFailed,
			FailureKind: "check_failed", Reward: new(0.5), Rewards: map[string]float64{"reward": 0.5, "style": 0.25},
			Steps: []record.AttemptStep{
				{Name: "one", RunID: "r1", Status: record.AttemptPassed, Reward: new(1.0),
					Rewards: map[string]float64{"reward": 1, "style": 0.5}, DurationMS: 1200, CostUSD: 0.02},
				{Name: "two", Status: record.AttemptFailed, FailureKind: "below_min_reward", Reward: new(0.0),
					Rewards: map[string]float64{"reward": 0}, Error: "reward = 0, below its min_reward 0.5"},
			}}
		plain := record.Attempt{BenchID: "b1", TaskID: "plain", Model: "oracle", N: 1, Status: record.AttemptPassed,
			Reward: new(1.0), Rewards: map[string]float64{"reward": 1}}
		for _, a := range []*record.Attempt{&steps, &plain} {
			if err := s.SaveAttempt(ctx, a); err != nil {
				t.Fatal(err)
			}
		}
		as, err := s.Attempts(ctx, "b1")
		if err != nil || len(as) != 2 {
			t.Fatalf("Attempts = %+v, %v", as, err)
		}
		if !reflect.DeepEqual(as[0], steps) {
			t.Errorf("multi-step attempt =\n%+v\nwant\n%+v", as[0], steps)
		}
		if as[1].TaskID != "plain" || as[1].Steps != nil {
			t.Errorf("single-step attempt came back with steps %+v", as[1].Steps)
		}
	})
}

// A database from before steps opens: the migration adds the column, an
// old attempt reads without steps, and new ones keep theirs.
func TestAttemptStepsMigration(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, be backend) {
		ctx := context.Background()
		s := reopened(t, be, func(old *Store) {
			rewind(t, old, 14)
			mustExec(t, old, `INSERT INTO bench_attempts (bench_id, task_id, model, n, status, reward)
				VALUES ('b1', 'old', 'oracle', 1, 'passed', 1)`)
		})
		if got := applied(t, s); !slices.ContainsFunc(got, func(m appliedMigration) bool { return m.name == "0014_attempt_steps" }) {
			t.Fatalf("applied = %+v, want 0014_attempt_steps among them", got)
		}
		a := record.Attempt{BenchID: "b1", TaskID: "new", Model: "oracle", N: 1, Status: record.AttemptPassed,
			Steps: []record.AttemptStep{{Name: "one", Status: record.AttemptPassed}}}
		if err := s.SaveAttempt(ctx, &a); err != nil {
			t.Fatal(err)
		}
		as, err := s.Attempts(ctx, "b1")
		if err != nil || len(as) != 2 {
			t.Fatalf("Attempts = %+v, %v", as, err)
		}
		if as[1].TaskID != "old" || as[1].Steps != nil {
			t.Errorf("old attempt = %+v, want no steps", as[1])
		}
		if !reflect.DeepEqual(as[0].Steps, a.Steps) {
			t.Errorf("new attempt's steps = %+v, want %+v", as[0].Steps, a.Steps)
		}
	})
}

// A worker of the pool records a multi-step attempt with its steps, as a
// bench of its own process does.
func TestCompleteAttemptKeepsSteps(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := poolStore(t)
	keys := poolBench(t, s, "pool", "ledger")
	l := acquire(t, s, keys[0], "w1", t0)
	a := passed("")
	a.Reward, a.Rewards = new(1.0), map[string]float64{"reward": 1}
	a.Steps = []record.AttemptStep{{Name: "one", Status: record.AttemptPassed, Reward: new(1.0), Rewards: map[string]float64{"reward": 1}},
		{Name: "two", Status: record.AttemptPassed, Reward: new(1.0), Rewards: map[string]float64{"reward": 1}}}
	if _, err := s.CompleteAttempt(ctx, l, a, nil); err != nil {
		t.Fatal(err)
	}
	as, err := s.Attempts(ctx, "pool")
	if err != nil || len(as) != 1 {
		t.Fatalf("Attempts = %+v, %v", as, err)
	}
	if !reflect.DeepEqual(as[0].Steps, a.Steps) || as[0].Worker != "w1" {
		t.Errorf("pooled attempt's steps = %+v (worker %q), want %+v", as[0].Steps, as[0].Worker, a.Steps)
	}
}

// A step's run of a multi-step attempt leads back to its attempt (an
// export names the bench, task and step of each run), on both backends;
// a run no attempt has is not found.
func TestAttemptOfStepRun(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, be backend) {
		ctx := context.Background()
		s := be.open(t)
		createBenchT(t, s, testBench(t, "b1", t0))
		a := record.Attempt{BenchID: "b1", TaskID: "ledger", Model: "sonnet", N: 2, Status: record.AttemptPassed,
			Steps: []record.AttemptStep{{Name: "one", RunID: "run-a", Status: record.AttemptPassed}, {Name: "two", RunID: "run-b", Status: record.AttemptPassed}}}
		other := record.Attempt{BenchID: "b1", TaskID: "ledger", Model: "sonnet", N: 1, Status: record.AttemptPassed,
			Steps: []record.AttemptStep{{Name: "one", RunID: "run-a2", Status: record.AttemptPassed}}}
		for _, x := range []*record.Attempt{&other, &a} {
			if err := s.SaveAttempt(ctx, x); err != nil {
				t.Fatal(err)
			}
		}
		for run, want := range map[string]int{"run-a": 2, "run-b": 2, "run-a2": 1} {
			got, err := s.AttemptOfRun(ctx, run)
			if err != nil || got.N != want {
				t.Errorf("AttemptOfRun(%s) = %+v, %v; want attempt #%d", run, got, err, want)
			}
		}
		if got, err := s.AttemptOfRun(ctx, "run-"); !errors.Is(err, ErrNotFound) {
			t.Errorf("AttemptOfRun(run-) = %+v, %v; want not found (a prefix of step runs is no run)", got, err)
		}
	})
}
