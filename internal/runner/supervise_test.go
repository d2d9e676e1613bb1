package runner

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lanehq/lane/internal/proc"
	"github.com/lanehq/lane/internal/record"
)

// lineSource makes an event of each stdout line: "retry" is a retry
// notice, anything else text.
type lineSource struct{ br *bufio.Reader }

func (l *lineSource) Next() ([]record.Event, error) {
	line, err := l.br.ReadString('\n')
	line = strings.TrimSuffix(line, "\n")
	if line == "" {
		return nil, err
	}
	kind := record.KindText
	if line == "retry" {
		kind = record.KindRetry
	}
	return []record.Event{{Kind: kind, Text: line}}, err
}

func newLineSource(r io.Reader) EventSource { return &lineSource{bufio.NewReader(r)} }

// shTestRun is a shell script run by supervise, what it emitted and how
// it ended.
type shTestRun struct {
	mu     sync.Mutex
	events []record.Event
	ex     Exit
	took   time.Duration
}

func (r *shTestRun) texts() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, ev := range r.events {
		out = append(out, ev.Text)
	}
	return out
}

// superviseSh runs script with sh under supervise, through shim ("" for
// none); stop, when not nil, is asked of each event whether to stop.
func superviseSh(t *testing.T, script, shim string, wd Watchdogs, stop func(record.Event) error) *shTestRun {
	t.Helper()
	r := &shTestRun{}
	start := time.Now()
	ex, err := supervise(t.Context(), supervision{
		inv:       Invocation{Path: "/bin/sh", Args: []string{"-c", script}, Dir: t.TempDir(), Env: os.Environ()},
		watchdogs: wd,
		shim:      shim,
		newSource: newLineSource,
		emit: func(ev record.Event) error {
			r.mu.Lock()
			r.events = append(r.events, ev)
			r.mu.Unlock()
			if stop != nil {
				return stop(ev)
			}
			return nil
		},
	})
	if err != nil {
		t.Fatalf("supervise: %v", err)
	}
	r.ex, r.took = ex, time.Since(start)
	return r
}

// sleepToken is a sleep duration no other process uses, to find a test's
// sleepers in /proc.
func sleepToken() string { return fmt.Sprintf("1000.%09d", rand.IntN(1e9)) }

// sleepersOf lists the live processes whose command line is `sleep tok`.
func sleepersOf(tok string) []int {
	procs, _ := proc.Snapshot()
	var pids []int
	for _, p := range procs {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(p.PID) + "/cmdline")
		if err == nil && bytes.Equal(b, []byte("sleep\x00"+tok+"\x00")) {
			pids = append(pids, p.PID)
		}
	}
	return pids
}

// noSleepersLeft fails if a sleeper of tok still runs (and kills it).
func noSleepersLeft(t *testing.T, tok string) {
	t.Helper()
	if left := sleepersOf(tok); len(left) > 0 {
		for _, pid := range left {
			proc.Kill(proc.Targets{Root: proc.Process{PID: pid, PGID: pid}})
		}
		t.Errorf("processes left behind: %v", left)
	}
}

func timeoutOf(err error) string {
	var te *TimeoutError
	if errors.As(err, &te) {
		return te.Watchdog
	}
	return ""
}

var shims = []struct{ name, exe string }{{"direct", ""}, {"under the shim", os.Args[0]}}

// What the runtime's interrupt orphans is killed too: a tool in a group
// of its own whose parent ends on the interrupt, and a daemon that
// double-forked away (which only the shim, a subreaper, keeps in the
// tree).
func TestSuperviseKillsWhatTheInterruptOrphans(t *testing.T) {
	t.Parallel()
	for _, sh := range shims {
		t.Run(sh.name, func(t *testing.T) {
			tok := sleepToken()
			script := fmt.Sprintf(`setsid sleep %[1]s & (setsid sleep %[1]s & wait) & `, tok)
			if sh.exe != "" {
				script += fmt.Sprintf(`(setsid sleep %s >/dev/null 2>&1 </dev/null &); `, tok)
			}
			script += `trap 'exit 130' INT; echo started; while :; do sleep 0.05; done`
			want, ran := 2, 0
			if sh.exe != "" {
				want = 3
			}
			r := superviseSh(t, script, sh.exe, Watchdogs{Idle: 300 * time.Millisecond, Grace: time.Second}, func(ev record.Event) error {
				for deadline := time.Now().Add(200 * time.Millisecond); ev.Text == "started" && ran < want && time.Now().Before(deadline); {
					ran = len(sleepersOf(tok))
				}
				return nil
			})
			if ran != want {
				t.Errorf("%d sleepers ran, want %d", ran, want)
			}
			if timeoutOf(r.ex.StopCause) != WatchdogIdle || r.ex.Leftover != nil {
				t.Errorf("stop cause %v, leftover %v", r.ex.StopCause, r.ex.Leftover)
			}
			noSleepersLeft(t, tok)
		})
	}
}

