// Package dashboard serves `lane dashboard`: the page, a JSON API over lane's
// store and a websocket that streams the events of every run as lane
// processes record them. API.md is the contract, and the public
// documentation, of everything it serves.
//
// Other lane processes write to the same database; the dashboard learns of
// their commits from the store's subscription (store.Subscribe: the file
// system's notice of a write to a SQLite file, or PostgreSQL's
// LISTEN/NOTIFY), and then reads only what is new (events after a global
// id cursor, runs after a revision). Between commits it does nothing but a
// sweep every few seconds.
//
// A database URL's password is never shown: the runs the dashboard starts
// get the database in their environment (LANE_DB), not on their command
// line, and it is taken out of every error response and log record, which
// may quote what the store, its driver or a child said.
package dashboard

import (
	"bufio"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"github.com/lanehq/lane/internal/record"
	"github.com/lanehq/lane/internal/store"
)

const (
	// defaultPoll is how often the data version of a SQLite file is
	// checked when the file system cannot notify its changes.
	defaultPoll = 100 * time.Millisecond
	// retryDelay is how soon the poller, when it reads only when notified,
	// takes up a read it could not finish (see Server.listen).
	retryDelay = 100 * time.Millisecond
	// sweepInterval is how often the poller reads run changes and events
	// even though nothing announced a change: so that running runs whose
	// lane process died are marked interrupted (and broadcast), and as the
	// safety net of the subscription, in case a notice was lost (an
	// overflow of the kernel's queue, a writer held up between its write
	// and its commit: see store.Subscribe). A few seconds is late enough
	// that an idle dashboard costs nothing to speak of (three small queries
	// each time), and soon enough for either.
	sweepInterval = 3 * time.Second
	// eventPage is how many events one query reads, live and in catch-up.
	eventPage = 1000
	// changedRunsPage is how many runs store.RunsChangedAfter returns at
	// most: a full page means there may be more.
	changedRunsPage = 1000
	// burstWait is how long the poller waits, after a burst of events, for
	// the clients' queues to have room for another page (see poller.room).
	burstWait = time.Second
	// stallAfter is how long a client with messages queued may send
	// nothing before the poller stops waiting for it (see poller.room): a
	// client that is sending sends a queued message in well under that.
	stallAfter = 100 * time.Millisecond
	// childGrace is how long runs started from the dashboard get to record
	// their cancellation when the dashboard stops, before they are killed.
	childGrace = 10 * time.Second
)

// Config is what a Server needs.
type Config struct {
	Store *store.Store
	// Addr is the address the dashboard listens on, as "host:port" with the
	// real port (not 0): the Host header and the Origin of requests are
	// checked against it.
	Addr string
	// Token is required (non-empty) unless Addr is a loopback address. When
	// set it is required on every request.
	Token string
	// LaneBin is the lane binary that POST /api/runs starts; empty disables
	// starting runs.
	LaneBin string
	// DBPath is the database LaneBin is told to use, a file or a URL,
	// passed in its environment as LANE_DB; required with LaneBin.
	DBPath string
	// Poll is how often a SQLite database's data version is checked when
	// the file system cannot notify changes to the file (store.Subscribe
	// returned nil); 0 means 100 ms. Otherwise, and on PostgreSQL, the
	// dashboard waits for notifications instead.
	Poll time.Duration
	// Logger receives what the dashboard cannot report to a client (a
	// failing poll, a child that would not start); nil means slog.Default().
	Logger *slog.Logger
	// DescribeCalls, when set, describes the tool calls of a run's stored
	// events that are not yet (record.Call), as the runtime's decoder would:
	// events stored before decoders described calls.
	DescribeCalls func(runtime string, evs []record.Event)
	// ModelProvider, when set, names a runtime's model provider in the
	// OTLP export (export.Options.RuntimeProvider).
	ModelProvider func(runtime string) string
}

// Server is the dashboard. Handler serves requests; Run follows the database
// and feeds the websocket clients.
type Server struct {
	st       *store.Store
	cfg      Config
	log      *slog.Logger
	host     hostCheck
	csrf     string
	page     []byte // index.html as served, CSRF token and asset checksums filled in
	assets   map[string]asset
	hub      *hub
	runRev   int64            // the run revision at New, where the poller starts
	sweep    time.Duration    // sweepInterval; tests lengthen it
	now      func() time.Time // the clock that tells a worker gone (time.Now; tests set it)
	upgrader websocket.Upgrader
	handler  http.Handler
	redact   redactor // takes the database's password out of errors and logs

	// subscribe is the store's Subscribe; tests replace it with one that
	// returns nil, to poll.
	subscribe func(context.Context) <-chan struct{}
	checks    atomic.Int64 // reads of the data version, for tests

	mu       sync.Mutex
	running  bool
	closed   bool               // Run has ended: no new clients or children
	wg       sync.WaitGroup     // client goroutines and child waiters
	children map[*exec.Cmd]bool // runs started by POST /api/runs, not yet waited for
}

