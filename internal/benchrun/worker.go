package benchrun

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/lanehq/lane/internal/bench"
	"github.com/lanehq/lane/internal/bench/suiteload"
	"github.com/lanehq/lane/internal/bench/workqueue"
	"github.com/lanehq/lane/internal/container"
	"github.com/lanehq/lane/internal/launch"
	"github.com/lanehq/lane/internal/record"
	"github.com/lanehq/lane/internal/recorder"
	"github.com/lanehq/lane/internal/runner"
	"github.com/lanehq/lane/internal/store"
)

// WorkerOptions are the flags of lane worker.
type WorkerOptions struct {
	Parallel   int
	Runtimes   []string
	Name       string
	Lease      time.Duration
	Keep       bool
	NoHermetic bool
	Run        launch.Options // how each attempt runs, as lane bench's runtime flags say
	Limits     LimitFlags
}

// NewWorker is the worker the flags ask for, running attempts as lane bench
// would with this machine's runtimes and configuration.
func (r *Runner) NewWorker(ctx context.Context, opts *WorkerOptions, notes *recorder.Notifications) (*workqueue.Worker, error) {
	name := opts.Name
	if name == "" {
		name, _ = os.Hostname()
	}
	runtimes := opts.Runtimes
	if len(runtimes) == 0 {
		runtimes = r.foundRuntimes(ctx)
	}
	for _, rt := range runtimes {
		if _, ok := r.Env.Runtimes.Lookup(rt); !ok {
			return nil, launch.UsageErrorf(fmt.Errorf("unknown runtime %q in --runtimes (known: %v)", rt, r.Env.Runtimes.Names()))
		}
	}
	limits, err := opts.Limits.limits(r, &opts.Run)
	if err != nil {
		return nil, err
	}
	w := &workqueue.Worker{
		Store: r.Store, Name: name, Runtimes: append(runtimes, bench.OracleModel), Parallel: opts.Parallel, Lease: opts.Lease,
		Log: slog.Default(), Now: time.Now, RuntimeOf: r.runtimeOf(&opts.Run),
	}
	// The worker tells of the requests of its attempts' runs that wait,
	// and of the end of each bench whose last attempt it recorded: the
	// process that started a bench of the pool may have detached.
	if notes != nil {
		w.BenchEnded = func(ctx context.Context, benchID string) {
			b, err := r.Store.GetBench(ctx, benchID)
			if err != nil {
				slog.Warn("worker: bench notification", "bench", benchID, "err", err)
				return
			}
			notes.BenchEnded(ctx, b)
		}
	}
	// The worker's attempt folders are its own: a bench resumed on this
	// machine removes the leftovers of its attempts from the temporary
	// folder, and must not take those of the attempts a worker runs.
	workDir := filepath.Join(os.TempDir(), "lane-worker-"+bench.SafeName(name))
	if err := os.MkdirAll(workDir, 0o700); err != nil {
		return nil, fmt.Errorf("worker folder: %w", err)
	}
	bo := &Options{Keep: opts.Keep, Run: opts.Run, Notes: notes}
	blob, putBlob := r.workerBlobs(w)
	// Container tasks (Harbor's) run with this machine's engine; a worker
	// without one does not take them (they wait for a worker that has one).
	engine, err := container.Find(ctx, "", r.Env.Getenv)
	if err != nil {
		slog.Info("worker: no container engine: this worker does not take Harbor tasks' attempts", "err", err)
	}
	w.Containers = engine != nil
	mounts := r.containerMounts(ctx, &bo.Run)
	w.Run = func(ctx context.Context, l store.Lease, task *bench.Task, a *record.Attempt) {
		a.BenchID, a.TaskID, a.Model, a.N = l.Key.BenchID, l.Key.TaskID, l.Key.Model, l.Key.N
		hooks := &recorder.WorkerHooks{
			Name:    name,
			Persist: w.Persist,
			Link:    func(ctx context.Context, run *record.Run) error { return r.Store.LinkAttemptRun(ctx, l, run.ID) },
			Finish:  func(ctx context.Context, run *record.Run) error { return r.Store.FinishAttemptRun(ctx, l, run) },
			Running: w.Running,
		}
		env := bench.AttemptEnv{Run: r.recordedRunner(bo, hooks), Keep: opts.Keep, Removed: forgetFolder(r.Env),
			Blob: blob, PutBlob: putBlob, WorkDir: workDir, Hermetic: !opts.NoHermetic,
			EnvironmentError: suiteload.EnvironmentError, CleanOutput: suiteload.CleanOutput, Engine: engine, Mounts: mounts,
			Limits: limits}
		bench.RunAttempt(ctx, env, task, a)
	}
	return w, nil
}

// foundRuntimes are the runtimes lane finds working here, as lane doctor
// lists them: lane's own loop, and the agent CLIs whose binary answers.
func (r *Runner) foundRuntimes(ctx context.Context) []string {
	var names []string
	for _, rt := range r.Env.Runtimes {
		if rt.InProcess() {
			names = append(names, rt.Name)
			continue
		}
		if _, err := rt.Find(ctx, r.Env.Getenv(runner.BinEnv(rt.Name)), r.Env.Environ(), r.Env.VersionCache()); err == nil {
			names = append(names, rt.Name)
		}
	}
	return names
}

// workerBlobs are how a worker reads the blobs a bench stored (its task
// folders) and stores its attempts' artifacts, each call persisted
// through the store's passing failures.
func (r *Runner) workerBlobs(w *workqueue.Worker) (get func(context.Context, string) ([]byte, error), put func(context.Context, []byte) (string, error)) {
	get = func(ctx context.Context, digest string) ([]byte, error) {
		var data []byte
		err := w.Persist(ctx, "fixture "+digest, func(ctx context.Context) error {
			var err error
			data, err = r.Store.Blob(ctx, digest)
			return err
		})
		return data, err
	}
	put = func(ctx context.Context, data []byte) (string, error) {
		var digest string
		err := w.Persist(ctx, "artifacts", func(ctx context.Context) error {
			var err error
			digest, err = r.Store.PutBlob(ctx, data)
			return err
		})
		return digest, err
	}
	return get, put
}
