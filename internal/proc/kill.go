package proc

import (
	"bytes"
	"os"
	"strconv"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

const (
	// freezeRounds bounds the /proc walks that stop the targets: each
	// round stops what the last one found, so only processes forked before
	// being stopped remain to be found.
	freezeRounds = 10
	// killRounds bounds the waits for killed processes to be gone (SIGKILL
	// is delivered asynchronously); each round walks /proc again and kills
	// whatever is still there.
	killRounds = 20
)

// Targets name the processes Kill reaches. Each process found brings its
// descendants and the other members of its process group. Kill never
// signals the caller, its ancestors or its process group.
type Targets struct {
	// Root is the process the caller started, if PID is not 0: it, its
	// group and its descendants. os/exec waits for it: Kill never reaps it.
	Root Process
	// Known are processes seen earlier, reached while they still run (the
	// same start time).
	Known []Process
	// Below, if not 0, reaches every descendant of that pid, not the pid
	// itself: a shim's own, which adopts what its runtime orphans.
	Below int
	// Env, if not "", reaches every process whose environment holds that
	// entry ("NAME=value"): it finds even a daemon that double-forked away.
	Env string
	// Holding, if not "", reaches every process with that file open (a
	// terminal's path): what left the tree but still writes to it.
	Holding string
}

// Kill kills the targets. It stops them first (SIGSTOP, their process
// groups too), walking /proc again until nothing new appears, so that none
// forks or moves its children away while the tree is walked; then it kills
// them all (SIGKILL), waits until none is left, and reaps those that were
// re-parented to the caller when it is a child subreaper. It returns the
// pids still alive after that, which should be none.
func Kill(t Targets) []int {
	k := newKiller(t)
	if k.onlyAGoneRoot() {
		return nil
	}
	if k.freeze() && len(k.found) == 0 {
		// A whole walk found none of the targets, so none is left to fork
		// another: the usual end of a command that left nothing behind.
		return nil
	}
	left := k.kill()
	k.reap()
	return left
}

// killer is one Kill: what it has found so far, and what it must spare.
type killer struct {
	t     Targets
	self  int
	group int          // the caller's process group
	spare map[int]bool // the caller and its ancestors
	found map[int]Process
}

func newKiller(t Targets) *killer {
	k := &killer{t: t, self: os.Getpid(), group: unix.Getpgrp(), spare: map[int]bool{}, found: map[int]Process{}}
	for pid := k.self; pid > 1 && !k.spare[pid]; {
		k.spare[pid] = true
		s, err := readStat(pid)
		if err != nil {
			break
		}
		pid = s.ppid
	}
	k.spare[1] = true
	return k
}

// freeze stops the targets, round after round, until a walk of /proc
// finds nothing new. It reports whether it walked /proc to that end.
func (k *killer) freeze() bool {
	// The root's group first, before the first walk: usually the bulk.
	if s, err := readStat(k.t.Root.PID); k.rootGroupIsOurs(s.start, err == nil) {
		_ = unix.Kill(-k.t.Root.PGID, unix.SIGSTOP)
	}
	for range freezeRounds {
		procs, err := Snapshot()
		if err != nil {
			return false
		}
		fresh := k.walk(procs)
		if len(fresh) == 0 {
			return true
		}
		k.signal(fresh, unix.SIGSTOP)
	}
	return false
}

// kill kills what was found, and whatever a new walk finds, until nothing
// is left or the rounds are spent; it returns the pids left.
func (k *killer) kill() []int {
	pause := time.Millisecond
	for round := 1; ; round++ {
		procs, err := Snapshot()
		if err != nil {
			procs = k.stillThere() // what was found, checked one by one
		}
		k.walk(procs)
		alive := k.alive(procs)
		if len(alive) == 0 {
			return nil
		}
		if round == killRounds {
			var left []int
			for _, p := range alive {
				left = append(left, p.PID)
			}
			return left
		}
		k.signal(alive, unix.SIGKILL)
		time.Sleep(pause)
		pause = min(2*pause, 16*time.Millisecond)
	}
}

// signal sends sig to the process groups of procs, then to each of procs.
func (k *killer) signal(procs []Process, sig unix.Signal) {
	groups := map[int]bool{}
	for _, p := range procs {
		if k.groupOK(p.PGID) && !groups[p.PGID] {
			groups[p.PGID] = true
			_ = unix.Kill(-p.PGID, sig)
		}
	}
	for _, p := range procs {
		_ = unix.Kill(p.PID, sig)
	}
}

func (k *killer) groupOK(pgid int) bool { return pgid > 1 && pgid != k.group && !k.spare[pgid] }

// rootGroupIsOurs says whether signals to the root's group reach the
// root's, given the start time of the process that holds the root's pid
// now (running says whether there is one). A group's number is a pid that
// cannot be reused while the group has members, so only a process of that
// pid with another start time shows that the group is gone and the number
// taken again.
func (k *killer) rootGroupIsOurs(start uint64, running bool) bool {
	r := k.t.Root
	if r.PID <= 0 || !k.groupOK(r.PGID) {
		return false
	}
	return r.PGID != r.PID || r.Start == 0 || !running || start == r.Start
}

// onlyAGoneRoot says the targets are the root alone and nothing of it is
// left: it has exited and its group has no members. A walk of /proc would
// then find nothing either (what it orphaned is reached only through its
// group), so Kill spares itself the walk: the usual end of a command that
// left nothing behind.
func (k *killer) onlyAGoneRoot() bool {
	t := k.t
	if t.Root.PID <= 0 || len(t.Known) > 0 || t.Below > 0 || t.Env != "" || t.Holding != "" {
		return false
	}
	s, err := readStat(t.Root.PID)
	if err == nil && (t.Root.Start == 0 || s.start == t.Root.Start) {
		return false // still there (perhaps a zombie not yet reaped)
	}
	if k.rootGroupIsOurs(s.start, err == nil) && unix.Kill(-t.Root.PGID, 0) != unix.ESRCH {
		return false
	}
	return true
}

// stillThere is the processes found that still run, for when /proc cannot
// be listed.
func (k *killer) stillThere() []Process {
	var out []Process
	for _, p := range k.found {
		if Alive(p.PID, p.Start) {
			out = append(out, p)
		}
	}
	return out
}

// walk finds the targets in procs and returns those it had not found
// before.
func (k *killer) walk(procs []Process) []Process {
	byPID := make(map[int]Process, len(procs))
	children := map[int][]Process{}
	members := map[int][]Process{}
	for _, p := range procs {
		byPID[p.PID] = p
		children[p.PPID] = append(children[p.PPID], p)
		members[p.PGID] = append(members[p.PGID], p)
	}
	same := func(want Process) []Process {
		if p, ok := byPID[want.PID]; ok && (want.Start == 0 || p.Start == want.Start) {
			return []Process{p}
		}
		return nil
	}
	var queue []Process
	if r := k.t.Root; r.PID > 0 {
		queue = append(queue, same(r)...)
		if now, ok := byPID[r.PID]; k.rootGroupIsOurs(now.Start, ok) {
			queue = append(queue, members[r.PGID]...)
		}
	}
	for _, p := range k.found {
		queue = append(queue, same(p)...) // their new children
	}
	for _, p := range k.t.Known {
		queue = append(queue, same(p)...)
	}
	if k.t.Below > 0 {
		queue = append(queue, children[k.t.Below]...)
	}
	queue = append(queue, k.marked(procs)...)
	queue = append(queue, k.holders(procs)...)

	var fresh []Process
	seen, groups := map[int]bool{}, map[int]bool{}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if seen[p.PID] || k.spare[p.PID] {
			continue
		}
		seen[p.PID] = true
		if _, ok := k.found[p.PID]; !ok {
			k.found[p.PID] = p
			fresh = append(fresh, p)
		}
		queue = append(queue, children[p.PID]...)
		if k.groupOK(p.PGID) && !groups[p.PGID] {
			groups[p.PGID] = true
			queue = append(queue, members[p.PGID]...)
		}
	}
	return fresh
}