// New checks cfg and returns a Server whose live feed starts at the
// database's current last event.
func New(cfg Config) (*Server, error) {
	if cfg.Store == nil {
		return nil, errors.New("dashboard: no store")
	}
	hc, err := newHostCheck(cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("dashboard: %w", err)
	}
	if cfg.Token == "" && !hc.loopback {
		return nil, fmt.Errorf("dashboard: %s is not a loopback address: a token is required", cfg.Addr)
	}
	if cfg.LaneBin != "" && cfg.DBPath == "" {
		return nil, errors.New("dashboard: LaneBin needs DBPath")
	}
	if cfg.Poll <= 0 {
		cfg.Poll = defaultPoll
	}
	s := &Server{
		st:       cfg.Store,
		cfg:      cfg,
		log:      cfg.Logger,
		host:     hc,
		sweep:    sweepInterval,
		now:      time.Now,
		children: map[*exec.Cmd]bool{},
	}
	s.subscribe = s.st.Subscribe
	if s.log == nil {
		s.log = slog.Default()
	}
	s.redact = newRedactor(cfg.DBPath)
	if s.redact.active() {
		s.log = slog.New(redactHandler{s.log.Handler(), s.redact})
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return nil, fmt.Errorf("dashboard: csrf token: %w", err)
	}
	s.csrf = hex.EncodeToString(b)

	web, err := fs.Sub(webFiles, "web")
	if err != nil {
		return nil, fmt.Errorf("dashboard: %w", err)
	}
	if s.page, s.assets, err = loadAssets(web, s.csrf); err != nil {
		return nil, fmt.Errorf("dashboard: %w", err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cursor, err := s.st.MaxEventID(ctx)
	if err != nil {
		return nil, fmt.Errorf("dashboard: %w", err)
	}
	rev, err := s.st.MaxRunRev(ctx)
	if err != nil {
		return nil, fmt.Errorf("dashboard: %w", err)
	}
	s.hub, s.runRev = newHub(cursor), rev

	s.upgrader = websocket.Upgrader{
		ReadBufferSize:  1024,
		WriteBufferSize: 16 << 10,
		CheckOrigin:     s.sameOrigin,
		Error: func(w http.ResponseWriter, r *http.Request, status int, reason error) {
			writeError(w, status, reason.Error())
		},
	}
	s.handler = s.secure(s.routes())
	if s.redact.active() {
		s.handler = s.redact.errors(s.handler)
	}
	return s, nil
}

// Handler returns the handler of every route of API.md and of the page.
func (s *Server) Handler() http.Handler { return s.handler }

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	for _, p := range []string{"GET /{$}", "GET /runs/{id}", "GET /sessions", "GET /costs", "GET /bench", "GET /bench/{id}", "GET /workers", "GET /limits"} {
		mux.HandleFunc(p, s.servePage)
	}
	mux.HandleFunc("GET /assets/{path...}", s.serveAsset)
	mux.HandleFunc("GET /api/csrf", s.getCSRF)
	mux.HandleFunc("GET /api/runs", s.listRuns)
	mux.HandleFunc("POST /api/runs", s.startRun)
	mux.HandleFunc("GET /api/runs/{id}", s.getRun)
	mux.HandleFunc("GET /api/runs/{id}/events", s.runEvents)
	mux.HandleFunc("GET /api/runs/{id}/export", s.exportRun)
	mux.HandleFunc("POST /api/runs/{id}/cancel", s.cancelRun)
	mux.HandleFunc("POST /api/runs/{id}/apply", s.applyRun)
	mux.HandleFunc("POST /api/runs/{id}/interrupt", s.interruptRun)
	mux.HandleFunc("POST /api/runs/{id}/messages", s.sendMessage)
	mux.HandleFunc("GET /api/approvals", s.listApprovals)
	mux.HandleFunc("POST /api/approvals/{id}", s.decideApproval)
	mux.HandleFunc("GET /api/sessions", s.listSessions)
	mux.HandleFunc("GET /api/stats", s.getStats)
	mux.HandleFunc("GET /api/benches", s.listBenches)
	mux.HandleFunc("GET /api/benches/{id}", s.getBench)
	mux.HandleFunc("GET /api/workers", s.listWorkers)
	mux.HandleFunc("GET /api/limits", s.listLimits)
	s.changesRoutes(mux)   // changes.go
	s.artifactsRoutes(mux) // artifacts.go
	mux.HandleFunc("GET /ws", s.serveWS)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "not found")
	})
	return mux
}

// Run follows the database and feeds the websocket clients until ctx ends.
// Then it closes every client, interrupts the runs it started (killing
// those still running after childGrace) and returns once all of its
// goroutines have stopped. It can be called once.
func (s *Server) Run(ctx context.Context) error {
	s.mu.Lock()
	if s.running || s.closed {
		s.mu.Unlock()
		return errors.New("dashboard: Run called twice")
	}
	s.running = true
	s.mu.Unlock()

	s.poll(ctx)

	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.hub.closeAll(websocket.CloseGoingAway, "dashboard stopping")
	s.stopChildren()
	return nil
}

