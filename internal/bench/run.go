package bench

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/lanehq/lane/internal/bench/harbor"
	"github.com/lanehq/lane/internal/container"
	"github.com/lanehq/lane/internal/proc"
	"github.com/lanehq/lane/internal/record"
)

// RunSpec is one attempt's agent run, as RunFunc is to start it.
type RunSpec struct {
	Dir     string // the attempt's fresh folder
	Prompt  string
	Model   string
	BenchID string
	TaskID  string
	N       int           // 1-based repeat number
	Timeout time.Duration // the whole run; 0: lane's default
	// MaxTurns and MaxCostUSD bound the run; 0: no bound of the task's.
	MaxTurns   int
	MaxCostUSD float64
	// TokenLimit and CostLimitUSD bound the run as --token-limit and
	// --cost-limit do; 0: no limit.
	TokenLimit   int64
	CostLimitUSD float64
	// Resume is the attempt's run before this one, whose session this one
	// continues (a task's later try); nil for the first.
	Resume *record.Run
	// Home, when set, is the attempt's own folder for the runtime's
	// configuration, kept across its tries: the run is hermetic (none of
	// the user's own agent setup). "": the run sees the user's.
	Home string
	// Container, when set, is where the agent works (a container task):
	// Dir is a path inside it, and the mounts AttemptEnv.Mounts asked for
	// are there.
	Container *container.Container
	// Share is a folder of the attempt's that the container has at the
	// same path (a container task), "" otherwise.
	Share string
	// Profile is the config file's profile (a login of its own) the run
	// uses, "" for the one the environment points at (see Limits).
	Profile string
	// MCPServers are the MCP servers the task gives its agent (a Harbor
	// task's [[environment.mcp_servers]]): the run has them, or is refused.
	MCPServers []harbor.MCPServer
}

// RunFunc runs one agent run (either lane), records it, and returns it. It
// prints nothing of the run. A returned error is a fault of lane itself; a
// run that did not succeed is a run with its Status and ErrorKind.
type RunFunc func(ctx context.Context, spec RunSpec) (*record.Run, error)

// Store is what Run records in: the subset of *store.Store it needs.
type Store interface {
	CreateBench(ctx context.Context, b *record.Bench) error
	UpdateBench(ctx context.Context, b *record.Bench) error
	SaveAttempt(ctx context.Context, a *record.Attempt) error
	Attempts(ctx context.Context, benchID string) ([]record.Attempt, error)
}

// Config is one lane bench.
type Config struct {
	Suite *Suite // what to run; ignored with Resume, whose stored suite is used
	// Models and Repeat override the suite's when set (not with Resume).
	Models []string
	Repeat int
	// Parallel is how many attempts run at once (at least 1).
	Parallel int
	// MaxCostUSD: once the bench has spent this much, attempts not yet
	// started are recorded skipped. 0: no limit (with Resume: the bench's).
	MaxCostUSD float64
	Keep       bool // keep each attempt's folder
	// Hermetic runs every attempt's agent without the user's own agent
	// setup (RunSpec.Home); lane bench's default, --no-hermetic opts out.
	Hermetic bool
	// EnvironmentError, Engine and Mounts are AttemptEnv's, for every
	// attempt.
	EnvironmentError func(task *Task, checkOutput string) (reason string, ok bool)
	CleanOutput      func(task *Task, checkOutput string) string
	Engine           *container.Engine
	Mounts           Mounts
	// Limits, when set, waits out the usage limits of the attempts'
	// accounts (lane bench --on-limit, --limit-reserve).
	Limits *Limits
	// Removed, when set, is told of each attempt folder removed, so that
	// what was kept about it elsewhere (lane's snapshots of it) can go too.
	Removed func(dir string)
	// PutBlob is AttemptEnv's, for every attempt run here.
	PutBlob  func(ctx context.Context, data []byte) (string, error)
	Run      RunFunc
	Store    Store
	Progress io.Writer     // where the progress line goes; nil: nowhere
	Resume   *record.Bench // continue this bench: run its unfinished attempts
	WorkDir  string        // where attempt folders go; "": os.TempDir()
	// Pool, when set, runs the attempts on lane workers instead of here
	// (lane bench --workers); Run then follows them until they are done or
	// ctx ends, which detaches without stopping the bench.
	Pool Pool
	// Log gets warnings: a git fixture copied rather than checked out as
	// worktrees, a stale worktree that could not be removed. nil: none.
	Log *slog.Logger
	// Ended, when set, is told when this process has recorded the bench's
	// end (not when it detaches from a bench of the pool, nor when the
	// worker that recorded its last attempt recorded its end).
	Ended func(ctx context.Context, b *record.Bench)
	// Retry, when set, runs failed attempts of a new bench again at once
	// (see RetryPolicy); Rerun, with Resume, runs again the finished
	// attempts that ended with one of these failure kinds.
	Retry *RetryPolicy
	Rerun []string
}

