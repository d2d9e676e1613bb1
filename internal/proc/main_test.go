package proc

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func init() {
	// TestMain runs on the main thread, so that it can check runLocked
	// there (see TestRunLockedSparesTheMainThread).
	runtime.LockOSThread()
}

// fromMainThread is how runLocked went when called on the main thread.
var fromMainThread error

// The test binary doubles as the processes the tests need: with
// LANE_PROC_HELPER set it plays that part instead of running the tests.
func TestMain(m *testing.M) {
	if h := os.Getenv("LANE_PROC_HELPER"); h != "" {
		os.Exit(helper(h, os.Args[1:]))
	}
	fromMainThread = lockFromMainThread()
	runtime.UnlockOSThread()
	os.Exit(m.Run())
}

// lockFromMainThread calls runLocked on the main thread and checks that f
// ran locked on another thread.
func lockFromMainThread() error {
	if unix.Gettid() != unix.Getpid() {
		return errors.New("TestMain is not on the main thread")
	}
	tid := make(chan int, 1)
	runLocked(func() { tid <- unix.Gettid() })
	if got := <-tid; got == unix.Getpid() {
		return errors.New("f ran on the main thread")
	}
	return nil
}

func TestRunLockedSparesTheMainThread(t *testing.T) {
	if fromMainThread != nil {
		t.Error(fromMainThread)
	}
}

// helper plays the part name: each part starts `sleep tok` processes in
// some way of escaping a kill, prints their pids on a line, and waits.
func helper(name string, args []string) int {
	tok := args[0]
	sleeper := func(attr *syscall.SysProcAttr) int {
		c := exec.Command("sleep", tok)
		c.SysProcAttr = attr
		if err := c.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(9)
		}
		return c.Process.Pid
	}
	switch name {
	case "group":
		// A grandchild in a process group of its own.
		fmt.Println(sleeper(&syscall.SysProcAttr{Setpgid: true}))
	case "double-fork":
		// A grandchild that double-forks into a session of its own: it
		// leaves the tree, and only its environment names it.
		if exec.Command("sh", "-c", "(setsid sleep "+tok+" >/dev/null 2>&1 </dev/null &)").Run() != nil {
			return 9
		}
		for len(sleepers(tok)) == 0 {
			time.Sleep(5 * time.Millisecond)
		}
		fmt.Println(sleepers(tok)[0])
	case "forker":
		// Forks new sleepers as fast as it can, in groups of their own.
		for {
			sleeper(&syscall.SysProcAttr{Setpgid: true})
		}
	case "death-signal":
		// A child started for lane's death to end it.
		c := exec.Command("sleep", tok)
		child, err := Start(c, Options{DeathSignal: syscall.SIGKILL})
		if err != nil {
			return 9
		}
		fmt.Println(child.PID)
	case "subreaper":
		// A child subreaper whose child double-forks: Kill reaps the
		// orphan it adopted, so no zombie is left.
		if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
			return 9
		}
		mark := "LANE_PROC_TEST_MARK=" + tok
		c := exec.Command("sh", "-c", "(setsid sleep "+tok+" &); sleep "+tok)
		c.Env = append(os.Environ(), mark)
		child, err := Start(c, Options{})
		if err != nil {
			return 9
		}
		for len(sleepers(tok)) < 2 {
			time.Sleep(5 * time.Millisecond)
		}
		left := Kill(Targets{Root: child.Process, Env: mark})
		child.Wait()
		fmt.Println(len(left), len(zombieChildren()))
		return 0
	case "orphans":
		// A child subreaper adopts an orphan that exits: ReapOrphans
		// collects it, and leaves the child os/exec waits for.
		if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
			return 9
		}
		// Started, not waited for, so that it is a zombie too.
		c := exec.Command("sh", "-c", "(true &); exit 3")
		if err := c.Start(); err != nil {
			return 9
		}
		for deadline := time.Now().Add(5 * time.Second); len(zombieChildren()) < 2 && time.Now().Before(deadline); {
			time.Sleep(5 * time.Millisecond)
		}
		before := len(zombieChildren())
		ReapOrphans(c.Process.Pid)
		var ee *exec.ExitError
		if err := c.Wait(); !errors.As(err, &ee) || ee.ExitCode() != 3 {
			fmt.Println("the kept child:", err)
		}
		fmt.Println(before, len(zombieChildren()))
		return 0
	default:
		return 99
	}
	time.Sleep(time.Hour)
	return 0
}

// zombieChildren lists the children of this process that exited and were
// not waited for.
func zombieChildren() []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if s, err := readStat(pid); err == nil && s.state == 'Z' && s.ppid == os.Getpid() {
			out = append(out, pid)
		}
	}
	return out
}

// token is a sleep duration no other process uses, to find the test's
// sleepers in /proc.
func token() string {
	return fmt.Sprintf("1000.%09d", rand.IntN(1e9))
}

// sleepers lists the live processes whose command line is `sleep tok`.
func sleepers(tok string) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || !Alive(pid, 0) {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && bytes.Equal(b, []byte("sleep\x00"+tok+"\x00")) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// startHelper starts the helper part name with a fresh token in a group
// of its own, and returns it, the token and the pids it printed.
func startHelper(t *testing.T, name string, env ...string) (*Child, string, []int) {
	t.Helper()
	tok := token()
	cmd := exec.Command(os.Args[0], tok)
	cmd.Env = append(append(os.Environ(), "LANE_PROC_HELPER="+name), env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	c, err := Start(cmd, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, pid := range sleepers(tok) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		c.Signal(syscall.SIGKILL)
		c.Wait()
	})
	var line string
	if name != "forker" {
		b := make([]byte, 64)
		n, _ := out.Read(b)
		line = strings.TrimSpace(string(b[:n]))
	}
	var pids []int
	for _, f := range strings.Fields(line) {
		pid, _ := strconv.Atoi(f)
		pids = append(pids, pid)
	}
	return c, tok, pids
}

// noneLeft fails if a sleeper of tok runs, or the pids do.
func noneLeft(t *testing.T, tok string, pids ...int) {
	t.Helper()
	if left := sleepers(tok); len(left) > 0 {
		t.Errorf("sleepers left: %v", left)
	}
	for _, pid := range pids {
		if Alive(pid, 0) {
			t.Errorf("process %d left", pid)
		}
	}
}

// waitFor polls cond for up to 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited 10s for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
