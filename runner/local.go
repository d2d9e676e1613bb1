package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"lane/agent"
	"lane/internal/proc"
	"lane/provider"
	"lane/trace"
)

// LocalOptions describe one task for lane's own agent loop.
type LocalOptions struct {
	Label       string // the model as recorded: "ollama:qwen2.5-coder:7b"
	Agent       agent.Config
	Prompt      string
	Watchdogs   Watchdogs
	ParentRunID string
	Capability  trace.Capability
}

// RunLocal runs the task in lane's own agent loop and records it like any
// other run. The error is non-nil only when lane itself failed.
func RunLocal(ctx context.Context, o LocalOptions, rec Recorder) (*trace.Run, error) {
	run := &trace.Run{
		ID:          trace.NewRunID(),
		ParentRunID: o.ParentRunID,
		Attempt:     1,
		Status:      trace.StatusRunning,
		Runtime:     "local",
		Model:       o.Label,
		Dir:         o.Agent.Dir,
		Prompt:      o.Prompt,
		SessionID:   o.Agent.SessionID,
		StartedAt:   time.Now().UTC(),
		Capability:  o.Capability,
		OwnerPID:    os.Getpid(),
	}
	run.OwnerStart, _ = proc.StartTime(run.OwnerPID)
	if err := rec.BeginRun(ctx, run); err != nil {
		return run, fmt.Errorf("record run: %w", err)
	}

	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	wd := newActivityWatch(o.Watchdogs, func(cause error) { cancel(cause) })
	defer wd.stop()

	var (
		mu     sync.Mutex // subagents and tool output may emit from other goroutines
		seq    int64
		recErr error
	)
	emit := func(ev trace.Event) {
		mu.Lock()
		defer mu.Unlock()
		seq++
		ev.RunID, ev.Seq, ev.Time = run.ID, seq, time.Now().UTC()
		ev.CapOutput(MaxEventOutput)
		wd.observe(ev)
		if ev.Kind == trace.KindSession && ev.SessionID != "" {
			run.SessionID = ev.SessionID
		}
		if err := rec.Event(ev); err != nil && recErr == nil {
			recErr = err
		}
	}
	res := agent.Run(ctx, o.Agent, o.Prompt, emit)

	run.SessionID = res.SessionID
	run.Usage, run.Turns, run.ToolCalls = res.Usage, res.Turns, res.ToolCalls
	run.CostUSD, run.CostEstimate = res.CostUSD, !res.CostKnown
	run.ResultText = res.Text
	judgeLocal(run, res, context.Cause(ctx))
	run.EndedAt = time.Now().UTC()
	run.DurationMS = run.EndedAt.Sub(run.StartedAt).Milliseconds()
	if run.Status != trace.StatusSucceeded && run.ErrorMessage != "" {
		emit(trace.Event{Kind: trace.KindError, ErrorKind: run.ErrorKind, Text: run.ErrorMessage})
	}
	if err := rec.EndRun(context.WithoutCancel(ctx), run); err != nil {
		return run, fmt.Errorf("record end of run: %w", err)
	}
	if recErr != nil {
		return run, fmt.Errorf("record events: %w", recErr)
	}
	return run, nil
}

// judgeLocal sets the run's status from the loop's result and from what
// stopped it.
func judgeLocal(run *trace.Run, res agent.Result, stopCause error) {
	var timeout *TimeoutError
	switch {
	case errors.As(stopCause, &timeout):
		run.Status, run.ErrorKind, run.ErrorMessage = trace.StatusTimedOut, trace.ErrorTimeout, timeout.Error()
		run.ErrorHint = "the model server may be hanging; raise --idle-timeout or --hard-timeout"
		return
	case stopCause != nil:
		run.Status, run.ErrorKind, run.ErrorMessage = trace.StatusCancelled, trace.ErrorCancelled, ErrCancelled.Error()
		return
	}
	switch res.StopReason {
	case "done":
		run.Status = trace.StatusSucceeded
	case "max_turns":
		run.Status, run.ErrorKind = trace.StatusFailed, trace.ErrorMaxTurns
		run.ErrorMessage = fmt.Sprintf("reached the turn limit (%d turns)", res.Turns)
		run.ErrorHint = "raise --max-turns"
	case "max_cost":
		run.Status, run.ErrorKind = trace.StatusFailed, trace.ErrorAgent
		run.ErrorMessage = fmt.Sprintf("stopped at the cost limit ($%.4f spent)", res.CostUSD)
		run.ErrorHint = "raise --max-cost"
	default:
		run.Status, run.ErrorKind = trace.StatusFailed, trace.ErrorAgent
		run.ErrorMessage = "the agent loop stopped: " + res.StopReason
		var pe *provider.Error
		if errors.As(res.Err, &pe) {
			run.ErrorMessage, run.ErrorHint = pe.Error(), pe.Hint
			switch pe.Kind {
			case provider.ErrAuth:
				run.ErrorKind = trace.ErrorAuth
			case provider.ErrRateLimited, provider.ErrServer, provider.ErrUnreachable:
				run.ErrorKind = trace.ErrorAPI
			}
		} else if res.Err != nil {
			run.ErrorMessage = res.Err.Error()
		}
	}
}

