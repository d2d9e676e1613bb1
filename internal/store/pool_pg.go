package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lanehq/lane/internal/record"
)

// poolIdleTimeout ends, on the server, a transaction of the pool whose
// client went silent inside it (idle_in_transaction_session_timeout): a
// worker cut off from the network in the middle of one would otherwise
// hold the write lock, and so every writer of every machine, until TCP
// gives up on it many minutes later. The pool's transactions take
// milliseconds.
const poolIdleTimeout = "15s"

// pgWriteTx is writeTx on PostgreSQL with a pgx transaction, for callers
// that must also act in it through another library (River completes or
// inserts its jobs in the same transaction that records an attempt), and
// for the pool's writes, which a worker may leave half done when it is cut
// off (see poolIdleTimeout).
func (s *Store) pgWriteTx(ctx context.Context, fn func(pgx.Tx) error) error {
	if s.pg == nil {
		return ErrNeedsPostgres
	}
	select {
	case s.wlock <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-s.wlock }()
	return pgx.BeginFunc(ctx, s.pg.pool, func(tx pgx.Tx) error {
		// The timeout is set in the statement that takes the lock, so that no
		// moment holds the lock without it.
		if _, err := tx.Exec(ctx, `SELECT set_config('idle_in_transaction_session_timeout', $2, true), pg_advisory_xact_lock($1)`,
			writeLockKey, poolIdleTimeout); err != nil {
			return fmt.Errorf("take the write lock: %w", err)
		}
		return fn(tx)
	})
}

// poolExec runs one of the pool's statements (written with ?) in a write
// transaction of its own and returns the rows it changed: pgWriteTx on
// PostgreSQL, writeTx on SQLite (whose file holds the pool's tables for a
// copy).
func (s *Store) poolExec(ctx context.Context, q string, args ...any) (int64, error) {
	var n int64
	if s.pg == nil {
		err := s.writeTx(ctx, func(tx *txn) error {
			res, err := tx.ExecContext(ctx, q, args...)
			if err != nil {
				return err
			}
			n, err = res.RowsAffected()
			return err
		})
		return n, err
	}
	err := s.pgWriteTx(ctx, func(tx pgx.Tx) error {
		var err error
		n, err = s.pgExec(ctx, tx, q, args...)
		return err
	})
	return n, err
}

// pgExec runs one of the store's statements (written with ?) in a pgx
// transaction.
func (s *Store) pgExec(ctx context.Context, tx pgx.Tx, q string, args ...any) (int64, error) {
	tag, err := tx.Exec(ctx, s.db.bind(q), s.db.args(args)...)
	return tag.RowsAffected(), err
}

// CompleteAttempt records a, the attempt's result, under lease l, and calls
// also in the same transaction (to complete the River job that carried
// it). The result is recorded only while l is the attempt's newest lease:
// a worker that lost its lease (cut off, come back late) gets ErrFenced and
// changes nothing. also runs in a savepoint: if it fails, the result is
// still recorded, and the job, delivered again, finds the attempt done.
// When a was the bench's last unfinished attempt, the bench is recorded
// succeeded and benchEnded is true: that worker, of all, tells of its end.
func (s *Store) CompleteAttempt(ctx context.Context, l Lease, a *record.Attempt, also func(pgx.Tx) error) (benchEnded bool, err error) {
	a.BenchID, a.TaskID, a.Model, a.N = l.Key.BenchID, l.Key.TaskID, l.Key.Model, l.Key.N
	a.Worker = l.Holder
	err = s.pgWriteTx(ctx, func(tx pgx.Tx) error {
		benchEnded = false // a retried transaction starts over
		var token int64
		err := tx.QueryRow(ctx, s.db.bind(`SELECT lease_token FROM bench_attempts`+keyWhere+` FOR UPDATE`),
			l.Key.args()...).Scan(&token)
		if errors.Is(err, pgx.ErrNoRows) {
			return ErrNotFound
		}
		if err != nil {
			return err
		}
		if token != l.Token {
			return ErrFenced
		}
		args, err := attemptArgs(a)
		if err != nil {
			return err
		}
		if _, err := s.pgExec(ctx, tx, attemptUpsert, args...); err != nil {
			return err
		}
		if err := replaceArtifacts(func(q string, args ...any) error {
			_, err := s.pgExec(ctx, tx, q, args...)
			return err
		}, a); err != nil {
			return err
		}
		if _, err := s.pgExec(ctx, tx, `UPDATE bench_attempts SET lease_holder = '', lease_expires_at = NULL`+keyWhere,
			l.Key.args()...); err != nil {
			return err
		}
		if benchEnded, err = s.finishPooledBench(ctx, tx, l.Key.BenchID); err != nil {
			return err
		}
		if also == nil {
			return nil
		}
		sp, err := tx.Begin(ctx)
		if err != nil {
			return err
		}
		if err := also(sp); err != nil {
			return sp.Rollback(ctx)
		}
		return sp.Commit(ctx)
	})
	if err != nil {
		return false, fmt.Errorf("record attempt %s: %w", l.Key, err)
	}
	return benchEnded, nil
}

