package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"lane/internal/proc"
	"lane/pricing"
	"lane/streamjson"
	"lane/trace"
)

// DefaultAllowedTools is what a Claude run may use unless told otherwise.
var DefaultAllowedTools = []string{"Read", "Write", "Edit", "Bash", "Glob", "Grep"}

// ClaudeOptions describe one Claude Code task.
type ClaudeOptions struct {
	Bin                string // resolved binary (see FindClaude)
	Version            string // its --version line, recorded with the run
	Dir                string // absolute working folder
	AddDirs            []string
	Prompt             string
	Model              string
	AllowedTools       []string
	AppendSystemPrompt string
	ResumeSession      string
	PermissionMode     string
	AllowMCP           bool
	MaxTurns           int
	Env                []string // the environment to pass through (CLAUDECODE is removed)
	Watchdogs          Watchdogs
	// Retries re-runs a retryable failure (timeout, API overload, crash)
	// this many times, each attempt a run of its own linked to the first.
	Retries int
	// RetryBackoff is the wait before the first retry; it doubles after each.
	RetryBackoff time.Duration
	// ParentRunID links the first attempt to an earlier run (lane resume).
	ParentRunID string
	// PriorSessionCostUSD is the session's running total before this run, so
	// that a resumed run's own cost can be told from Claude Code's total.
	PriorSessionCostUSD float64
	Prices              *pricing.Table
}

// Recorder receives a run's record and events as they happen. The store
// and the terminal view implement it in cmd; the runner knows neither.
type Recorder interface {
	BeginRun(ctx context.Context, r *trace.Run) error
	Event(ev trace.Event) error
	EndRun(ctx context.Context, r *trace.Run) error
}

// ClaudeArgs builds the command line for one Claude Code invocation. The
// task goes last, after "--", so that a task starting with "-" is not read
// as a flag.
func ClaudeArgs(o ClaudeOptions) []string {
	args := []string{"-p", "--output-format", "stream-json", "--verbose"}
	if o.Model != "" {
		args = append(args, "--model", o.Model)
	}
	args = append(args, "--add-dir", o.Dir)
	for _, d := range o.AddDirs {
		args = append(args, "--add-dir", d)
	}
	if o.PermissionMode != "" {
		args = append(args, "--permission-mode", o.PermissionMode)
	}
	if len(o.AllowedTools) > 0 {
		// --allowedTools only spares permission prompts (and bypassPermissions
		// spares them all); --tools is what limits the tools the model sees.
		args = append(args, "--tools", strings.Join(toolNames(o.AllowedTools), ","),
			"--allowedTools", strings.Join(o.AllowedTools, ","))
	}
	if !o.AllowMCP {
		args = append(args, "--strict-mcp-config")
	}
	if o.AppendSystemPrompt != "" {
		args = append(args, "--append-system-prompt", o.AppendSystemPrompt)
	}
	if o.ResumeSession != "" {
		args = append(args, "--resume", o.ResumeSession)
	}
	if o.MaxTurns > 0 {
		args = append(args, "--max-turns", strconv.Itoa(o.MaxTurns))
	}
	return append(args, "--", o.Prompt)
}

// toolNames reduces permission rules such as "Bash(git *)" to the tool
// names they concern, each once.
func toolNames(rules []string) []string {
	var names []string
	seen := map[string]bool{}
	for _, r := range rules {
		name, _, _ := strings.Cut(r, "(")
		name = strings.TrimSpace(name)
		if name != "" && !seen[name] {
			seen[name] = true
			names = append(names, name)
		}
	}
	return names
}

// ClaudeEnv is env without the variables that make Claude Code believe it
// runs nested inside another Claude Code session.
func ClaudeEnv(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		if strings.HasPrefix(kv, "CLAUDECODE=") {
			continue
		}
		out = append(out, kv)
	}
	return out
}

