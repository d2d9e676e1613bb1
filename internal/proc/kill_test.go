package proc

import (
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestKillReachesAGrandchildInAGroupOfItsOwn(t *testing.T) {
	c, tok, pids := startHelper(t, "group")
	if left := Kill(Targets{Root: c.Process}); len(left) > 0 {
		t.Errorf("Kill left %v", left)
	}
	c.Wait()
	noneLeft(t, tok, pids...)
}

// The child in the middle dies before the kill: its child, in a group of
// its own, is an orphan outside the tree, which Known still names.
func TestKillReachesTheOrphanOfAKilledChild(t *testing.T) {
	c, tok, pids := startHelper(t, "group")
	tree := c.Tree()
	if len(tree.Known) != 1 || tree.Known[0].PID != pids[0] {
		t.Fatalf("tree %+v, want the grandchild %v", tree, pids)
	}
	c.Signal(syscall.SIGKILL)
	c.Wait()
	if !Alive(pids[0], 0) {
		t.Fatal("the grandchild died with its parent")
	}
	if left := Kill(tree); len(left) > 0 {
		t.Errorf("Kill left %v", left)
	}
	noneLeft(t, tok, pids...)
}

func TestKillFindsADoubleForkByItsEnvironment(t *testing.T) {
	mark := "LANE_PROC_TEST_MARK=" + token()
	c, tok, pids := startHelper(t, "double-fork", mark)
	if len(c.Tree().Known) != 0 {
		t.Fatal("the double fork is still in the tree")
	}
	if left := Kill(Targets{Root: c.Process, Env: mark}); len(left) > 0 {
		t.Errorf("Kill left %v", left)
	}
	c.Wait()
	noneLeft(t, tok, pids...)
}

// A process that forks all the time is stopped before the walk, so the
// walk ends and nothing it forked is left.
func TestKillFreezesAForker(t *testing.T) {
	c, tok, _ := startHelper(t, "forker")
	waitFor(t, "20 sleepers", func() bool { return len(sleepers(tok)) >= 20 })
	if left := Kill(Targets{Root: c.Process}); len(left) > 0 {
		t.Errorf("Kill left %v", left)
	}
	c.Wait()
	noneLeft(t, tok)
}

func TestKillReachesWhatHoldsAFile(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "held")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tok := token()
	cmd := exec.Command("sleep", tok)
	cmd.Stdout = f
	c, err := Start(cmd, Options{Group: NewSession})
	if err != nil {
		t.Fatal(err)
	}
	if left := Kill(Targets{Holding: f.Name()}); len(left) > 0 {
		t.Errorf("Kill left %v", left)
	}
	if err := c.Wait(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Errorf("the holder ended with %v, want killed", err)
	}
}

// Kill spares the caller, its ancestors and its group: a target list that
// names them kills only the rest.
func TestKillSparesTheCaller(t *testing.T) {
	self, err := StartTime(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	tok := token()
	cmd := exec.Command("sleep", tok)
	c, err := Start(cmd, Options{Group: SameGroup})
	if err != nil {
		t.Fatal(err)
	}
	me := Process{PID: os.Getpid(), PPID: os.Getppid(), PGID: syscall.Getpgrp(), Start: self}
	parent := Process{PID: os.Getppid()}
	if left := Kill(Targets{Root: me, Known: []Process{parent}, Below: os.Getpid()}); len(left) > 0 {
		t.Errorf("Kill left %v", left)
	}
	c.Wait()
	noneLeft(t, tok)
	if !Alive(os.Getppid(), 0) {
		t.Error("the parent was killed")
	}
}

func TestKillReapsWhatASubreaperAdopted(t *testing.T) {
	tok := token()
	cmd := exec.Command(os.Args[0], tok)
	cmd.Env = append(os.Environ(), "LANE_PROC_HELPER=subreaper")
	out, err := cmd.CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "0 0" {
		t.Errorf("left and zombies: %q (%v), want \"0 0\"", out, err)
	}
	noneLeft(t, tok)
}

func TestReapOrphans(t *testing.T) {
	cmd := exec.Command(os.Args[0], token())
	cmd.Env = append(os.Environ(), "LANE_PROC_HELPER=orphans")
	out, err := cmd.CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "2 0" {
		t.Errorf("zombies before and after: %q (%v), want \"2 0\"", out, err)
	}
}

func TestStopInterruptsThenKills(t *testing.T) {
	// The grace of the one that ends on the interrupt is long: on a busy
	// machine the shell may take a while to run its trap, and ending
	// before the grace is what counts, not how soon.
	tests := []struct {
		name   string
		line   string
		grace  time.Duration
		killed bool
	}{
		{"ends on the interrupt", "trap 'exit 3' INT; sleep %s & wait", 30 * time.Second, false},
		{"ignores it", "trap '' INT; sleep %s & while :; do wait; done", 300 * time.Millisecond, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tok := token()
			c, err := Start(exec.Command("sh", "-c", strings.ReplaceAll(tt.line, "%s", tok)), Options{})
			if err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the sleeper", func() bool { return len(sleepers(tok)) == 1 })
			start := time.Now()
			if left := c.Stop(tt.grace, c.Tree()); len(left) > 0 {
				t.Errorf("Stop left %v", left)
			}
			took := time.Since(start)
			err = c.Wait()
			if killed := strings.Contains(err.Error(), "killed"); killed != tt.killed {
				t.Errorf("ended with %v (after %v), killed %v", err, took, tt.killed)
			}
			if tt.killed != (took >= tt.grace) {
				t.Errorf("Stop took %v", took)
			}
			noneLeft(t, tok)
		})
	}
}

func TestDeathSignal(t *testing.T) {
	c, tok, pids := startHelper(t, "death-signal")
	c.Signal(syscall.SIGKILL)
	c.Wait()
	waitFor(t, "the child to die with its parent", func() bool { return !Alive(pids[0], 0) })
	noneLeft(t, tok)
}

func TestOnThread(t *testing.T) {
	tids := make(chan int, 1)
	c, err := Start(exec.Command("true"), Options{OnThread: func() error {
		tids <- syscall.Gettid()
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Wait(); err != nil {
		t.Fatal(err)
	}
	if tid := <-tids; tid == os.Getpid() {
		t.Error("the hook ran on the main thread")
	}

	cmd := exec.Command("true")
	_, err = Start(cmd, Options{OnThread: func() error { return os.ErrPermission }})
	if err != os.ErrPermission || cmd.Process != nil {
		t.Errorf("a failing hook: %v, process %v", err, cmd.Process)
	}
}

// A command that has exited may leave a background job in its group: Kill
// of the gone root still reaches it (the fast path for a root with nothing
// left must not skip it).
func TestKillReachesTheGroupOfAnExitedRoot(t *testing.T) {
	tok := token()
	c, err := Start(exec.Command("sh", "-c", "sleep "+tok+" >/dev/null 2>&1 & exit 0"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	c.Wait()
	t.Cleanup(func() {
		for _, pid := range sleepers(tok) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	waitFor(t, "the background job", func() bool { return len(sleepers(tok)) == 1 })
	if left := Kill(Targets{Root: c.Process}); len(left) > 0 {
		t.Errorf("Kill left %v", left)
	}
	noneLeft(t, tok)
	// Nothing is left now: a second Kill finds nothing and says so.
	if left := Kill(Targets{Root: c.Process}); len(left) > 0 {
		t.Errorf("second Kill left %v", left)
	}
}
