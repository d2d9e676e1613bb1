package runner

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/lanehq/lane/internal/proc"
	"github.com/lanehq/lane/internal/record"
)

// Invocation is one runtime process to start.
type Invocation struct {
	Path string
	Args []string
	Dir  string
	Env  []string
	// Stdin is the runtime's standard input; empty is /dev/null.
	Stdin string
	// Kill, when set, kills what the invocation runs where lane's signals
	// to its process tree do not reach: a runtime inside a container, whose
	// engine's CLI passes no signal on. A stop calls it when the tree is
	// killed (at once for a limit, after the grace otherwise).
	Kill func()
}

// Watchdogs bound a run in time. A zero duration disables that watchdog.
type Watchdogs struct {
	// FirstByte is how long the runtime may stay silent after it starts.
	FirstByte time.Duration
	// Idle is how long the runtime may go without progress (output other
	// than retry notices) while no tool call is pending: a tool that runs
	// for ten minutes is silent but alive.
	Idle time.Duration
	// Hard bounds the whole run.
	Hard time.Duration
	// Grace is how long a runtime gets, after an interrupt, to print its last
	// lines and exit before everything it started is killed.
	Grace time.Duration
}

// EventSource yields the normalized events of a runtime's stdout, one line's
// worth at a time, and io.EOF at the end.
type EventSource interface {
	Next() ([]record.Event, error)
}

// Exit is how a supervised process ended.
type Exit struct {
	Code      int // exit status; -1 when it died of a signal
	Signal    string
	StopCause error // why lane stopped it; nil when it ended on its own
	// Settled says the runtime had already given its final word (see
	// supervise's settled) when lane stopped it: the stop only ended its
	// lingering.
	Settled    bool
	StderrTail []string
	// Leftover lists processes of the runtime's tree still alive after the
	// kill; it should always be empty.
	Leftover []int
}

// MaxEventOutput bounds a tool output in the normalized events; the
// runtime's raw line keeps the whole of it.
const MaxEventOutput = 1 << 20

const (
	stderrTailLines   = 20
	maxStderrLine     = 64 << 10
	defaultGrace      = 3 * time.Second
	pipeDrainAfterEnd = 2 * time.Second
)

// supervision is one runtime process for supervise to run and watch.
type supervision struct {
	inv       Invocation
	watchdogs Watchdogs
	shim      string // the binary to start the runtime under (lane's own; see shim.go); "" starts it directly
	newSource func(io.Reader) EventSource
	emit      func(record.Event) error // a non-nil result stops the run with that cause
	// settled, when not nil, tells whether the runtime has given its final
	// word so far; it is asked at the moment lane decides to stop the
	// runtime.
	settled func() bool
	// work, when not nil, says whether an event opens or closes work in
	// flight other than a tool call (see newWatch).
	work func(ev record.Event) (key string, opens, closes bool)
	// dialog, when not nil, owns the runtime's stdin (see dialog).
	dialog Dialog
}

// supervise runs s.inv, turns its stdout into events with s.newSource, and
// hands each event to s.emit in order, stopping the runtime when a
// watchdog fires, emit asks for it or ctx ends. It returns once the
// process has exited, everything it started is gone when lane stopped it,
// and its output is drained; it never leaves a goroutine behind.
func supervise(ctx context.Context, s supervision) (Exit, error) {
	if s.watchdogs.Grace <= 0 {
		s.watchdogs.Grace = defaultGrace
	}
	rt, err := startRuntime(s.inv, s.shim, s.watchdogs.Grace, s.dialog != nil)
	if err != nil {
		return Exit{}, err
	}
	newSource := s.newSource
	if src, ok := s.dialog.(Sourcer); ok {
		newSource = src.Source
	}
	sv := &supervisor{
		s:      s,
		rt:     rt,
		out:    readOutput(rt, newSource),
		watch:  newWatch(s.watchdogs, time.Now(), s.work),
		timer:  time.NewTimer(time.Hour),
		exited: rt.child.Done(),
	}
	if s.dialog == nil {
		return sv.run(ctx), nil
	}
	return sv.converse(ctx), nil
}

// converse runs the select loop with the dialog beside it, and returns
// once both are over.
func (sv *supervisor) converse(ctx context.Context) Exit {
	dctx, endDialog := context.WithCancel(ctx)
	posted := make(chan record.Event)
	stops := make(chan error, 1)
	sv.posted, sv.stops = posted, stops
	t := Talk{
		Post: func(ev record.Event) bool {
			select {
			case posted <- ev:
				return true
			case <-dctx.Done():
				return false
			}
		},
		Stop: func(cause error) {
			select {
			case stops <- cause:
			default: // a stop is on its way already
			}
		},
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer sv.rt.stdin.Close()
		sv.s.dialog.Begin(dctx, sv.rt.stdin, t)
	}()
	ex := sv.run(ctx)
	endDialog()
	<-done
	return ex
}

