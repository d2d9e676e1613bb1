package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lanehq/lane/internal/record"
)

// copyOpts are small batches, so that a test's history crosses many pages
// and transactions; BatchBytes is below the largest raw line and blob.
var copyOpts = CopyOptions{BatchRows: 7, BatchBytes: 1 << 20}

// copyPairs runs fn as a subtest for each pair of backends, source first.
func copyPairs(t *testing.T, fn func(t *testing.T, from, to backend)) {
	lite, pg := backend{"sqlite", testPath}, backend{"postgres", pgWhere}
	for _, p := range [][2]backend{{lite, lite}, {lite, pg}, {pg, lite}, {pg, pg}} {
		t.Run(p[0].name+"_to_"+p[1].name, func(t *testing.T) { fn(t, p[0], p[1]) })
	}
}

// historySize is how many records of each kind richHistory writes.
type historySize struct{ runs, events, benches, attempts, attemptRuns, blobs, artifacts int64 }

// richHistory writes a history with every field of runs, benches and
// attempts set somewhere: sessions, a child run, runs that started at the
// same time, a run of large text, raw lines that are not UTF-8 or are
// large, a bench's attempts with their leases, attempt runs and blobs. Its
// text is valid UTF-8 without NUL, which PostgreSQL keeps as it is.
func richHistory(t *testing.T, s *Store) historySize {
	t.Helper()
	ctx := context.Background()
	full := fullRun(t, "r-full")
	full.Status = record.StatusSucceeded
	allSet(t, reflect.ValueOf(*full), "")
	live := fullRun(t, "r-live")
	live.StartedAt, live.Prompt = t0.Add(time.Minute), "fix the flaky parser test"
	child := testRun("r-child")
	child.ParentRunID, child.SessionID, child.StartedAt = "r-full", "sess-2", t0.Add(2*time.Minute)
	child.Prompt, child.ResultText = "résumé of the parser work", "the parser is fixed"
	big := testRun("r-big") // more text than copyOpts.BatchBytes
	big.StartedAt, big.ResultText = t0.Add(4*time.Minute), strings.Repeat("lorem ipsum ", 150_000)
	runs := []*record.Run{full, live, child, testRun("r-min"), testRun("r-many"), big}
	for _, id := range []string{"r-tie-a", "r-tie-b"} {
		r := testRun(id)
		r.StartedAt, r.Prompt = t0.Add(3*time.Minute), "tie "+id
		runs = append(runs, r)
	}
	for _, r := range runs {
		if err := s.CreateRun(ctx, r); err != nil {
			t.Fatal(err)
		}
	}

	var evs []record.Event
	for seq := range int64(5) {
		evs = append(evs, testEvent("r-full", seq+1, 0))
	}
	evs[0].Raw = []byte{0xff, 0xfe, 0, 'x', 0xc3, '\n'}          // not UTF-8, with a NUL
	evs[1].Raw = bytes.Repeat([]byte("0123456789abcdef"), 1<<17) // 2 MiB
	evs[3].Kind, evs[3].Text = record.KindResult, "all done"
	evs[4].Raw = []byte(`{"type":"result"}`)
	for seq := range int64(3) {
		evs = append(evs, testEvent("r-live", seq+1, 10))
	}
	evs = append(evs, testEvent("r-child", 1, 0), testEvent("r-child", 2, 20))
	for seq := range int64(600) {
		evs = append(evs, testEvent("r-many", seq+1, 40))
	}
	if err := s.AppendEvents(ctx, evs); err != nil {
		t.Fatal(err)
	}

	benches := richBenches(t, s)
	return historySize{runs: int64(len(runs)), events: int64(len(evs)), benches: benches.benches,
		attempts: benches.attempts, attemptRuns: benches.attemptRuns, blobs: benches.blobs, artifacts: benches.artifacts}
}

