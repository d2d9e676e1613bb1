package store

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/lanehq/lane/internal/record"
)

// runColumns are the columns of runs in the order runArgs and scanRun use.
var runColumns = []string{
	"id", "parent_run_id", "attempt", "status", "runtime", "model", "dir", "prompt", "session_id", "runtime_version",
	"cost_usd", "cost_estimate", "session_cost_usd",
	"input_tokens", "output_tokens", "cache_read_tokens", "cache_creation_tokens", "turns", "tool_calls",
	"started_at", "ended_at", "duration_ms", "exit_code",
	"error_kind", "error_message", "error_hint", "contradiction", "result_text",
	"cap_dir", "add_dirs", "allowed_tools", "permission_mode", "mcp_isolated", "permission_denials",
	"owner_pid", "owner_start", "owner_host", "worker",
	"permission_requests", "permissions_allowed", "permissions_denied", "cap_steer",
	"imported", "source", "cache_creation_1h_tokens",
	"changes", "cap_hermetic", "account", "limits", "context_tokens", "context_window", "origin", "via",
	"budget",
}

var (
	runSelect = "SELECT " + strings.Join(runColumns, ", ") + " FROM runs"
	runInsert = "INSERT INTO runs (" + strings.Join(runColumns, ", ") + ") VALUES (?" +
		strings.Repeat(", ?", len(runColumns)-1) + ")"
	runUpdate = "UPDATE runs SET " + strings.Join(runColumns[1:], " = ?, ") + " = ? WHERE id = ?"

	// On PostgreSQL a run's words go in with it (see searchVector).
	runInsertPG = "INSERT INTO runs (" + strings.Join(runColumns, ", ") + ", fts) VALUES (?" +
		strings.Repeat(", ?", len(runColumns)-1) + ", ?::tsvector)"
	runUpdatePG = "UPDATE runs SET " + strings.Join(runColumns[1:], " = ?, ") + " = ?, fts = ?::tsvector WHERE id = ?"
)

// maxCandidates bounds the ids an AmbiguousError lists.
const maxCandidates = 10

func runArgs(r *record.Run) ([]any, error) {
	addDirs, err := jsonList(r.Capability.AddDirs)
	if err != nil {
		return nil, fmt.Errorf("encode add_dirs: %w", err)
	}
	tools, err := jsonList(r.Capability.AllowedTools)
	if err != nil {
		return nil, fmt.Errorf("encode allowed_tools: %w", err)
	}
	steer, err := jsonList(r.Capability.Steer)
	if err != nil {
		return nil, fmt.Errorf("encode cap_steer: %w", err)
	}
	hermetic, err := jsonList(r.Capability.Hermetic)
	if err != nil {
		return nil, fmt.Errorf("encode cap_hermetic: %w", err)
	}
	var denials any
	if len(r.PermissionDenials) > 0 {
		denials = string(r.PermissionDenials)
	}
	var exit any
	if r.ExitCode != nil {
		exit = *r.ExitCode
	}
	changes, err := changesSummary(r.Changes)
	if err != nil {
		return nil, fmt.Errorf("encode changes: %w", err)
	}
	limits, err := jsonList(r.Limits)
	if err != nil {
		return nil, fmt.Errorf("encode limits: %w", err)
	}
	var budget any
	if r.Budget != nil && !r.Budget.IsZero() {
		b, err := json.Marshal(r.Budget)
		if err != nil {
			return nil, fmt.Errorf("encode budget: %w", err)
		}
		budget = string(b)
	}
	return []any{
		r.ID, r.ParentRunID, r.Attempt, string(r.Status), r.Runtime, r.Model, r.Dir, r.Prompt, r.SessionID, r.RuntimeVer,
		r.CostUSD, r.CostEstimate, r.SessionCostUSD,
		r.Usage.InputTokens, r.Usage.OutputTokens, r.Usage.CacheReadTokens, r.Usage.CacheCreationTokens, r.Turns, r.ToolCalls,
		unixNano(r.StartedAt), unixNano(r.EndedAt), r.DurationMS, exit,
		string(r.ErrorKind), r.ErrorMessage, r.ErrorHint, r.Contradiction, r.ResultText,
		r.Capability.Dir, addDirs, tools, r.Capability.PermissionMode, r.Capability.MCPIsolated, denials,
		r.OwnerPID, int64(r.OwnerStart), r.OwnerHost, r.Worker,
		r.Permissions.Requests, r.Permissions.Allowed, r.Permissions.Denied, steer,
		r.Imported, r.Source, r.Usage.CacheCreation1hTokens,
		changes, hermetic, r.Account, limits, r.ContextTokens, r.ContextWindow, r.Origin, r.Via,
		budget,
	}, nil
}

