package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"os"
	"reflect"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/lanehq/lane/internal/record"
)

// Copying a history from one database to another (lane db copy), either
// backend to either: runs and their events, benches with their attempts,
// attempt runs, the attempts' artifacts and blobs. Not the workers table, which is the pool's live
// state rather than history, nor the ledger of usage limits, the accounts'
// live state (the target's own runs keep it). Sessions are not stored apart: they are the
// runs' session ids, and come with the runs.

// Defaults of CopyOptions.
const (
	defaultCopyRows  = 500
	defaultCopyBytes = 8 << 20
)

// ErrSameDatabase is Copy's refusal to copy a database into itself.
var ErrSameDatabase = errors.New("the source and the target are the same database")

// CopyOptions tune Copy; the zero value is what lane db copy uses.
type CopyOptions struct {
	// BatchRows bounds the records one read of the source returns and one
	// write transaction of the target holds; 0 means 500.
	BatchRows int
	// BatchBytes bounds the bytes of events and blobs one transaction
	// holds, as a raw line or a blob can be large; 0 means 8 MiB.
	BatchBytes int
	// Progress, when set, is called after each transaction the target
	// commits, with the totals so far.
	Progress func(CopyStats)
}

// CopyCount is what Copy did with the records of one kind; the counts are
// disjoint.
type CopyCount struct {
	Copied  int64 // new in the target
	Present int64 // in the target already, the same (events, attempt runs and blobs: by key alone)
	Updated int64 // in the target already, replaced by the source's, which is further along
	Kept    int64 // in the target already, different, and left as they are there
	// Deferred records were not copied because what they refer to came to
	// the source after its turn in this copy: the next copy takes them.
	Deferred int64
}

// Skipped is how many records the target had already, and keeps.
func (c CopyCount) Skipped() int64 { return c.Present + c.Kept }

func (c *CopyCount) add(d CopyCount) {
	c.Copied += d.Copied
	c.Present += d.Present
	c.Updated += d.Updated
	c.Kept += d.Kept
	c.Deferred += d.Deferred
}

// CopyStats counts what Copy did, kind by kind.
type CopyStats struct {
	Runs, Events, Benches, Attempts, AttemptRuns, Blobs, Approvals, Steers, RunChanges CopyCount
	// Artifacts counts the attempts' collections of artifacts (their
	// archives are blobs).
	Artifacts CopyCount
}

func (s *CopyStats) add(d CopyStats) {
	s.Runs.add(d.Runs)
	s.Events.add(d.Events)
	s.Benches.add(d.Benches)
	s.Attempts.add(d.Attempts)
	s.AttemptRuns.add(d.AttemptRuns)
	s.Blobs.add(d.Blobs)
	s.Artifacts.add(d.Artifacts)
	s.Approvals.add(d.Approvals)
	s.Steers.add(d.Steers)
	s.RunChanges.add(d.RunChanges)
}

