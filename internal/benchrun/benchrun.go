// Package benchrun wires lane bench, lane run --models and lane worker to
// the bench: it turns their options into a bench.Config (the suite loaded
// or the stored bench resumed, the models resolved, the runtimes found),
// runs each attempt as a recorded lane run, in its container when the task
// has one, and sends attempts to the pool of workers.
package benchrun

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/lanehq/lane/internal/bench"
	"github.com/lanehq/lane/internal/bench/suiteload"
	"github.com/lanehq/lane/internal/bench/workqueue"
	"github.com/lanehq/lane/internal/config"
	"github.com/lanehq/lane/internal/container"
	"github.com/lanehq/lane/internal/launch"
	"github.com/lanehq/lane/internal/record"
	"github.com/lanehq/lane/internal/recorder"
	"github.com/lanehq/lane/internal/runner"
	"github.com/lanehq/lane/internal/store"
)

// Options are the flags of `lane bench`.
type Options struct {
	Suite        string
	Models       []string
	Repeat       int
	Parallel     int
	MaxCost      float64
	Keep         bool
	NoHermetic   bool
	Format       string   // of what SUITE is: lane, polyglot ("" tells by its layout)
	Languages    []string // polyglot's
	Tries        int      // polyglot's tries per attempt
	BuildArgs    []string // KEY=VALUE for container tasks' image builds
	PassReward   float64  // a container task's attempt passes at this reward
	PassKey      string   // of the verifier's reward, compared with PassReward ("": "reward")
	StepSession  string   // a multi-step task's agent: bench.StepSessionFresh or StepSessionContinue
	Engine       string   // podman or docker ("" finds one)
	Resume       string
	OutputFormat string
	Run          launch.Options // how each attempt runs
	// ParallelSet says --parallel was given (a resumed bench keeps its own).
	ParallelSet bool
	// Workers sends the attempts to the pool of lane workers.
	Workers bool
	Limits  LimitFlags
	Retry   RetryFlags
	// SkipUnsupported leaves out the Harbor tasks lane refuses instead of
	// refusing the dataset.
	SkipUnsupported bool
	// DryRun lists the suite's tasks and runs none (see DryRun).
	DryRun bool
	// Notes tells of the attempts' requests and of the bench's end; nil:
	// nobody is told.
	Notes *recorder.Notifications
	// Origin is the folder the attempts' folders are copies of, for lane
	// apply (lane run --models).
	Origin string
}

// Runner is what a bench's attempts run with: this process's environment,
// the config file and the store.
type Runner struct {
	Env    *launch.Env
	Config *config.File
	Store  *store.Store
}

// Bench is a bench set up to run: checked, its export and notifications
// started. Close ends them.
type Bench struct {
	config bench.Config
	sink   *recorder.OTelSink
	notes  *recorder.Notifications
}

// Prepare sets up the bench opts ask for (or the one it resumes): the
// suite loaded, the models resolved, the runtimes of the attempts that run
// here found, the export and notifications started, the container engine
// and the pool found when the bench needs them. Nothing is recorded yet.
func (r *Runner) Prepare(ctx context.Context, opts *Options) (*Bench, error) {
	bc, err := r.plan(ctx, opts)
	if err != nil {
		return nil, err
	}
	sink, err := launch.StartOTel(ctx, r.Env, &opts.Run.OTel)
	if err != nil {
		return nil, err
	}
	opts.Run.OTelSink = sink
	bn := &Bench{sink: sink}
	if opts.Notes, err = launch.StartNotify(r.Env, r.Config, r.Store, false); err != nil {
		bn.Close(ctx)
		return nil, err
	}
	bn.notes = opts.Notes
	if err := r.wire(ctx, &bc, opts); err != nil {
		bn.Close(ctx)
		return nil, err
	}
	bn.config = bc
	return bn, nil
}