type scanner interface{ Scan(dest ...any) error }

func scanRun(sc scanner) (*record.Run, error) {
	var (
		r                       record.Run
		status, errKind         string
		started, ended, exit    sql.NullInt64
		addDirs, tools, denials sql.NullString
		steer, changes          sql.NullString
		hermetic, limits        sql.NullString
		budget                  sql.NullString
		ownerStart              int64
	)
	err := sc.Scan(
		&r.ID, &r.ParentRunID, &r.Attempt, &status, &r.Runtime, &r.Model, &r.Dir, &r.Prompt, &r.SessionID, &r.RuntimeVer,
		&r.CostUSD, &r.CostEstimate, &r.SessionCostUSD,
		&r.Usage.InputTokens, &r.Usage.OutputTokens, &r.Usage.CacheReadTokens, &r.Usage.CacheCreationTokens, &r.Turns, &r.ToolCalls,
		&started, &ended, &r.DurationMS, &exit,
		&errKind, &r.ErrorMessage, &r.ErrorHint, &r.Contradiction, &r.ResultText,
		&r.Capability.Dir, &addDirs, &tools, &r.Capability.PermissionMode, &r.Capability.MCPIsolated, &denials,
		&r.OwnerPID, &ownerStart, &r.OwnerHost, &r.Worker,
		&r.Permissions.Requests, &r.Permissions.Allowed, &r.Permissions.Denied, &steer,
		&r.Imported, &r.Source, &r.Usage.CacheCreation1hTokens,
		&changes, &hermetic, &r.Account, &limits, &r.ContextTokens, &r.ContextWindow, &r.Origin, &r.Via,
		&budget,
	)
	if err != nil {
		return nil, err
	}
	r.Status = record.Status(status)
	r.ErrorKind = record.ErrorKind(errKind)
	r.StartedAt = fromUnixNano(started)
	r.EndedAt = fromUnixNano(ended)
	if exit.Valid {
		c := int(exit.Int64)
		r.ExitCode = &c
	}
	if r.Capability.AddDirs, err = parseList[string](addDirs); err != nil {
		return nil, fmt.Errorf("decode add_dirs of run %s: %w", r.ID, err)
	}
	if r.Capability.AllowedTools, err = parseList[string](tools); err != nil {
		return nil, fmt.Errorf("decode allowed_tools of run %s: %w", r.ID, err)
	}
	if r.Capability.Steer, err = parseList[string](steer); err != nil {
		return nil, fmt.Errorf("decode cap_steer of run %s: %w", r.ID, err)
	}
	if r.Capability.Hermetic, err = parseList[string](hermetic); err != nil {
		return nil, fmt.Errorf("decode cap_hermetic of run %s: %w", r.ID, err)
	}
	if r.Limits, err = parseList[record.LimitWindow](limits); err != nil {
		return nil, fmt.Errorf("decode limits of run %s: %w", r.ID, err)
	}
	if denials.Valid {
		r.PermissionDenials = json.RawMessage(denials.String)
	}
	if changes.Valid {
		r.Changes = new(record.Changes)
		if err := json.Unmarshal([]byte(changes.String), r.Changes); err != nil {
			return nil, fmt.Errorf("decode changes of run %s: %w", r.ID, err)
		}
	}
	if budget.Valid {
		r.Budget = new(record.Budget)
		if err := json.Unmarshal([]byte(budget.String), r.Budget); err != nil {
			return nil, fmt.Errorf("decode budget of run %s: %w", r.ID, err)
		}
	}
	r.OwnerStart = uint64(ownerStart)
	return &r, nil
}

