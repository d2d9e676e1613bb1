package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"lane/internal/proc"
	"lane/trace"
)

// attempt is one invocation of an agent CLI, described for runAttempt: what
// to start, how to read it and how to judge it. Each runtime fills one in.
type attempt struct {
	run       *trace.Run // the record so far; runAttempt sets its id, times and owner
	inv       Invocation
	watchdogs Watchdogs
	newSource func(io.Reader) EventSource
	// observe sees every event before it is recorded; a non-nil result stops
	// the run with that cause.
	observe func(ev trace.Event) error
	// amend, when set, corrects an event before anything sees it.
	amend func(ev *trace.Event)
	hooks watchHooks
	// finish judges the ended run from how the process ended and fills in
	// its accounting. It is not called when the process could not start.
	finish func(run *trace.Run, ex Exit)
	// startHint is the hint for a runtime that could not be started.
	startHint string
}

// runAttempt records, runs and judges one attempt. The error is non-nil
// only when lane itself failed (the recorder); the run's own failure is in
// its Status.
func runAttempt(ctx context.Context, a *attempt, rec Recorder) (*trace.Run, error) {
	run := a.run
	run.ID = trace.NewRunID()
	run.Status = trace.StatusRunning
	run.StartedAt = time.Now().UTC()
	run.OwnerPID = os.Getpid()
	run.OwnerStart, _ = proc.StartTime(run.OwnerPID)
	if err := rec.BeginRun(ctx, run); err != nil {
		return run, fmt.Errorf("record run: %w", err)
	}

	var (
		seq    int64
		recErr error
		record = func(ev trace.Event) {
			seq++
			ev.RunID, ev.Seq, ev.Time = run.ID, seq, time.Now().UTC()
			if err := rec.Event(ev); err != nil && recErr == nil {
				recErr = err
			}
		}
	)
	emit := func(ev trace.Event) error {
		if a.amend != nil {
			a.amend(&ev)
		}
		cause := a.observe(ev)
		record(ev)
		if ev.Kind == trace.KindSession && ev.SessionID != "" {
			run.SessionID = ev.SessionID
		}
		return cause
	}
	ex, err := supervise(ctx, supervision{inv: a.inv, watchdogs: a.watchdogs, shim: shimExe, newSource: a.newSource, emit: emit, settled: a.hooks.settled, work: a.hooks.work})
	if err != nil {
		run.Status, run.ErrorKind = trace.StatusFailed, trace.ErrorCrash
		run.ErrorMessage = err.Error()
		run.ErrorHint = a.startHint
	} else {
		if ex.Settled && isIdleTimeout(ex.StopCause) {
			slog.Debug("runtime lingered after its result", "run", run.ID, "cause", ex.StopCause)
			ex.StopCause, ex.Code = nil, 0
		}
		a.finish(run, ex)
	}
	run.EndedAt = time.Now().UTC()
	run.DurationMS = run.EndedAt.Sub(run.StartedAt).Milliseconds()
	if run.Status != trace.StatusSucceeded && run.ErrorMessage != "" {
		record(trace.Event{Kind: trace.KindError, ErrorKind: run.ErrorKind, Text: run.ErrorMessage})
	}
	if err := rec.EndRun(context.WithoutCancel(ctx), run); err != nil {
		return run, fmt.Errorf("record end of run: %w", err)
	}
	if recErr != nil {
		return run, fmt.Errorf("record events: %w", recErr)
	}
	return run, nil
}

// retrying runs attempts until one is not worth retrying or retries are
// spent, and returns the last. once runs attempt number n (from 1) linked to
// parent; between attempts next prepares the following one from the run
// that just failed (to continue its session rather than start over).
func retrying(ctx context.Context, retries int, backoff time.Duration, parentID string,
	once func(parent string, n int) (*trace.Run, error), next func(failed *trace.Run)) (*trace.Run, error) {
	if backoff <= 0 {
		backoff = 2 * time.Second
	}
	first := ""
	for n := 1; ; n++ {
		parent := parentID
		if first != "" {
			parent = first
		}
		run, err := once(parent, n)
		if err != nil {
			return run, err
		}
		if first == "" {
			first = run.ID
		}
		if n > retries || !retryable(run) || ctx.Err() != nil {
			return run, nil
		}
		next(run)
		select {
		case <-ctx.Done():
			return run, nil
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, time.Minute)
	}
}

func retryable(r *trace.Run) bool {
	switch r.ErrorKind {
	case trace.ErrorTimeout, trace.ErrorAPI, trace.ErrorCrash:
		return r.Status != trace.StatusCancelled
	}
	return false
}

// judgeStop judges a run that lane stopped (a watchdog, a refused key, the
// turn limit, a person); it reports false when the runtime ended on its own.
func judgeStop(run *trace.Run, ex Exit, authHint string) bool {
	code := ex.Code
	run.ExitCode = &code
	var (
		timeout  *TimeoutError
		auth     *AuthError
		maxTurns *MaxTurnsError
	)
	switch {
	case errors.As(ex.StopCause, &timeout):
		run.Status, run.ErrorKind = trace.StatusTimedOut, trace.ErrorTimeout
		run.ErrorMessage = timeout.Error()
		switch timeout.Watchdog {
		case WatchdogIdle:
			run.ErrorHint = "the model API may be hanging; raise --idle-timeout if the runtime is legitimately quiet"
		case WatchdogFirstByte:
			run.ErrorHint = "the runtime did not start; run it by hand to see why, or raise --first-byte-timeout"
		default:
			run.ErrorHint = "raise --hard-timeout, or split the task"
		}
	case errors.As(ex.StopCause, &auth):
		run.Status, run.ErrorKind = trace.StatusFailed, trace.ErrorAuth
		run.ErrorMessage, run.ErrorHint = auth.Error(), authHint
	case errors.As(ex.StopCause, &maxTurns):
		run.Status, run.ErrorKind = trace.StatusFailed, trace.ErrorMaxTurns
		run.ErrorMessage, run.ErrorHint = maxTurns.Error(), "raise --max-turns, or split the task"
	case ex.StopCause != nil:
		run.Status, run.ErrorKind = trace.StatusCancelled, trace.ErrorCancelled
		run.ErrorMessage = ex.StopCause.Error()
	default:
		return false
	}
	return true
}

func isIdleTimeout(err error) bool {
	var te *TimeoutError
	return errors.As(err, &te) && te.Watchdog == WatchdogIdle
}