// activityWatch is the local loop's watchdog: the same first-byte, idle
// and hard timeouts as a runtime process gets, where an event is a byte and
// a pending tool call keeps the run alive.
type activityWatch struct {
	wd      Watchdogs
	fire    func(error)
	start   time.Time
	mu      sync.Mutex
	last    time.Time
	seen    bool
	pending map[string]bool
	timer   *time.Timer
	stopped bool
}

func newActivityWatch(wd Watchdogs, fire func(error)) *activityWatch {
	w := &activityWatch{wd: wd, fire: fire, start: time.Now(), pending: map[string]bool{}}
	w.mu.Lock()
	w.timer = time.AfterFunc(time.Hour, w.check)
	w.arm()
	w.mu.Unlock()
	return w
}

func (w *activityWatch) observe(ev trace.Event) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.last, w.seen = time.Now(), true
	switch ev.Kind {
	case trace.KindToolCall:
		w.pending[ev.ToolUseID] = true
	case trace.KindToolResult:
		delete(w.pending, ev.ToolUseID)
	}
	w.arm()
}

// arm sets the timer to the nearest deadline; w.mu is held.
func (w *activityWatch) arm() {
	if w.stopped {
		return
	}
	next, ok := w.deadline()
	if !ok {
		w.timer.Stop()
		return
	}
	w.timer.Reset(time.Until(next))
}

// deadline is the nearest watchdog deadline and its error; w.mu is held.
func (w *activityWatch) deadline() (time.Time, bool) {
	var d time.Time
	set := func(t time.Time) {
		if d.IsZero() || t.Before(d) {
			d = t
		}
	}
	if w.wd.Hard > 0 {
		set(w.start.Add(w.wd.Hard))
	}
	if !w.seen && w.wd.FirstByte > 0 {
		set(w.start.Add(w.wd.FirstByte))
	}
	if w.seen && len(w.pending) == 0 && w.wd.Idle > 0 {
		set(w.last.Add(w.wd.Idle))
	}
	return d, !d.IsZero()
}

func (w *activityWatch) check() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		return
	}
	now := time.Now()
	var cause error
	switch {
	case w.wd.Hard > 0 && !now.Before(w.start.Add(w.wd.Hard)):
		cause = &TimeoutError{Watchdog: WatchdogHard, After: w.wd.Hard}
	case !w.seen && w.wd.FirstByte > 0 && !now.Before(w.start.Add(w.wd.FirstByte)):
		cause = &TimeoutError{Watchdog: WatchdogFirstByte, After: w.wd.FirstByte}
	case w.seen && len(w.pending) == 0 && w.wd.Idle > 0 && !now.Before(w.last.Add(w.wd.Idle)):
		cause = &TimeoutError{Watchdog: WatchdogIdle, After: w.wd.Idle}
	}
	if cause == nil {
		w.arm()
		return
	}
	w.stopped = true
	w.fire(cause)
}

func (w *activityWatch) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopped = true
	w.timer.Stop()
}

// Transcript decodes a transcript event's raw JSON for lane resume.
func Transcript(ev trace.Event) ([]provider.Message, error) {
	var msgs []provider.Message
	if err := json.Unmarshal(ev.Raw, &msgs); err != nil {
		return nil, fmt.Errorf("decode transcript of run %s: %w", ev.RunID, err)
	}
	return msgs, nil
}
