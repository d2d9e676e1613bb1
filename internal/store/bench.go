package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lanehq/lane/internal/record"
)

// ErrBenchNotFound is returned when no bench matches an id or prefix. It
// matches ErrNotFound with errors.Is, so a caller handles both alike.
var ErrBenchNotFound error = benchNotFound{}

type benchNotFound struct{}

func (benchNotFound) Error() string        { return "bench not found" }
func (benchNotFound) Is(target error) bool { return target == ErrNotFound }

var benchColumns = []string{
	"id", "name", "suite_path", "models", "repeat", "parallel", "max_cost_usd",
	"status", "started_at", "ended_at", "suite", "owner_pid", "owner_start", "owner_host", "workers",
	"waiting", "waiting_until",
}

var (
	benchSelect = "SELECT " + strings.Join(benchColumns, ", ") + " FROM benches"
	benchInsert = "INSERT INTO benches (" + strings.Join(benchColumns, ", ") + ") VALUES (?" +
		strings.Repeat(", ?", len(benchColumns)-1) + ")"
	benchUpdate = "UPDATE benches SET " + strings.Join(benchColumns[1:], " = ?, ") + " = ? WHERE id = ?"
)

func benchArgs(b *record.Bench) ([]any, error) {
	models, err := jsonList(b.Models)
	if err != nil {
		return nil, fmt.Errorf("encode models: %w", err)
	}
	var suite any
	if len(b.Suite) > 0 {
		suite = string(b.Suite)
	}
	return []any{
		b.ID, b.Name, b.SuitePath, models, b.Repeat, b.Parallel, b.MaxCostUSD,
		string(b.Status), unixNano(b.StartedAt), unixNano(b.EndedAt), suite, b.OwnerPID, int64(b.OwnerStart),
		b.OwnerHost, b.Workers, b.Waiting, nanosOrZero(b.WaitingUntil),
	}, nil
}

func scanBench(sc scanner) (*record.Bench, error) {
	var (
		b              record.Bench
		status         string
		models, suite  sql.NullString
		started, ended sql.NullInt64
		ownerStart     int64
		waitingUntil   int64
	)
	err := sc.Scan(&b.ID, &b.Name, &b.SuitePath, &models, &b.Repeat, &b.Parallel, &b.MaxCostUSD,
		&status, &started, &ended, &suite, &b.OwnerPID, &ownerStart, &b.OwnerHost, &b.Workers,
		&b.Waiting, &waitingUntil)
	if err != nil {
		return nil, err
	}
	b.Status = record.Status(status)
	b.StartedAt = fromUnixNano(started)
	b.EndedAt = fromUnixNano(ended)
	if b.Models, err = parseList[string](models); err != nil {
		return nil, fmt.Errorf("decode models of bench %s: %w", b.ID, err)
	}
	if suite.Valid {
		b.Suite = json.RawMessage(suite.String)
	}
	b.OwnerStart = uint64(ownerStart)
	if waitingUntil != 0 {
		b.WaitingUntil = time.Unix(0, waitingUntil).UTC()
	}
	return &b, nil
}

// CreateBench records a new bench. b.ID must be set (record.NewRunID) and
// b.StartedAt must not be zero.
func (s *Store) CreateBench(ctx context.Context, b *record.Bench) error {
	if b.ID == "" {
		return errors.New("insert bench: empty id")
	}
	if b.StartedAt.IsZero() {
		return fmt.Errorf("insert bench %s: started_at is zero", b.ID)
	}
	s.claimOwner(&b.OwnerHost, b.OwnerPID)
	args, err := benchArgs(b)
	if err != nil {
		return fmt.Errorf("insert bench %s: %w", b.ID, err)
	}
	return s.insertRecord(ctx, "bench", b.ID, benchInsert, args)
}

// UpdateBench writes every field of b but its id to the bench b.ID.
func (s *Store) UpdateBench(ctx context.Context, b *record.Bench) error {
	s.claimOwner(&b.OwnerHost, b.OwnerPID)
	args, err := benchArgs(b)
	if err != nil {
		return fmt.Errorf("update bench %s: %w", b.ID, err)
	}
	return s.updateRecord(ctx, "bench", b.ID, benchUpdate, append(args[1:], b.ID), ErrBenchNotFound)
}