// Failure kinds of an attempt besides the run's own error kinds.
const (
	FailCheck        = "check_failed"
	FailCheckTimeout = "check_timeout"
	FailSetup        = "setup_failed"
	FailAgent        = "agent_error"
	FailCancelled    = "cancelled"
	FailLane         = "lane_error" // RunFunc returned an error: lane could not run the agent
)

// Run runs a bench and returns it as recorded. Every attempt is saved
// pending first, so that an interrupted bench can be resumed; up to
// Parallel run at once. When ctx ends, no attempt is started any more,
// running ones are cancelled through ctx and go back to pending, and the
// bench is recorded cancelled. The returned error is lane's own fault (the
// store failed, the config is wrong); how the attempts went is in the store
// and the bench's Status.
func Run(ctx context.Context, cfg Config) (*record.Bench, error) {
	if cfg.Run == nil || cfg.Store == nil {
		return nil, errors.New("bench: Config.Run and Config.Store are required")
	}
	r := &runner{cfg: cfg, workDir: cmp.Or(cfg.WorkDir, os.TempDir()), log: cfg.Log}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	todo, err := r.prepare(ctx)
	if err != nil {
		if !r.recorded {
			return nil, err
		}
		// Recorded as running, never run.
		r.bench.Status, r.bench.EndedAt = record.StatusFailed, time.Now()
		if ctx.Err() != nil {
			r.bench.Status, err = record.StatusCancelled, nil
		}
		_ = cfg.Store.UpdateBench(context.WithoutCancel(ctx), r.bench) // the error above says more
		r.ended(ctx)
		return r.bench, err
	}
	r.prog = newProgress(cfg.Progress, r.counts)
	r.prog.draw()
	if cfg.Limits != nil && cfg.Limits.Waiting == nil {
		cfg.Limits.Waiting = r.showWaiting
	}
	if cfg.Pool != nil {
		return r.dispatch(ctx, todo)
	}

	jobs := make(chan record.Attempt, len(todo))
	for _, a := range todo {
		jobs <- a
	}
	close(jobs)
	var wg sync.WaitGroup
	for range min(max(r.bench.Parallel, 1), len(todo)) {
		wg.Go(func() {
			for a := range jobs {
				if ctx.Err() != nil || r.stopped() {
					return
				}
				r.attempt(ctx, a)
			}
		})
	}
	wg.Wait()

	b := r.bench
	switch {
	case r.err != nil:
		b.Status = record.StatusFailed
	case ctx.Err() != nil && r.counts.done < r.counts.total:
		b.Status = record.StatusCancelled
	default:
		b.Status = record.StatusSucceeded
	}
	b.EndedAt = time.Now()
	if err := cfg.Store.UpdateBench(context.WithoutCancel(ctx), b); err != nil && r.err == nil {
		r.err = fmt.Errorf("bench %s: %w", b.ID, err)
	}
	r.prog.finish()
	r.ended(ctx)
	return b, r.err
}

// ended tells Config.Ended that this process recorded the bench's end.
func (r *runner) ended(ctx context.Context) {
	if r.cfg.Ended != nil {
		r.cfg.Ended(context.WithoutCancel(ctx), r.bench)
	}
}