// CreateRun records a new run. r.ID must be set (record.NewRunID) and
// r.StartedAt must not be zero.
func (s *Store) CreateRun(ctx context.Context, r *record.Run) error {
	if r.ID == "" {
		return errors.New("insert run: empty id")
	}
	if r.StartedAt.IsZero() {
		return fmt.Errorf("insert run %s: started_at is zero", r.ID)
	}
	q, args, err := s.runStatement(r, false)
	if err != nil {
		return fmt.Errorf("insert run %s: %w", r.ID, err)
	}
	return s.insertRecord(ctx, "run", r.ID, q, args)
}

// UpdateRun writes every field of r but its id to the run r.ID.
func (s *Store) UpdateRun(ctx context.Context, r *record.Run) error {
	q, args, err := s.runStatement(r, true)
	if err != nil {
		return fmt.Errorf("update run %s: %w", r.ID, err)
	}
	if !r.Status.Finished() {
		return s.updateRecord(ctx, "run", r.ID, q, args, ErrNotFound)
	}
	// The run's end settles the requests that still wait: nobody can
	// answer them any more.
	err = s.writeTx(ctx, func(tx *txn) error {
		res, err := tx.ExecContext(ctx, q, args...)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return cmp.Or(err, ErrNotFound)
		}
		if err := writeRunChanges(ctx, tx, r); err != nil {
			return err
		}
		return settleApprovals(ctx, tx, r.ID, cmp.Or(r.EndedAt, time.Now()))
	})
	if err != nil {
		return fmt.Errorf("update run %s: %w", r.ID, err)
	}
	return nil
}

// runStatement returns the INSERT (or the UPDATE) of r and its arguments,
// after filling in r's owner host.
func (s *Store) runStatement(r *record.Run, update bool) (string, []any, error) {
	s.claimOwner(&r.OwnerHost, r.OwnerPID)
	args, err := runArgs(r)
	if err != nil {
		return "", nil, err
	}
	switch {
	case update && s.pg != nil:
		return runUpdatePG, append(args[1:], searchVector(r.Prompt, r.ResultText), r.ID), nil
	case update:
		return runUpdate, append(args[1:], r.ID), nil
	case s.pg != nil:
		return runInsertPG, append(args, searchVector(r.Prompt, r.ResultText)), nil
	}
	return runInsert, args, nil
}

// GetRun returns the run whose id is idOrPrefix or, failing that, the one
// run whose id starts with it. It returns an error matching ErrNotFound when
// none does and an *AmbiguousError when several do. A running run whose
// owner has exited is marked interrupted first.
func (s *Store) GetRun(ctx context.Context, idOrPrefix string) (*record.Run, error) {
	if idOrPrefix == "" {
		return nil, fmt.Errorf("get run: empty id: %w", ErrNotFound)
	}
	id, err := s.matchID(ctx, "runs", idOrPrefix, ErrNotFound)
	var r *record.Run
	if err == nil {
		r, err = scanRun(s.db.QueryRowContext(ctx, runSelect+" WHERE id = ?", id))
		if errors.Is(err, sql.ErrNoRows) {
			err = ErrNotFound
		}
	}
	if err == nil {
		r, err = s.checkOwner(ctx, r)
	}
	if err == nil {
		err = s.loadChangeList(ctx, r)
	}
	if err != nil {
		return nil, fmt.Errorf("get run %s: %w", idOrPrefix, err)
	}
	return r, nil
}