// GetBench returns the bench whose id is idOrPrefix or, failing that, the
// one bench whose id starts with it. It returns an error matching
// ErrNotFound when none does and an *AmbiguousError when several do. A
// running bench whose owner has exited is marked interrupted first.
func (s *Store) GetBench(ctx context.Context, idOrPrefix string) (*record.Bench, error) {
	if idOrPrefix == "" {
		return nil, fmt.Errorf("get bench: empty id: %w", ErrBenchNotFound)
	}
	id, err := s.matchID(ctx, "benches", idOrPrefix, ErrBenchNotFound)
	var b *record.Bench
	if err == nil {
		b, err = scanBench(s.db.QueryRowContext(ctx, benchSelect+" WHERE id = ?", id))
		if errors.Is(err, sql.ErrNoRows) {
			err = ErrBenchNotFound
		}
	}
	if err == nil {
		b, err = s.checkBenchOwner(ctx, b)
	}
	if err != nil {
		return nil, fmt.Errorf("get bench %s: %w", idOrPrefix, err)
	}
	return b, nil
}

// ListBenches returns the newest benches, newest first; a limit of 0 or
// less means all. Running benches whose owner has exited are marked
// interrupted.
func (s *Store) ListBenches(ctx context.Context, limit int) ([]*record.Bench, error) {
	q := benchSelect + " ORDER BY started_at DESC, rowid DESC"
	var args []any
	if limit > 0 {
		q += " LIMIT ?"
		args = append(args, limit)
	}
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list benches: %w", err)
	}
	defer rows.Close()
	var benches []*record.Bench
	for rows.Next() {
		b, err := scanBench(rows)
		if err != nil {
			return nil, fmt.Errorf("list benches: %w", err)
		}
		benches = append(benches, b)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list benches: %w", err)
	}
	rows.Close()
	for i, b := range benches {
		if benches[i], err = s.checkBenchOwner(ctx, b); err != nil {
			return nil, fmt.Errorf("list benches: %w", err)
		}
	}
	return benches, nil
}

