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
	"runtime"
	"strings"
	"syscall"
	"time"

	"lane/internal/proc"
	"lane/trace"
)

// Invocation is one runtime process to start.
type Invocation struct {
	Path string
	Args []string
	Dir  string
	Env  []string
	// Stdin is the runtime's standard input; empty is /dev/null.
	Stdin string
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
	Next() ([]trace.Event, error)
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

// watchHooks tell supervise what it cannot know from the events alone.
type watchHooks struct {
	// settled, when not nil, tells whether the runtime has given its final
	// word so far; it is asked at the moment lane decides to stop the runtime.
	settled func() bool
	// work, when not nil, says whether an event opens or closes work in
	// flight other than a tool call (opencode's steps, which hide the tools
	// running inside them): while any is open the idle watchdog waits. A
	// close with an empty key closes them all.
	work func(ev trace.Event) (key string, opens, closes bool)
}

// supervise runs inv, turns its stdout into events with newSource, and
// hands each event to emit in order. emit may ask for the run to stop by
// returning a non-nil cause. supervise returns once the process has exited
// and its output is drained; it never leaves a goroutine behind.
func supervise(ctx context.Context, inv Invocation, wd Watchdogs, newSource func(io.Reader) EventSource, emit func(trace.Event) error, hooks watchHooks) (Exit, error) {
	if wd.Grace <= 0 {
		wd.Grace = defaultGrace
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		return Exit{}, fmt.Errorf("stdout pipe: %w", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return Exit{}, fmt.Errorf("stderr pipe: %w", err)
	}

	// A runtime that cannot start is lane's to report, not the shim's.
	if _, err := exec.LookPath(inv.Path); err != nil {
		outR.Close()
		outW.Close()
		errR.Close()
		errW.Close()
		return Exit{}, fmt.Errorf("start %s: %w", inv.Path, err)
	}
	deathSignal := syscall.SIGINT // lets Claude Code stop its own tools first
	if shimExe != "" {
		deathSignal = syscall.SIGTERM // the shim's cue that lane is gone
	}
	inv = shimmed(inv, wd.Grace)
	cmd := exec.Command(inv.Path, inv.Args...)
	cmd.Dir = inv.Dir
	cmd.Env = inv.Env
	if inv.Stdin != "" {
		cmd.Stdin = strings.NewReader(inv.Stdin)
	} // else os/exec connects /dev/null
	cmd.Stdout = outW
	cmd.Stderr = errW
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Setpgid: true,
		// If lane dies, the runtime (or its shim) is told rather than left
		// running unsupervised.
		Pdeathsig: deathSignal,
	}

	started := make(chan error, 1)
	waited := make(chan error, 1)
	go func() {
		// Pdeathsig fires when the thread that started the child exits, so
		// that thread must live as long as the child: lock it until Wait.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		waited <- cmd.Wait()
	}()
	startErr := <-started
	outW.Close()
	errW.Close()
	if startErr != nil {
		outR.Close()
		errR.Close()
		return Exit{}, fmt.Errorf("start %s: %w", inv.Path, startErr)
	}
	pid := cmd.Process.Pid
	startedAt := time.Now()

	events := make(chan []trace.Event, 64)
	readErrs := make(chan error, 1)
	go func() {
		defer close(events)
		src := newSource(outR)
		for {
			evs, err := src.Next()
			if len(evs) > 0 {
				events <- evs
			}
			if err != nil {
				if !errors.Is(err, io.EOF) && !errors.Is(err, os.ErrClosed) {
					readErrs <- err
				}
				return
			}
		}
	}()
	stderrLines := make(chan string, 64)
	go func() {
		defer close(stderrLines)
		readLines(errR, stderrLines)
	}()

	var (
		ex           Exit
		exited       bool
		lastOutput   time.Time
		sawOutput    bool
		pending      = map[string]bool{}
		stopping     bool
		victims      []proc.Process
		watchdog     = time.NewTimer(time.Hour)
		grace        *time.Timer
		graceC       <-chan time.Time
		drainC       <-chan time.Time
		ctxDone      = ctx.Done()
		stdoutClosed bool
		stderrClosed bool
	)
	defer watchdog.Stop()

	beginStop := func(cause error) {
		if stopping {
			return
		}
		stopping = true
		ex.StopCause = cause
		ex.Settled = hooks.settled != nil && hooks.settled()
		watchdog.Stop()
		victims = treeOf(pid)
		slog.Debug("stopping runtime", "pid", pid, "cause", cause, "descendants", len(victims))
		var now interface{ killAtOnce() bool }
		if exited || (errors.As(cause, &now) && now.killAtOnce()) {
			ex.Leftover = killTree(pid, victims)
			return
		}
		_ = syscall.Kill(pid, syscall.SIGINT)
		grace = time.NewTimer(wd.Grace)
		graceC = grace.C
	}
	armWatchdog := func() {
		if stopping || exited {
			return
		}
		now := time.Now()
		var (
			next  time.Duration
			which string
			armed bool
		)
		consider := func(name string, deadline time.Time) {
			if d := deadline.Sub(now); !armed || d < next {
				next, which, armed = d, name, true
			}
		}
		if wd.Hard > 0 {
			consider(WatchdogHard, startedAt.Add(wd.Hard))
		}
		if !sawOutput && wd.FirstByte > 0 {
			consider(WatchdogFirstByte, startedAt.Add(wd.FirstByte))
		}
		if sawOutput && len(pending) == 0 && wd.Idle > 0 {
			consider(WatchdogIdle, lastOutput.Add(wd.Idle))
		}
		watchdog.Stop()
		if !armed {
			return
		}
		if next <= 0 {
			switch which {
			case WatchdogHard:
				beginStop(&TimeoutError{Watchdog: which, After: wd.Hard})
			case WatchdogFirstByte:
				beginStop(&TimeoutError{Watchdog: which, After: wd.FirstByte})
			default:
				beginStop(&TimeoutError{Watchdog: which, After: wd.Idle})
			}
			return
		}
		watchdog.Reset(next)
	}
	armWatchdog()

	for !(exited && stdoutClosed && stderrClosed) {
		select {
		case evs, ok := <-events:
			if !ok {
				stdoutClosed = true
				events = nil
				continue
			}
			if !sawOutput {
				lastOutput, sawOutput = time.Now(), true
			}
			for _, ev := range evs {
				// A retry notice is output but not progress: a runtime that
				// only retries (Codex retries an unreachable server every
				// minute, for ever) is as stuck as a silent one.
				if ev.Kind != trace.KindRetry {
					lastOutput = time.Now()
				}
				switch ev.Kind {
				case trace.KindToolCall:
					if ev.ToolUseID != "" {
						pending[ev.ToolUseID] = true
					}
				case trace.KindToolResult:
					delete(pending, ev.ToolUseID)
				}
				if hooks.work != nil {
					key, opens, closes := hooks.work(ev)
					switch {
					case opens:
						pending["work:"+key] = true
					case closes && key == "":
						for k := range pending {
							if strings.HasPrefix(k, "work:") {
								delete(pending, k)
							}
						}
					case closes:
						delete(pending, "work:"+key)
					}
				}
				ev.CapOutput(MaxEventOutput)
				if cause := emit(ev); cause != nil {
					beginStop(cause)
				}
			}
			armWatchdog()
		case line, ok := <-stderrLines:
			if !ok {
				stderrClosed = true
				stderrLines = nil
				continue
			}
			ex.StderrTail = append(ex.StderrTail, line)
			if len(ex.StderrTail) > stderrTailLines {
				ex.StderrTail = ex.StderrTail[len(ex.StderrTail)-stderrTailLines:]
			}
			if cause := emit(trace.Event{Kind: trace.KindStderr, Text: line}); cause != nil {
				beginStop(cause)
			}
		case werr := <-waited:
			exited = true
			ex.Code, ex.Signal = exitStatus(cmd.ProcessState, werr)
			if grace != nil {
				grace.Stop()
				graceC = nil
			}
			if stopping {
				ex.Leftover = killTree(pid, victims)
			}
			// Output normally ends with the process; a grandchild that
			// kept the pipes open must not keep the run alive.
			drainC = time.After(pipeDrainAfterEnd)
		case <-drainC:
			drainC = nil
			outR.Close()
			errR.Close()
		case <-graceC:
			graceC = nil
			ex.Leftover = killTree(pid, victims)
		case <-watchdog.C:
			armWatchdog()
		case <-ctxDone:
			ctxDone = nil
			cause := context.Cause(ctx)
			if errors.Is(cause, context.Canceled) {
				cause = ErrCancelled
			}
			beginStop(cause)
		}
	}
	outR.Close()
	errR.Close()
	select {
	case err := <-readErrs:
		slog.Warn("reading runtime output", "err", err)
	default:
	}
	return ex, nil
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

// treeOf snapshots every process that descends from pid.
func treeOf(pid int) []proc.Process {
	procs, err := proc.Snapshot()
	if err != nil {
		slog.Warn("snapshot processes", "err", err)
		return nil
	}
	return proc.Descendants(procs, pid)
}

// killTree kills the runtime's process group and every process recorded in
// victims or still descending from pid, their process groups included:
// Claude Code starts each tool in a process group of its own, so killing
// the runtime's group alone leaves the tools running. It returns the pids
// that survived.
func killTree(pid int, victims []proc.Process) []int {
	seen := map[int]proc.Process{}
	for _, p := range victims {
		seen[p.PID] = p
	}
	for round := 0; round < 20; round++ {
		for _, p := range treeOf(pid) {
			seen[p.PID] = p
		}
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		_ = syscall.Kill(pid, syscall.SIGKILL)
		for _, p := range seen {
			if !proc.Alive(p.PID, p.Start) {
				continue
			}
			if p.PGID > 1 && p.PGID != os.Getpid() {
				_ = syscall.Kill(-p.PGID, syscall.SIGKILL)
			}
			_ = syscall.Kill(p.PID, syscall.SIGKILL)
		}
		var left []int
		for _, p := range seen {
			if proc.Alive(p.PID, p.Start) {
				left = append(left, p.PID)
			}
		}
		reapAdopted(seen)
		if len(left) == 0 {
			return nil
		}
		if round == 19 {
			slog.Warn("processes survived SIGKILL", "pids", left)
			return left
		}
		time.Sleep(10 * time.Millisecond) // SIGKILL delivery is asynchronous
	}
	return nil
}

// reapAdopted collects the exit status of killed processes that were
// re-parented to lane (lane is a child subreaper), so they do not linger as
// zombies. Only pids of this run's tree are waited for.
func reapAdopted(procs map[int]proc.Process) {
	self := os.Getpid()
	for _, p := range procs {
		if p.PPID == self {
			continue // a direct child: os/exec waits for it
		}
		var ws syscall.WaitStatus
		_, _ = syscall.Wait4(p.PID, &ws, syscall.WNOHANG, nil)
	}
}