type runner struct {
	cfg     Config
	suite   *Suite
	tasks   map[string]*Task
	bench   *record.Bench
	workDir string
	log     *slog.Logger
	prog    *progress
	// recorded: the bench is in the store as running.
	recorded bool

	mu     sync.Mutex
	spent  float64 // the cost of every attempt that ran, in this process and before
	counts counts
	err    error // the first store failure: no attempt is started after it
}

// prepare creates the bench, or takes up the one to resume, and returns the
// attempts to run in the order they are to start.
func (r *runner) prepare(ctx context.Context) ([]record.Attempt, error) {
	var existing []record.Attempt
	var err error
	if r.cfg.Resume != nil {
		existing, err = r.takeUp(ctx)
	} else {
		err = r.create(ctx)
	}
	if err != nil {
		return nil, err
	}
	if err := r.checkBench(); err != nil {
		return nil, err
	}
	r.bench.Workers = r.cfg.Pool != nil
	if r.cfg.Pool != nil && r.cfg.Resume == nil {
		if err := r.cfg.Pool.Pack(ctx, r.suite); err != nil {
			return nil, fmt.Errorf("bench: %w", err)
		}
		if r.bench.Suite, err = json.Marshal(r.suite); err != nil {
			return nil, fmt.Errorf("bench: encode suite: %w", err)
		}
	}
	if err := r.recordRunning(ctx); err != nil {
		return nil, err
	}
	todo, err := r.attemptsToRun(ctx, existing)
	if err != nil {
		return nil, err
	}
	if r.cfg.Pool == nil {
		r.sweepFixtures(ctx)
	}
	r.orderForStart(todo)
	r.counts.spent = r.spent
	return todo, nil
}

// takeUp makes the bench to resume r's, with the suite it stored and the
// config's parallel and budget, and returns its attempts so far.
func (r *runner) takeUp(ctx context.Context) ([]record.Attempt, error) {
	cfg := r.cfg
	b := *cfg.Resume
	r.bench = &b
	if b.Status == record.StatusRunning && b.OwnerPID != os.Getpid() && proc.Alive(b.OwnerPID, b.OwnerStart) {
		return nil, fmt.Errorf("bench %s is still running (lane process %d)", b.ID, b.OwnerPID)
	}
	var s Suite
	if err := json.Unmarshal(b.Suite, &s); err != nil {
		return nil, fmt.Errorf("bench %s: read its suite: %w", b.ID, err)
	}
	r.suite = &s
	if cfg.Parallel > 0 {
		b.Parallel = cfg.Parallel
	}
	if cfg.MaxCostUSD > 0 {
		b.MaxCostUSD = cfg.MaxCostUSD
	}
	existing, err := cfg.Store.Attempts(ctx, b.ID)
	if err != nil {
		return nil, fmt.Errorf("bench %s: %w", b.ID, err)
	}
	return existing, nil
}

// create makes r's bench a new one of the config's suite, the suite's
// models and repeat unless the config overrides them, and decides which
// fixtures its attempts check out as worktrees (not on workers, which
// unpack them).
func (r *runner) create(ctx context.Context) error {
	cfg := r.cfg
	if cfg.Suite == nil {
		return errors.New("bench: no suite")
	}
	r.suite = cfg.Suite
	setRetry(r.suite, cfg.Retry)
	if cfg.Pool == nil {
		resolveFixtures(ctx, r.suite, r.log)
	}
	suiteJSON, err := json.Marshal(cfg.Suite)
	if err != nil {
		return fmt.Errorf("bench: encode suite: %w", err)
	}
	models := cfg.Models
	if len(models) == 0 {
		models = cfg.Suite.Models
	}
	r.bench = &record.Bench{
		ID: record.NewRunID(), Name: cfg.Suite.Name, SuitePath: cfg.Suite.Path,
		Models:   slices.Clone(models),
		Repeat:   cmp.Or(cfg.Repeat, cfg.Suite.Repeat, 1),
		Parallel: max(cfg.Parallel, 1), MaxCostUSD: cfg.MaxCostUSD,
		Suite: suiteJSON,
	}
	return nil
}

