package dashboard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"lane/trace"
)

func TestWebsocketLive(t *testing.T) {
	e := newEnv(t, envOpt{})
	appendEvents(t, e.other, createRun(t, e.other, "old").ID, 1, 3, "before")
	c := e.dial("", nil)
	// Live only: the hello cursor is past what was there before.
	if cur := readHello(t, c); cur != 3 {
		t.Errorf("hello cursor %d, want 3", cur)
	}

	// Another lane process records a run.
	run := createRun(t, e.other, "live")
	w := e.other.NewEventWriter(run.ID)
	for seq := int64(1); seq <= 50; seq++ {
		if err := w.Write(trace.Event{Seq: seq, Time: time.Now().UTC(), Kind: trace.KindText, Text: "step"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	checkSeqs(t, readEvents(t, c, 50), "live", 1, 50)

	run.Status, run.EndedAt, run.CostUSD = trace.StatusSucceeded, time.Now().UTC(), 0.25
	if err := e.other.UpdateRun(context.Background(), run); err != nil {
		t.Fatal(err)
	}
	got := readRun(t, c, "live", func(r *trace.Run) bool { return r.Status == trace.StatusSucceeded })
	if got.CostUSD != 0.25 {
		t.Errorf("run message: cost %v", got.CostUSD)
	}
}

func TestWebsocketResume(t *testing.T) {
	e := newEnv(t, envOpt{})
	c1 := e.dial("", nil)
	readHello(t, c1)
	run := createRun(t, e.other, "res").ID
	appendEvents(t, e.other, run, 1, 20, "a")
	evs := readEvents(t, c1, 10)
	checkSeqs(t, evs, run, 1, 10)
	last := evs[9].ID
	c1.Close() // the client loses its connection after event 10

	appendEvents(t, e.other, run, 21, 40, "b")
	c2 := e.dial(fmt.Sprintf("?after=%d", last), nil)
	if cur := readHello(t, c2); cur != last {
		t.Errorf("hello cursor %d, want %d", cur, last)
	}
	checkSeqs(t, readEvents(t, c2, 30), run, 11, 40)
	appendEvents(t, e.other, run, 41, 45, "c")
	checkSeqs(t, readEvents(t, c2, 5), run, 41, 45)

	// A cursor beyond the database (one since replaced) starts at its end.
	c3 := e.dial("?after=999999", nil)
	if cur := readHello(t, c3); cur != 45 {
		t.Errorf("hello cursor for after=999999: %d, want 45", cur)
	}
	appendEvents(t, e.other, run, 46, 46, "d")
	checkSeqs(t, readEvents(t, c3, 1), run, 46, 46)

	if _, resp, err := e.tryDial("?after=-1", nil, nil); err == nil || resp.StatusCode != 400 {
		t.Errorf("after=-1: %v", err)
	}
}

// Clients that connect while events keep coming get every event once, in
// order: the catch-up from the database and the live feed join without a
// gap or a duplicate.
func TestWebsocketCatchUpWhileLive(t *testing.T) {
	e := newEnv(t, envOpt{})
	run := createRun(t, e.other, "race").ID
	const batches, per = 100, 20
	var fromStart []*websocket.Conn
	var live *websocket.Conn
	for b := range int64(batches) {
		appendEvents(t, e.other, run, b*per+1, b*per+per, "x")
		switch b {
		case 10, 50, 90:
			fromStart = append(fromStart, e.dial("?after=0", nil))
		case 30:
			live = e.dial("", nil)
		}
	}
	for _, c := range fromStart {
		if cur := readHello(t, c); cur != 0 {
			t.Errorf("hello cursor %d, want 0", cur)
		}
		checkSeqs(t, readEvents(t, c, batches*per), run, 1, batches*per)
	}
	// Event ids are seqs here (one run, a fresh database).
	cur := readHello(t, live)
	checkSeqs(t, readEvents(t, live, batches*per-int(cur)), run, cur+1, batches*per)
}

// smallBuffer gives the first connection it accepts a tiny send buffer.
type smallBuffer struct {
	net.Listener
	accepted atomic.Int64
}

func (l *smallBuffer) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok && l.accepted.Add(1) == 1 {
		tc.SetWriteBuffer(4 << 10)
	}
	return c, err
}

func TestSlowClientDropped(t *testing.T) {
	e := newEnv(t, envOpt{listener: func(l net.Listener) net.Listener { return &smallBuffer{Listener: l} }})
	// The slow client, connected first, has tiny socket buffers and never
	// reads.
	slowDialer := &websocket.Dialer{HandshakeTimeout: wait, ReadBufferSize: 1024, NetDialContext: (&net.Dialer{
		Control: func(_, _ string, rc syscall.RawConn) error {
			var serr error
			err := rc.Control(func(fd uintptr) {
				serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4<<10)
			})
			return errors.Join(err, serr)
		},
	}).DialContext}
	slow := e.dial("", slowDialer)
	fast := e.dial("", nil)
	readHello(t, fast)

	run := createRun(t, e.other, "flood").ID
	const total = 3000
	text := strings.Repeat("x", 2048)
	for from := int64(1); from <= total; from += 100 {
		appendEvents(t, e.other, run, from, from+99, text)
	}
	checkSeqs(t, readEvents(t, fast, total), run, 1, total)
	if n := e.srv.hub.count(); n != 1 {
		t.Errorf("%d clients registered, want the fast one only", n)
	}

	// The slow client got a prefix of the events, then the end.
	var got []wsMsg
	for {
		slow.SetReadDeadline(time.Now().Add(wait))
		_, b, err := slow.ReadMessage()
		if err != nil {
			var ce *websocket.CloseError
			if errors.As(err, &ce) && ce.Code != websocket.CloseTryAgainLater && ce.Code != websocket.CloseAbnormalClosure {
				t.Errorf("slow client closed with %v", err)
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				t.Fatalf("slow client still connected: %v", err)
			}
			break
		}
		var m wsMsg
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		if m.Type == "event" {
			got = append(got, m)
		}
	}
	if len(got) >= total {
		t.Fatalf("slow client got all %d events", len(got))
	}
	if len(got) > 0 {
		checkSeqs(t, got, run, 1, int64(len(got)))
	}
	t.Logf("slow client got %d of %d events before it was dropped", len(got), total)
}

func TestWebsocketShowsInterruptedRun(t *testing.T) {
	e := newEnv(t, envOpt{})
	c := e.dial("", nil)
	readHello(t, c)
	pid, start := exitedOwner(t)
	r := &trace.Run{ID: "dead", Status: trace.StatusRunning, StartedAt: time.Now().UTC(), OwnerPID: pid, OwnerStart: start}
	if err := e.other.CreateRun(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	readRun(t, c, "dead", func(r *trace.Run) bool { return r.Status == trace.StatusInterrupted })
}

func TestShutdownClosesClients(t *testing.T) {
	e := newEnv(t, envOpt{})
	c := e.dial("", nil)
	readHello(t, c)
	e.shutdown()
	c.SetReadDeadline(time.Now().Add(wait))
	_, _, err := c.ReadMessage()
	if !websocket.IsCloseError(err, websocket.CloseGoingAway) {
		t.Errorf("after shutdown: %v, want close 1001", err)
	}
	if _, resp, err := e.tryDial("", nil, nil); err == nil || resp.StatusCode != 503 {
		t.Errorf("dial after shutdown: %v", err)
	}
}

// BenchmarkEventToWebsocket measures the time from an event written by
// another Store's EventWriter (another lane process) to its arrival at a
// websocket client, with the default poll interval.
func BenchmarkEventToWebsocket(b *testing.B) {
	e := newEnv(b, envOpt{poll: defaultPoll})
	c := e.dial("", nil)
	readHello(b, c)
	run := createRun(b, e.other, "bench").ID
	w := e.other.NewEventWriter(run)
	defer w.Close(context.Background())

	sent := make([]atomic.Int64, b.N+1) // unix ns by seq
	lat := make([]time.Duration, 0, b.N)
	got := make(chan error, 1)
	go func() {
		for len(lat) < b.N {
			c.SetReadDeadline(time.Now().Add(wait))
			var m wsMsg
			if err := c.ReadJSON(&m); err != nil {
				got <- err
				return
			}
			if m.Type == "event" {
				lat = append(lat, time.Duration(time.Now().UnixNano()-sent[m.Event.Seq].Load()))
			}
		}
		got <- nil
	}()
	b.ResetTimer()
	tick := time.NewTicker(time.Millisecond) // an agent's pace is far slower
	defer tick.Stop()
	for seq := 1; seq <= b.N; seq++ {
		<-tick.C
		sent[seq].Store(time.Now().UnixNano())
		if err := w.Write(trace.Event{Seq: int64(seq), Time: time.Now().UTC(), Kind: trace.KindText, Text: "step"}); err != nil {
			b.Fatal(err)
		}
	}
	if err := <-got; err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	slices.Sort(lat)
	ms := func(q float64) float64 { return float64(lat[int(q*float64(len(lat)-1))]) / 1e6 }
	b.ReportMetric(ms(0.5), "p50-ms")
	b.ReportMetric(ms(0.99), "p99-ms")
	b.ReportMetric(ms(1), "max-ms")
}
