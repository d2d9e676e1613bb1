package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"lane/trace"
)

// The pool of lane workers records through these: each attempt a worker
// runs is held under a lease with a fencing token, so that an attempt River
// hands out twice is recorded once, by the holder of the newest lease.

// AttemptKey names one attempt of a bench.
type AttemptKey struct {
	BenchID, TaskID, Model string
	N                      int
}

func (k AttemptKey) String() string {
	return fmt.Sprintf("%s/%s/%s#%d", k.BenchID, k.TaskID, k.Model, k.N)
}

// Lease is a worker's hold on an attempt until Expires, unless renewed.
// Token grows with every lease of the attempt: a result is recorded only
// under the attempt's newest token.
type Lease struct {
	Key     AttemptKey
	Token   int64
	Holder  string
	Expires time.Time
}

var (
	// ErrFenced: the lease was taken over (it had lapsed); the holder must
	// stop and record nothing as the attempt's result.
	ErrFenced = errors.New("the attempt's lease was taken over by another worker")
	// ErrAttemptDone: the attempt has its result already.
	ErrAttemptDone = errors.New("the attempt is done")
	// ErrNeedsPostgres: the worker pool shares a PostgreSQL database.
	ErrNeedsPostgres = errors.New("the worker pool needs a PostgreSQL database")
)

// LeaseHeldError says that another lease of the attempt is live.
type LeaseHeldError struct {
	Holder string
	Until  time.Time
}

func (e *LeaseHeldError) Error() string {
	return fmt.Sprintf("the attempt is held by %s until %s", e.Holder, e.Until.Format(time.RFC3339))
}

const keyWhere = ` WHERE bench_id = ? AND task_id = ? AND model = ? AND n = ?`

func (k AttemptKey) args() []any { return []any{k.BenchID, k.TaskID, k.Model, k.N} }

// AcquireLease gives holder a lease of the attempt for ttl from now, with
// the next token. A lapsed lease is taken over: the runs its holder started
// and left running are marked interrupted (the lost tries). It returns
// ErrAttemptDone for an attempt with its result, a *LeaseHeldError while
// another lease is live.
func (s *Store) AcquireLease(ctx context.Context, key AttemptKey, holder string, ttl time.Duration, now time.Time) (Lease, error) {
	var l Lease
	err := s.writeTx(ctx, func(tx *txn) error {
		var (
			status, was string
			token       int64
			expires     sql.NullInt64
		)
		err := tx.QueryRowContext(ctx, `SELECT status, lease_token, lease_holder, lease_expires_at FROM bench_attempts`+keyWhere,
			key.args()...).Scan(&status, &token, &was, &expires)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("attempt %s: %w", key, ErrNotFound)
		}
		if err != nil {
			return err
		}
		switch trace.AttemptStatus(status) {
		case trace.AttemptPassed, trace.AttemptFailed, trace.AttemptSkipped:
			return ErrAttemptDone
		}
		if was != "" && expires.Valid && expires.Int64 > now.UnixNano() {
			return &LeaseHeldError{Holder: was, Until: time.Unix(0, expires.Int64)}
		}
		if err := s.interruptLostTries(ctx, tx, key, token+1, was, now); err != nil {
			return err
		}
		l = Lease{Key: key, Token: token + 1, Holder: holder, Expires: now.Add(ttl)}
		_, err = tx.ExecContext(ctx, `UPDATE bench_attempts SET status = ?, lease_token = ?, lease_holder = ?,
			lease_expires_at = ?, worker = ?, started_at = ?, ended_at = NULL, run_id = NULL`+keyWhere,
			append([]any{string(trace.AttemptRunning), l.Token, holder, l.Expires.UnixNano(), holder, now.UnixNano()},
				key.args()...)...)
		return err
	})
	if err != nil {
		return Lease{}, fmt.Errorf("lease attempt %s: %w", key, err)
	}
	return l, nil
}

// interruptLostTries marks interrupted the runs of the attempt started
// under a token below below that are still running: their worker lost its
// lease (it died, or was cut off) and the attempt runs again.
func (s *Store) interruptLostTries(ctx context.Context, tx *txn, key AttemptKey, below int64, holder string, now time.Time) error {
	q, args := lostTriesUpdate(key, below, holder, now)
	if _, err := tx.ExecContext(ctx, q, args...); err != nil {
		return fmt.Errorf("interrupt lost tries: %w", err)
	}
	return nil
}