// checkBench refuses a bench without models, with a model given twice, or
// without tasks, and indexes the tasks by id.
func (r *runner) checkBench() error {
	b := r.bench
	if len(b.Models) == 0 {
		return errors.New("bench: no models: give --models or models: in the suite")
	}
	for i, m := range b.Models {
		if m == "" || slices.Contains(b.Models[:i], m) {
			return fmt.Errorf("bench: model %q is empty or given twice", m)
		}
	}
	if len(r.suite.Tasks) == 0 {
		return errors.New("bench: the suite has no tasks")
	}
	r.tasks = map[string]*Task{}
	for i := range r.suite.Tasks {
		r.tasks[r.suite.Tasks[i].ID] = &r.suite.Tasks[i]
	}
	return nil
}

// recordRunning records the bench as running in this lane process: created
// when new, updated when resumed.
func (r *runner) recordRunning(ctx context.Context) error {
	b := r.bench
	b.Status = record.StatusRunning
	b.EndedAt = time.Time{}
	b.OwnerPID = os.Getpid()
	b.OwnerStart, _ = proc.StartTime(b.OwnerPID) // 0 skips the start-time check
	if r.cfg.Resume == nil {
		b.StartedAt = time.Now()
		if err := r.cfg.Store.CreateBench(ctx, b); err != nil {
			return fmt.Errorf("bench: %w", err)
		}
	} else if err := r.cfg.Store.UpdateBench(ctx, b); err != nil {
		return fmt.Errorf("bench %s: %w", b.ID, err)
	}
	r.recorded = true
	return nil
}

// attemptsToRun goes through every attempt the bench should have, saving
// pending those it has not (a resumed bench has them all unless it was
// stopped while they were being saved) and those a dead lane process left
// running; it counts those done and returns the others.
func (r *runner) attemptsToRun(ctx context.Context, existing []record.Attempt) ([]record.Attempt, error) {
	b := r.bench
	type key struct {
		task, model string
		n           int
	}
	have := map[key]record.Attempt{}
	for _, a := range existing {
		have[key{a.TaskID, a.Model, a.N}] = a
	}
	var todo []record.Attempt
	for _, t := range r.suite.Tasks {
		for _, m := range b.Models {
			for n := 1; n <= b.Repeat; n++ {
				a, ok := have[key{t.ID, m, n}]
				if ok && a.Status == record.AttemptRunning && b.Workers {
					// A worker holds it under a lease (or the pool gives
					// it back when that lapses): neither reset nor
					// enqueued again, nor is its folder ours to remove.
					r.counts.total++
					r.counts.running++
					continue
				}
				if !ok || a.Status == record.AttemptRunning || rerun(a, r.cfg.Rerun) {
					if ok && !r.cfg.Keep {
						// Cut short when its lane process died: its folder
						// was left behind.
						r.removeLeftovers(a)
					}
					a = record.Attempt{BenchID: b.ID, TaskID: t.ID, Model: m, N: n, Status: record.AttemptPending}
					if err := r.cfg.Store.SaveAttempt(ctx, &a); err != nil {
						return nil, fmt.Errorf("bench %s: %w", b.ID, err)
					}
				}
				if r.tally(a) {
					todo = append(todo, a)
				}
			}
		}
	}
	return todo, nil
}

// tally adds an attempt of the bench as prepare finds it to r's spending
// and counts, and says whether it is still to run.
func (r *runner) tally(a record.Attempt) (toRun bool) {
	r.spent += a.CostUSD
	r.counts.total++
	switch a.Status {
	case record.AttemptPassed, record.AttemptFailed, record.AttemptErrored:
		r.counts.add(a.Status)
	default: // pending, and skipped when the budget now allows
		return true
	}
	return false
}

// orderForStart puts the first attempts of every task and model before any
// repeat, so that a budget that runs out leaves every model compared on
// every task; then the suite's order of tasks, and the bench's of models.
func (r *runner) orderForStart(todo []record.Attempt) {
	taskIdx := map[string]int{}
	for i, t := range r.suite.Tasks {
		taskIdx[t.ID] = i
	}
	models := r.bench.Models
	slices.SortStableFunc(todo, func(x, y record.Attempt) int {
		return cmp.Or(cmp.Compare(x.N, y.N), cmp.Compare(taskIdx[x.TaskID], taskIdx[y.TaskID]),
			cmp.Compare(slices.Index(models, x.Model), slices.Index(models, y.Model)))
	})
}