// matchID resolves idOrPrefix to one id of table: the exact id, else the one
// id that starts with it. It returns notFound when none does and an
// *AmbiguousError when several do.
func (s *Store) matchID(ctx context.Context, table, idOrPrefix string, notFound error) (string, error) {
	var id string
	err := s.db.QueryRowContext(ctx, "SELECT id FROM "+table+" WHERE id = ?", idOrPrefix).Scan(&id)
	if err == nil {
		return id, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return "", err
	}
	// Every id that starts with the prefix sorts between it and the prefix
	// followed by the last code point, U+10FFFF, whose UTF-8 (F4 8F BF BF)
	// is above that of any character an id holds: ids compare byte by byte
	// on both backends (COLLATE "C" on PostgreSQL).
	rows, err := s.db.QueryContext(ctx, "SELECT id FROM "+table+" WHERE id >= ? AND id < ? ORDER BY id LIMIT ?",
		idOrPrefix, idOrPrefix+"\U0010FFFF", maxCandidates+1)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		if err := rows.Scan(&id); err != nil {
			return "", err
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return "", err
	}
	switch len(ids) {
	case 0:
		return "", notFound
	case 1:
		return ids[0], nil
	}
	return "", &AmbiguousError{Prefix: idOrPrefix, IDs: ids[:min(len(ids), maxCandidates)]}
}

// RunFilter selects runs for ListRuns. Zero fields match everything; Dir
// must be the exact absolute directory. A Limit of 0 or less means no limit.
type RunFilter struct {
	Status    record.Status
	Model     string
	Runtime   string
	Dir       string
	SessionID string
	// Imported, when set, keeps only the runs lane import read from
	// runtimes' own files (true) or only lane's own (false).
	Imported *bool
	Limit    int
}

// ListRuns returns the runs that match f, newest first. Running runs whose
// owner has exited are marked interrupted first.
func (s *Store) ListRuns(ctx context.Context, f RunFilter) ([]*record.Run, error) {
	if _, err := s.SweepInterrupted(ctx); err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	var (
		where []string
		args  []any
	)
	for _, c := range []struct {
		col, val string
	}{
		{"status", string(f.Status)},
		{"model", f.Model},
		{"runtime", f.Runtime},
		{"dir", f.Dir},
		{"session_id", f.SessionID},
	} {
		if c.val != "" {
			where = append(where, c.col+" = ?")
			args = append(args, c.val)
		}
	}
	if f.Imported != nil {
		where = append(where, "imported = ?")
		args = append(args, *f.Imported)
	}
	q := runSelect
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " ORDER BY started_at DESC, rowid DESC"
	if f.Limit > 0 {
		q += " LIMIT ?"
		args = append(args, f.Limit)
	}
	runs, err := s.queryRuns(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	// A run can have lost its owner since the sweep.
	for i, r := range runs {
		if runs[i], err = s.checkOwner(ctx, r); err != nil {
			return nil, fmt.Errorf("list runs: %w", err)
		}
	}
	return runs, nil
}

// LatestRunInSession returns the newest run of the runtime session
// sessionID, or an error matching ErrNotFound.
func (s *Store) LatestRunInSession(ctx context.Context, sessionID string) (*record.Run, error) {
	if sessionID == "" {
		return nil, fmt.Errorf("latest run in session: empty session id: %w", ErrNotFound)
	}
	r, err := scanRun(s.db.QueryRowContext(ctx,
		runSelect+" WHERE session_id = ? ORDER BY started_at DESC, rowid DESC LIMIT 1", sessionID))
	if errors.Is(err, sql.ErrNoRows) {
		err = ErrNotFound
	}
	if err == nil {
		r, err = s.checkOwner(ctx, r)
	}
	if err != nil {
		return nil, fmt.Errorf("latest run in session %s: %w", sessionID, err)
	}
	return r, nil
}

func (s *Store) queryRuns(ctx context.Context, q string, args ...any) ([]*record.Run, error) {
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var runs []*record.Run
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, err
		}
		runs = append(runs, r)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return runs, nil
}