// RunClaude runs the task, retrying as o.Retries allows, and returns the
// record of the last attempt. The error is non-nil only when lane itself
// failed (the recorder, a pipe); the run's own failure is in its Status.
func RunClaude(ctx context.Context, o ClaudeOptions, rec Recorder) (*trace.Run, error) {
	backoff := o.RetryBackoff
	if backoff <= 0 {
		backoff = 2 * time.Second
	}
	first := ""
	var last *trace.Run
	for attempt := 1; ; attempt++ {
		parent := o.ParentRunID
		if first != "" {
			parent = first
		}
		run, err := runClaudeOnce(ctx, o, parent, attempt, rec)
		if err != nil {
			return run, err
		}
		last = run
		if first == "" {
			first = run.ID
		}
		if attempt > o.Retries || !retryable(run) || ctx.Err() != nil {
			return last, nil
		}
		if run.SessionID != "" {
			// Continue the session that was established rather than start
			// the task over.
			o.ResumeSession = run.SessionID
			o.PriorSessionCostUSD = run.SessionCostUSD
		}
		select {
		case <-ctx.Done():
			return last, nil
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

func runClaudeOnce(ctx context.Context, o ClaudeOptions, parentID string, attempt int, rec Recorder) (*trace.Run, error) {
	tools := o.AllowedTools
	run := &trace.Run{
		ID:          trace.NewRunID(),
		ParentRunID: parentID,
		Attempt:     attempt,
		Status:      trace.StatusRunning,
		Runtime:     "claude",
		Model:       o.Model,
		Dir:         o.Dir,
		Prompt:      o.Prompt,
		SessionID:   o.ResumeSession,
		RuntimeVer:  o.Version,
		StartedAt:   time.Now().UTC(),
		Capability: trace.Capability{
			Dir:            o.Dir,
			AddDirs:        o.AddDirs,
			AllowedTools:   tools,
			PermissionMode: o.PermissionMode,
			MCPIsolated:    !o.AllowMCP,
		},
		OwnerPID: os.Getpid(),
	}
	run.OwnerStart, _ = proc.StartTime(run.OwnerPID)
	if err := rec.BeginRun(ctx, run); err != nil {
		return run, fmt.Errorf("record run: %w", err)
	}

	var (
		tally  streamjson.Tally
		seq    int64
		recErr error
		// finished: the runtime's last word so far is a result, so a
		// watchdog that fires now only ends its lingering (a result printed
		// after lane's interrupt does not count: see Exit.Settled).
		finished bool
		emitErr  = func(ev trace.Event) {
			seq++
			ev.RunID, ev.Seq, ev.Time = run.ID, seq, time.Now().UTC()
			if err := rec.Event(ev); err != nil && recErr == nil {
				recErr = err
			}
		}
	)
	emit := func(ev trace.Event) error {
		tally.Observe(ev)
		if ev.Kind != trace.KindStderr {
			finished = ev.Kind == trace.KindResult
		}
		emitErr(ev)
		if ev.Kind == trace.KindSession && ev.SessionID != "" {
			run.SessionID = ev.SessionID
		}
		// Claude Code retries a refused key for minutes; the first refusal
		// is enough to know.
		if ev.Kind == trace.KindRetry && ev.Retry != nil && (ev.Retry.ErrorStatus == 401 || ev.Retry.ErrorStatus == 403) {
			return &AuthError{Status: ev.Retry.ErrorStatus, Message: ev.Retry.Error}
		}
		return nil
	}
	inv := Invocation{Path: o.Bin, Args: ClaudeArgs(o), Dir: o.Dir, Env: ClaudeEnv(o.Env)}
	newSource := func(r io.Reader) EventSource {
		d := streamjson.NewDecoder(r)
		d.MaxOutputSize = MaxEventOutput
		return d
	}
	ex, err := supervise(ctx, inv, o.Watchdogs, newSource, emit, func() bool { return finished })
	if err != nil {
		run.Status, run.ErrorKind = trace.StatusFailed, trace.ErrorCrash
		run.ErrorMessage = err.Error()
		run.ErrorHint = "check that " + o.Bin + " is executable"
	} else {
		if ex.Settled && isIdleTimeout(ex.StopCause) {
			slog.Debug("runtime lingered after its result", "run", run.ID, "cause", ex.StopCause)
			ex.StopCause, ex.Code = nil, 0
		}
		judge(run, &tally, ex)
		fillAccounting(run, &tally, o)
	}
	run.EndedAt = time.Now().UTC()
	run.DurationMS = run.EndedAt.Sub(run.StartedAt).Milliseconds()
	if run.Status != trace.StatusSucceeded && run.ErrorMessage != "" {
		emitErr(trace.Event{Kind: trace.KindError, ErrorKind: run.ErrorKind, Text: run.ErrorMessage})
	}
	if err := rec.EndRun(context.WithoutCancel(ctx), run); err != nil {
		return run, fmt.Errorf("record end of run: %w", err)
	}
	if recErr != nil {
		return run, fmt.Errorf("record events: %w", recErr)
	}
	return run, nil
}

// rootRefusal is what Claude Code prints when run as root with
// bypassPermissions outside a sandbox.
const rootRefusal = "cannot be used with root/sudo privileges"

// judge decides the run's status: lane's own stop causes first, then the
// runtime's account weighed against its exit code.
func judge(run *trace.Run, tally *streamjson.Tally, ex Exit) {
	code := ex.Code
	run.ExitCode = &code
	var timeout *TimeoutError
	var auth *AuthError
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
		return
	case errors.As(ex.StopCause, &auth):
		run.Status, run.ErrorKind = trace.StatusFailed, trace.ErrorAuth
		run.ErrorMessage = auth.Error()
		run.ErrorHint = authHint
		return
	case ex.StopCause != nil:
		run.Status, run.ErrorKind = trace.StatusCancelled, trace.ErrorCancelled
		run.ErrorMessage = ex.StopCause.Error()
		return
	}
	if tally.LastResult() == nil && stderrHas(ex.StderrTail, rootRefusal) {
		run.Status, run.ErrorKind = trace.StatusFailed, trace.ErrorPermission
		run.ErrorMessage = "Claude Code refuses --permission-mode bypassPermissions when run as root"
		run.ErrorHint = "set IS_SANDBOX=1 if this machine is a sandbox, or pass another --permission-mode (e.g. acceptEdits)"
		return
	}
	v := tally.Judge(code)
	run.Status, run.ErrorKind = v.Status, v.ErrorKind
	run.ErrorMessage, run.ErrorHint, run.Contradiction = v.Message, v.Hint, v.Contradiction
	if v.ErrorKind == trace.ErrorCrash {
		if ex.Signal != "" {
			run.ErrorMessage = fmt.Sprintf("the runtime was killed by %s without a result", ex.Signal)
		}
		if len(ex.StderrTail) > 0 {
			run.ErrorMessage += "; last stderr:\n" + strings.Join(ex.StderrTail, "\n")
		}
	}
}

func isIdleTimeout(err error) bool {
	var te *TimeoutError
	return errors.As(err, &te) && te.Watchdog == WatchdogIdle
}

const authHint = "check ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN and ANTHROPIC_BASE_URL), or log in with `claude /login`"

func stderrHas(lines []string, s string) bool {
	for _, l := range lines {
		if strings.Contains(l, s) {
			return true
		}
	}
	return false
}

func fillAccounting(run *trace.Run, tally *streamjson.Tally, o ClaudeOptions) {
	if id := tally.SessionID(); id != "" {
		run.SessionID = id
	}
	run.Usage = tally.Usage()
	run.Turns = tally.Turns()
	run.ToolCalls = tally.ToolCalls()
	prices := o.Prices
	if prices == nil {
		prices = pricing.Default()
	}
	run.CostUSD, run.CostEstimate, run.SessionCostUSD = tally.Cost(o.PriorSessionCostUSD, prices.Cost)
	if res := tally.LastResult(); res != nil {
		run.ResultText = res.Text
		run.PermissionDenials = res.PermissionDenials
	}
}
