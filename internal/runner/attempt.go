package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/lanehq/lane/internal/changes"
	"github.com/lanehq/lane/internal/proc"
	"github.com/lanehq/lane/internal/record"
)

// attempt is one try at a task, described for runAttempt: how to run it
// and how to judge it. Each runtime's entry builds its own (processAttempt
// for the agent CLIs, localAttempt for lane's own loop).
type attempt struct {
	run *record.Run // the record so far; runAttempt sets its id, times and owner
	// execute runs the attempt, handing each event to emit in order (emit
	// may return a cause to stop on), and reports how it ended. Its error
	// means the attempt could not start.
	execute func(ctx context.Context, emit func(record.Event) error) (Exit, error)
	// observe sees every event before it is recorded; a non-nil result stops
	// the run with that cause.
	observe func(ev record.Event) error
	// amend, when set, corrects an event before anything sees it.
	amend func(ev *record.Event)
	// afterExit, when set, reads what the runtime left beside its stream
	// once it has exited (its session log's usage limits): the events to
	// record before the run is judged.
	afterExit func(run *record.Run) []record.Event
	// finish judges the ended run from how it ended and fills in its
	// accounting. It is not called when the attempt could not start.
	finish func(run *record.Run, ex Exit)
	// startHint is the hint for a runtime that could not be started.
	startHint string
	// next prepares the options of the attempt after this one failed, to
	// continue the session it established rather than start over.
	next func(o *Options, failed *record.Run)
	// cleanup, when set, removes what the attempt made for itself.
	cleanup func()
	// changes snapshots the run's folder before and after it; nil records
	// no changes.
	changes *changes.Snapshotter
}

// LoopAttempt is one try at a task by a loop that runs inside lane (a
// Runtime's Loop): the run path records, watches the folder of and ends it
// as it does an agent CLI's.
type LoopAttempt struct {
	Run *record.Run // the record so far: its runtime, model, folder, capability
	// Execute runs the attempt, handing each event to emit in order, and
	// reports how it ended (Exit.StopCause: what stopped it). Its error
	// means the attempt could not start.
	Execute func(ctx context.Context, emit func(record.Event) error) (Exit, error)
	// Finish judges the ended run and fills in its accounting.
	Finish func(run *record.Run, ex Exit)
	// Next, when set, prepares the options of the attempt after this one
	// failed, to continue the conversation rather than start over.
	Next func(o *Options, failed *record.Run)
}

// loopAttempt is the attempt of a loop inside lane: lane meters its usage
// as it does an agent CLI's, and judges a stop at a limit itself.
func loopAttempt(la *LoopAttempt, o Options) *attempt {
	meter := NewMeter(o, nil, false)
	return &attempt{
		run: la.Run, execute: la.Execute, next: la.Next,
		observe: func(ev record.Event) error { return meter.Observe(ev) },
		finish: func(run *record.Run, ex Exit) {
			la.Finish(run, ex)
			judgeLimit(run, ex.StopCause)
		},
	}
}