// SweepInterrupted marks interrupted every running run whose owner has
// exited and returns how many it marked.
func (s *Store) SweepInterrupted(ctx context.Context) (int, error) {
	runs, err := s.queryRuns(ctx, runSelect+" WHERE status = ? AND owner_host IN ('', ?)",
		string(record.StatusRunning), s.host)
	if err != nil {
		return 0, fmt.Errorf("sweep interrupted runs: %w", err)
	}
	n := 0
	for _, r := range runs {
		if !s.ownerGone(r.OwnerPID, r.OwnerStart) {
			continue
		}
		marked, err := s.markInterrupted(ctx, r)
		if err != nil {
			return n, fmt.Errorf("sweep interrupted runs: %w", err)
		}
		if marked.Status == record.StatusInterrupted {
			n++
		}
	}
	return n, nil
}

// claimOwner fills in the host of an owner named by pid: this machine's.
func (s *Store) claimOwner(host *string, pid int) {
	if *host == "" && pid != 0 {
		*host = s.host
	}
}

// ownsHere reports whether an owner on host can be checked here: it is this
// machine, or a record from before hosts were kept (a SQLite file's own).
// Another machine's runs are left to that machine, and a worker's to the
// leases of the pool.
func (s *Store) ownsHere(host string) bool { return host == "" || host == s.host }

// checkOwner returns r, or r as marked interrupted when it is running and
// its owner has exited.
func (s *Store) checkOwner(ctx context.Context, r *record.Run) (*record.Run, error) {
	if r.Status != record.StatusRunning || !s.ownsHere(r.OwnerHost) || !s.ownerGone(r.OwnerPID, r.OwnerStart) {
		return r, nil
	}
	return s.markInterrupted(ctx, r)
}

// markInterrupted records that r's owner exited while r was running: status
// interrupted, ended at its last event (else when it started). It changes
// nothing if the run is no longer running as r says, and returns the run as
// it now stands.
func (s *Store) markInterrupted(ctx context.Context, r *record.Run) (*record.Run, error) {
	var out *record.Run
	err := s.writeTx(ctx, func(tx *txn) error {
		var last sql.NullInt64
		err := tx.QueryRowContext(ctx, `SELECT time FROM events WHERE run_id = ? ORDER BY seq DESC LIMIT 1`, r.ID).Scan(&last)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("last event: %w", err)
		}
		ended := r.StartedAt
		if last.Valid {
			ended = fromUnixNano(last)
		}
		_, err = tx.ExecContext(ctx, `UPDATE runs SET status = ?, ended_at = ?, duration_ms = ?, error_message = ?
			WHERE id = ? AND status = ? AND owner_pid = ? AND owner_start = ?`,
			string(record.StatusInterrupted), unixNano(ended), ended.Sub(r.StartedAt).Milliseconds(),
			fmt.Sprintf("lane process %d exited while the run was live", r.OwnerPID),
			r.ID, string(record.StatusRunning), r.OwnerPID, int64(r.OwnerStart))
		if err != nil {
			return err
		}
		out, err = scanRun(tx.QueryRowContext(ctx, runSelect+" WHERE id = ?", r.ID))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("mark run %s interrupted: %w", r.ID, err)
	}
	return out, nil
}

// unixNano is t as stored: unix nanoseconds, NULL for the zero time.
func unixNano(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UnixNano()
}

func fromUnixNano(n sql.NullInt64) time.Time {
	if !n.Valid {
		return time.Time{}
	}
	return time.Unix(0, n.Int64)
}

// jsonList is l as stored: a JSON array, NULL for nil.
func jsonList[T any](l []T) (any, error) {
	if l == nil {
		return nil, nil
	}
	b, err := json.Marshal(l)
	if err != nil {
		return nil, err
	}
	return string(b), nil
}

func parseList[T any](s sql.NullString) ([]T, error) {
	if !s.Valid {
		return nil, nil
	}
	var l []T
	if err := json.Unmarshal([]byte(s.String), &l); err != nil {
		return nil, err
	}
	return l, nil
}