// Copy copies the history of from into to and returns what it did, also
// when an error stops it. It never writes to from.
//
// It is idempotent. A record is known by its natural key (a run by its id,
// an event by its run and seq, a bench by its id, an attempt by its bench,
// task, model and number, an attempt run by its primary key, a blob by its
// digest) and is inserted only when the target lacks it: copying again
// copies nothing and changes nothing, and the target's other records stay.
// Events get the target's own ids (its cursor), with their seq, time, kind,
// payload and raw line as they are. On PostgreSQL, text holds no NUL and
// only valid UTF-8: such characters in the source become U+FFFD there (see
// pgText), and the copy counts the record as present next time.
//
// A run in both that differs is settled by how far along each is: a
// finished run replaces a running one, and one that ended on its own
// (succeeded, failed, cancelled, timed out) replaces one that lane marked
// interrupted. So a run that was live at one copy and has finished since is
// completed by the next, while a copy never takes a run back, nor puts the
// source's word over the target's when neither knows more: then the
// target's is kept (counted Kept). Benches follow the same rule, attempts
// too (finished over pending or running). Events, attempt runs and blobs
// never change once written: the target gets those it lacks.
//
// Copy reads the source a page at a time and writes the target in
// transactions of opts.BatchRows records at most: a history of any size is
// copied in bounded memory, and a copy that stops leaves whole batches,
// which the next one skips. The source may be in use meanwhile: what it
// gains is for the next copy, and an attempt whose run or bench came too
// late for this one is Deferred to it.
//
// Copying a database into itself, whatever paths or URLs name it, fails
// with ErrSameDatabase.
func Copy(ctx context.Context, from, to *Store, opts CopyOptions) (CopyStats, error) {
	if opts.BatchRows <= 0 {
		opts.BatchRows = defaultCopyRows
	}
	if opts.BatchBytes <= 0 {
		opts.BatchBytes = defaultCopyBytes
	}
	same, err := sameDatabase(ctx, from, to)
	if err != nil {
		return CopyStats{}, fmt.Errorf("copy: %w", err)
	}
	if same {
		return CopyStats{}, fmt.Errorf("copy: %w", ErrSameDatabase)
	}
	c := &copier{from: from, to: to, opts: opts}
	// Runs first: events and attempts refer to them; attempts refer to
	// benches, attempt runs to attempts.
	if err := c.runs(ctx); err != nil {
		return c.stats, fmt.Errorf("copy: %w", err)
	}
	if err := c.benches(ctx); err != nil {
		return c.stats, fmt.Errorf("copy: %w", err)
	}
	for _, t := range []copyTable{attemptTable, attemptRunTable, blobTable, approvalTable, steerTable, runChangesTable, artifactTable} {
		if err := c.table(ctx, t); err != nil {
			return c.stats, fmt.Errorf("copy: %w", err)
		}
	}
	return c.stats, nil
}

// sameDatabase reports whether a and b are one database: the same SQLite
// file, whatever path names it, or the same database of the same
// PostgreSQL cluster (its system identifier), whatever URL names it.
func sameDatabase(ctx context.Context, a, b *Store) (bool, error) {
	if a == b {
		return true, nil
	}
	if (a.pg == nil) != (b.pg == nil) {
		return false, nil
	}
	if a.pg != nil {
		ia, err := a.pgIdentity(ctx)
		if err != nil {
			return false, err
		}
		ib, err := b.pgIdentity(ctx)
		return err == nil && ia == ib, err
	}
	fa, err := a.sqliteFile(ctx)
	if err != nil {
		return false, err
	}
	fb, err := b.sqliteFile(ctx)
	return err == nil && os.SameFile(fa, fb), err
}

func (s *Store) pgIdentity(ctx context.Context) (string, error) {
	var id string
	err := s.db.QueryRowContext(ctx,
		`SELECT system_identifier::text || '/' || current_database() FROM pg_control_system()`).Scan(&id)
	if err != nil {
		return "", fmt.Errorf("identify the database: %w", err)
	}
	return id, nil
}

func (s *Store) sqliteFile(ctx context.Context) (os.FileInfo, error) {
	var (
		seq        int
		name, file string
	)
	err := s.db.QueryRowContext(ctx, `PRAGMA database_list`).Scan(&seq, &name, &file)
	if err != nil {
		return nil, fmt.Errorf("identify the database: %w", err)
	}
	fi, err := os.Stat(file)
	if err != nil {
		return nil, fmt.Errorf("identify the database: %w", err)
	}
	return fi, nil
}

// copier is one Copy under way.
type copier struct {
	from, to *Store
	opts     CopyOptions
	stats    CopyStats
}

// commit runs fn in a write transaction of the target and, once it has
// committed, adds what fn counted to the totals and reports them: a
// transaction rolled back counts nothing.
func (c *copier) commit(ctx context.Context, fn func(tx *txn, d *CopyStats) error) error {
	var d CopyStats
	err := c.to.writeTx(ctx, func(tx *txn) error {
		d = CopyStats{}
		return fn(tx, &d)
	})
	if err != nil {
		return err
	}
	c.stats.add(d)
	if c.opts.Progress != nil {
		c.opts.Progress(c.stats)
	}
	return nil
}

