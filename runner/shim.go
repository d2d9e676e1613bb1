package runner

import (
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"lane/internal/proc"
)

// Some runtimes leave their tools running when they are interrupted
// (Gemini CLI and opencode do), and a lane that is killed outright cannot
// clean up after them. So lane starts each runtime under a shim: lane's own
// binary again, in shim mode, between lane and the runtime. The shim is a
// child subreaper, so every process the runtime starts stays its
// descendant even when orphaned; when lane dies, the kernel tells the shim
// (a parent-death signal), and the shim interrupts the runtime, gives it a
// grace period, then kills everything left below it. While lane lives the
// shim only passes lane's interrupt on and exits as the runtime did.

const (
	shimEnv      = "LANE_RUNTIME_SHIM"       // set: this process is the shim
	shimGraceEnv = "LANE_RUNTIME_SHIM_GRACE" // the grace after lane's death
)

// shimExe is the binary that serves as the shim; "" starts runtimes
// directly (see UseShim).
var shimExe string

// UseShim makes supervise start every runtime under a shim run from exe,
// a binary whose main calls ShimMain when IsShim says so (lane's own).
func UseShim(exe string) { shimExe = exe }

// IsShim reports whether this process was started as a runtime's shim.
func IsShim() bool { return os.Getenv(shimEnv) != "" }

// shimmed wraps inv to run under the shim, or returns it as it is.
func shimmed(inv Invocation, grace time.Duration) Invocation {
	if shimExe == "" {
		return inv
	}
	out := inv
	out.Path = shimExe
	out.Args = append([]string{"--", inv.Path}, inv.Args...)
	out.Env = append(append([]string{}, inv.Env...), shimEnv+"=1", shimGraceEnv+"="+grace.String())
	return out
}

// ShimMain runs the shim: os.Args is [exe, "--", runtime, args...]. It
// returns the exit code to exit with, or kills itself with the signal the
// runtime died of, so that lane sees the runtime's own end.
func ShimMain() int {
	// The runtime's parent-death signal follows the thread that started it.
	runtime.LockOSThread()
	if len(os.Args) < 3 || os.Args[1] != "--" {
		fmt.Fprintln(os.Stderr, "lane shim: usage: -- RUNTIME [ARGS...]")
		return 2
	}
	grace, err := time.ParseDuration(os.Getenv(shimGraceEnv))
	if err != nil || grace <= 0 {
		grace = defaultGrace
	}
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, shimEnv+"=") && !strings.HasPrefix(kv, shimGraceEnv+"=") {
			env = append(env, kv)
		}
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		fmt.Fprintln(os.Stderr, "lane shim: warning: set child subreaper:", err)
	}
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)

	rt, err := os.StartProcess(os.Args[2], os.Args[2:], &os.ProcAttr{
		Env:   env,
		Files: []*os.File{os.Stdin, os.Stdout, os.Stderr},
		// Should the shim itself be killed, its runtime goes too.
		Sys: &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "lane shim: start runtime:", err)
		return 127
	}

	// Reap every child: the runtime, and the orphans the shim adopts.
	ended := make(chan syscall.WaitStatus, 1)
	go func() {
		for {
			var ws syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &ws, 0, nil)
			if err == syscall.EINTR {
				continue
			}
			if err != nil {
				return // no children left
			}
			if pid == rt.Pid {
				ended <- ws
			}
		}
	}()

	var (
		orphaned bool // lane is gone
		killAt   <-chan time.Time
	)
	for {
		select {
		case ws := <-ended:
			if orphaned {
				killDescendants(os.Getpid())
			}
			return exitAs(ws)
		case s := <-sigs:
			switch {
			case s == syscall.SIGTERM || s == syscall.SIGHUP:
				// lane's death (the parent-death signal) or a hang-up: lane
				// itself only ever interrupts or kills.
				if !orphaned {
					orphaned = true
					_ = rt.Signal(syscall.SIGINT)
					killAt = time.After(grace)
				}
			default:
				_ = rt.Signal(s)
			}
		case <-killAt:
			killAt = nil
			killDescendants(os.Getpid())
		}
	}
}

// exitAs ends the shim as the runtime ended.
func exitAs(ws syscall.WaitStatus) int {
	if ws.Signaled() {
		sig := ws.Signal()
		signal.Reset(sig)
		_ = syscall.Kill(os.Getpid(), sig)
		time.Sleep(100 * time.Millisecond) // delivery is asynchronous
		return 128 + int(sig)
	}
	return ws.ExitStatus()
}

// killDescendants kills every process below root, and the process groups
// they lead, but not root's own group.
func killDescendants(root int) {
	own := syscall.Getpgrp()
	for round := 0; round < 20; round++ {
		procs, err := proc.Snapshot()
		if err != nil {
			return
		}
		left := proc.Descendants(procs, root)
		if len(left) == 0 {
			return
		}
		for _, p := range left {
			if p.PGID > 1 && p.PGID != own {
				_ = syscall.Kill(-p.PGID, syscall.SIGKILL)
			}
			_ = syscall.Kill(p.PID, syscall.SIGKILL)
		}
		time.Sleep(10 * time.Millisecond) // SIGKILL delivery is asynchronous
	}
}