// alive is the processes found that procs still holds.
func (k *killer) alive(procs []Process) []Process {
	var out []Process
	for _, p := range procs {
		if f, ok := k.found[p.PID]; ok && f.Start == p.Start {
			out = append(out, p)
		}
	}
	return out
}

// marked is the processes of procs not found yet whose environment holds
// the entry t.Env.
func (k *killer) marked(procs []Process) []Process {
	if k.t.Env == "" {
		return nil
	}
	want := []byte(k.t.Env)
	var out []Process
	for _, p := range procs {
		if _, ok := k.found[p.PID]; ok || k.spare[p.PID] {
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

// holders is the processes of procs not found yet that have the file
// t.Holding open.
func (k *killer) holders(procs []Process) []Process {
	if k.t.Holding == "" {
		return nil
	}
	var out []Process
	for _, p := range procs {
		if _, ok := k.found[p.PID]; ok || k.spare[p.PID] {
			continue
		}
		dir := "/proc/" + strconv.Itoa(p.PID) + "/fd/"
		fds, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, fd := range fds {
			if link, err := os.Readlink(dir + fd.Name()); err == nil && link == k.t.Holding {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

// reap collects the exit status of the killed processes that became the
// caller's children (it is a child subreaper), so they do not linger as
// zombies. The root is os/exec's to wait for, and a process that is not a
// subreaper has no other children to reap.
func (k *killer) reap() {
	if !isSubreaper() {
		return
	}
	for pid, p := range k.found {
		if pid == k.t.Root.PID {
			continue
		}
		if s, err := readStat(pid); err == nil && s.state == 'Z' && s.ppid == k.self && s.start == p.Start {
			var ws unix.WaitStatus
			_, _ = unix.Wait4(pid, &ws, unix.WNOHANG, nil)
		}
	}
}

// ReapOrphans collects the exit status of every child of the caller that
// has exited, except keep (which os/exec waits for): the orphans that a
// child subreaper adopts.
func ReapOrphans(keep int) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return
	}
	self := os.Getpid()
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == keep {
			continue
		}
		if s, err := readStat(pid); err == nil && s.state == 'Z' && s.ppid == self {
			var ws unix.WaitStatus
			_, _ = unix.Wait4(pid, &ws, unix.WNOHANG, nil)
		}
	}
}

func isSubreaper() bool {
	var v int32
	err := unix.Prctl(unix.PR_GET_CHILD_SUBREAPER, uintptr(unsafe.Pointer(&v)), 0, 0, 0)
	return err == nil && v != 0
}