// running is a started runtime: its process and its output pipes.
type running struct {
	child          *proc.Child
	cmd            *exec.Cmd
	stdout, stderr *os.File // the read ends
	stdin          *os.File // the write end, when a dialog owns stdin
}

// startRuntime starts inv (under shim unless it is "") in a process group
// of its own, its output on pipes, and its input on a pipe when piped.
func startRuntime(inv Invocation, shim string, grace time.Duration, piped bool) (*running, error) {
	// A runtime that cannot start is lane's to report, not the shim's.
	if _, err := exec.LookPath(inv.Path); err != nil {
		return nil, fmt.Errorf("start %s: %w", inv.Path, err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("stdout pipe: %w", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return nil, fmt.Errorf("stderr pipe: %w", err)
	}
	// If lane dies, the runtime (or its shim) is told rather than left
	// running unsupervised.
	deathSignal := syscall.SIGINT // lets Claude Code stop its own tools first
	if shim != "" {
		deathSignal = syscall.SIGTERM // the shim's cue that lane is gone
	}
	path := inv.Path
	inv = shimmed(inv, shim, grace)
	cmd := exec.Command(inv.Path, inv.Args...)
	cmd.Dir = inv.Dir
	cmd.Env = inv.Env
	var inR, inW *os.File
	switch {
	case piped:
		if inR, inW, err = os.Pipe(); err != nil {
			outR.Close()
			outW.Close()
			errR.Close()
			errW.Close()
			return nil, fmt.Errorf("stdin pipe: %w", err)
		}
		cmd.Stdin = inR
	case inv.Stdin != "":
		cmd.Stdin = strings.NewReader(inv.Stdin)
	} // else os/exec connects /dev/null
	cmd.Stdout = outW
	cmd.Stderr = errW
	child, err := proc.Start(cmd, proc.Options{DeathSignal: deathSignal})
	outW.Close()
	errW.Close()
	if inR != nil {
		inR.Close()
	}
	if err != nil {
		outR.Close()
		errR.Close()
		if inW != nil {
			inW.Close()
		}
		return nil, fmt.Errorf("start %s: %w", path, err)
	}
	return &running{child: child, cmd: cmd, stdout: outR, stderr: errR, stdin: inW}, nil
}

// output is what the runtime prints, read by two goroutines: its stdout
// as events, its stderr as lines. Each channel is closed at its end.
type output struct {
	events  <-chan []record.Event
	stderr  <-chan string
	readErr <-chan error // a failure to read stdout
}

func readOutput(rt *running, newSource func(io.Reader) EventSource) output {
	events := make(chan []record.Event, 64)
	readErr := make(chan error, 1)
	go func() {
		defer close(events)
		src := newSource(rt.stdout)
		for {
			evs, err := src.Next()
			if len(evs) > 0 {
				events <- evs
			}
			if err != nil {
				if !errors.Is(err, io.EOF) && !errors.Is(err, os.ErrClosed) {
					readErr <- err
				}
				return
			}
		}
	}()
	stderr := make(chan string, 64)
	go func() {
		defer close(stderr)
		readLines(rt.stderr, stderr)
	}()
	return output{events: events, stderr: stderr, readErr: readErr}
}

// supervisor is the state of supervise's select loop.
type supervisor struct {
	s     supervision
	rt    *running
	out   output // a channel is set to nil once closed
	watch *watch
	timer *time.Timer // set to the watch's next deadline
	ex    Exit

	exited <-chan struct{} // the child's Done; nil once it has exited
	drain  <-chan time.Time
	// stopping: lane stops the runtime; stopped then receives what its
	// kill left, and stopDone says it has.
	stopping bool
	stopped  chan []int
	stopDone bool
	// The dialog's events and stop requests; nil without a dialog.
	posted <-chan record.Event
	stops  <-chan error
}

// run is the select loop: it hands out the runtime's output, drives the
// watchdogs, and ends once the runtime has exited, its output ended and
// any stop is over.
func (sv *supervisor) run(ctx context.Context) Exit {
	defer sv.timer.Stop()
	sv.arm()
	ctxDone := ctx.Done()
	for sv.exited != nil || sv.out.events != nil || sv.out.stderr != nil || (sv.stopping && !sv.stopDone) {
		select {
		case evs, ok := <-sv.out.events:
			sv.onEvents(evs, ok)
		case line, ok := <-sv.out.stderr:
			sv.onStderr(line, ok)
		case <-sv.exited:
			sv.onExit()
		case <-sv.drain:
			sv.drain = nil
			sv.rt.stdout.Close()
			sv.rt.stderr.Close()
		case left := <-sv.stopped:
			sv.stopped, sv.stopDone, sv.ex.Leftover = nil, true, left
			if len(left) > 0 {
				slog.Warn("processes survived the kill", "pids", left)
			}
		case <-sv.timer.C:
			if err := sv.watch.expired(time.Now()); err != nil {
				sv.beginStop(err)
			} else {
				sv.arm()
			}
		case <-ctxDone:
			ctxDone = nil
			sv.beginStop(stopCause(ctx))
		case ev := <-sv.posted:
			sv.onEvents([]record.Event{ev}, true)
		case cause := <-sv.stops:
			sv.beginStop(cause)
		}
	}
	sv.rt.stdout.Close()
	sv.rt.stderr.Close()
	select {
	case err := <-sv.out.readErr:
		slog.Warn("reading runtime output", "err", err)
	default:
	}
	return sv.ex
}

func (sv *supervisor) onEvents(evs []record.Event, ok bool) {
	if !ok {
		sv.out.events = nil
		return
	}
	for _, ev := range evs {
		sv.watch.observe(ev, time.Now())
		ev.CapOutput(MaxEventOutput)
		if cause := sv.s.emit(ev); cause != nil {
			sv.beginStop(cause)
		}
	}
	sv.arm()
}

// onStderr keeps a stderr line in the tail and emits it; stderr lines are
// not output for the watchdogs.
func (sv *supervisor) onStderr(line string, ok bool) {
	if !ok {
		sv.out.stderr = nil
		return
	}
	sv.ex.StderrTail = append(sv.ex.StderrTail, line)
	if len(sv.ex.StderrTail) > stderrTailLines {
		sv.ex.StderrTail = sv.ex.StderrTail[len(sv.ex.StderrTail)-stderrTailLines:]
	}
	if cause := sv.s.emit(record.Event{Kind: record.KindStderr, Text: line}); cause != nil {
		sv.beginStop(cause)
	}
}

func (sv *supervisor) onExit() {
	sv.exited = nil
	sv.ex.Code, sv.ex.Signal = exitStatus(sv.rt.cmd.ProcessState, sv.rt.child.Wait())
	// Output normally ends with the process; a grandchild that kept the
	// pipes open must not keep the run alive.
	sv.drain = time.After(pipeDrainAfterEnd)
	sv.arm()
}

// arm sets the timer to the watch's next deadline, or stops it when no
// watchdog applies any more.
func (sv *supervisor) arm() {
	at, ok := sv.watch.deadline()
	if !ok || sv.stopping || sv.exited == nil {
		sv.timer.Stop()
		return
	}
	sv.timer.Reset(time.Until(at))
}

// beginStop stops the runtime for cause, once: an interrupt, the grace,
// then the kill of its whole tree (proc's Stop, in a goroutine so that
// the loop still hands out what the runtime prints meanwhile). A cause
// that says so, or a runtime that has already exited, is killed at once.
func (sv *supervisor) beginStop(cause error) {
	if sv.stopping {
		return
	}
	sv.stopping = true
	sv.ex.StopCause = cause
	sv.ex.Settled = sv.s.settled != nil && sv.s.settled()
	sv.arm()
	// Taken now: what the interrupt orphans leaves the runtime's tree.
	tree := sv.rt.child.Tree()
	slog.Debug("stopping runtime", "pid", sv.rt.child.PID, "cause", cause, "descendants", len(tree.Known))
	grace := sv.s.watchdogs.Grace
	var now interface{ killAtOnce() bool }
	if errors.As(cause, &now) && now.killAtOnce() {
		grace = 0
	}
	stopped := make(chan []int, 1)
	sv.stopped = stopped
	kill := sv.s.inv.Kill
	go func() {
		if kill != nil && grace == 0 {
			kill() // the runtime stops working now, not once its pipes close
		}
		killed := sv.rt.child.Stop(grace, tree)
		if kill != nil {
			kill()
		}
		stopped <- killed
	}()
}

// stopCause is why ctx ended, as a run's stop cause.
func stopCause(ctx context.Context) error {
	cause := context.Cause(ctx)
	if errors.Is(cause, context.Canceled) {
		cause = ErrCancelled
	}
	return cause
}

// readLines sends each line of r (without its newline) to out; an overlong
// line is cut at maxStderrLine bytes.
func readLines(r io.Reader, out chan<- string) {
	br := bufio.NewReaderSize(r, 64<<10)
	var line []byte
	for {
		chunk, isPrefix, err := br.ReadLine()
		if len(chunk) > 0 && len(line) < maxStderrLine {
			n := min(len(chunk), maxStderrLine-len(line))
			line = append(line, chunk[:n]...)
		}
		if err != nil {
			if len(line) > 0 {
				out <- string(line)
			}
			return
		}
		if !isPrefix {
			out <- string(line)
			line = line[:0]
		}
	}
}

func exitStatus(ps *os.ProcessState, werr error) (code int, signal string) {
	if ps == nil {
		return -1, ""
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return -1, ws.Signal().String()
	}
	return ps.ExitCode(), ""
}