// richBenches writes richHistory's benches, attempts, attempt runs and
// blobs, and counts them.
func richBenches(t *testing.T, s *Store) historySize {
	t.Helper()
	ctx := context.Background()
	done := testBench(t, "b-done", t0)
	done.Status, done.EndedAt, done.OwnerHost, done.Workers = record.StatusSucceeded, t0.Add(time.Hour), "host-b", true
	done.Waiting, done.WaitingUntil = "claude five_hour", t0.Add(2*time.Hour).UTC()
	allSet(t, reflect.ValueOf(*done), "")
	createBenchT(t, s, done)
	createBenchT(t, s, testBench(t, "b-live", t0.Add(time.Minute)))

	fullAttempt := record.Attempt{BenchID: "b-done", TaskID: "t-full", Model: "sonnet", N: 1, RunID: "r-child",
		Status: record.AttemptFailed, FailureKind: "check_failed", CheckExitCode: 2, CheckOutput: "FAIL parser_test.go",
		DurationMS: 1234, CostUSD: 0.5, Usage: record.Usage{InputTokens: 1, OutputTokens: 2, CacheReadTokens: 3, CacheCreationTokens: 4, CacheCreation1hTokens: 1},
		Turns: 7, ToolCalls: 8, StartedAt: t0, EndedAt: t0.Add(time.Minute), Worker: "w1", Tries: 2, Reward: new(0.75),
		Rewards: map[string]float64{"reward": 0.75, "style": 1},
		Retries: 1,
		Artifacts: []record.ArtifactSet{{Blob: blobDigest([]byte("a task folder")),
			Artifacts: []record.ArtifactEntry{{Source: "/logs/artifacts", Service: "main", Path: "logs/artifacts", Status: "ok"}},
			Files:     []record.ArtifactFile{{Path: "logs/artifacts/a", Source: "/logs/artifacts/a", Service: "main", Size: 13}}},
		},
		Steps: []record.AttemptStep{{Name: "one", RunID: "r-child", Status: record.AttemptPassed, Reward: new(1.0), Rewards: map[string]float64{"reward": 1}}}}
	allSet(t, reflect.ValueOf(fullAttempt), "")
	attempts := []record.Attempt{
		fullAttempt,
		{BenchID: "b-done", TaskID: "t-min", Model: "sonnet", N: 1, RunID: "r-min", Status: record.AttemptPassed},
		{BenchID: "b-done", TaskID: "t-skip", Model: "opus", N: 1, Status: record.AttemptSkipped},
		{BenchID: "b-live", TaskID: "t-live", Model: "opus", N: 1, RunID: "r-live", Status: record.AttemptRunning},
	}
	for n := range 10 {
		attempts = append(attempts, record.Attempt{BenchID: "b-done", TaskID: "t-loop", Model: "sonnet", N: n + 1, Status: record.AttemptPending})
	}
	for _, a := range attempts {
		if err := s.SaveAttempt(ctx, &a); err != nil {
			t.Fatal(err)
		}
	}
	mustExec(t, s, `UPDATE bench_attempts SET lease_token = 4, lease_holder = 'w1', lease_expires_at = ? WHERE task_id = 't-full'`,
		t0.Add(time.Hour).UnixNano())
	for _, ar := range [][]any{{"r-child", "w1", 4}, {"r-lost", "w2", 3}} {
		mustExec(t, s, `INSERT INTO attempt_runs (bench_id, task_id, model, n, run_id, worker, lease_token)
			VALUES ('b-done', 't-full', 'sonnet', 1, ?, ?, ?)`, ar...)
	}
	blobs := [][]byte{{0, 1, 2, 0xff, 0xfe}, bytes.Repeat([]byte{0xab}, 2<<20), []byte("a task folder")}
	for _, data := range blobs {
		sum := sha256.Sum256(data)
		mustExec(t, s, `INSERT INTO blobs (digest, size, data) VALUES (?, ?, ?)`,
			"sha256:"+hex.EncodeToString(sum[:]), len(data), data)
	}
	return historySize{benches: 2, attempts: int64(len(attempts)), attemptRuns: 2, blobs: int64(len(blobs)), artifacts: 1}
}