// A runtime that ignores the interrupt is killed after the grace; a cause
// that says so kills at once, without an interrupt.
func TestSuperviseGraceAndKillAtOnce(t *testing.T) {
	t.Parallel()
	ignores := `trap 'echo interrupted' INT; echo started; while :; do sleep 0.05; done`
	for _, sh := range shims {
		t.Run(sh.name, func(t *testing.T) {
			const grace = 400 * time.Millisecond
			stopOnStart := func(cause error) func(record.Event) error {
				return func(ev record.Event) error {
					if ev.Text == "started" {
						return cause
					}
					return nil
				}
			}
			r := superviseSh(t, ignores, sh.exe, Watchdogs{Grace: grace}, stopOnStart(ErrCancelled))
			if r.ex.Signal != "killed" || r.took < grace || !slices.Contains(r.texts(), "interrupted") {
				t.Errorf("ignoring the interrupt: signal %q after %v, events %q", r.ex.Signal, r.took, r.texts())
			}
			r = superviseSh(t, ignores, sh.exe, Watchdogs{Grace: grace}, stopOnStart(&MaxTurnsError{Limit: 1}))
			if r.ex.Signal != "killed" || r.took >= grace || slices.Contains(r.texts(), "interrupted") {
				t.Errorf("killed at once: signal %q after %v, events %q", r.ex.Signal, r.took, r.texts())
			}
		})
	}
}

// stderr is no output for the watchdogs, and retry notices no progress.
func TestSuperviseWatchesStdoutEventsOnly(t *testing.T) {
	t.Parallel()
	r := superviseSh(t, `while :; do echo noise >&2; sleep 0.02; done`, "", Watchdogs{FirstByte: 300 * time.Millisecond}, nil)
	if timeoutOf(r.ex.StopCause) != WatchdogFirstByte || len(r.ex.StderrTail) == 0 {
		t.Errorf("stderr only: stop cause %v, stderr tail %q", r.ex.StopCause, r.ex.StderrTail)
	}
	r = superviseSh(t, `echo hello; while :; do echo retry; sleep 0.02; done`, "", Watchdogs{Idle: 300 * time.Millisecond}, nil)
	if timeoutOf(r.ex.StopCause) != WatchdogIdle {
		t.Errorf("retries only: stop cause %v", r.ex.StopCause)
	}
}

// A runtime that ends on its own is not stopped, and its exit is kept.
func TestSuperviseKeepsTheExit(t *testing.T) {
	t.Parallel()
	for _, sh := range shims {
		t.Run(sh.name, func(t *testing.T) {
			r := superviseSh(t, `echo one; echo two >&2; exit 3`, sh.exe, Watchdogs{Idle: time.Minute}, nil)
			if r.ex.Code != 3 || r.ex.StopCause != nil || !slices.Contains(r.texts(), "one") || !slices.Contains(r.ex.StderrTail, "two") {
				t.Errorf("exit %+v, events %q", r.ex, r.texts())
			}
		})
	}
}

// A runtime lane's signals do not reach (one inside a container, whose
// engine's CLI passes none on) is killed through its invocation's Kill:
// at once when the cause says so, else once the grace has passed and the
// tree here is killed; a runtime that ends on its own is not.
func TestSuperviseKillsWhatSignalsDoNotReach(t *testing.T) {
	t.Parallel()
	const grace = 400 * time.Millisecond
	run := func(script string, cause error) (kills int, after time.Duration) {
		var mu sync.Mutex
		start := time.Now()
		inv := Invocation{Path: "/bin/sh", Args: []string{"-c", script}, Dir: t.TempDir(), Env: os.Environ(),
			Kill: func() {
				mu.Lock()
				defer mu.Unlock()
				if kills++; kills == 1 {
					after = time.Since(start)
				}
			}}
		_, err := supervise(t.Context(), supervision{inv: inv, watchdogs: Watchdogs{Grace: grace}, newSource: newLineSource,
			emit: func(ev record.Event) error {
				if ev.Text == "started" && cause != nil {
					return cause
				}
				return nil
			}})
		if err != nil {
			t.Fatalf("supervise: %v", err)
		}
		mu.Lock()
		defer mu.Unlock()
		return kills, after
	}
	ignores := `trap 'echo interrupted' INT; echo started; while :; do sleep 0.05; done`
	if kills, after := run(ignores, &MaxTurnsError{Limit: 1}); kills == 0 || after >= grace {
		t.Errorf("a limit: Kill called %d times, first after %v; want at once, within the %v grace", kills, after, grace)
	}
	if kills, after := run(ignores, ErrCancelled); kills == 0 || after < grace {
		t.Errorf("a cancel: Kill called %d times, first after %v; want after the %v grace", kills, after, grace)
	}
	if kills, _ := run(`echo started; exit 0`, nil); kills != 0 {
		t.Errorf("a runtime that ended on its own: Kill called %d times", kills)
	}
}