// track adds n goroutines to the ones Run waits for, unless Run has ended.
func (s *Server) track(n int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.wg.Add(n)
	return true
}

// hostCheck knows which Host headers name this dashboard.
type hostCheck struct {
	loopback bool
	port     string
	host     string // lower case, without brackets; "" for a wildcard address
}

func newHostCheck(addr string) (hostCheck, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return hostCheck{}, fmt.Errorf("address %q: %w", addr, err)
	}
	if port == "" || port == "0" {
		return hostCheck{}, fmt.Errorf("address %q: the real port is needed", addr)
	}
	hc := hostCheck{port: port, host: strings.ToLower(host)}
	if hc.host == "localhost" {
		hc.loopback = true
	} else if ip := net.ParseIP(hc.host); ip != nil {
		hc.loopback = ip.IsLoopback()
		if ip.IsUnspecified() {
			hc.host = ""
		}
	}
	return hc, nil
}

// allowed reports whether a request's Host header names the dashboard: the
// listening address, any loopback name with its port when it listens on
// loopback, any host with its port when it listens on every interface (a
// token is then required, which a rebound page does not have).
func (hc hostCheck) allowed(hostHeader string) bool {
	host, port, err := net.SplitHostPort(hostHeader)
	if err != nil {
		host, port = hostHeader, "80"
	}
	if port != hc.port || host == "" {
		return false
	}
	host = strings.ToLower(host)
	switch {
	case hc.host == "":
		return true
	case host == hc.host:
		return true
	case hc.loopback:
		return host == "localhost" || host == "127.0.0.1" || host == "::1"
	}
	return false
}

// redactor takes a database URL's password out of text: the dashboard's
// error responses and log records, which may quote what the store or a
// child said. It is inactive (changes nothing) for a file, or a URL without
// a password.
type redactor struct {
	secrets []string // the password as it may appear: plain, escaped in a URL or in JSON; longest first
}

func newRedactor(where string) redactor {
	if !store.IsURL(where) {
		return redactor{}
	}
	u, err := url.Parse(where)
	if err != nil {
		return redactor{}
	}
	var plain []string
	if p, ok := u.User.Password(); ok {
		plain = append(plain, p)
	}
	plain = append(plain, u.Query()["password"]...)
	var r redactor
	for _, p := range plain {
		if p == "" {
			continue
		}
		j, _ := json.Marshal(p)
		r.secrets = append(r.secrets, p, url.PathEscape(p), url.QueryEscape(p), string(j[1:len(j)-1]))
		if _, esc, ok := strings.Cut(url.UserPassword("", p).String(), ":"); ok {
			r.secrets = append(r.secrets, esc)
		}
	}
	slices.SortFunc(r.secrets, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
	r.secrets = slices.Compact(r.secrets)
	return r
}

func (r redactor) active() bool { return len(r.secrets) > 0 }

// String returns s with every form of the password replaced by xxxxx.
func (r redactor) String(s string) string {
	for _, sec := range r.secrets {
		s = strings.ReplaceAll(s, sec, "xxxxx")
	}
	return s
}

// errors wraps next so that the body of every error response (status 400
// and above: writeError's JSON, written in one piece) is redacted.
func (r redactor) errors(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		next.ServeHTTP(&redactWriter{ResponseWriter: w, r: r}, req)
	})
}

type redactWriter struct {
	http.ResponseWriter
	r      redactor
	status int
}

func (w *redactWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *redactWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	if w.status < 400 {
		return w.ResponseWriter.Write(p)
	}
	if _, err := w.ResponseWriter.Write([]byte(w.r.String(string(p)))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Hijack lets the websocket take the connection over.
func (w *redactWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	h, ok := w.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, errors.New("the response cannot be hijacked")
	}
	return h.Hijack()
}

// Unwrap is for http.ResponseController.
func (w *redactWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// redactHandler is a slog.Handler whose records are redacted: the message
// and every attribute that is or shows text (an error, say).
type redactHandler struct {
	next slog.Handler
	r    redactor
}

func (h redactHandler) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

func (h redactHandler) Handle(ctx context.Context, rec slog.Record) error {
	out := slog.NewRecord(rec.Time, rec.Level, h.r.String(rec.Message), rec.PC)
	rec.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.attr(a))
		return true
	})
	return h.next.Handle(ctx, out)
}

func (h redactHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	out := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		out[i] = h.attr(a)
	}
	return redactHandler{h.next.WithAttrs(out), h.r}
}

func (h redactHandler) WithGroup(name string) slog.Handler {
	return redactHandler{h.next.WithGroup(name), h.r}
}

func (h redactHandler) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, h.r.String(v.String()))
	case slog.KindGroup:
		g := v.Group()
		out := make([]any, len(g))
		for i, ga := range g {
			out[i] = h.attr(ga)
		}
		return slog.Group(a.Key, out...)
	case slog.KindAny:
		var text string
		if err, ok := v.Any().(error); ok {
			text = err.Error()
		} else {
			text = fmt.Sprint(v.Any())
		}
		if red := h.r.String(text); red != text {
			return slog.String(a.Key, red)
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}