// finishPooledBench records a bench of the pool succeeded once none of its
// attempts is pending or running (no process owns such a bench, its
// attempts do), and says whether it did.
func (s *Store) finishPooledBench(ctx context.Context, tx pgx.Tx, benchID string) (bool, error) {
	n, err := s.pgExec(ctx, tx, `UPDATE benches SET status = ?, ended_at = ?
		WHERE id = ? AND workers AND status = ? AND NOT EXISTS (
			SELECT 1 FROM bench_attempts WHERE bench_id = ? AND status IN (?, ?))`,
		string(record.StatusSucceeded), time.Now().UnixNano(), benchID, string(record.StatusRunning),
		benchID, string(record.AttemptPending), string(record.AttemptRunning))
	return n == 1, err
}

// EndPooledBench records the bench of the pool benchID succeeded at
// endedAt unless it is not running any more, and says whether it did.
func (s *Store) EndPooledBench(ctx context.Context, benchID string, endedAt time.Time) (bool, error) {
	var n int64
	err := s.pgWriteTx(ctx, func(tx pgx.Tx) error {
		var err error
		n, err = s.pgExec(ctx, tx, `UPDATE benches SET status = ?, ended_at = ? WHERE id = ? AND workers AND status = ?`,
			string(record.StatusSucceeded), endedAt.UnixNano(), benchID, string(record.StatusRunning))
		return err
	})
	if err != nil {
		return false, fmt.Errorf("end bench %s: %w", benchID, err)
	}
	return n == 1, nil
}

// ReapLapsed gives back to the queue every attempt whose lease lapsed
// before now (its worker died, or is cut off): the attempt goes back to
// pending, its lost tries are marked interrupted, and requeue is called in
// the same transaction with the attempt's last token, to enqueue it again.
// It returns the attempts given back.
func (s *Store) ReapLapsed(ctx context.Context, now time.Time, requeue func(tx pgx.Tx, key AttemptKey, token int64) error) ([]AttemptKey, error) {
	var reaped []AttemptKey
	err := s.pgWriteTx(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, s.db.bind(`SELECT bench_id, task_id, model, n, lease_token, lease_holder
			FROM bench_attempts WHERE status = ? AND lease_expires_at < ?`),
			string(record.AttemptRunning), now.UnixNano())
		if err != nil {
			return err
		}
		type lapsed struct {
			key    AttemptKey
			token  int64
			holder string
		}
		var found []lapsed
		for rows.Next() {
			var l lapsed
			if err := rows.Scan(&l.key.BenchID, &l.key.TaskID, &l.key.Model, &l.key.N, &l.token, &l.holder); err != nil {
				rows.Close()
				return err
			}
			found = append(found, l)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for _, l := range found {
			if err := s.pgInterruptLostTries(ctx, tx, l.key, l.token+1, l.holder, now); err != nil {
				return err
			}
			if _, err := s.pgExec(ctx, tx, `UPDATE bench_attempts SET status = ?, lease_holder = '', lease_expires_at = NULL`+
				keyWhere+` AND lease_token = ?`, append(append([]any{string(record.AttemptPending)}, l.key.args()...), l.token)...); err != nil {
				return err
			}
			if err := requeue(tx, l.key, l.token); err != nil {
				return err
			}
			reaped = append(reaped, l.key)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("give back lapsed attempts: %w", err)
	}
	return reaped, nil
}

func (s *Store) pgInterruptLostTries(ctx context.Context, tx pgx.Tx, key AttemptKey, below int64, holder string, now time.Time) error {
	q, args := lostTriesUpdate(key, below, holder, now)
	_, err := s.pgExec(ctx, tx, q, args...)
	return err
}

// migrateLockKey is the session advisory lock under which another
// library's migrations run (River's cannot run in one transaction).
const migrateLockKey int64 = 0x6c616e65_00000002

// WithMigrationLock runs fn holding a PostgreSQL advisory lock of its own,
// so that processes starting together run fn one at a time;
// ErrNeedsPostgres on SQLite.
func (s *Store) WithMigrationLock(ctx context.Context, fn func() error) error {
	if s.pg == nil {
		return ErrNeedsPostgres
	}
	c, err := s.pg.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer c.Release()
	if _, err := c.Exec(ctx, `SELECT pg_advisory_lock($1)`, migrateLockKey); err != nil {
		return fmt.Errorf("take the migration lock: %w", err)
	}
	defer c.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, migrateLockKey)
	return fn()
}
