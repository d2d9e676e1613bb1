package proc

import (
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

func TestAliveTellsAReusedPidApart(t *testing.T) {
	self := os.Getpid()
	start, err := StartTime(self)
	if err != nil || start == 0 {
		t.Fatalf("StartTime(self) = %d, %v", start, err)
	}
	if !Alive(self, start) || !Alive(self, 0) {
		t.Error("this process is not alive")
	}
	if Alive(self, start+1) {
		t.Error("another start time must name another process")
	}
	if Alive(0, 0) || Alive(-1, 0) {
		t.Error("pid 0 or -1 alive")
	}
}

func TestDescendantsAndExit(t *testing.T) {
	// sh starts sleep as its child: a grandchild of the test.
	cmd := exec.Command("sh", "-c", "sleep 60 & wait")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	var sleeper Process
	deadline := time.Now().Add(10 * time.Second)
	for sleeper.PID == 0 && time.Now().Before(deadline) {
		procs, err := Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range Descendants(procs, os.Getpid()) {
			if p.PPID == cmd.Process.Pid {
				sleeper = p
			}
		}
	}
	if sleeper.PID == 0 || !Alive(sleeper.PID, sleeper.Start) {
		t.Fatal("the grandchild is not alive")
	}
	if err := syscall.Kill(sleeper.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait() // sh reaps sleep, then exits
	if Alive(sleeper.PID, sleeper.Start) {
		t.Error("a killed process is still alive")
	}
}

func TestDescendantsOrder(t *testing.T) {
	procs := []Process{{PID: 2, PPID: 1}, {PID: 3, PPID: 2}, {PID: 4, PPID: 1}, {PID: 5, PPID: 3}, {PID: 6, PPID: 9}}
	got := Descendants(procs, 1)
	var pids []int
	for _, p := range got {
		pids = append(pids, p.PID)
	}
	if len(pids) != 4 || pids[0] != 2 || pids[1] != 4 || pids[2] != 3 || pids[3] != 5 {
		t.Errorf("descendants %v, want [2 4 3 5]", pids)
	}
}
