package runner

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

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
	return retrying(ctx, o.Retries, o.RetryBackoff, o.ParentRunID,
		func(parent string, n int) (*trace.Run, error) {
			return runAttempt(ctx, claudeAttempt(o, parent, n), rec)
		},
		func(failed *trace.Run) {
			if failed.SessionID != "" {
				// Continue the session that was established rather than
				// start the task over.
				o.ResumeSession = failed.SessionID
				o.PriorSessionCostUSD = failed.SessionCostUSD
			}
		})
}

func claudeAttempt(o ClaudeOptions, parentID string, n int) *attempt {
	var (
		tally streamjson.Tally
		// finished: the runtime's last word so far is a result, so a
		// watchdog that fires now only ends its lingering (a result printed
		// after lane's interrupt does not count: see Exit.Settled).
		finished bool
	)
	return &attempt{
		run: &trace.Run{
			ParentRunID: parentID,
			Attempt:     n,
			Runtime:     "claude",
			Model:       o.Model,
			Dir:         o.Dir,
			Prompt:      o.Prompt,
			SessionID:   o.ResumeSession,
			RuntimeVer:  o.Version,
			Capability: trace.Capability{
				Dir:            o.Dir,
				AddDirs:        o.AddDirs,
				AllowedTools:   o.AllowedTools,
				PermissionMode: o.PermissionMode,
				MCPIsolated:    !o.AllowMCP,
			},
		},
		inv:       Invocation{Path: o.Bin, Args: ClaudeArgs(o), Dir: o.Dir, Env: ClaudeEnv(o.Env)},
		watchdogs: o.Watchdogs,
		newSource: func(r io.Reader) EventSource {
			d := streamjson.NewDecoder(r)
			d.MaxOutputSize = MaxEventOutput
			return d
		},
		observe: func(ev trace.Event) error {
			tally.Observe(ev)
			if ev.Kind != trace.KindStderr {
				finished = ev.Kind == trace.KindResult
			}
			// Claude Code retries a refused key for minutes; the first
			// refusal is enough to know. (Its final word on a refusal is
			// left to judgeClaude, which weighs the result's fields.)
			if ev.Kind == trace.KindRetry {
				return authRefusal(ev)
			}
			return nil
		},
		hooks: watchHooks{settled: func() bool { return finished }},
		finish: func(run *trace.Run, ex Exit) {
			judgeClaude(run, &tally, ex)
			fillAccounting(run, &tally, o)
		},
		startHint: "check that " + o.Bin + " is executable",
	}
}

// authRefusal is the cause to stop a run on: an API refusal of the
// credentials, which no retry of the runtime's will cure, reported as a
// retry or as an error of the main agent.
func authRefusal(ev trace.Event) error {
	switch {
	case ev.Kind == trace.KindRetry && ev.Retry != nil && (ev.Retry.ErrorStatus == 401 || ev.Retry.ErrorStatus == 403):
		return &AuthError{Status: ev.Retry.ErrorStatus, Message: ev.Retry.Error}
	case (ev.Kind == trace.KindError || ev.Kind == trace.KindRetry) && ev.ErrorKind == trace.ErrorAuth && ev.ParentToolUseID == "":
		status := 0
		if ev.Result != nil {
			status = ev.Result.APIErrorStatus
		}
		return &AuthError{Status: status, Message: ev.Text}
	}
	return nil
}

// rootRefusal is what Claude Code prints when run as root with
// bypassPermissions outside a sandbox.
const rootRefusal = "cannot be used with root/sudo privileges"

// judgeClaude decides the run's status: lane's own stop causes first, then
// the runtime's account weighed against its exit code.
func judgeClaude(run *trace.Run, tally *streamjson.Tally, ex Exit) {
	if judgeStop(run, ex, authHint) {
		return
	}
	if tally.LastResult() == nil && stderrHas(ex.StderrTail, rootRefusal) {
		run.Status, run.ErrorKind = trace.StatusFailed, trace.ErrorPermission
		run.ErrorMessage = "Claude Code refuses --permission-mode bypassPermissions when run as root"
		run.ErrorHint = "set IS_SANDBOX=1 if this machine is a sandbox, or pass another --permission-mode (e.g. acceptEdits)"
		return
	}
	applyVerdict(run, tally.Judge(ex.Code), ex)
}

// applyVerdict sets the run's status from a runtime's verdict, saying how a
// crash ended.
func applyVerdict(run *trace.Run, v trace.Verdict, ex Exit) {
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
