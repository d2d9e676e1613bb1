package store

import (
	"testing"

	"github.com/lanehq/lane/internal/record"
)

// A database from before the per-attempt limits opens: a run and an
// attempt stopped by the turn limit read as turn_limit, as new ones are
// recorded, and the old run has no budget.
func TestBudgetMigration(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, be backend) {
		s := reopened(t, be, func(old *Store) {
			mustCreate(t, old, testRun("r-old"))
			rewind(t, old, 16)
			mustExec(t, old, `UPDATE runs SET error_kind = 'max_turns' WHERE id = 'r-old'`)
			mustExec(t, old, `INSERT INTO bench_attempts (bench_id, task_id, model, n, status, failure_kind)
				VALUES ('b1', 'old', 'oracle', 1, 'failed', 'max_turns')`)
		})
		if r := mustGetRun(t, s, "r-old"); r.ErrorKind != record.ErrorTurnLimit || r.Budget != nil {
			t.Errorf("old run: kind %q, budget %+v; want turn_limit and none", r.ErrorKind, r.Budget)
		}
		if as := mustAttempts(t, s, "b1"); len(as) != 1 || as[0].FailureKind != string(record.ErrorTurnLimit) {
			t.Errorf("old attempt = %+v, want failure kind turn_limit", as)
		}
	})
}