// plan is the bench the flags ask for, checked before anything starts.
func (r *Runner) plan(ctx context.Context, opts *Options) (bench.Config, error) {
	bc, err := r.benchConfig(ctx, opts)
	if err != nil {
		return bc, err
	}
	if bc.Limits, err = opts.Limits.limits(r, &opts.Run); err != nil {
		return bc, err
	}
	if err := r.resolveModels(opts, bc.Suite); err != nil {
		return bc, err
	}
	if !opts.Workers && (bc.Resume == nil || !bc.Resume.Workers) {
		// A bench of the pool needs its runtimes on the workers, which
		// take only the attempts of the runtimes they offer.
		if err := r.CheckRuntimes(ctx, opts, benchModels(opts, bc)); err != nil {
			return bc, err
		}
	}
	if opts.OutputFormat == recorder.FormatText {
		bc.Progress = r.Env.ErrOut
	}
	return bc, nil
}

// wire gives the bench its attempts' runner, its container engine and
// mounts when a task has a container, and its pool.
func (r *Runner) wire(ctx context.Context, bc *bench.Config, opts *Options) error {
	var err error
	bc.Run = r.recordedRunner(opts, nil)
	if suite := benchSuite(*bc); suite != nil && hasContainerTasks(suite) {
		if bc.Engine, err = container.Find(ctx, opts.Engine, r.Env.Getenv); err != nil {
			return err
		}
		bc.Mounts = r.containerMounts(ctx, &opts.Run)
	}
	bc.Removed = forgetFolder(r.Env)
	if bc.Pool, err = r.pool(ctx, opts, bc.Resume); err != nil {
		return err
	}
	bc.Ended = benchEndNotice(opts.Notes)
	return nil
}

// Run runs the bench: b is nil when it could not be recorded.
func (bn *Bench) Run(ctx context.Context) (*record.Bench, error) {
	return bench.Run(ctx, bn.config)
}

// Close waits for the notifications and spans still on their way.
func (bn *Bench) Close(ctx context.Context) {
	bn.notes.Close(ctx)
	bn.sink.Close(ctx)
}

// Outcome is the error of a bench that ended with runErr, its report
// written (or not, writeErr): the report's failure, then lane's own fault,
// then the bench's cancellation make the exit code.
func Outcome(b *record.Bench, runErr, writeErr error) error {
	switch {
	case writeErr != nil:
		return writeErr
	case runErr != nil:
		return runErr
	case b.Status == record.StatusCancelled:
		return runner.ErrCancelled
	}
	return nil
}

// benchEndNotice is bench.Config.Ended for a process whose notifications
// are ns: it tells how the bench ended, from its stored attempts.
func benchEndNotice(ns *recorder.Notifications) func(context.Context, *record.Bench) {
	if ns == nil {
		return nil
	}
	return ns.BenchEnded
}

// benchConfig is the bench the flags ask for, without its Run and
// Progress: the stored bench to resume, or the suite file loaded.
func (r *Runner) benchConfig(ctx context.Context, opts *Options) (bench.Config, error) {
	bc := bench.Config{
		Models: opts.Models, Repeat: opts.Repeat, Parallel: opts.Parallel, MaxCostUSD: opts.MaxCost,
		Keep: opts.Keep, Hermetic: !opts.NoHermetic, Store: r.Store, Log: slog.Default(),
		EnvironmentError: suiteload.EnvironmentError, CleanOutput: suiteload.CleanOutput, PutBlob: r.Store.PutBlob,
	}
	if err := opts.Retry.retryConfig(&bc, opts.Resume != ""); err != nil {
		return bc, err
	}
	if opts.Resume == "" {
		buildArgs, err := keyValues(opts.BuildArgs)
		if err != nil {
			return bc, launch.UsageErrorf(fmt.Errorf("--build-arg: %w", err))
		}
		loaded, err := suiteload.Load(ctx, opts.Suite, suiteload.Options{
			Format: opts.Format, Languages: opts.Languages, Tries: opts.Tries,
			CacheDir: filepath.Join(r.Env.CacheDir(), "polyglot"), BuildArgs: buildArgs, PassReward: opts.PassReward,
			PassKey: opts.PassKey, SkipUnsupported: opts.SkipUnsupported, StepSession: opts.StepSession,
		})
		if err != nil {
			return bc, launch.UsageErrorf(err)
		}
		for _, s := range loaded.Skipped {
			fmt.Fprintf(r.Env.ErrOut, "lane: skipped %s\n", s)
		}
		for _, s := range loaded.Notes {
			fmt.Fprintf(r.Env.ErrOut, "lane: note: %s\n", s)
		}
		bc.Suite = loaded.Suite
		applyLimits(bc.Suite, opts.Run)
		return bc, nil
	}
	if !opts.ParallelSet {
		bc.Parallel = 0 // the bench's own
	}
	b, err := r.Store.GetBench(ctx, opts.Resume)
	if err != nil {
		return bc, err
	}
	bc.Resume = b
	return bc, nil
}