func (r *runner) stopped() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err != nil
}

// start decides whether a may start: false when the budget is spent.
func (r *runner) start() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.bench.MaxCostUSD > 0 && r.spent >= r.bench.MaxCostUSD {
		r.counts.done++
		r.counts.skipped++
		return false
	}
	r.counts.running++
	return true
}

// save records a; a store failure stops the bench from starting more.
func (r *runner) save(ctx context.Context, a *record.Attempt) bool {
	err := r.cfg.Store.SaveAttempt(context.WithoutCancel(ctx), a)
	if err == nil {
		return true
	}
	r.mu.Lock()
	if r.err == nil {
		r.err = fmt.Errorf("bench %s: %w", r.bench.ID, err)
	}
	r.mu.Unlock()
	return false
}

// attempt runs one attempt and records how it went.
func (r *runner) attempt(ctx context.Context, a record.Attempt) {
	task := r.tasks[a.TaskID]
	if !r.start() {
		a = record.Attempt{BenchID: a.BenchID, TaskID: a.TaskID, Model: a.Model, N: a.N, Status: record.AttemptSkipped}
		r.save(ctx, &a)
		r.showCounts()
		return
	}
	a = record.Attempt{BenchID: a.BenchID, TaskID: a.TaskID, Model: a.Model, N: a.N,
		Status: record.AttemptRunning, StartedAt: time.Now()}
	if r.save(ctx, &a) {
		r.showCounts()
		r.execute(ctx, task, &a)
	} else {
		a.Status = record.AttemptPending // not run; the store could not say so either
	}
	if a.Status == record.AttemptFailed && ctx.Err() != nil {
		// Cut short by the bench's end, not finished: a resume runs it again.
		a.Status, a.FailureKind = record.AttemptPending, FailCancelled
	}
	a.EndedAt = time.Now()
	r.save(ctx, &a)

	r.mu.Lock()
	r.spent += a.CostUSD
	r.counts.spent = r.spent
	r.counts.running--
	r.counts.add(a.Status)
	r.prog.update(r.counts)
	r.mu.Unlock()
}

// showCounts draws the counts as they stand. It draws under r.mu, so that
// two attempts ending together cannot draw their counts in the wrong order
// (the line went back from 3/12 done to 2/12).
func (r *runner) showCounts() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.prog.update(r.counts)
}

// showWaiting says on the progress line which usage limit attempts wait
// for, and until when ("" once none waits).
func (r *runner) showWaiting(ctx context.Context, what string, until time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.counts.waiting, r.counts.waitingUntil = what, until
	r.prog.update(r.counts)
	// The dashboard says so too, from the bench's record.
	r.bench.Waiting, r.bench.WaitingUntil = what, until
	if err := r.cfg.Store.UpdateBench(ctx, r.bench); err != nil {
		r.log.Warn("bench: could not record what it waits for", "bench", r.bench.ID, "err", err)
	}
}

// sweepFixtures removes what attempts of killed lane processes left in the
// fixture repositories this bench checks worktrees out of.
func (r *runner) sweepFixtures(ctx context.Context) {
	done := map[string]bool{}
	for i := range r.suite.Tasks {
		t := &r.suite.Tasks[i]
		repo := worktreeRepo(AttemptEnv{SuiteDir: r.suite.Dir}, t)
		if repo != "" && !done[repo] {
			done[repo] = true
			sweepWorktrees(ctx, repo, t.SetupTimeout, r.log)
		}
	}
}

// execute runs attempt a of task here.
func (r *runner) execute(ctx context.Context, task *Task, a *record.Attempt) {
	RunAttempt(ctx, AttemptEnv{Run: r.cfg.Run, WorkDir: r.workDir, Keep: r.cfg.Keep, Removed: r.cfg.Removed,
		SuiteDir: r.suite.Dir, Hermetic: r.cfg.Hermetic, EnvironmentError: r.cfg.EnvironmentError, CleanOutput: r.cfg.CleanOutput,
		Engine: r.cfg.Engine, Mounts: r.cfg.Mounts, Limits: r.cfg.Limits, PutBlob: r.cfg.PutBlob}, task, a)
}