// runAttempt records, runs and judges one attempt. The error is non-nil
// only when lane itself failed (the recorder); the run's own failure is in
// its Status.
func runAttempt(ctx context.Context, a *attempt, rec Recorder) (*record.Run, error) {
	if a.cleanup != nil {
		defer a.cleanup()
	}
	run := a.run
	run.ID = record.NewRunID()
	run.Status = record.StatusRunning
	run.StartedAt = time.Now().UTC()
	run.OwnerPID = os.Getpid()
	run.OwnerStart, _ = proc.StartTime(run.OwnerPID)
	if err := rec.BeginRun(ctx, run); err != nil {
		return run, fmt.Errorf("record run: %w", err)
	}

	var (
		seq    int64
		recErr error
		keep   = func(ev record.Event) {
			seq++
			ev.RunID, ev.Seq, ev.Time = run.ID, seq, time.Now().UTC()
			if err := rec.Event(ev); err != nil && recErr == nil {
				recErr = err
			}
		}
	)
	emit := func(ev record.Event) error {
		if a.amend != nil {
			a.amend(&ev)
		}
		if ev.RateLimit != nil {
			ev.RateLimit.Runtime, ev.RateLimit.Account = run.Runtime, run.Account
		}
		var cause error
		if a.observe != nil {
			cause = a.observe(ev)
		}
		keep(ev)
		noteRunEvent(run, ev)
		return cause
	}
	watch := watchFolder(ctx, a.changes, run.Dir)
	ex, err := a.execute(ctx, emit)
	if err != nil {
		run.Status, run.ErrorKind = record.StatusFailed, record.ErrorCrash
		run.ErrorMessage = err.Error()
		run.ErrorHint = a.startHint
	} else {
		// A runtime stopped for outliving its dialog had had its say: the
		// conversation was over; so had one that lingers after its result.
		if errors.Is(ex.StopCause, ErrOutlivedDialog) || (ex.Settled && isIdleTimeout(ex.StopCause)) {
			slog.Debug("runtime lingered after its result", "run", run.ID, "cause", ex.StopCause)
			ex.StopCause, ex.Code = nil, 0
		}
		if a.afterExit != nil {
			for _, ev := range a.afterExit(run) {
				_ = emit(ev) // the run has ended: a cause to stop on changes nothing
			}
		}
		a.finish(run, ex)
	}
	run.Changes = watch.end(ctx)
	run.EndedAt = time.Now().UTC()
	run.DurationMS = run.EndedAt.Sub(run.StartedAt).Milliseconds()
	if run.Status != record.StatusSucceeded && run.ErrorMessage != "" {
		keep(record.Event{Kind: record.KindError, ErrorKind: run.ErrorKind, Text: run.ErrorMessage})
	}
	if err := rec.EndRun(context.WithoutCancel(ctx), run); err != nil {
		return run, fmt.Errorf("record end of run: %w", err)
	}
	if recErr != nil {
		return run, fmt.Errorf("record events: %w", recErr)
	}
	return run, nil
}

// judgeStop judges a run that lane stopped (a watchdog, a refused key, a
// limit, a person); it reports false when the runtime ended on its own.
func judgeStop(run *record.Run, ex Exit, authHint string) bool {
	code := ex.Code
	run.ExitCode = &code
	var (
		timeout *TimeoutError
		auth    *AuthError
	)
	switch {
	case judgeLimit(run, ex.StopCause):
	case errors.As(ex.StopCause, &timeout):
		run.Status, run.ErrorKind = record.StatusTimedOut, record.ErrorTimeout
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
		run.Status, run.ErrorKind = record.StatusFailed, record.ErrorAuth
		run.ErrorMessage, run.ErrorHint = auth.Error(), authHint
	case ex.StopCause != nil:
		run.Status, run.ErrorKind = record.StatusCancelled, record.ErrorCancelled
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

// noteRunEvent keeps what the run record takes from its events as they are
// recorded, live or rebuilt (Redecode): the session and the counts of
// requests for approval and their answers.
func noteRunEvent(run *record.Run, ev record.Event) {
	switch {
	case ev.Kind == record.KindSession && ev.SessionID != "":
		run.SessionID = ev.SessionID
	case ev.Kind == record.KindPermissionRequest:
		run.Permissions.Requests++
	case ev.Kind == record.KindPermissionDecision && ev.Permission != nil && ev.Permission.Allow:
		run.Permissions.Allowed++
	case ev.Kind == record.KindPermissionDecision:
		run.Permissions.Denied++
	case ev.RateLimit != nil:
		run.Limits = record.MergeLimits(run.Limits, ev.RateLimit.Windows)
	case ev.Kind == record.KindUsage && ev.Usage != nil && ev.ParentToolUseID == "":
		if p := ev.Usage.Prompt(); p > 0 {
			run.ContextTokens = p
		}
	case ev.Kind == record.KindResult && ev.Result != nil && ev.Result.ContextWindow > 0:
		run.ContextWindow = ev.Result.ContextWindow
	}
}
