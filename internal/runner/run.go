package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/lanehq/lane/internal/agent/chat"
	"github.com/lanehq/lane/internal/agent/sandbox"
	"github.com/lanehq/lane/internal/approval"
	"github.com/lanehq/lane/internal/changes"
	"github.com/lanehq/lane/internal/proc"
	"github.com/lanehq/lane/internal/record"
)

// RetryPolicy bounds a model API client's retries (lane's own loop's): the
// values of the provider's policy, which lane's own loop hands it, so that
// the run path holds endpoint values and no model client.
type RetryPolicy struct {
	MaxRetries int           // 0: no retry
	BaseDelay  time.Duration // first wait; doubles each time, with jitter
	MaxDelay   time.Duration
}

// Options describe one task for any runtime. Each runtime uses the fields
// that apply to it (see its entry); the rest are ignored.
type Options struct {
	// Bin is the binary asked for (--runtime-bin, LANE_<NAME>_BIN); ""
	// searches the usual places. Found, when set, is a binary already found
	// and verified, and Bin is not looked at.
	Bin   string
	Found *Binary
	// VersionCache is the file where verified binaries' versions are
	// remembered ("" asks every time).
	VersionCache string
	// Shim is the binary every runtime process is started under (lane's
	// own, see shim.go); "" starts runtimes directly.
	Shim string

	Dir     string // absolute working folder
	AddDirs []string
	Prompt  string
	// Model is the model as the runtime names it; "" leaves the runtime's
	// own default. Label is how the run records it.
	Model string
	Label string

	// The endpoint lane points the runtime at: BaseURL "" leaves an agent
	// CLI with its own configuration. KeyEnv names the variable holding its
	// key, APIKey is that key (lane's own loop sends it itself).
	Provider      string
	API           string // "openai" or "anthropic" for lane's own loop
	BaseURL       string
	APIKey        string
	KeyEnv        string
	ContextWindow int // tokens; 0 when unknown

	AllowedTools   []string
	PermissionMode string
	AllowMCP       bool
	// MCPServers are MCP servers the run is given (an editor's, through
	// lane acp), for the runtimes that take them; the user's own stay out
	// unless AllowMCP.
	MCPServers         []MCPServer
	AppendSystemPrompt string
	ResumeSession      string
	// History is the conversation lane's own loop continues (lane resume).
	History  []chat.Message
	MaxTurns int
	MaxCost  float64 // USD; lane's own loop
	// TokenLimit and CostLimit (USD) bound one attempt: lane stops it at
	// the first event that passes one (see Meter); 0: no limit.
	TokenLimit int64
	CostLimit  float64

	Env       []string // the environment to pass through
	Watchdogs Watchdogs
	// Retries re-runs a retryable failure (timeout, API overload, crash)
	// this many times, each attempt a run of its own linked to the first.
	Retries int
	// RetryBackoff is the wait before the first retry; it doubles after each.
	RetryBackoff time.Duration
	// ParentRunID links the first attempt to an earlier run (lane resume).
	ParentRunID string
	// PriorSessionCostUSD and PriorSessionUsage are the session's running
	// totals before this run, so that a resumed run's own cost and tokens
	// can be told from a runtime's session totals.
	PriorSessionCostUSD float64
	PriorSessionUsage   record.Usage
	// Price prices usage the runtime reported without a cost.
	Price func(model string, u record.Usage) (float64, bool)
	// TempDir is where per-run configuration folders are made ("" is the
	// system's temporary folder); each is removed when its run ends.
	TempDir string
	// StateDir is lane's own lasting folder for runtime homes that must
	// outlive a run (Gemini CLI keeps its sessions in the home lane gives it
	// when pointed at an endpoint); "" uses the per-run folder instead.
	StateDir string
	// HermeticHome, when set, runs the runtime without the user's own
	// setup for it (instructions, settings, hooks, plugins, skills, MCP
	// servers), its login still working: its configuration lives in this
	// folder instead, which the caller keeps across runs that continue one
	// session (a bench attempt's tries). A runtime that cannot is run as
	// it is, and its run says so (Capability.Hermetic stays nil).
	HermeticHome string
	// Within, when set, starts the runtime somewhere else than this
	// machine's own processes (a bench attempt's container): it turns the
	// invocation lane built into the one lane starts and supervises, such
	// as `podman exec -i CONTAINER BIN ARGS…`. Dir and AddDirs are then
	// paths as the runtime sees them there, and so are the binary's and
	// HermeticHome's (the caller mounts them at the same paths).
	Within func(Invocation) Invocation

	// Lane's own loop.
	ToolMode    string       // "native" or "text"
	Sandbox     sandbox.Mode // how bash is confined
	BashTimeout time.Duration
	SkillDirs   []string
	// ProviderRetry bounds the model API client's own retries of 429 and
	// 5xx answers; zero is the provider's default.
	ProviderRetry RetryPolicy
	// Notice receives one-line notes for the person (the sandbox chosen);
	// nil drops them.
	Notice func(string)

	// Interactive runs. Desk is where requests for approval go and
	// steering comes from; nil runs unattended (nobody to ask, nothing to
	// steer). AllowedTools and PermissionMode above are the rules and mode;
	// DenyRules deny whatever the mode says.
	Desk            approval.Desk
	DenyRules       []string
	ApprovalTimeout time.Duration // 0: approval.DefaultApprovalTimeout
	Linger          time.Duration // after an interrupt; 0: DefaultLinger
	// Attended: a person may steer the run while it runs (lane run), so
	// runtimes that have a two-way mode use it even in bypassPermissions.
	Attended bool

	// Changes snapshots the folder before and after each run, to record
	// what the run changed; nil records nothing (--no-changes).
	Changes *changes.Snapshotter

	// Continuing: the task is already in History, as the last attempt
	// left it (a retry of lane's own loop).
	Continuing bool
}

