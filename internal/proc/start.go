package proc

import (
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// This file is the one way lane starts a process it must be able to end
// with everything it started: Start, then Stop or Kill (kill.go).

// Group says where Start puts the new process.
type Group int

const (
	// NewGroup makes it the leader of a process group of its own.
	NewGroup Group = iota
	// NewSession makes it the leader of a session (and group) of its own.
	NewSession
	// SameGroup leaves it in the caller's process group.
	SameGroup
)

// Options say how Start starts a command. The zero value starts it in a
// group of its own from whatever thread.
type Options struct {
	Group Group
	// Ctty makes the terminal on the command's stdin its controlling
	// terminal (with NewSession).
	Ctty bool
	// DeathSignal, when not 0, is what the command gets when the caller
	// dies. The kernel sends it when the thread that started the command
	// ends, so Start then starts and waits for the command on an OS thread
	// locked for the command's whole life.
	DeathSignal syscall.Signal
	// LockThread starts and waits on such a thread without a death signal
	// (bubblewrap's --die-with-parent also watches the starting thread).
	LockThread bool
	// OnThread, when set, runs on that locked thread just before the start:
	// Landlock confines the thread, and the command inherits it. If it
	// fails, nothing is started and Start returns its error. The thread is
	// then never given back to Go (it ends with the command's wait) and is
	// never the main thread.
	OnThread func() error
}

func (o Options) locked() bool { return o.DeathSignal != 0 || o.LockThread || o.OnThread != nil }

// Child is a process that Start started; it is waited for in the
// background.
type Child struct {
	Process // the child's pid, group and start time; PPID is the caller
	cmd     *exec.Cmd
	done    chan struct{}
	err     error
}

// Start starts cmd as o says and waits for it in the background (see
// Child.Done). It sets cmd.SysProcAttr's group, session and death signal
// fields (those are Start's to set), keeping the others.
func Start(cmd *exec.Cmd, o Options) (*Child, error) {
	setAttrs(cmd, o)
	c := &Child{cmd: cmd, done: make(chan struct{})}
	if !o.locked() {
		if err := c.start(o); err != nil {
			return nil, err
		}
		go c.wait()
		return c, nil
	}
	started := make(chan error, 1)
	body := func() {
		err := c.start(o)
		started <- err
		if err == nil {
			c.wait()
		}
	}
	if o.OnThread != nil {
		goLocked(body)
	} else {
		go func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			body()
		}()
	}
	if err := <-started; err != nil {
		return nil, err
	}
	return c, nil
}

func setAttrs(cmd *exec.Cmd, o Options) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	a := cmd.SysProcAttr
	a.Setpgid, a.Setsid, a.Setctty = false, false, false
	switch o.Group {
	case NewGroup:
		a.Setpgid, a.Pgid = true, 0
	case NewSession:
		a.Setsid = true
		a.Setctty, a.Ctty = o.Ctty, 0 // stdin
	}
	a.Pdeathsig = o.DeathSignal
}

// start runs o's hook and starts the command, on the calling thread.
func (c *Child) start(o Options) error {
	if o.OnThread != nil {
		if err := o.OnThread(); err != nil {
			return err
		}
	}
	if err := c.cmd.Start(); err != nil {
		return err
	}
	c.Process = Started(c.cmd.Process.Pid)
	if c.Start == 0 && o.Group == SameGroup { // its stat could not be read
		c.PGID = syscall.Getpgrp()
	}
	return nil
}

func (c *Child) wait() {
	c.err = c.cmd.Wait()
	close(c.done)
}

// Done is closed once the child has exited and been waited for.
func (c *Child) Done() <-chan struct{} { return c.done }

// Wait waits for the child and returns cmd.Wait's result; cmd.ProcessState
// is set after it.
func (c *Child) Wait() error {
	<-c.done
	return c.err
}

// Signal sends sig to the child alone (not its group), unless it has
// already been waited for.
func (c *Child) Signal(sig os.Signal) error { return c.cmd.Process.Signal(sig) }

// Tree is the child, its group and, as Known, its descendants at this
// moment: taken before an interrupt, it still reaches the processes that
// the child's end orphans (they leave its tree for a subreaper's).
func (c *Child) Tree() Targets {
	procs, err := Snapshot()
	if err != nil {
		return Targets{Root: c.Process}
	}
	return Targets{Root: c.Process, Known: Descendants(procs, c.PID)}
}

// Stop ends the child and what it started: an interrupt (SIGINT to the
// child, which a runtime passes on to its tools before printing its last
// lines), up to grace for the child to exit, then Kill of t. With no grace,
// or once the child has exited, it kills at once. It returns what Kill
// returns: the pids left alive.
func (c *Child) Stop(grace time.Duration, t Targets) []int {
	if grace > 0 && !c.exited() {
		_ = c.Signal(syscall.SIGINT)
		timer := time.NewTimer(grace)
		select {
		case <-c.done:
		case <-timer.C:
		}
		timer.Stop()
	}
	return Kill(t)
}

func (c *Child) exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// goLocked runs f in a new goroutine with runLocked.
func goLocked(f func()) {
	go runLocked(f)
}

// runLocked runs f locked, for good, to an OS thread other than the main
// one: the runtime ends a thread whose goroutine returns locked, but it
// cannot end the main thread and would park it forever, whatever f did to
// it. On the main thread, f runs in another goroutine, and the main thread
// is let go (runLocked returns) once that one is locked.
func runLocked(f func()) {
	runtime.LockOSThread()
	if unix.Gettid() != unix.Getpid() {
		f()
		return
	}
	locked := make(chan struct{})
	goLocked(func() {
		close(locked)
		f()
	})
	<-locked
	runtime.UnlockOSThread()
}