// verdict is what becomes of a source record the target may hold.
type verdict int

const (
	insertIt verdict = iota // the target lacks it
	sameAsIt                // the target has it as it is
	updateIt                // the target has an older state of it
	keepIt                  // the target has it otherwise, and keeps it
)

// judge gives the verdict on a source record whose stored values are src
// and whose progress is srcRank, against the target's dst and dstRank
// (found says the target has it). Values are compared as the target would
// store the source's.
func (c *copier) judge(found bool, src, dst []any, srcRank, dstRank int) verdict {
	switch {
	case !found:
		return insertIt
	case reflect.DeepEqual(c.to.db.args(slices.Clone(src)), dst):
		return sameAsIt
	case srcRank > dstRank:
		return updateIt
	}
	return keepIt
}

// judgeRecord is judge for a record of the source and the target's old
// one (nil when it has none), by their columns (args) and their statuses;
// it also returns rec's columns.
func judgeRecord[T any](c *copier, rec, old *T, args func(*T) ([]any, error), status func(*T) record.Status) (verdict, []any, error) {
	src, err := args(rec)
	if err != nil {
		return 0, nil, err
	}
	var dst []any
	oldRank := 0
	if old != nil {
		if dst, err = args(old); err != nil {
			return 0, nil, err
		}
		oldRank = statusRank(status(old))
	}
	return c.judge(old != nil, src, dst, statusRank(status(rec)), oldRank), src, nil
}

func (v verdict) count(n *CopyCount) {
	switch v {
	case sameAsIt:
		n.Present++
	case updateIt:
		n.Updated++
	case keepIt:
		n.Kept++
	}
}

// statusRank ranks a run's or a bench's status by how far along it is:
// running, then interrupted (lane's inference that its owner died), then an
// ending of its own.
func statusRank(s record.Status) int {
	switch s {
	case record.StatusRunning, "":
		return 0
	case record.StatusInterrupted:
		return 1
	}
	return 2
}

// inList is "(?, ?, …)" for n arguments.
func inList(n int) string { return "(?" + strings.Repeat(", ?", n-1) + ")" }

// isForeignKey reports whether err is a row refused for referring to one
// that is not there.
func isForeignKey(err error) bool {
	var se *sqlite.Error
	if errors.As(err, &se) {
		return se.Code() == sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY
	}
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23503"
}

// afterAll is below every rowid, the start of a walk by rowid.
const afterAll = math.MinInt64

// runs copies the runs a page at a time in the source's order of insertion
// (so that the target lists runs that started together in the same order),
// and after each page the events of its runs.
func (c *copier) runs(ctx context.Context) error {
	after := int64(afterAll)
	for {
		runs, last, err := c.runPage(ctx, after)
		if err != nil {
			return fmt.Errorf("read runs: %w", err)
		}
		if len(runs) == 0 {
			return nil
		}
		if err := c.putRuns(ctx, runs); err != nil {
			return fmt.Errorf("write runs: %w", err)
		}
		if err := c.events(ctx, runs); err != nil {
			return err
		}
		after = last
	}
}

// runPage reads the source's runs after the rowid after, at most
// BatchRows and stopping once their texts hold BatchBytes (a prompt or a
// result can be large), and returns them with the last one's rowid.
func (c *copier) runPage(ctx context.Context, after int64) ([]*record.Run, int64, error) {
	rows, err := c.from.db.QueryContext(ctx, runKeySelect+" WHERE rowid > ? ORDER BY rowid LIMIT ?", after, c.opts.BatchRows)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	var runs []*record.Run
	size := 0
	for rows.Next() {
		r, err := scanRun(keyScanner{rows, []any{&after}})
		if err != nil {
			return nil, 0, err
		}
		runs = append(runs, r)
		if size += len(r.Prompt) + len(r.ResultText); size >= c.opts.BatchBytes {
			break
		}
	}
	return runs, after, rows.Err()
}