// checkBenchOwner returns b, or b as marked interrupted when it is running
// and its owner has exited.
func (s *Store) checkBenchOwner(ctx context.Context, b *record.Bench) (*record.Bench, error) {
	// A bench of the pool is owned by its attempts, not by the process that
	// enqueued them (it may detach).
	if b.Status != record.StatusRunning || b.Workers || !s.ownsHere(b.OwnerHost) || !s.ownerGone(b.OwnerPID, b.OwnerStart) {
		return b, nil
	}
	var out *record.Bench
	err := s.writeTx(ctx, func(tx *txn) error {
		// It ended when its last attempt did, else when it started.
		var last sql.NullInt64
		err := tx.QueryRowContext(ctx, `SELECT max(ended_at) FROM bench_attempts WHERE bench_id = ?`, b.ID).Scan(&last)
		if err != nil {
			return fmt.Errorf("last attempt: %w", err)
		}
		ended := b.StartedAt
		if last.Valid {
			ended = fromUnixNano(last)
		}
		_, err = tx.ExecContext(ctx, `UPDATE benches SET status = ?, ended_at = ?
			WHERE id = ? AND status = ? AND owner_pid = ? AND owner_start = ?`,
			string(record.StatusInterrupted), unixNano(ended),
			b.ID, string(record.StatusRunning), b.OwnerPID, int64(b.OwnerStart))
		if err != nil {
			return err
		}
		out, err = scanBench(tx.QueryRowContext(ctx, benchSelect+" WHERE id = ?", b.ID))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("mark bench %s interrupted: %w", b.ID, err)
	}
	return out, nil
}

var attemptColumns = []string{
	"bench_id", "task_id", "model", "n", "run_id", "status", "failure_kind", "check_exit_code", "check_output",
	"duration_ms", "cost_usd", "input_tokens", "output_tokens", "cache_read_tokens", "cache_creation_tokens",
	"turns", "tool_calls", "started_at", "ended_at", "worker", "cache_creation_1h_tokens", "tries", "reward",
	"rewards",
	"retries",
	"steps",
}

var (
	attemptSelect = "SELECT " + strings.Join(attemptColumns, ", ") + " FROM bench_attempts"
	// attemptUpsert inserts an attempt or, when its key is there, overwrites
	// every other column.
	attemptUpsert = "INSERT INTO bench_attempts (" + strings.Join(attemptColumns, ", ") + ") VALUES (?" +
		strings.Repeat(", ?", len(attemptColumns)-1) + ") ON CONFLICT (bench_id, task_id, model, n) DO UPDATE SET " +
		upsertSet(attemptColumns[4:])
)

func upsertSet(cols []string) string {
	set := make([]string, len(cols))
	for i, c := range cols {
		set[i] = c + " = excluded." + c
	}
	return strings.Join(set, ", ")
}

// attemptArgs are a's values in the order of attemptColumns.
func attemptArgs(a *record.Attempt) ([]any, error) {
	var runID, rewards, steps any
	if a.RunID != "" {
		runID = a.RunID
	}
	if a.Rewards != nil {
		b, err := json.Marshal(a.Rewards)
		if err != nil {
			return nil, fmt.Errorf("encode rewards: %w", err)
		}
		rewards = string(b)
	}
	if a.Steps != nil {
		b, err := json.Marshal(a.Steps)
		if err != nil {
			return nil, fmt.Errorf("encode steps: %w", err)
		}
		steps = string(b)
	}
	return []any{
		a.BenchID, a.TaskID, a.Model, a.N, runID, string(a.Status), a.FailureKind, a.CheckExitCode, a.CheckOutput,
		a.DurationMS, a.CostUSD, a.Usage.InputTokens, a.Usage.OutputTokens, a.Usage.CacheReadTokens,
		a.Usage.CacheCreationTokens, a.Turns, a.ToolCalls, unixNano(a.StartedAt), unixNano(a.EndedAt), a.Worker,
		a.Usage.CacheCreation1hTokens, a.Tries, a.Reward, rewards,
		a.Retries,
		steps,
	}, nil
}

func scanAttempt(sc scanner) (record.Attempt, error) {
	var (
		a              record.Attempt
		runID          sql.NullString
		status         string
		started, ended sql.NullInt64
		reward         sql.NullFloat64
		rewards        sql.NullString
		steps          sql.NullString
	)
	err := sc.Scan(&a.BenchID, &a.TaskID, &a.Model, &a.N, &runID, &status, &a.FailureKind, &a.CheckExitCode,
		&a.CheckOutput, &a.DurationMS, &a.CostUSD, &a.Usage.InputTokens, &a.Usage.OutputTokens,
		&a.Usage.CacheReadTokens, &a.Usage.CacheCreationTokens, &a.Turns, &a.ToolCalls, &started, &ended, &a.Worker,
		&a.Usage.CacheCreation1hTokens, &a.Tries, &reward, &rewards,
		&a.Retries,
		&steps)
	if err != nil {
		return record.Attempt{}, err
	}
	if steps.Valid {
		if err := json.Unmarshal([]byte(steps.String), &a.Steps); err != nil {
			return record.Attempt{}, fmt.Errorf("decode steps of attempt %s/%s/%s/%d: %w", a.BenchID, a.TaskID, a.Model, a.N, err)
		}
	}
	if rewards.Valid {
		if err := json.Unmarshal([]byte(rewards.String), &a.Rewards); err != nil {
			return record.Attempt{}, fmt.Errorf("decode rewards of attempt %s/%s/%s/%d: %w", a.BenchID, a.TaskID, a.Model, a.N, err)
		}
	}
	if reward.Valid {
		a.Reward = &reward.Float64
	}
	a.RunID = runID.String
	a.Status = record.AttemptStatus(status)
	a.StartedAt = fromUnixNano(started)
	a.EndedAt = fromUnixNano(ended)
	return a, nil
}

// SaveAttempt records a, or overwrites the attempt with its bench, task,
// model and number. Its bench must exist, and so must its run when RunID is
// set. The attempt's stored artifacts become a.Artifacts: none for an
// attempt saved before it runs (or again), so an earlier run's go.
func (s *Store) SaveAttempt(ctx context.Context, a *record.Attempt) error {
	if a.BenchID == "" || a.TaskID == "" || a.Model == "" || a.N <= 0 {
		return fmt.Errorf("save attempt %s/%s/%s/%d: bench, task, model and number must be set",
			a.BenchID, a.TaskID, a.Model, a.N)
	}
	args, err := attemptArgs(a)
	if err != nil {
		return fmt.Errorf("save attempt %s/%s/%s/%d: %w", a.BenchID, a.TaskID, a.Model, a.N, err)
	}
	err = s.writeTx(ctx, func(tx *txn) error {
		if _, err := tx.ExecContext(ctx, attemptUpsert, args...); err != nil {
			return err
		}
		return replaceArtifacts(func(q string, args ...any) error {
			_, err := tx.ExecContext(ctx, q, args...)
			return err
		}, a)
	})
	if err != nil {
		return fmt.Errorf("save attempt %s/%s/%s/%d: %w", a.BenchID, a.TaskID, a.Model, a.N, err)
	}
	return nil
}

// Attempts returns the attempts of a bench ordered by task, model and
// number; none (and no error) for an unknown bench.
func (s *Store) Attempts(ctx context.Context, benchID string) ([]record.Attempt, error) {
	as, err := s.queryAttempts(ctx, attemptSelect+" WHERE bench_id = ? ORDER BY task_id, model, n", benchID)
	if err != nil {
		return nil, fmt.Errorf("attempts of bench %s: %w", benchID, err)
	}
	return as, nil
}

// AttemptOfRun returns the bench attempt that the run runID was, or an
// error matching ErrNotFound when the run was not part of a bench.
func (s *Store) AttemptOfRun(ctx context.Context, runID string) (*record.Attempt, error) {
	as, err := s.queryAttempts(ctx, attemptSelect+" WHERE run_id = ? LIMIT 1", runID)
	if err == nil && len(as) == 0 {
		// A step's run of a multi-step attempt: the steps column holds it
		// in its JSON, which LIKE narrows to and the decoded steps confirm.
		as, err = s.queryAttempts(ctx, attemptSelect+" WHERE steps LIKE ?", "%"+likeEscape(runID)+"%")
		as = slices.DeleteFunc(as, func(a record.Attempt) bool { return a.StepOfRun(runID) < 0 })
	}
	if err != nil {
		return nil, fmt.Errorf("attempt of run %s: %w", runID, err)
	}
	if len(as) == 0 {
		return nil, fmt.Errorf("attempt of run %s: %w", runID, ErrBenchNotFound)
	}
	return &as[0], nil
}

// likeEscape makes s a LIKE pattern's middle that matches at least s: a
// '%' in it matches one character only (as '_' does anyway); the caller
// confirms each row it finds.
func likeEscape(s string) string { return strings.ReplaceAll(s, "%", "_") }

func (s *Store) queryAttempts(ctx context.Context, q string, args ...any) ([]record.Attempt, error) {
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var as []record.Attempt
	for rows.Next() {
		a, err := scanAttempt(rows)
		if err != nil {
			return nil, err
		}
		as = append(as, a)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return as, nil
}

// BenchRuns returns the runs behind bench benchID's attempts (each
// attempt's last), by id, read in one query: their records with the
// summary of their changes, not the per-file lists.
func (s *Store) BenchRuns(ctx context.Context, benchID string) (map[string]*record.Run, error) {
	runs, err := s.queryRuns(ctx, runSelect+
		" WHERE id IN (SELECT run_id FROM bench_attempts WHERE bench_id = ? AND run_id IS NOT NULL)", benchID)
	if err != nil {
		return nil, fmt.Errorf("runs of bench %s: %w", benchID, err)
	}
	byID := make(map[string]*record.Run, len(runs))
	for _, r := range runs {
		byID[r.ID] = r
	}
	return byID, nil
}