// AttemptEnv is what running one attempt needs besides its task.
type AttemptEnv struct {
	Run      RunFunc
	WorkDir  string // where the attempt's folder goes
	Keep     bool   // keep the folder afterwards
	Hermetic bool   // each agent run sees none of the user's own agent setup (RunSpec.Home)
	// EnvironmentError, when set, tells a failed check's output that means
	// the environment could not give the check what it needs (the suite
	// format's own knowledge, as polyglot's); nil: only the task's
	// Check.EnvironmentErrors patterns do.
	EnvironmentError func(task *Task, checkOutput string) (reason string, ok bool)
	Removed          func(dir string) // told of the folder once it is removed; nil: nobody
	SuiteDir         string           // what a task's Fixture is relative to
	// Blob returns a stored fixture by digest (a task's FixtureBlob, on a
	// worker); nil when fixtures are read from SuiteDir.
	Blob func(ctx context.Context, digest string) ([]byte, error)
	// PutBlob stores data and returns its digest: a container task's
	// artifacts go there (see Attempt.Artifacts); nil keeps none.
	PutBlob func(ctx context.Context, data []byte) (string, error)
	// CleanOutput, when set, is the check's output as a later try's prompt
	// quotes it (the suite format's: polyglot takes timings out and cuts
	// it); nil quotes it as it is.
	CleanOutput func(task *Task, checkOutput string) string
	// Engine runs container tasks; nil: they are errors of the environment.
	Engine *container.Engine
	// Mounts says what an agent needs mounted into a container task's
	// container; nil mounts nothing.
	Mounts Mounts
	// Limits, when set, keeps agent runs from an account that a usage
	// limit refuses, and runs a refused one again after the reset.
	Limits *Limits
}

// runAttempt fills a fresh folder for the attempt, runs the setup, the agent
// and the check in it, and sets a's outcome: one run of RunAttempt.
func runAttempt(ctx context.Context, env AttemptEnv, task *Task, a *record.Attempt) {
	if task.Container != nil {
		runContainerAttempt(ctx, env, task, a)
		return
	}
	dir, err := os.MkdirTemp(env.WorkDir, folderName(a))
	if err != nil {
		failAttempt(a, FailSetup, "make the attempt's folder: "+err.Error(), -1)
		return
	}
	defer releaseFolder(ctx, env, task, dir)
	src, cleanup := "", func() {}
	if needsShipped(task, a.Model) {
		if src, cleanup, err = shipped(ctx, env, task, dir); err != nil {
			failAttempt(a, FailSetup, "read the fixture as shipped: "+err.Error(), -1)
			return
		}
	}
	defer cleanup()
	if exitCode, err := setUp(ctx, env, task, dir); err != nil {
		failAttempt(a, FailSetup, err.Error(), exitCode)
		return
	}
	if a.Model == OracleModel {
		a.Tries = 1
		if runOracle(ctx, task, src, dir, a) {
			check(ctx, env, task, src, dir, a)
		}
		return
	}
	home := ""
	if env.Hermetic {
		home = dir + ".home"
		if err := os.Mkdir(home, 0o700); err != nil {
			failAttempt(a, FailSetup, "make the attempt's runtime home: "+err.Error(), -1)
			return
		}
		defer func() { _ = removeTree(home) }() // a leftover does no harm
	}
	var prev *record.Run
	for try := 1; ; try++ {
		prompt := task.Prompt
		if prev != nil {
			prompt = retryPrompt(env, task, a.CheckOutput)
		}
		a.Tries = try
		run, ok := agentRun(ctx, env, a, RunSpec{
			Dir: dir, Prompt: prompt, Model: a.Model, BenchID: a.BenchID, TaskID: a.TaskID, N: a.N,
			Timeout: task.Timeout, MaxTurns: task.MaxTurns, MaxCostUSD: task.MaxCostUSD, Resume: prev,
			TokenLimit: task.TokenLimit, CostLimitUSD: task.CostLimitUSD, Home: home,
		})
		if !ok {
			return
		}
		a.RunID, a.DurationMS, a.CostUSD = run.ID, a.DurationMS+run.DurationMS, a.CostUSD+run.CostUSD
		a.Usage, a.Turns, a.ToolCalls = a.Usage.Add(run.Usage), a.Turns+run.Turns, a.ToolCalls+run.ToolCalls
		if run.Status != record.StatusSucceeded {
			failRun(a, run)
			return
		}
		check(ctx, env, task, src, dir, a)
		checkFailed := a.Status == record.AttemptFailed && (a.FailureKind == FailCheck || a.FailureKind == FailCheckTimeout)
		if !checkFailed || try >= task.Tries || run.SessionID == "" || ctx.Err() != nil {
			return
		}
		prev = run
	}
}