// putRuns writes a page of the source's runs to the target, in one
// transaction, as Copy's rule says.
func (c *copier) putRuns(ctx context.Context, runs []*record.Run) error {
	return c.commit(ctx, func(tx *txn, d *CopyStats) error {
		have, err := targetRuns(ctx, tx, runs)
		if err != nil {
			return err
		}
		for _, r := range runs {
			// As CreateRun would: a pid without a host is this machine's.
			c.to.claimOwner(&r.OwnerHost, r.OwnerPID)
			if err := c.writeRun(ctx, tx, r, have[r.ID], &d.Runs); err != nil {
				return fmt.Errorf("run %s: %w", r.ID, err)
			}
		}
		return nil
	})
}

// writeRun writes r as the rule says, given the target's old (nil when it
// has none), with the statements CreateRun and UpdateRun use: on
// PostgreSQL they also write the run's words for search.
func (c *copier) writeRun(ctx context.Context, tx *txn, r, old *record.Run, n *CopyCount) error {
	v, _, err := judgeRecord(c, r, old, runArgs, func(r *record.Run) record.Status { return r.Status })
	if err != nil {
		return err
	}
	if v != insertIt && v != updateIt {
		v.count(n)
		return nil
	}
	q, args, err := c.to.runStatement(r, v == updateIt)
	if err != nil {
		return err
	}
	if v == updateIt {
		if _, err := tx.ExecContext(ctx, q, args...); err != nil {
			return err
		}
		n.Updated++
		return nil
	}
	return insertCounted(ctx, tx, q+" ON CONFLICT (id) DO NOTHING", args, n)
}

// insertCounted runs an INSERT … ON CONFLICT DO NOTHING of one row and
// counts the row copied, or present when it was there.
func insertCounted(ctx context.Context, tx *txn, q string, args []any, n *CopyCount) error {
	res, err := tx.ExecContext(ctx, q, args...)
	if err != nil {
		return err
	}
	k, err := res.RowsAffected()
	if err != nil {
		return err
	}
	n.Copied += k
	n.Present += 1 - k
	return nil
}

// targetRuns returns the target's runs with the ids of runs, by id.
func targetRuns(ctx context.Context, tx *txn, runs []*record.Run) (map[string]*record.Run, error) {
	ids := make([]any, len(runs))
	for i, r := range runs {
		ids[i] = r.ID
	}
	rows, err := tx.QueryContext(ctx, runSelect+" WHERE id IN "+inList(len(ids)), ids...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	have := make(map[string]*record.Run, len(runs))
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, err
		}
		have[r.ID] = r
	}
	return have, rows.Err()
}

// eventCount is what the target holds of a run's events.
type eventCount struct{ n, max int64 }

// events copies the events of runs, in transactions that may span runs.
func (c *copier) events(ctx context.Context, runs []*record.Run) error {
	have, err := c.targetEvents(ctx, runs)
	if err != nil {
		return fmt.Errorf("read the target's events: %w", err)
	}
	var (
		batch []row
		size  int
	)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		err := c.putEvents(ctx, batch)
		batch, size = batch[:0], 0
		return err
	}
	for _, r := range runs {
		after, err := c.eventsAfter(ctx, r.ID, have[r.ID])
		if err != nil {
			return fmt.Errorf("read events of run %s: %w", r.ID, err)
		}
		for more := true; more; {
			var page []row
			page, more, err = c.eventPage(ctx, r.ID, after, c.opts.BatchRows-len(batch), c.opts.BatchBytes-size)
			if err != nil {
				return fmt.Errorf("read events of run %s: %w", r.ID, err)
			}
			for _, e := range page {
				batch, size, after = append(batch, e), size+e.size(), e.seq
			}
			if len(batch) >= c.opts.BatchRows || size >= c.opts.BatchBytes {
				if err := flush(); err != nil {
					return fmt.Errorf("write events: %w", err)
				}
			}
		}
	}
	if err := flush(); err != nil {
		return fmt.Errorf("write events: %w", err)
	}
	return nil
}

