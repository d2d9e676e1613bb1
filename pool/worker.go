package pool

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"lane/bench"
	"lane/store"
	"lane/trace"
)

// DefaultLease is how long an attempt stays a worker's without a renewal;
// the worker renews it every third of that.
const DefaultLease = 30 * time.Second

// RunAttempt runs attempt a of task for the worker, under lease l, and
// sets a's outcome (bench.RunAttempt, with a RunFunc that records the runs
// with the worker's name and links them to l).
type RunAttempt func(ctx context.Context, l store.Lease, task *bench.Task, a *trace.Attempt)

// Worker is one lane worker: it takes the attempts of the runtimes it
// offers, at most Parallel at once.
type Worker struct {
	Store    *store.Store
	Name     string
	Runtimes []string
	Parallel int
	Lease    time.Duration
	Run      RunAttempt
	// RuntimeOf names the runtime of a bench's model, to enqueue again the
	// attempts of a lost worker.
	RuntimeOf func(model string) (string, error)
	Log       *slog.Logger
	Now       func() time.Time // the clock of leases and heartbeats

	slots chan struct{}
	mu    sync.Mutex
	entry store.Worker
}

// Serve joins the pool and works until ctx ends; then it cancels what it
// runs, hands those attempts back to the queue, and leaves the pool.
func (w *Worker) Serve(ctx context.Context) error {
	if w.Store.Pool() == nil {
		return store.ErrNeedsPostgres
	}
	if err := Migrate(ctx, w.Store); err != nil {
		return err
	}
	w.slots = make(chan struct{}, max(w.Parallel, 1))
	workers := river.NewWorkers()
	if err := river.AddWorkerSafely(workers, &attemptWorker{w: w}); err != nil {
		return err
	}
	queues := map[string]river.QueueConfig{}
	for _, rt := range w.Runtimes {
		queues[Queue(rt)] = river.QueueConfig{MaxWorkers: max(w.Parallel, 1)}
	}
	client, err := river.NewClient(riverpgxv5.New(w.Store.Pool()), &river.Config{
		Queues: queues, Workers: workers, Logger: w.Log,
		// Lane bounds a run with its own watchdogs and finds lost workers by
		// their leases; River must neither time out an attempt nor rescue it.
		JobTimeout: -1,
	})
	if err != nil {
		return fmt.Errorf("river client: %w", err)
	}
	if err := w.join(ctx); err != nil {
		return err
	}
	if err := client.Start(ctx); err != nil {
		return fmt.Errorf("start river client: %w", err)
	}
	w.heartbeat(ctx, client)
	stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*w.Lease)
	defer cancel()
	err = client.StopAndCancel(stopCtx)
	return errors.Join(err, w.leave(stopCtx))
}

func (w *Worker) join(ctx context.Context) error {
	host, _ := os.Hostname()
	now := w.Now()
	w.entry = store.Worker{Name: w.Name, Host: host, PID: os.Getpid(), Runtimes: w.Runtimes,
		Parallel: w.Parallel, LeaseMS: w.Lease.Milliseconds(), StartedAt: now, HeartbeatAt: now, Running: []string{}}
	return w.Store.SaveWorker(ctx, &w.entry)
}

func (w *Worker) leave(ctx context.Context) error {
	w.mu.Lock()
	e := w.entry
	w.mu.Unlock()
	e.StoppedAt, e.Running = w.Now(), []string{}
	return w.Store.SaveWorker(ctx, &e)
}

// heartbeat records the worker alive every third of a lease, and gives
// back the attempts of workers whose leases lapsed, until ctx ends.
func (w *Worker) heartbeat(ctx context.Context, client *river.Client[pgx.Tx]) {
	t := time.NewTicker(w.Lease / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		w.mu.Lock()
		w.entry.HeartbeatAt = w.Now()
		e := w.entry
		w.mu.Unlock()
		if err := w.Store.SaveWorker(ctx, &e); err != nil && ctx.Err() == nil {
			w.Log.Warn("worker: heartbeat not recorded", "err", err)
		}
		reaped, err := w.Store.ReapLapsed(ctx, w.Now(), func(tx pgx.Tx, k store.AttemptKey, token int64) error {
			return w.requeue(ctx, client, tx, k, token)
		})
		if err != nil && ctx.Err() == nil {
			w.Log.Warn("worker: lapsed leases not given back", "err", err)
		}
		for _, k := range reaped {
			w.Log.Info("worker: gave back an attempt whose worker was lost", "attempt", k.String())
		}
	}
}

// requeue enqueues the attempt again in tx, under its token.
func (w *Worker) requeue(ctx context.Context, client *river.Client[pgx.Tx], tx pgx.Tx, k store.AttemptKey, token int64) error {
	rt, err := w.RuntimeOf(k.Model)
	if err != nil {
		return fmt.Errorf("attempt %s: %w", k, err)
	}
	args := attemptArgs{BenchID: k.BenchID, TaskID: k.TaskID, Model: k.Model, N: k.N, Try: token, Runtime: rt}
	_, err = client.InsertTx(ctx, tx, args, nil)
	return err
}

// Running records that the worker runs runID now (running) or no longer.
func (w *Worker) Running(runID string, add bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if add {
		w.entry.Running = append(w.entry.Running, runID)
		return
	}
	for i, id := range w.entry.Running {
		if id == runID {
			w.entry.Running = append(w.entry.Running[:i], w.entry.Running[i+1:]...)
			return
		}
	}
}

func (w *Worker) count(a *trace.Attempt) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.entry.Done++
	if a.Status == trace.AttemptFailed {
		w.entry.Failed++
	}
}
