package dashboard

import (
	"context"
	"io"
	"log/slog"
	"runtime"
	"strings"
	"testing"
	"time"

	"lane/internal/pgtest"
	"lane/store"
	"lane/trace"
)

// pgEnv is a dashboard over a fresh PostgreSQL database on a server of the
// test's own. Polling (o.poll) and the sweep are an hour unless o says
// otherwise, so that what reaches a client was notified (LISTEN/NOTIFY).
func pgEnv(t *testing.T, o envOpt) (*env, *pgtest.Server) {
	t.Helper()
	srv := pgtest.ForTest(t)
	if o.where == "" {
		o.where = pgtest.NewDB(t, srv)
	}
	if o.poll == 0 {
		o.poll = time.Hour
	}
	if o.sweep == 0 {
		o.sweep = time.Hour
	}
	e := newEnv(t, o)
	if b := e.st.Backend(); b != "postgres" {
		t.Fatalf("backend %s", b)
	}
	return e, srv
}

// writeRun records a run with n events through an EventWriter of st, as a
// lane process on another machine would.
func writeRun(t *testing.T, st *store.Store, id string, n int64) *trace.Run {
	t.Helper()
	run := createRun(t, st, id)
	w := st.NewEventWriter(run.ID)
	for seq := int64(1); seq <= n; seq++ {
		if err := w.Write(trace.Event{Seq: seq, Time: time.Now().UTC(), Kind: trace.KindText, Text: "step"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	return run
}

// On PostgreSQL the dashboard does not poll: with an hour between polls and
// sweeps, what another machine records reaches the websocket client by the
// database's notifications alone. Once the dashboard has stopped, none of
// its goroutines is left, and closing the stores ends their listeners.
func TestWebsocketLivePostgres(t *testing.T) {
	e, _ := pgEnv(t, envOpt{})
	c := e.dial("", nil)
	if cur := readHello(t, c); cur != 0 {
		t.Errorf("hello cursor %d, want 0", cur)
	}

	// The run's creation comes before or after its events, as the reads
	// fall.
	run := writeRun(t, e.other, "pg-live", 50)
	var evs []wsMsg
	for created := false; !created || len(evs) < 50; {
		switch m := readMsg(t, c); m.Type {
		case "event":
			evs = append(evs, m)
		case "run":
			created = created || m.Run.ID == run.ID && m.Run.Status == trace.StatusRunning
		}
	}
	checkSeqs(t, evs, run.ID, 1, 50)

	run.Status, run.EndedAt, run.CostUSD = trace.StatusSucceeded, time.Now().UTC(), 0.5
	if err := e.other.UpdateRun(context.Background(), run); err != nil {
		t.Fatal(err)
	}
	if got := readRun(t, c, run.ID, func(r *trace.Run) bool { return r.Status == trace.StatusSucceeded }); got.CostUSD != 0.5 {
		t.Errorf("run message: cost %v", got.CostUSD)
	}

	e.shutdown()
	if gs := goroutinesIn("lane/dashboard.(*"); len(gs) > 0 {
		t.Errorf("after Run returned, %d dashboard goroutines are left:\n%s", len(gs), strings.Join(gs, "\n\n"))
	}
	for _, st := range []interface{ Close() error }{e.st, e.other} {
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if gs := goroutinesIn("lane/store.(*pgStore).listen"); len(gs) > 0 {
		t.Errorf("after the stores closed, %d listeners are left:\n%s", len(gs), strings.Join(gs, "\n\n"))
	}
}

// goroutinesIn returns the stacks of the goroutines, other than the
// caller's, that are in a function whose name starts with prefix.
func goroutinesIn(prefix string) []string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var out []string
	for i, g := range strings.Split(string(buf), "\n\n") {
		if i > 0 && strings.Contains(g, "\n"+prefix) { // the first is the caller's
			out = append(out, g)
		}
	}
	return out
}

// A restart of the database server breaks the dashboard's listening
// connection; once it is back, the client is sent what was recorded while
// the listener was away and after.
func TestWebsocketPostgresRestart(t *testing.T) {
	// The poller's first read after the restart may fail; that is logged.
	e, srv := pgEnv(t, envOpt{logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	c := e.dial("", nil)
	readHello(t, c)
	first := writeRun(t, e.other, "before", 3)
	checkSeqs(t, readEvents(t, c, 3), first.ID, 1, 3)

	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := srv.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := srv.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	// A lane process that starts now (the other store's idle connections
	// died with the server; the first statement on one would fail).
	second := writeRun(t, openStore(t, e.path), "after", 5)
	checkSeqs(t, readEvents(t, c, 5), second.ID, 1, 5)
}
