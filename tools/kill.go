package tools

import (
	"bytes"
	"os"
	"strconv"

	"golang.org/x/sys/unix"

	"lane/internal/proc"
)

// killRounds bounds the /proc walks of killTree: each round stops what the
// last one found, so only processes forked before being stopped remain.
const killRounds = 10

// killTree kills the process group pgid and every process that descends
// from one of its members, also those that moved to another group or
// session, and every process whose environment holds the entry mark (set
// for the command, so it finds even a daemon that double-forked away). It
// stops them all first, so none forks or reparents its children away while
// the tree is walked, then kills them.
func killTree(pgid int, mark string) {
	_ = unix.Kill(-pgid, unix.SIGSTOP)
	found := map[int]proc.Process{}
	for range killRounds {
		procs, err := proc.Snapshot()
		if err != nil {
			break
		}
		added := false
		for _, p := range append(tree(procs, pgid), marked(procs, mark)...) {
			if _, ok := found[p.PID]; ok {
				continue
			}
			found[p.PID] = p
			added = true
			if proc.Alive(p.PID, p.Start) {
				_ = unix.Kill(p.PID, unix.SIGSTOP)
			}
		}
		if !added {
			break
		}
	}
	_ = unix.Kill(-pgid, unix.SIGKILL)
	for _, p := range found {
		if proc.Alive(p.PID, p.Start) {
			_ = unix.Kill(p.PID, unix.SIGKILL)
		}
	}
}

// tree is the members of group pgid (and its leader) with all their
// descendants.
func tree(procs []proc.Process, pgid int) []proc.Process {
	children := make(map[int][]proc.Process)
	var queue []proc.Process
	for _, p := range procs {
		children[p.PPID] = append(children[p.PPID], p)
		if p.PGID == pgid || p.PID == pgid {
			queue = append(queue, p)
		}
	}
	seen := make(map[int]bool)
	var out []proc.Process
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if seen[p.PID] {
			continue
		}
		seen[p.PID] = true
		out = append(out, p)
		queue = append(queue, children[p.PID]...)
	}
	return out
}

// marked is the processes of procs whose environment holds the entry mark.
func marked(procs []proc.Process, mark string) []proc.Process {
	if mark == "" {
		return nil
	}
	want := []byte(mark)
	self := os.Getpid()
	var out []proc.Process
	for _, p := range procs {
		if p.PID == self {
			continue
		}
		env, err := os.ReadFile("/proc/" + strconv.Itoa(p.PID) + "/environ")
		if err != nil {
			continue
		}
		for entry := range bytes.SplitSeq(env, []byte{0}) {
			if bytes.Equal(entry, want) {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

// killHolders kills every process but lane that has the terminal tty open:
// what a command left behind after leaving its group and its parent (setsid
// and a double fork), still writing to the terminal.
func killHolders(tty string) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return
	}
	self := os.Getpid()
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		dir := "/proc/" + e.Name() + "/fd"
		fds, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, fd := range fds {
			if link, err := os.Readlink(dir + "/" + fd.Name()); err == nil && link == tty {
				_ = unix.Kill(pid, unix.SIGKILL)
				break
			}
		}
	}
}