// resolveModels checks that the config resolves every model of --models,
// or without it of the suite's (none when resuming), so that a model lane
// cannot run is a usage error before anything runs.
func (r *Runner) resolveModels(opts *Options, suite *bench.Suite) error {
	models := opts.Models
	if len(models) == 0 && suite != nil {
		models = suite.Models
	}
	for _, m := range models {
		if m == bench.OracleModel {
			continue // no model: the tasks' own solutions
		}
		if _, err := r.Config.Resolve(m, opts.Run.Runtime, opts.Run.BaseURL, r.Env.Getenv); err != nil {
			return launch.UsageErrorf(fmt.Errorf("model %s: %w", m, err))
		}
	}
	return nil
}

// benchModels are the models whose attempts the bench runs: the stored
// bench's when resuming, else --models or the suite's.
func benchModels(opts *Options, bc bench.Config) []string {
	switch {
	case bc.Resume != nil:
		return bc.Resume.Models
	case len(opts.Models) > 0:
		return opts.Models
	case bc.Suite != nil:
		return bc.Suite.Models
	}
	return nil
}

// Report compares bench b's models from its stored attempts and the runs
// behind them.
func Report(ctx context.Context, st *store.Store, b *record.Bench) (bench.Report, error) {
	attempts, err := st.Attempts(ctx, b.ID)
	if err != nil {
		return bench.Report{}, err
	}
	runs, err := st.BenchRuns(ctx, b.ID) // a run deleted since is left out: the report does without what it changed
	if err != nil {
		return bench.Report{}, err
	}
	return bench.Compare(*b, attempts, runs), nil
}

// pool is the pool of workers that --workers (or resume, a bench of the
// pool) sends attempts to; nil for a bench that runs here.
func (r *Runner) pool(ctx context.Context, opts *Options, resume *record.Bench) (bench.Pool, error) {
	if !opts.Workers && (resume == nil || !resume.Workers) {
		return nil, nil
	}
	if r.Store.Pool() == nil {
		return nil, launch.UsageErrorf(errors.New("--workers needs the pool's shared PostgreSQL database, and this one is a SQLite file: " +
			"set LANE_DB=postgres://USER:PASSWORD@HOST/DB (or --db), and start lane worker on the machines that should run attempts"))
	}
	return workqueue.NewDispatcher(ctx, r.Store, r.runtimeOf(&opts.Run))
}

// runtimeOf says which runtime runs a bench's model, as the pool matches
// attempts to workers: the oracle runs on every worker.
func (r *Runner) runtimeOf(ro *launch.Options) func(model string) (string, error) {
	return func(model string) (string, error) {
		if model == bench.OracleModel {
			return bench.OracleModel, nil
		}
		t, err := r.Config.Resolve(model, ro.Runtime, ro.BaseURL, r.Env.Getenv)
		return t.Runtime, err
	}
}
