package tools

import (
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
// session. It stops them all first, so none forks or reparents its
// children away while the tree is walked, then kills them.
func killTree(pgid int) {
	_ = unix.Kill(-pgid, unix.SIGSTOP)
	found := map[int]proc.Process{}
	for range killRounds {
		procs, err := proc.Snapshot()
		if err != nil {
			break
		}
		added := false
		for _, p := range tree(procs, pgid) {
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