func blobDigest(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

func mustExec(t *testing.T, s *Store, q string, args ...any) {
	t.Helper()
	if _, err := s.db.Exec(q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// copied is what a copy of a whole history of size h into an empty
// database counts.
func copied(h historySize) CopyStats {
	return CopyStats{Runs: CopyCount{Copied: h.runs}, Events: CopyCount{Copied: h.events},
		Benches: CopyCount{Copied: h.benches}, Attempts: CopyCount{Copied: h.attempts},
		AttemptRuns: CopyCount{Copied: h.attemptRuns}, Blobs: CopyCount{Copied: h.blobs}, Artifacts: CopyCount{Copied: h.artifacts}}
}

// present is what copying the history of size h again counts.
func present(h historySize) CopyStats {
	return CopyStats{Runs: CopyCount{Present: h.runs}, Events: CopyCount{Present: h.events},
		Benches: CopyCount{Present: h.benches}, Attempts: CopyCount{Present: h.attempts},
		AttemptRuns: CopyCount{Present: h.attemptRuns}, Blobs: CopyCount{Present: h.blobs}, Artifacts: CopyCount{Present: h.artifacts}}
}

func mustCopy(t *testing.T, from, to *Store, want CopyStats) {
	t.Helper()
	got, err := Copy(context.Background(), from, to, copyOpts)
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("Copy counted\n %+v\nwant\n %+v", got, want)
	}
}

// assertSameHistory fails unless got reads as want through the store's
// methods: runs (listed in order, one by one), their events, sessions,
// text search, benches and their attempts; and, row by row, what no method
// reads yet (leases, attempt runs, blobs).
func assertSameHistory(t *testing.T, want, got *Store) {
	t.Helper()
	ctx := context.Background()
	wr, err := want.ListRuns(ctx, RunFilter{})
	if err != nil {
		t.Fatal(err)
	}
	gr, err := got.ListRuns(ctx, RunFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(runIDs(wr), runIDs(gr)) {
		t.Fatalf("runs %v, want %v", runIDs(gr), runIDs(wr))
	}
	for i, w := range wr {
		g, err := got.GetRun(ctx, w.ID)
		if err != nil || !reflect.DeepEqual(g, w) || !reflect.DeepEqual(gr[i], w) {
			t.Errorf("run %s:\n got %+v (%v)\nwant %+v", w.ID, g, err, w)
		}
		if ge, we := collect(t, got, w.ID, 0), collect(t, want, w.ID, 0); !reflect.DeepEqual(ge, we) {
			t.Errorf("events of run %s differ: got %d, want %d", w.ID, len(ge), len(we))
		}
	}
	assertSame(t, "sessions", func(s *Store) (any, error) {
		ss, _, err := s.Sessions(ctx, SessionQuery{Limit: 500})
		return ss, err
	}, want, got)
	for _, text := range []string{"parser", "unicode", "flak", "quotes", "tie"} {
		assertSame(t, "search "+text, func(s *Store) (any, error) {
			p, err := s.QueryRuns(ctx, RunQuery{Text: text})
			if err == nil && len(p.Runs) == 0 {
				err = errors.New("found nothing")
			}
			return runIDs(p.Runs), err
		}, want, got)
	}
	assertSame(t, "benches", func(s *Store) (any, error) { return s.ListBenches(ctx, 0) }, want, got)
	for _, id := range []string{"b-done", "b-live"} {
		assertSame(t, "attempts of "+id, func(s *Store) (any, error) { return s.Attempts(ctx, id) }, want, got)
		assertSame(t, "artifacts of "+id, func(s *Store) (any, error) { return s.AttemptArtifacts(ctx, id) }, want, got)
	}
	// Written out rather than attemptTable's, so that a lease column Copy
	// left out would show.
	leases := copyTable{name: "bench_attempts", key: 4,
		cols: []string{"bench_id", "task_id", "model", "n", "lease_token", "lease_holder", "lease_expires_at"}}
	for _, tb := range []copyTable{leases, attemptTable, attemptRunTable, blobTable} {
		assertSame(t, tb.name, func(s *Store) (any, error) { return tableRows(s, tb) }, want, got)
	}
}

// assertSame fails unless read gives the same from want and from got.
func assertSame(t *testing.T, what string, read func(*Store) (any, error), want, got *Store) {
	t.Helper()
	w, err := read(want)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	g, err := read(got)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("%s:\n got %+v\nwant %+v", what, g, w)
	}
}

// tableRows reads every row of tb in key order, as the driver gives them.
func tableRows(s *Store, tb copyTable) ([][]any, error) {
	rows, err := s.db.Query("SELECT " + strings.Join(tb.cols, ", ") + " FROM " + tb.name + " ORDER BY " + tb.keyCols())
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out [][]any
	for rows.Next() {
		vals, err := scanValues(rows, len(tb.cols))
		if err != nil {
			return nil, err
		}
		out = append(out, vals)
	}
	return out, rows.Err()
}

// snapshot is every row a copy writes, with what the target makes itself
// (rowids, revs, event ids), one line each, large values by their digest:
// a copy that changes nothing leaves it as it was.
func snapshot(t *testing.T, s *Store) []string {
	t.Helper()
	var out []string
	for _, q := range []string{
		runKeySelect + " ORDER BY rowid",
		"SELECT rev FROM runs ORDER BY rowid",
		"SELECT id, run_id, seq, time, kind, payload, raw FROM events ORDER BY id",
		benchKeySelect + " ORDER BY rowid",
		"SELECT * FROM bench_attempts ORDER BY " + attemptTable.keyCols(),
		"SELECT * FROM attempt_runs ORDER BY " + attemptRunTable.keyCols(),
		"SELECT * FROM blobs ORDER BY digest",
	} {
		rows, err := s.db.Query(q)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			vals, err := scanValues(rows, len(must(rows.Columns())))
			if err != nil {
				t.Fatal(err)
			}
			for i, v := range vals {
				if b, ok := v.([]byte); ok && len(b) > 64 {
					sum := sha256.Sum256(b)
					vals[i] = "sha256:" + hex.EncodeToString(sum[:])
				}
			}
			out = append(out, fmt.Sprintf("%q", fmt.Sprint(vals...)))
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		rows.Close()
	}
	return out
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// SQLite → PostgreSQL → SQLite gives back the same history, and so does
// every other pair of backends.
func TestCopyRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	orig := openTest(t)
	h := richHistory(t, orig)
	pg := openAt(t, pgWhere(t))
	back := openTest(t)

	var progress []CopyStats
	opts := copyOpts
	opts.Progress = func(s CopyStats) { progress = append(progress, s) }
	st, err := Copy(ctx, orig, pg, opts)
	if err != nil {
		t.Fatal(err)
	}
	if st != copied(h) {
		t.Errorf("SQLite to PostgreSQL counted\n %+v\nwant\n %+v", st, copied(h))
	}
	// A transaction per 7 records at most, and the last report is the total.
	if n := h.runs + h.events + h.benches + h.attempts + h.attemptRuns + h.blobs; int64(len(progress)) < n/7 ||
		progress[len(progress)-1] != st {
		t.Errorf("%d progress reports for %d records, the last %+v", len(progress), n, progress[len(progress)-1])
	}
	assertSameHistory(t, orig, pg)

	mustCopy(t, pg, back, copied(h))
	assertSameHistory(t, orig, back)
}

// Copying again copies nothing and changes nothing, whichever backends.
func TestCopyTwiceChangesNothing(t *testing.T) {
	t.Parallel()
	copyPairs(t, func(t *testing.T, from, to backend) {
		src, dst := from.open(t), to.open(t)
		h := richHistory(t, src)
		mustCopy(t, src, dst, copied(h))
		before := snapshot(t, dst)
		mustCopy(t, src, dst, present(h))
		if after := snapshot(t, dst); !slices.Equal(after, before) {
			t.Errorf("the second copy changed the target:\n%s", diffLines(before, after))
		}
		assertSameHistory(t, src, dst)
	})
}

// diffLines lists the lines of a and b that the other lacks.
func diffLines(a, b []string) string {
	var out []string
	for _, l := range a {
		if !slices.Contains(b, l) {
			out = append(out, "- "+l)
		}
	}
	for _, l := range b {
		if !slices.Contains(a, l) {
			out = append(out, "+ "+l)
		}
	}
	return strings.Join(out, "\n")
}

// A target that has some of the source's runs, older states of others and
// runs of its own gets the rest, keeps its own, and settles each record in
// both by Copy's rule.
func TestCopyIntoPartialTarget(t *testing.T) {
	t.Parallel()
	copyPairs(t, func(t *testing.T, from, to backend) {
		ctx := context.Background()
		src, dst := from.open(t), to.open(t)
		h := richHistory(t, src)

		own := testRun("t-own")
		own.Prompt = "the target's own"
		mustCreate(t, dst, own, testEvent("t-own", 1, 5))
		mustCreate(t, dst, testRun("r-min")) // as in the source
		// r-full as it was while it ran, with its first two events.
		older := mustGetRun(t, src, "r-full")
		older.Status, older.EndedAt, older.ResultText = record.StatusRunning, time.Time{}, ""
		mustCreate(t, dst, older, collect(t, src, "r-full", 0)[:2]...)
		// r-child ended otherwise in the target.
		other := mustGetRun(t, src, "r-child")
		other.Status, other.ResultText = record.StatusFailed, "another ending"
		mustCreate(t, dst, other)
		mustCreate(t, dst, testRun("r-many"), collect(t, src, "r-many", 0)[:100]...)
		// b-done as it was while it ran, its first attempt still running.
		b, err := src.GetBench(ctx, "b-done")
		if err != nil {
			t.Fatal(err)
		}
		b.Status, b.EndedAt = record.StatusRunning, time.Time{}
		createBenchT(t, dst, b)
		a := mustAttempts(t, src, "b-done")[0]
		a.Status, a.EndedAt = record.AttemptRunning, time.Time{}
		if err := dst.SaveAttempt(ctx, &a); err != nil {
			t.Fatal(err)
		}

		want := copied(h)
		want.Runs = CopyCount{Copied: h.runs - 4, Present: 2, Updated: 1, Kept: 1}
		want.Events = CopyCount{Copied: h.events - 102, Present: 102}
		want.Benches = CopyCount{Copied: 1, Updated: 1}
		want.Attempts = CopyCount{Copied: h.attempts - 1, Updated: 1}
		mustCopy(t, src, dst, want)

		if got := mustGetRun(t, dst, "t-own"); !reflect.DeepEqual(got, own) || len(collect(t, dst, "t-own", 0)) != 1 {
			t.Errorf("the target's own run is now %+v", got)
		}
		if got := mustGetRun(t, dst, "r-child"); !reflect.DeepEqual(got, other) {
			t.Errorf("r-child, kept, is now %+v\nwant %+v", got, other)
		}
		for _, id := range []string{"r-full", "r-many"} {
			if got, w := mustGetRun(t, dst, id), mustGetRun(t, src, id); !reflect.DeepEqual(got, w) {
				t.Errorf("%s:\n got %+v\nwant %+v", id, got, w)
			}
			if got, w := collect(t, dst, id, 0), collect(t, src, id, 0); !reflect.DeepEqual(got, w) {
				t.Errorf("%s: %d events, want %d", id, len(got), len(w))
			}
		}
		assertSame(t, "b-done", func(s *Store) (any, error) { return s.GetBench(ctx, "b-done") }, src, dst)
		assertSame(t, "attempts", func(s *Store) (any, error) { return s.Attempts(ctx, "b-done") }, src, dst)

		again := present(h)
		again.Runs = CopyCount{Present: h.runs - 1, Kept: 1}
		mustCopy(t, src, dst, again)
	})
}

func mustCreate(t *testing.T, s *Store, r *record.Run, evs ...record.Event) {
	t.Helper()
	if err := s.CreateRun(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	if err := s.AppendEvents(context.Background(), evs); err != nil {
		t.Fatal(err)
	}
}

func mustGetRun(t *testing.T, s *Store, id string) *record.Run {
	t.Helper()
	r, err := s.GetRun(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func mustAttempts(t *testing.T, s *Store, bench string) []record.Attempt {
	t.Helper()
	as, err := s.Attempts(context.Background(), bench)
	if err != nil {
		t.Fatal(err)
	}
	return as
}

// A run in both that differs is replaced only by one further along.
func TestCopyConflictRule(t *testing.T) {
	t.Parallel()
	tests := []struct {
		target, source record.Status
		replaced       bool
	}{
		{record.StatusRunning, record.StatusSucceeded, true},
		{record.StatusRunning, record.StatusInterrupted, true},
		{record.StatusInterrupted, record.StatusFailed, true},
		{record.StatusSucceeded, record.StatusRunning, false},
		{record.StatusSucceeded, record.StatusInterrupted, false},
		{record.StatusFailed, record.StatusSucceeded, false},
		{record.StatusRunning, record.StatusRunning, false},
	}
	forEachBackend(t, func(t *testing.T, be backend) {
		src, dst := openTest(t), be.open(t)
		pid, start := selfOwner(t)
		run := func(id string, s record.Status, text string) *record.Run {
			r := testRun(id)
			r.Status, r.ResultText, r.OwnerPID, r.OwnerStart = s, text, pid, start // a live owner
			return r
		}
		var want CopyCount
		for i, tt := range tests {
			id := fmt.Sprintf("r%d", i)
			mustCreate(t, dst, run(id, tt.target, "the target's"))
			mustCreate(t, src, run(id, tt.source, "the source's"))
			if tt.replaced {
				want.Updated++
			} else {
				want.Kept++
			}
		}
		mustCopy(t, src, dst, CopyStats{Runs: want})
		for i, tt := range tests {
			kept := "the target's"
			if tt.replaced {
				kept = "the source's"
			}
			if got := mustGetRun(t, dst, fmt.Sprintf("r%d", i)); got.ResultText != kept {
				t.Errorf("%s in the target, %s in the source: the target's run is %q, want %q",
					tt.target, tt.source, got.ResultText, kept)
			}
		}
	})
}

// PostgreSQL's text holds no NUL nor invalid UTF-8: a copy there has U+FFFD
// in their place, keeps raw lines (bytes) exactly, and counts the run
// present the next time rather than different.
func TestCopyToPostgresReplacesNUL(t *testing.T) {
	t.Parallel()
	src, dst := openTest(t), openAt(t, pgWhere(t))
	r := testRun("r-nul")
	r.Prompt, r.ResultText = "before\x00after", "bad \xff byte"
	ev := testEvent("r-nul", 1, 0)
	ev.Raw, ev.Text = []byte("raw\x00\xff"), "text\x00with a NUL"
	mustCreate(t, src, r, ev)

	mustCopy(t, src, dst, CopyStats{Runs: CopyCount{Copied: 1}, Events: CopyCount{Copied: 1}})
	got := mustGetRun(t, dst, "r-nul")
	if got.Prompt != "before\uFFFDafter" || got.ResultText != "bad \uFFFD byte" {
		t.Errorf("prompt %q, result %q", got.Prompt, got.ResultText)
	}
	// The payload is JSON, where a NUL is an escape: it is kept.
	if evs := collect(t, dst, "r-nul", 0); len(evs) != 1 || !bytes.Equal(evs[0].Raw, ev.Raw) || evs[0].Text != ev.Text {
		t.Errorf("events %+v", evs)
	}
	mustCopy(t, src, dst, CopyStats{Runs: CopyCount{Present: 1}, Events: CopyCount{Present: 1}})
}

// A database is not copied into itself, whatever names it twice.
func TestCopyRefusesSameDatabase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	refused := func(t *testing.T, from, to *Store) {
		t.Helper()
		if st, err := Copy(ctx, from, to, CopyOptions{}); !errors.Is(err, ErrSameDatabase) || st != (CopyStats{}) {
			t.Errorf("Copy = %+v, %v; want ErrSameDatabase", st, err)
		}
	}
	t.Run("sqlite", func(t *testing.T) {
		path := testPath(t)
		s := openAt(t, path)
		createRun(t, s, "r1")
		link := filepath.Join(t.TempDir(), "link.db")
		if err := os.Symlink(path, link); err != nil {
			t.Fatal(err)
		}
		refused(t, s, s)
		refused(t, s, openAt(t, path))
		refused(t, openAt(t, link), s)
		refused(t, s, openAt(t, filepath.Join(filepath.Dir(path), ".", filepath.Base(path))))
		mustCopy(t, s, openTest(t), CopyStats{Runs: CopyCount{Copied: 1}})
	})
	t.Run("postgres", func(t *testing.T) {
		u := pgWhere(t)
		s := openAt(t, u)
		createRun(t, s, "r1")
		refused(t, s, openAt(t, u))
		refused(t, s, openAt(t, u+"&application_name=other"))
		mustCopy(t, s, openAt(t, pgWhere(t)), CopyStats{Runs: CopyCount{Copied: 1}})
	})
}

// The source may be written while it is copied: an attempt (and its
// attempt run) whose run came after the runs were copied waits for the
// next copy, which takes them all.
func TestCopyDefersWhatCameLate(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, be backend) {
		ctx := context.Background()
		src, dst := openTest(t), be.open(t)
		createRun(t, src, "r1")
		createBenchT(t, src, testBench(t, "b1", t0))
		save := func(task, run string) {
			a := record.Attempt{BenchID: "b1", TaskID: task, Model: "m", N: 1, RunID: run, Status: record.AttemptPassed}
			if err := src.SaveAttempt(ctx, &a); err != nil {
				t.Fatal(err)
			}
		}
		save("t1", "r1")
		opts := copyOpts
		late := false
		opts.Progress = func(s CopyStats) {
			if s.Benches.Copied == 1 && !late {
				late = true
				createRun(t, src, "r2")
				save("t2", "r2")
				mustExec(t, src, `INSERT INTO attempt_runs (bench_id, task_id, model, n, run_id) VALUES ('b1', 't2', 'm', 1, 'r2')`)
			}
		}
		st, err := Copy(ctx, src, dst, opts)
		if err != nil {
			t.Fatal(err)
		}
		want := CopyStats{Runs: CopyCount{Copied: 1}, Benches: CopyCount{Copied: 1},
			Attempts: CopyCount{Copied: 1, Deferred: 1}, AttemptRuns: CopyCount{Deferred: 1}}
		if st != want {
			t.Errorf("Copy counted\n %+v\nwant\n %+v", st, want)
		}
		mustCopy(t, src, dst, CopyStats{Runs: CopyCount{Copied: 1, Present: 1}, Benches: CopyCount{Present: 1},
			Attempts: CopyCount{Copied: 1, Present: 1}, AttemptRuns: CopyCount{Copied: 1}})
		assertSame(t, "attempts", func(s *Store) (any, error) { return s.Attempts(ctx, "b1") }, src, dst)
	})
}

// The history BenchmarkCopy copies.
const (
	copyBenchRuns   = 10_000
	copyBenchEvents = 10 // per run
)

// copyBenchSource fills s with copyBenchRuns runs of copyBenchEvents events
// each, events of a few hundred bytes with a raw line.
func copyBenchSource(b *testing.B, s *Store) {
	b.Helper()
	ctx := context.Background()
	runs := make([]*record.Run, copyBenchRuns)
	for i := range runs {
		r := testRun(fmt.Sprintf("run-%06d", i))
		r.StartedAt, r.SessionID = t0.Add(time.Duration(i)*time.Minute), fmt.Sprintf("sess-%05d", i/3)
		r.Prompt, r.ResultText = "fix the flaky test in package "+benchWord(i), "done: "+benchWord(i*7)
		runs[i] = r
	}
	insertRuns(b, s, runs)
	for chunk := range slices.Chunk(runs, 1000) {
		var rows []row
		for _, r := range chunk {
			for seq := range int64(copyBenchEvents) {
				rw, err := newRow(testEvent(r.ID, seq+1, 200))
				if err != nil {
					b.Fatal(err)
				}
				rows = append(rows, rw)
			}
		}
		err := s.writeTx(ctx, func(tx *txn) error {
			_, err := insertRows(ctx, tx, rows, false)
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCopy copies 10k runs of 10 events: SQLite to a fresh PostgreSQL
// database, the same again (all present), and PostgreSQL to a fresh SQLite
// file.
func BenchmarkCopy(b *testing.B) {
	ctx := context.Background()
	lite := openTest(b)
	copyBenchSource(b, lite)
	pg := openAt(b, pgWhere(b))
	if _, err := Copy(ctx, lite, pg, CopyOptions{}); err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name string
		from *Store
		to   func(b *testing.B) *Store
	}{
		{"sqlite_to_postgres", lite, func(b *testing.B) *Store { return openAt(b, pgWhere(b)) }},
		{"again", lite, func(*testing.B) *Store { return pg }},
		{"postgres_to_sqlite", pg, func(b *testing.B) *Store { return openTest(b) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				to := bc.to(b)
				b.StartTimer()
				if _, err := Copy(ctx, bc.from, to, CopyOptions{}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(copyBenchRuns*b.N)/b.Elapsed().Seconds(), "runs/s")
			b.ReportMetric(float64(copyBenchRuns*copyBenchEvents*b.N)/b.Elapsed().Seconds(), "events/s")
		})
	}
}
