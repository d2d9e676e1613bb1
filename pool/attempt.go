package pool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"lane/bench"
	"lane/store"
	"lane/trace"
)

// attemptWorker is the River worker of attempt jobs.
type attemptWorker struct {
	river.WorkerDefaults[attemptArgs]
	w *Worker
}

// recordFor bounds how long a finished attempt waits for the database to
// take its result (it may be restarting, or out of reach for a while).
const recordFor = 10 * time.Minute

func (aw *attemptWorker) Work(ctx context.Context, job *river.Job[attemptArgs]) error {
	w := aw.w
	select {
	case w.slots <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-w.slots }()

	key := job.Args.key()
	lease, err := w.Store.AcquireLease(ctx, key, w.Name, w.Lease, w.Now())
	var held *store.LeaseHeldError
	switch {
	case errors.Is(err, store.ErrAttemptDone):
		return nil // a job handed out again: the attempt has its result
	case errors.As(err, &held):
		return river.JobSnooze(time.Until(held.Until) + time.Second)
	case err != nil:
		return err
	}
	task, b, err := w.task(ctx, key)
	if err != nil {
		_ = w.Store.HandBack(context.WithoutCancel(ctx), lease)
		return err
	}
	a := trace.Attempt{Status: trace.AttemptRunning, StartedAt: w.Now()}
	if skip, err := w.overBudget(ctx, b); err != nil {
		_ = w.Store.HandBack(context.WithoutCancel(ctx), lease)
		return err
	} else if skip {
		a.Status = trace.AttemptSkipped
	} else {
		w.runLeased(ctx, lease, task, &a)
	}
	if ctx.Err() != nil && a.Status != trace.AttemptSkipped {
		// The worker is leaving: the attempt goes back to the queue.
		if err := w.Store.HandBack(context.WithoutCancel(ctx), lease); err != nil {
			w.Log.Warn("worker: attempt not handed back; it returns once its lease lapses", "attempt", key.String(), "err", err)
		}
		return ctx.Err()
	}
	a.EndedAt = w.Now()
	return w.record(ctx, job, lease, &a)
}

// runLeased runs the attempt while renewing its lease; a lease taken over
// (the worker was cut off past its expiry) cancels the run.
func (w *Worker) runLeased(ctx context.Context, l store.Lease, task *bench.Task, a *trace.Attempt) {
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	done := make(chan struct{})
	renewed := make(chan struct{})
	go func() {
		defer close(renewed)
		t := time.NewTicker(w.Lease / 3)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			err := w.Store.RenewLease(runCtx, &l, w.Lease, w.Now())
			if errors.Is(err, store.ErrFenced) {
				cancel(store.ErrFenced)
				return
			}
			if err != nil && runCtx.Err() == nil {
				w.Log.Warn("worker: lease not renewed", "attempt", l.Key.String(), "err", err)
			}
		}
	}()
	w.Run(runCtx, l, task, a)
	close(done)
	<-renewed
}

// record completes the attempt and its job in one transaction, fenced by
// the lease, retrying while the database is out of reach.
func (w *Worker) record(ctx context.Context, job *river.Job[attemptArgs], l store.Lease, a *trace.Attempt) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordFor)
	defer cancel()
	delay := 200 * time.Millisecond
	for {
		err := w.Store.CompleteAttempt(ctx, l, a, func(tx pgx.Tx) error {
			_, err := river.JobCompleteTx[*riverpgxv5.Driver](ctx, tx, job)
			return err
		})
		switch {
		case err == nil:
			w.count(a)
			return nil
		case errors.Is(err, store.ErrFenced):
			w.Log.Warn("worker: result refused: another worker holds the attempt now", "attempt", l.Key.String())
			return nil
		case ctx.Err() != nil:
			return fmt.Errorf("record attempt %s: %w", l.Key, err)
		}
		w.Log.Warn("worker: result not recorded yet, retrying", "attempt", l.Key.String(), "err", err, "in", delay)
		select {
		case <-ctx.Done():
		case <-time.After(delay):
		}
		delay = min(2*delay, 5*time.Second)
	}
}

// task returns the attempt's task and bench, from the suite the bench
// stored.
func (w *Worker) task(ctx context.Context, key store.AttemptKey) (*bench.Task, *trace.Bench, error) {
	b, err := w.Store.GetBench(ctx, key.BenchID)
	if err != nil {
		return nil, nil, err
	}
	var s bench.Suite
	if err := json.Unmarshal(b.Suite, &s); err != nil {
		return nil, nil, fmt.Errorf("bench %s: read its suite: %w", b.ID, err)
	}
	for i := range s.Tasks {
		if s.Tasks[i].ID == key.TaskID {
			return &s.Tasks[i], b, nil
		}
	}
	return nil, nil, fmt.Errorf("bench %s has no task %s", b.ID, key.TaskID)
}

// overBudget says whether the bench has spent its --max-cost, across every
// worker of the pool.
func (w *Worker) overBudget(ctx context.Context, b *trace.Bench) (bool, error) {
	if b.MaxCostUSD <= 0 {
		return false, nil
	}
	spent, err := w.Store.BenchSpent(ctx, b.ID)
	return spent >= b.MaxCostUSD, err
}