// Recorder receives a run's record and events as they happen. The store
// and the terminal view implement it in cmd; the runner knows neither.
type Recorder interface {
	BeginRun(ctx context.Context, r *record.Run) error
	Event(ev record.Event) error
	EndRun(ctx context.Context, r *record.Run) error
}

// Job is a task on a runtime, with the job to fall back on when the
// runtime cannot run it at all.
type Job struct {
	Runtime  *Runtime
	Options  Options
	Fallback *Job
}

// Run runs the job: it finds the runtime, runs attempts (each judged and
// recorded as a run of its own, retried with backoff as Options.Retries
// allows, continuing the session when one was established), and falls back
// when the runtime could not run the task. It returns the last run. The
// error is non-nil only when lane itself failed (the recorder, a pipe); the
// run's own failure is in its Status.
func Run(ctx context.Context, job Job, rec Recorder) (*record.Run, error) {
	run, err := runAttempts(ctx, job.Runtime, job.Options, rec)
	if err != nil || !job.fallsBack(ctx, run) {
		return run, err
	}
	fb := *job.Fallback
	fb.Options.ParentRunID, fb.Options.ResumeSession, fb.Options.History = run.ID, "", nil
	fb.Fallback = nil
	if n := job.Options.Notice; n != nil {
		n(fmt.Sprintf("%s could not run the task (%s); running it on %s instead", job.Runtime.Title, run.ErrorKind, fb.Options.Label))
	}
	return runAttempts(ctx, fb.Runtime, fb.Options, rec)
}

// MCPServer is an MCP server a run is given: a command to start (stdio) or
// an address (http, sse).
type MCPServer struct {
	Name      string
	Transport string // stdio, http or sse
	Command   string
	Args      []string
	Env       map[string]string
	URL       string
	Headers   map[string]string
}