// check puts the task's protected paths back and runs its check in dir.
func check(ctx context.Context, env AttemptEnv, task *Task, src, dir string, a *record.Attempt) {
	if err := restore(task, src, dir); err != nil {
		failAttempt(a, FailSetup, err.Error(), -1)
		return
	}
	runCheck(ctx, task, dir, a)
	environmentFault(env, task, a)
}

// releaseFolder removes the attempt's folder dir unless it is to be kept:
// a worktree from its fixture repository too, and a kept worktree is
// unlocked. It runs whether the attempt passed, failed or was cancelled.
func releaseFolder(ctx context.Context, env AttemptEnv, task *Task, dir string) {
	ctx = context.WithoutCancel(ctx)
	switch repo := worktreeRepo(env, task); {
	case repo != "" && env.Keep:
		keepWorktree(ctx, repo, dir, task.SetupTimeout)
	case repo != "":
		_ = dropWorktree(ctx, repo, dir, task.SetupTimeout) // as with removeTree, a leftover does no harm to the attempt
	case !env.Keep:
		_ = removeTree(dir) // a folder that cannot be removed does no harm
	}
	if !env.Keep && env.Removed != nil {
		env.Removed(dir)
	}
}

// failAttempt marks a failed, of kind, with output and exitCode where the
// check's would go.
// agentRun runs the attempt's agent, waiting while a usage limit refuses
// its account (AttemptEnv.Limits). false: the attempt ends here, lane
// could not run the agent or the wait would be too long (a is set so).
func agentRun(ctx context.Context, env AttemptEnv, a *record.Attempt, spec RunSpec) (*record.Run, bool) {
	run, err := env.Limits.Run(env.Run)(ctx, spec)
	var tooLong *NotWaitedError
	switch {
	case errors.As(err, &tooLong):
		a.Status, a.FailureKind, a.CheckOutput = record.AttemptSkipped, FailRateLimited, err.Error()
		return nil, false
	case err != nil && ctx.Err() != nil:
		failAttempt(a, FailCancelled, "", -1) // cut short while waiting for a limit's reset
		return nil, false
	case err != nil:
		failAttempt(a, FailLane, "lane could not run the agent: "+err.Error(), -1)
		return nil, false
	}
	return run, true
}

// failRun sets the outcome of an attempt whose run did not succeed: failed,
// or skipped when a usage limit refused it (the agent was not measured).
func failRun(a *record.Attempt, run *record.Run) {
	if run.ErrorKind == record.ErrorRateLimited {
		a.Status, a.FailureKind, a.CheckOutput = record.AttemptSkipped, FailRateLimited, run.ErrorMessage
		return
	}
	failAttempt(a, runFailure(run), "", 0)
}

func failAttempt(a *record.Attempt, kind, output string, exitCode int) {
	a.Status, a.FailureKind, a.CheckOutput, a.CheckExitCode = record.AttemptFailed, kind, output, exitCode
}

