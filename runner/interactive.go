package runner

import (
	"context"
	"io"
	"time"

	"lane/interact"
	"lane/trace"
)

// DefaultLinger is how long an interrupted run stays open for a follow-up
// message before it ends.
const DefaultLinger = 2 * time.Minute

// interactive reports whether a run can reach a person: it has a desk.
func (o Options) interactive() bool { return o.Desk != nil }

// twoWay reports whether a run is driven two-way on a runtime where that is
// a choice (Codex's app-server, the ACP runtimes, against their JSON stream
// modes): a person may steer it (Attended, lane run) or its mode asks. A
// bench's unattended attempts keep the stream modes, which a person can
// still cancel.
func (o Options) twoWay() bool { return o.interactive() && (o.Attended || o.mode().Asks()) }

// mode is the run's permission mode (bypassPermissions when unset).
func (o Options) mode() interact.Mode {
	if o.PermissionMode == "" {
		return interact.ModeBypass
	}
	return interact.Mode(o.PermissionMode)
}

// policy is the run's permission mode and rules, for the runtimes whose
// tool calls lane judges itself (the local loop, the ACP runtimes). The
// rules were checked when the options were made (see CheckPermissions).
func (o Options) policy() *interact.Policy {
	allow, _ := interact.ParseRules(o.AllowedTools)
	deny, _ := interact.ParseRules(o.DenyRules)
	return interact.NewPolicy(o.mode(), allow, deny, append([]string{o.Dir}, o.AddDirs...))
}

// CheckPermissions checks the permission mode and rules of o.
func CheckPermissions(o Options) error {
	if _, err := interact.ParseMode(string(o.mode())); err != nil {
		return &ConfigError{Err: err}
	}
	for _, list := range [][]string{o.AllowedTools, o.DenyRules} {
		if _, err := interact.ParseRules(list); err != nil {
			return &ConfigError{Err: err}
		}
	}
	return nil
}

// newGate is the way to a person of the run: its policy, the desk, and
// emit to record each request and decision among the run's events.
func (o Options) newGate(run *trace.Run, emit func(trace.Event)) *interact.Gate {
	return &interact.Gate{
		Policy: o.policy(), Desk: o.Desk, Timeout: o.ApprovalTimeout,
		RunID: func() string { return run.ID }, Emit: emit,
	}
}

// linger is how long an interrupted run waits for a follow-up.
func (o Options) linger() time.Duration {
	if o.Linger > 0 {
		return o.Linger
	}
	return DefaultLinger
}

// A dialog is the two-way side of a runtime process: lane writes its stdin
// (the task, answers to its requests, follow-up messages, interrupts)
// while supervise reads its stdout. A runtime whose entry has newDialog is
// run with its stdin on a pipe that the dialog owns.
type dialog interface {
	// begin runs the dialog once the process has started: it writes the
	// opening, answers, relays steering, and closes stdin when the run is
	// over (the runtime then exits). It returns when ctx ends; supervise
	// waits for it, so it must not block past that.
	begin(ctx context.Context, stdin io.WriteCloser, t talk)
	// observe sees every event read from stdout, in order, before it is
	// recorded. It must not block: hand the event to begin's goroutine.
	observe(ev trace.Event)
}

// sourcer is a dialog that reads stdout itself (a JSON-RPC connection).
type sourcer interface {
	source(stdout io.Reader) EventSource
}

// amender is a dialog that rewrites events in place before anything sees
// them (an acknowledgment on stdout that is the event of a delivery).
type amender interface {
	amend(ev *trace.Event)
}

// worker is a dialog that keeps its own account of the work in flight
// besides tool calls (see newWatch), in place of processWork's.
type worker interface {
	work(ev trace.Event) (key string, opens, closes bool)
}

// asider is a dialog whose protocol lines say nothing of whether the
// runtime has given its final word: they leave the run's settled state as
// it was (see processAttempt).
type asider interface {
	aside(ev trace.Event) bool
}

// talk is what a dialog may do to its run besides writing stdin.
type talk struct {
	// post records an event of lane's (a request, a decision, a message
	// delivered) among the runtime's, in order. It returns false once the
	// run is over.
	post func(trace.Event) bool
	// stop stops the runtime with cause (a person cancelled the run).
	stop func(cause error)
}
