package store

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/lanehq/lane/internal/record"
)

// An attempt's reward keys come back as they were saved, on both backends;
// one without keys comes back without.
func TestAttemptRewards(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, be backend) {
		ctx := context.Background()
		s := be.open(t)
		createBenchT(t, s, testBench(t, "b1", t0))
		keyed := record.Attempt{BenchID: "b1", TaskID: "keys", Model: "oracle", N: 1, Status: record.AttemptPassed,
			Reward: new(1.0), Rewards: map[string]float64{"reward": 1, "style": 0.25, "tests passed": 3}}
		plain := record.Attempt{BenchID: "b1", TaskID: "plain", Model: "oracle", N: 1, Status: record.AttemptFailed,
			FailureKind: "check_failed"}
		for _, a := range []*record.Attempt{&keyed, &plain} {
			if err := s.SaveAttempt(ctx, a); err != nil {
				t.Fatal(err)
			}
		}
		as, err := s.Attempts(ctx, "b1")
		if err != nil || len(as) != 2 {
			t.Fatalf("Attempts = %+v, %v", as, err)
		}
		if !reflect.DeepEqual(as[0], keyed) {
			t.Errorf("keyed attempt =\n%+v\nwant\n%+v", as[0], keyed)
		}
		if as[1].Rewards != nil || as[1].Reward != nil {
			t.Errorf("attempt without a reward came back with %v %v", as[1].Reward, as[1].Rewards)
		}
	})
}

// undoMigration undoes each migration from 12 on, for the tests of a
// database from before it: a migration added later gets its line here.
var undoMigration = map[int][]string{
	12: {`ALTER TABLE bench_attempts DROP COLUMN rewards`},
	13: {`ALTER TABLE bench_attempts DROP COLUMN retries`},
	14: {`ALTER TABLE bench_attempts DROP COLUMN steps`},
	15: {`DROP TABLE attempt_artifacts`},
	16: {`ALTER TABLE runs DROP COLUMN budget`},
}

// rewind makes s's database the schema from before migration version:
// that one and every later one undone, latest first, and forgotten.
func rewind(t *testing.T, s *Store, version int) {
	t.Helper()
	ms, err := migrations("sqlite") // both backends have the same (TestMigrationsMatchAcrossBackends)
	if err != nil {
		t.Fatal(err)
	}
	for v := ms[len(ms)-1].version; v >= version; v-- {
		stmts, ok := undoMigration[v]
		if !ok {
			t.Fatalf("no undo of migration %d: add it to undoMigration", v)
		}
		for _, q := range stmts {
			mustExec(t, s, q)
		}
	}
	mustExec(t, s, fmt.Sprintf(`DELETE FROM schema_migrations WHERE version >= %d`, version))
}

// reopened makes a database of be, with the bench b1 in it, shapes it as
// an older lane left it (shape: rewind to a migration, rows of that
// schema), then opens it as lane does now, migrations run.
func reopened(t *testing.T, be backend, shape func(old *Store)) *Store {
	t.Helper()
	where := be.where(t)
	old, err := Open(context.Background(), where)
	if err != nil {
		t.Fatal(err)
	}
	createBenchT(t, old, testBench(t, "b1", t0))
	shape(old)
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}
	return openAt(t, where)
}

// A database of the schema before reward keys (an attempt with its reward
// and no keys) opens: the migration adds the column, the old attempt reads
// as it was, and new ones keep their keys.
func TestRewardKeysMigration(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, be backend) {
		ctx := context.Background()
		s := reopened(t, be, func(old *Store) {
			rewind(t, old, 12)
			mustExec(t, old, `INSERT INTO bench_attempts (bench_id, task_id, model, n, status, reward)
				VALUES ('b1', 'old', 'oracle', 1, 'passed', 0.5)`)
		})
		if got := applied(t, s); !slices.ContainsFunc(got, func(m appliedMigration) bool { return m.name == "0012_reward_keys" }) {
			t.Fatalf("applied = %+v, want 0012_reward_keys among them", got)
		}
		a := record.Attempt{BenchID: "b1", TaskID: "new", Model: "oracle", N: 1, Status: record.AttemptPassed,
			Reward: new(1.0), Rewards: map[string]float64{"reward": 1, "style": 0}}
		if err := s.SaveAttempt(ctx, &a); err != nil {
			t.Fatal(err)
		}
		as, err := s.Attempts(ctx, "b1")
		if err != nil || len(as) != 2 {
			t.Fatalf("Attempts = %+v, %v", as, err)
		}
		if as[1].TaskID != "old" || as[1].Reward == nil || *as[1].Reward != 0.5 || as[1].Rewards != nil {
			t.Errorf("old attempt = %+v, want reward 0.5 and no keys", as[1])
		}
		if !reflect.DeepEqual(as[0].Rewards, a.Rewards) {
			t.Errorf("new attempt's keys = %v, want %v", as[0].Rewards, a.Rewards)
		}
	})
}
