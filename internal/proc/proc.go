// Package proc is lane's one process lifecycle, and what it reads of Linux's
// /proc. Start starts a command in a process group or session of its own,
// on a locked OS thread when a parent-death signal or a confinement of the
// thread needs one; Stop interrupts it, gives it a grace period, then
// kills it and everything it started; Kill freezes and kills a whole tree,
// however its members moved away. Every process lane starts and must be
// able to end goes through here: the supervisor of agent CLIs, the shim
// between lane and a runtime, and the bash tool.
//
// The rest reads /proc: process start times (to tell a live owner from a
// reused pid) and process trees (to find everything a runtime started).
package proc

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
)

// stat holds the fields of /proc/PID/stat that lane needs.
type stat struct {
	ppid  int
	pgid  int
	state byte
	start uint64 // clock ticks after boot
}

func readStat(pid int) (stat, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return stat{}, err
	}
	// The command name (field 2) may hold spaces and parentheses; the fields
	// after it start after the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return stat{}, fmt.Errorf("parse /proc/%d/stat", pid)
	}
	fields := bytes.Fields(b[i+2:])
	// fields[0] is field 3 (state); starttime is field 22.
	if len(fields) < 20 {
		return stat{}, fmt.Errorf("parse /proc/%d/stat: %d fields", pid, len(fields))
	}
	var s stat
	s.state = fields[0][0]
	if s.ppid, err = strconv.Atoi(string(fields[1])); err != nil {
		return stat{}, fmt.Errorf("parse ppid of %d: %w", pid, err)
	}
	if s.pgid, err = strconv.Atoi(string(fields[2])); err != nil {
		return stat{}, fmt.Errorf("parse pgid of %d: %w", pid, err)
	}
	if s.start, err = strconv.ParseUint(string(fields[19]), 10, 64); err != nil {
		return stat{}, fmt.Errorf("parse start time of %d: %w", pid, err)
	}
	return s, nil
}

// StartTime returns when pid started, in clock ticks after boot. Together
// with the pid it names one process for good: pids are reused, start times
// of a reused pid differ.
func StartTime(pid int) (uint64, error) {
	s, err := readStat(pid)
	if err != nil {
		return 0, err
	}
	return s.start, nil
}

// Alive reports whether the process pid that started at start still runs
// (a zombie counts as gone). A start of 0 skips the start-time check.
func Alive(pid int, start uint64) bool {
	if pid <= 0 {
		return false
	}
	s, err := readStat(pid)
	if err != nil {
		return false
	}
	if s.state == 'Z' || s.state == 'X' {
		return false
	}
	return start == 0 || s.start == start
}

// Process is one entry of a process table snapshot.
type Process struct {
	PID, PPID, PGID int
	Start           uint64
}

// Started describes a child the caller has started and not yet waited for
// (so its pid is still its own), as Kill's Root: its pid, process group and
// start time, read from /proc.
func Started(pid int) Process {
	p := Process{PID: pid, PPID: os.Getpid(), PGID: pid}
	if s, err := readStat(pid); err == nil {
		p.PPID, p.PGID, p.Start = s.ppid, s.pgid, s.start
	}
	return p
}

// Snapshot lists every live process (zombies excluded).
func Snapshot() ([]Process, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("read /proc: %w", err)
	}
	out := make([]Process, 0, len(entries))
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		s, err := readStat(pid)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue // exited since ReadDir
			}
			continue
		}
		if s.state == 'Z' || s.state == 'X' {
			continue
		}
		out = append(out, Process{PID: pid, PPID: s.ppid, PGID: s.pgid, Start: s.start})
	}
	return out, nil
}

// Descendants returns every process in procs that descends from root (root
// itself excluded), children before grandchildren.
func Descendants(procs []Process, root int) []Process {
	children := make(map[int][]Process)
	for _, p := range procs {
		children[p.PPID] = append(children[p.PPID], p)
	}
	var out []Process
	queue := []int{root}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		for _, c := range children[pid] {
			out = append(out, c)
			queue = append(queue, c.PID)
		}
	}
	return out
}