// fallsBack says whether run, the last of job's attempts, should be rerun
// on the fallback: the runtime could not run the task at all.
func (job Job) fallsBack(ctx context.Context, run *record.Run) bool {
	if job.Fallback == nil || !job.Runtime.Fallback || run.Status != record.StatusFailed || ctx.Err() != nil {
		return false
	}
	switch run.ErrorKind {
	case record.ErrorRuntimeMissing, record.ErrorAuth, record.ErrorAPI, record.ErrorRateLimited:
		return true
	}
	return false
}

// runAttempts finds rt's binary and runs the task on it, retrying a
// retryable failure with backoff as o.Retries allows, and returns the last
// attempt. A missing binary is recorded as a failed run, so that the
// history shows it and a fallback can follow.
func runAttempts(ctx context.Context, rt *Runtime, o Options, rec Recorder) (*record.Run, error) {
	if o.Label == "" {
		o.Label = o.Model
	}
	if !rt.InProcess() && o.Found == nil {
		bin, err := rt.Find(ctx, o.Bin, o.Env, o.VersionCache)
		var me *MissingError
		if errors.As(err, &me) {
			return recordMissing(ctx, rt, o, me, rec)
		}
		if err != nil {
			return nil, err
		}
		o.Found = &bin
	}
	backoff := o.RetryBackoff
	if backoff <= 0 {
		backoff = 2 * time.Second
	}
	first := "" // the first attempt: the later ones link to it
	for n := 1; ; n++ {
		if first != "" {
			o.ParentRunID = first
		}
		a, err := rt.newAttempt(o, n)
		if err != nil {
			return nil, err
		}
		a.changes = o.Changes
		a.run.Budget = o.Budget()
		run, err := runAttempt(ctx, a, rec)
		if err != nil {
			return run, err
		}
		if first == "" {
			first = run.ID
		}
		if n > o.Retries || !retryable(run) || ctx.Err() != nil {
			return run, nil
		}
		if a.next != nil {
			a.next(&o, run) // continue the session it established
		}
		select {
		case <-ctx.Done():
			return run, nil
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, time.Minute)
	}
}

// newAttempt builds attempt number n of the task o describes.
func (rt *Runtime) newAttempt(o Options, n int) (*attempt, error) {
	if rt.Loop != nil {
		la, err := rt.Loop(o, n)
		if err != nil {
			return nil, err
		}
		if o.Interactive() {
			la.Run.Capability.Steer = TwoWaySteer()
		}
		return loopAttempt(la, o), nil
	}
	return processAttempt(rt, o, n)
}

func retryable(r *record.Run) bool {
	switch r.ErrorKind {
	case record.ErrorTimeout, record.ErrorAPI, record.ErrorCrash:
		return r.Status != record.StatusCancelled
	}
	return false
}

// recordMissing records a run that could not start because the runtime is
// missing.
func recordMissing(ctx context.Context, rt *Runtime, o Options, me *MissingError, rec Recorder) (*record.Run, error) {
	now := time.Now().UTC()
	run := &record.Run{
		ID: record.NewRunID(), ParentRunID: o.ParentRunID, Attempt: 1,
		Status: record.StatusRunning, Runtime: rt.Name, Model: o.Label, Dir: o.Dir, Prompt: o.Prompt,
		StartedAt: now, Capability: rt.Process.Capability(o), OwnerPID: os.Getpid(),
	}
	run.OwnerStart, _ = proc.StartTime(run.OwnerPID)
	if err := rec.BeginRun(ctx, run); err != nil {
		return run, fmt.Errorf("record run: %w", err)
	}
	run.Status, run.EndedAt = record.StatusFailed, now
	run.ErrorKind, run.ErrorMessage, run.ErrorHint = record.ErrorRuntimeMissing, me.Error(), me.Hint
	if err := rec.EndRun(context.WithoutCancel(ctx), run); err != nil {
		return run, fmt.Errorf("record end of run: %w", err)
	}
	return run, nil
}