func lostTriesUpdate(key AttemptKey, below int64, holder string, now time.Time) (string, []any) {
	msg := "the worker lost its lease on the attempt"
	if holder != "" {
		msg = fmt.Sprintf("worker %s lost its lease on the attempt (it stopped renewing it)", holder)
	}
	return `UPDATE runs SET status = ?, ended_at = ?, error_message = ?, duration_ms = (? - started_at) / 1000000
		WHERE status = ? AND id IN (SELECT run_id FROM attempt_runs` + keyWhere + ` AND lease_token < ?)`,
		append(append([]any{string(trace.StatusInterrupted), now.UnixNano(), msg, now.UnixNano(), string(trace.StatusRunning)},
			key.args()...), below)
}

// RenewLease moves l's expiry to ttl from now. ErrFenced: l is no longer
// the attempt's lease.
func (s *Store) RenewLease(ctx context.Context, l *Lease, ttl time.Duration, now time.Time) error {
	expires := now.Add(ttl)
	err := s.updateRecord(ctx, "lease of attempt", l.Key.String(),
		`UPDATE bench_attempts SET lease_expires_at = ?`+keyWhere+` AND lease_token = ? AND status = ?`,
		append(append([]any{expires.UnixNano()}, l.Key.args()...), l.Token, string(trace.AttemptRunning)), ErrFenced)
	if err != nil {
		return err
	}
	l.Expires = expires
	return nil
}

// LinkAttemptRun records that runID was started for the attempt under l,
// so that a lost try can be found and marked. ErrFenced: l is no longer the
// attempt's lease.
func (s *Store) LinkAttemptRun(ctx context.Context, l Lease, runID string) error {
	q := `INSERT INTO attempt_runs (bench_id, task_id, model, n, run_id, worker, lease_token)
		SELECT ?, ?, ?, CAST(? AS BIGINT), ?, ?, CAST(? AS BIGINT) WHERE EXISTS (SELECT 1 FROM bench_attempts` + keyWhere + ` AND lease_token = ?)
		ON CONFLICT DO NOTHING`
	args := append(append(l.Key.args(), runID, l.Holder, l.Token), append(l.Key.args(), l.Token)...)
	err := s.updateRecord(ctx, "runs of attempt", l.Key.String(), q, args, ErrFenced)
	if err != nil {
		return err
	}
	return nil
}

// AttemptRuns returns the ids of every run started for the attempt, in the
// order of their leases: the last is the one that counts, the others lost
// their lease.
func (s *Store) AttemptRuns(ctx context.Context, key AttemptKey) ([]string, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT run_id FROM attempt_runs`+keyWhere+` ORDER BY lease_token, run_id`,
		key.args()...)
	if err != nil {
		return nil, fmt.Errorf("runs of attempt %s: %w", key, err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("runs of attempt %s: %w", key, err)
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// HandBack gives the attempt back to the queue: pending, no lease. A lease
// that is no longer the attempt's changes nothing.
func (s *Store) HandBack(ctx context.Context, l Lease) error {
	err := s.writeTx(ctx, func(tx *txn) error {
		_, err := tx.ExecContext(ctx, `UPDATE bench_attempts SET status = ?, lease_holder = '', lease_expires_at = NULL`+
			keyWhere+` AND lease_token = ? AND status = ?`,
			append(append([]any{string(trace.AttemptPending)}, l.Key.args()...), l.Token, string(trace.AttemptRunning))...)
		return err
	})
	if err != nil {
		return fmt.Errorf("hand back attempt %s: %w", l.Key, err)
	}
	return nil
}

// AttemptTokens returns the lease token of each attempt of the bench: a
// re-enqueued attempt's job is told apart from the one before by it.
func (s *Store) AttemptTokens(ctx context.Context, benchID string) (map[AttemptKey]int64, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT task_id, model, n, lease_token FROM bench_attempts WHERE bench_id = ?`, benchID)
	if err != nil {
		return nil, fmt.Errorf("attempt tokens of bench %s: %w", benchID, err)
	}
	defer rows.Close()
	out := map[AttemptKey]int64{}
	for rows.Next() {
		k := AttemptKey{BenchID: benchID}
		var token int64
		if err := rows.Scan(&k.TaskID, &k.Model, &k.N, &token); err != nil {
			return nil, fmt.Errorf("attempt tokens of bench %s: %w", benchID, err)
		}
		out[k] = token
	}
	return out, rows.Err()
}