// setUp fills dir with the task's fixture or clone and runs its setup
// commands there. On failure it returns the exit code of the setup
// command that failed, -1 when none did.
func setUp(ctx context.Context, env AttemptEnv, task *Task, dir string) (exitCode int, err error) {
	switch {
	case task.FixtureBlob != "" && env.Blob != nil:
		if err = unpackStored(ctx, env, task.FixtureBlob, dir); err != nil {
			err = fmt.Errorf("fixture: %w", err)
		}
	case worktreeRepo(env, task) != "":
		err = addWorktree(ctx, worktreeRepo(env, task), dir, task.FixtureCommit, env.Keep, task.SetupTimeout)
	case task.Fixture != "":
		err = copyTree(fixturePath(env.SuiteDir, task.Fixture), dir)
	case task.Git != nil:
		err = cloneRepo(ctx, task.Git, dir, task.SetupTimeout)
	}
	if err == nil {
		err = hide(task, dir)
	}
	if err != nil {
		return -1, err
	}
	for _, c := range task.Setup {
		if res := shell(ctx, dir, task.SetupTimeout, c); !res.ok() {
			return res.exitCode, fmt.Errorf("setup %q: %s", c, describeFailure(res))
		}
	}
	return 0, nil
}

// runCheck runs the task's check command and file checks in dir, after the
// agent's run succeeded, and sets a passed or failed with what they said.
func runCheck(ctx context.Context, task *Task, dir string, a *record.Attempt) {
	var out strings.Builder
	a.Status = record.AttemptPassed
	if task.Check.Command != "" {
		res := shell(ctx, dir, task.Check.Timeout, task.Check.Command)
		out.WriteString(res.output)
		a.CheckExitCode = res.exitCode
		switch {
		case res.timedOut:
			a.Status, a.FailureKind = record.AttemptFailed, FailCheckTimeout
			fmt.Fprintf(&out, "\n[lane: the check timed out after %s]\n", task.Check.Timeout)
		case res.err != nil:
			a.Status, a.FailureKind = record.AttemptFailed, FailCheck
			fmt.Fprintf(&out, "\n[lane: the check could not run: %v]\n", res.err)
		case res.exitCode != 0:
			a.Status, a.FailureKind = record.AttemptFailed, FailCheck
		}
	}
	if bad := checkFiles(dir, task.Check.Files); len(bad) > 0 {
		if a.Status == record.AttemptPassed {
			a.Status, a.FailureKind = record.AttemptFailed, FailCheck
		}
		if out.Len() > 0 && !strings.HasSuffix(out.String(), "\n") {
			out.WriteByte('\n')
		}
		for _, l := range bad {
			fmt.Fprintf(&out, "files: %s\n", l)
		}
	}
	a.CheckOutput = out.String()
}

// runFailure is the failure kind of an attempt whose run did not succeed.
func runFailure(run *record.Run) string {
	switch run.ErrorKind {
	case record.ErrorAgent:
		return FailAgent
	case record.ErrorNone:
		switch run.Status {
		case record.StatusTimedOut:
			return string(record.ErrorTimeout)
		case record.StatusCancelled:
			return FailCancelled
		case record.StatusInterrupted:
			return string(record.StatusInterrupted)
		}
		return FailAgent
	}
	return string(run.ErrorKind)
}

// removeLeftovers removes the folders that attempt a's earlier tries left
// in the work folder.
func (r *runner) removeLeftovers(a record.Attempt) {
	pattern := folderName(&a)
	dirs, _ := filepath.Glob(filepath.Join(r.workDir, pattern))
	for _, d := range dirs {
		// MkdirTemp's random part is digits; anything else is not ours.
		rnd := strings.TrimPrefix(filepath.Base(d), strings.TrimSuffix(pattern, "*"))
		rnd = strings.TrimSuffix(strings.TrimSuffix(rnd, ".home"), ".shipped") // the attempt's runtime home, its fixture as shipped
		if strings.Trim(rnd, "0123456789") == "" {
			_ = removeTree(d) // a folder that cannot be removed does no harm
		}
	}
}

// SafeName is s as a part of a file name: letters, digits, '.', '-' and
// '_' kept, anything else '_'.
func SafeName(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, s)
}

// folderName is the pattern of an attempt's folder name (for MkdirTemp).
func folderName(a *record.Attempt) string {
	id := a.BenchID
	if len(id) > 8 {
		id = id[:8]
	}
	return fmt.Sprintf("lane-bench-%s-%s-%s-%d-*", SafeName(id), SafeName(a.TaskID), SafeName(a.Model), a.N)
}