// targetEvents returns how many events the target holds of each of runs
// that has some, and their highest seq.
func (c *copier) targetEvents(ctx context.Context, runs []*record.Run) (map[string]eventCount, error) {
	ids := make([]any, len(runs))
	for i, r := range runs {
		ids[i] = r.ID
	}
	rows, err := c.to.db.QueryContext(ctx,
		`SELECT run_id, count(*), max(seq) FROM events WHERE run_id IN `+inList(len(ids))+` GROUP BY run_id`, ids...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	have := map[string]eventCount{}
	for rows.Next() {
		var (
			id string
			n  eventCount
		)
		if err := rows.Scan(&id, &n.n, &n.max); err != nil {
			return nil, err
		}
		have[id] = n
	}
	return have, rows.Err()
}

// eventsAfter returns the seq after which the source's events of a run are
// to be read, given what the target holds of them. A run's events come to
// a target in seq order, from the one run that writes them, and never
// change: when the target holds as many as the source has up to the
// target's highest seq, it holds those, and only later ones are read (the
// ones skipped are counted present). Otherwise all are read, and those the
// target has are skipped one by one.
func (c *copier) eventsAfter(ctx context.Context, runID string, have eventCount) (int64, error) {
	if have.n == 0 {
		return afterAll, nil
	}
	var n int64
	err := c.from.db.QueryRowContext(ctx, `SELECT count(*) FROM events WHERE run_id = ? AND seq <= ?`, runID, have.max).Scan(&n)
	if err != nil {
		return 0, err
	}
	if n != have.n {
		return afterAll, nil
	}
	c.stats.Events.Present += n
	return have.max, nil
}

// eventPage reads at most limit events of runID after the seq after, and
// stops early once they hold budget bytes; more says whether others may
// follow. Each event is as stored: its payload is not decoded.
func (c *copier) eventPage(ctx context.Context, runID string, after int64, limit, budget int) (page []row, more bool, err error) {
	rows, err := c.from.db.QueryContext(ctx,
		`SELECT seq, time, kind, payload, raw FROM events WHERE run_id = ? AND seq > ? ORDER BY seq LIMIT ?`,
		runID, after, max(limit, 1))
	if err != nil {
		return nil, false, err
	}
	defer rows.Close()
	size := 0
	for rows.Next() {
		var t sql.NullInt64
		e := row{runID: runID}
		if err := rows.Scan(&e.seq, &t, &e.kind, &e.payload, &e.raw); err != nil {
			return nil, false, err
		}
		if t.Valid {
			e.time = t.Int64
		}
		page = append(page, e)
		if size += e.size(); size >= budget {
			return page, true, rows.Err()
		}
	}
	return page, len(page) >= limit, rows.Err()
}

// putEvents inserts the events the target lacks, in one transaction.
func (c *copier) putEvents(ctx context.Context, evs []row) error {
	return c.commit(ctx, func(tx *txn, d *CopyStats) error {
		var args []any
		for len(evs) > 0 {
			part := evs[:min(len(evs), rowsPerInsert)]
			evs = evs[len(part):]
			args = args[:0]
			for _, e := range part {
				var raw any // NULL stays NULL, an empty line empty
				if e.raw != nil {
					raw = e.raw
				}
				args = append(args, e.runID, e.seq, e.time, e.kind, e.payload, raw)
			}
			res, err := tx.ExecContext(ctx, insertEvent+eventValues+strings.Repeat(", "+eventValues, len(part)-1)+
				" ON CONFLICT (run_id, seq) DO NOTHING", args...)
			if err != nil {
				return fmt.Errorf("events %d-%d of run %s: %w", part[0].seq, part[len(part)-1].seq, part[0].runID, err)
			}
			k, err := res.RowsAffected()
			if err != nil {
				return err
			}
			d.Events.Copied += k
			d.Events.Present += int64(len(part)) - k
		}
		return nil
	})
}

var benchKeySelect = "SELECT rowid, " + strings.Join(benchColumns, ", ") + " FROM benches"

// benches copies the benches a page at a time in the source's order of
// insertion.
func (c *copier) benches(ctx context.Context) error {
	after := int64(afterAll)
	for {
		bs, last, err := c.benchPage(ctx, after)
		if err != nil {
			return fmt.Errorf("read benches: %w", err)
		}
		if len(bs) == 0 {
			return nil
		}
		if err := c.putBenches(ctx, bs); err != nil {
			return fmt.Errorf("write benches: %w", err)
		}
		after = last
	}
}

func (c *copier) benchPage(ctx context.Context, after int64) ([]*record.Bench, int64, error) {
	rows, err := c.from.db.QueryContext(ctx, benchKeySelect+" WHERE rowid > ? ORDER BY rowid LIMIT ?", after, c.opts.BatchRows)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	var bs []*record.Bench
	for rows.Next() {
		b, err := scanBench(keyScanner{rows, []any{&after}})
		if err != nil {
			return nil, 0, err
		}
		bs = append(bs, b)
	}
	return bs, after, rows.Err()
}

// putBenches writes a page of the source's benches to the target, in one
// transaction, by the rule runs follow.
func (c *copier) putBenches(ctx context.Context, bs []*record.Bench) error {
	return c.commit(ctx, func(tx *txn, d *CopyStats) error {
		have, err := targetBenches(ctx, tx, bs)
		if err != nil {
			return err
		}
		for _, b := range bs {
			c.to.claimOwner(&b.OwnerHost, b.OwnerPID) // as CreateBench would
			if err := c.writeBench(ctx, tx, b, have[b.ID], &d.Benches); err != nil {
				return fmt.Errorf("bench %s: %w", b.ID, err)
			}
		}
		return nil
	})
}

// writeBench writes b as the rule says, given the target's old (nil when
// it has none), with the statements CreateBench and UpdateBench use.
func (c *copier) writeBench(ctx context.Context, tx *txn, b, old *record.Bench, n *CopyCount) error {
	v, src, err := judgeRecord(c, b, old, benchArgs, func(b *record.Bench) record.Status { return b.Status })
	if err != nil {
		return err
	}
	switch v {
	case insertIt:
		return insertCounted(ctx, tx, benchInsert+" ON CONFLICT (id) DO NOTHING", src, n)
	case updateIt:
		if _, err := tx.ExecContext(ctx, benchUpdate, append(src[1:], b.ID)...); err != nil {
			return err
		}
		n.Updated++
	default:
		v.count(n)
	}
	return nil
}

func targetBenches(ctx context.Context, tx *txn, bs []*record.Bench) (map[string]*record.Bench, error) {
	ids := make([]any, len(bs))
	for i, b := range bs {
		ids[i] = b.ID
	}
	rows, err := tx.QueryContext(ctx, benchSelect+" WHERE id IN "+inList(len(ids)), ids...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	have := make(map[string]*record.Bench, len(bs))
	for rows.Next() {
		b, err := scanBench(rows)
		if err != nil {
			return nil, err
		}
		have[b.ID] = b
	}
	return have, rows.Err()
}

// copyTable is a table copied as the plain values its columns hold: none
// is a boolean (whose type differs between the backends) or computed (as
// runs' words for search are).
type copyTable struct {
	name string
	cols []string // the key's columns first
	key  int      // how many columns the key has
	// status names the column that says how far along a row is, ranked by
	// rank: a row in both is replaced by the source's when that ranks
	// higher. Without it a row never changes once written, and the target's
	// rows are only looked up by key.
	status string
	rank   func(string) int
	// count picks the table's counts in CopyStats.
	count func(*CopyStats) *CopyCount
}

var (
	// attemptTable's columns are SaveAttempt's and the lease's, which a
	// copy keeps: the attempt runs' tokens refer to it.
	attemptTable = copyTable{
		name:   "bench_attempts",
		cols:   withColumns(attemptColumns, "lease_token", "lease_holder", "lease_expires_at"),
		key:    4,
		status: "status",
		rank:   attemptRank,
		count:  func(s *CopyStats) *CopyCount { return &s.Attempts },
	}
	attemptRunTable = copyTable{
		name:  "attempt_runs",
		cols:  []string{"bench_id", "task_id", "model", "n", "run_id", "worker", "lease_token"},
		key:   5,
		count: func(s *CopyStats) *CopyCount { return &s.AttemptRuns },
	}
	blobTable = copyTable{
		name:  "blobs",
		cols:  []string{"digest", "size", "data"},
		key:   1,
		count: func(s *CopyStats) *CopyCount { return &s.Blobs },
	}
	approvalTable = copyTable{
		name: "approvals",
		cols: []string{"id", "run_id", "tool_use_id", "tool", "summary", "input", "suggestions", "dir",
			"asked_at", "deadline", "decided_at", "allow", "always", "answered_by", "message"},
		key:   1,
		count: func(s *CopyStats) *CopyCount { return &s.Approvals },
	}
	steerTable = copyTable{
		name:  "steers",
		cols:  []string{"id", "run_id", "kind", "text", "deliver_now", "sender", "sent_at", "delivered_at"},
		key:   1,
		count: func(s *CopyStats) *CopyCount { return &s.Steers },
	}
	// artifactTable's rows are replaced with their attempt's: a row in
	// both is left as the target has it, as its attempt is.
	artifactTable = copyTable{
		name:  "attempt_artifacts",
		cols:  []string{"bench_id", "task_id", "model", "n", "step", "blob", "manifest"},
		key:   5,
		count: func(s *CopyStats) *CopyCount { return &s.Artifacts },
	}
	runChangesTable = copyTable{
		name:  "run_changes",
		cols:  []string{"run_id", "files", "patch"},
		key:   1,
		count: func(s *CopyStats) *CopyCount { return &s.RunChanges },
	}
)

// withColumns is cols followed by those of more it lacks.
func withColumns(cols []string, more ...string) []string {
	out := slices.Clone(cols)
	for _, c := range more {
		if !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out
}

// attemptRank ranks an attempt's status: finished above pending or running.
func attemptRank(s string) int {
	switch record.AttemptStatus(s) {
	case record.AttemptPending, record.AttemptRunning, "":
		return 0
	}
	return 1
}

func (t copyTable) keyCols() string { return strings.Join(t.cols[:t.key], ", ") }

// table copies t a page at a time in the order of its key, which both
// backends sort alike (text byte by byte).
func (c *copier) table(ctx context.Context, t copyTable) error {
	var after []any
	for {
		page, more, err := c.tablePage(ctx, t, after)
		if err != nil {
			return fmt.Errorf("read %s: %w", t.name, err)
		}
		if len(page) > 0 {
			if err := c.putRows(ctx, t, page); err != nil {
				return fmt.Errorf("write %s: %w", t.name, err)
			}
			after = page[len(page)-1][:t.key]
		}
		if !more {
			return nil
		}
	}
}

// tablePage reads the source's rows of t whose key is above after (all
// when nil), at most BatchRows and stopping once they hold BatchBytes.
func (c *copier) tablePage(ctx context.Context, t copyTable, after []any) (page [][]any, more bool, err error) {
	q := "SELECT " + strings.Join(t.cols, ", ") + " FROM " + t.name
	if after != nil {
		q += " WHERE (" + t.keyCols() + ") > " + inList(t.key)
	}
	rows, err := c.from.db.QueryContext(ctx, q+" ORDER BY "+t.keyCols()+" LIMIT ?", append(slices.Clone(after), c.opts.BatchRows)...)
	if err != nil {
		return nil, false, err
	}
	defer rows.Close()
	size := 0
	for rows.Next() {
		vals, err := scanValues(rows, len(t.cols))
		if err != nil {
			return nil, false, err
		}
		page = append(page, vals)
		for _, v := range vals {
			switch v := v.(type) {
			case string:
				size += len(v)
			case []byte:
				size += len(v)
			}
		}
		if size >= c.opts.BatchBytes {
			return page, true, rows.Err()
		}
	}
	return page, len(page) >= c.opts.BatchRows, rows.Err()
}

// scanValues scans a row of n columns as the driver gives them.
func scanValues(sc scanner, n int) ([]any, error) {
	vals := make([]any, n)
	ptrs := make([]any, n)
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	return vals, sc.Scan(ptrs...)
}

// rowKey makes a map key of a row's key values (strings and integers).
func rowKey(key []any) string { return fmt.Sprintf("%#v", key) }

// putRows writes a page of the source's rows of t to the target, in one
// transaction, as Copy's rule says.
func (c *copier) putRows(ctx context.Context, t copyTable, page [][]any) error {
	status := slices.Index(t.cols, t.status)
	rank := func(vals []any) int {
		s, _ := vals[status].(string)
		return t.rank(s)
	}
	return c.commit(ctx, func(tx *txn, d *CopyStats) error {
		have, err := targetRows(ctx, tx, t, page[0][:t.key], page[len(page)-1][:t.key])
		if err != nil {
			return err
		}
		for _, vals := range page {
			old, found := have[rowKey(vals[:t.key])]
			v := insertIt
			switch {
			case found && status < 0:
				v = sameAsIt
			case found:
				v = c.judge(true, vals, old, rank(vals), rank(old))
			}
			if err := writeRow(ctx, tx, t, vals, v, t.count(d)); err != nil {
				return fmt.Errorf("%v: %w", vals[:t.key], err)
			}
		}
		return nil
	})
}

// targetRows returns the target's rows of t whose keys are from first to
// last, by rowKey: all their values when t's rows can change, else their
// keys alone.
func targetRows(ctx context.Context, tx *txn, t copyTable, first, last []any) (map[string][]any, error) {
	cols := t.cols
	if t.status == "" {
		cols = t.cols[:t.key]
	}
	rows, err := tx.QueryContext(ctx, "SELECT "+strings.Join(cols, ", ")+" FROM "+t.name+
		" WHERE ("+t.keyCols()+") >= "+inList(t.key)+" AND ("+t.keyCols()+") <= "+inList(t.key),
		append(slices.Clone(first), last...)...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	have := map[string][]any{}
	for rows.Next() {
		vals, err := scanValues(rows, len(cols))
		if err != nil {
			return nil, err
		}
		have[rowKey(vals[:t.key])] = vals
	}
	return have, rows.Err()
}

// writeRow does what v says with the row vals of t. A row that refers to
// one the target lacks (an attempt whose run came to the source after the
// runs were copied) is deferred: the statement is undone alone, and the
// next copy writes it.
func writeRow(ctx context.Context, tx *txn, t copyTable, vals []any, v verdict, n *CopyCount) error {
	var q string
	var args []any
	switch v {
	case insertIt:
		q = "INSERT INTO " + t.name + " (" + strings.Join(t.cols, ", ") + ") VALUES " + inList(len(t.cols)) +
			" ON CONFLICT (" + t.keyCols() + ") DO NOTHING"
		args = vals
	case updateIt:
		q = "UPDATE " + t.name + " SET " + strings.Join(t.cols[t.key:], " = ?, ") + " = ? WHERE " +
			strings.Join(t.cols[:t.key], " = ? AND ") + " = ?"
		args = append(slices.Clone(vals[t.key:]), vals[:t.key]...)
	default:
		v.count(n)
		return nil
	}
	var res sql.Result
	err := tx.guard(ctx, true, func() (err error) {
		res, err = tx.ExecContext(ctx, q, args...)
		return err
	})
	switch {
	case isForeignKey(err):
		n.Deferred++
		return nil
	case err != nil:
		return err
	case v == updateIt:
		n.Updated++
		return nil
	}
	k, err := res.RowsAffected()
	if err != nil {
		return err
	}
	n.Copied += k
	n.Present += 1 - k
	return nil
}
