package local

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os/exec"
	"path/filepath"
	"sync"

	"github.com/lanehq/lane/internal/agent"
	"github.com/lanehq/lane/internal/agent/provider"
	"github.com/lanehq/lane/internal/agent/sandbox"
	"github.com/lanehq/lane/internal/agent/tools"
	"github.com/lanehq/lane/internal/approval"
	"github.com/lanehq/lane/internal/console"
	"github.com/lanehq/lane/internal/record"
	"github.com/lanehq/lane/internal/runner"
	"github.com/lanehq/lane/internal/runtimes/descriptor"
)

// Runtime is lane's own agent loop, for any model behind an OpenAI-
// or Anthropic-compatible API: its "process" is the loop, in lane itself.
func Runtime() *runner.Runtime {
	return &runner.Runtime{
		Descriptor: descriptor.Descriptor{
			Name: descriptor.LocalName, Title: "lane's own loop", Local: true,
			About: "lane's own loop (needs a model server: ollama, vLLM, llama.cpp, any OpenAI- or Anthropic-compatible API)",
		},
		Describe: agent.Call,
		Loop:     localAttempt,
	}
}

// localAttempt builds attempt number n of a task on lane's own loop: the
// folder's confinement, the tools and the model API client.
func localAttempt(o runner.Options, n int) (*runner.LoopAttempt, error) {
	tl, err := localTools(o, n)
	if err != nil {
		return nil, err
	}
	ac := agent.Config{
		Provider:      newProvider(o),
		Model:         o.Model,
		Dir:           tl.dir,
		Tools:         tl.tools,
		SystemAppend:  o.AppendSystemPrompt,
		MaxTurns:      o.MaxTurns,
		MaxCostUSD:    o.MaxCost,
		Price:         o.Price,
		ToolMode:      o.ToolMode,
		ContextWindow: o.ContextWindow,
		SkillDirs:     o.SkillDirs,
		History:       o.History,
		SessionID:     o.ResumeSession,
	}
	var res agent.Result
	run := &record.Run{
		ParentRunID:   o.ParentRunID,
		Attempt:       n,
		Runtime:       "local",
		Model:         o.Label,
		Dir:           o.Dir,
		Prompt:        o.Prompt,
		SessionID:     o.ResumeSession,
		ContextWindow: o.ContextWindow,
		Capability: record.Capability{
			Dir: o.Dir, AddDirs: o.AddDirs, AllowedTools: localToolNames(ac.Tools),
			PermissionMode: tl.permission, MCPIsolated: true,
		},
	}
	return &runner.LoopAttempt{
		Run: run,
		Execute: func(ctx context.Context, emit func(record.Event) error) (runner.Exit, error) {
			if tl.start != nil {
				stop, err := tl.start(ctx)
				if err != nil {
					return runner.Exit{}, err
				}
				defer stop()
			}
			prompt := o.Prompt
			if o.Continuing {
				prompt = "" // the task is in the history already
			}
			ac := ac
			if o.Interactive() {
				sctx, endSteering := context.WithCancel(ctx) // the desk's steering ends with the loop
				defer endSteering()
				converse(sctx, o, &ac, run)
			}
			var stop error
			res, stop = runLoop(ctx, ac, prompt, o.Watchdogs, emit)
			return runner.Exit{StopCause: stop}, nil
		},
		Finish: func(run *record.Run, ex runner.Exit) {
			run.SessionID = res.SessionID
			run.Usage, run.Turns, run.ToolCalls = res.Usage, res.Turns, res.ToolCalls
			run.CostUSD, run.CostEstimate = res.CostUSD, !res.CostKnown
			run.ResultText = res.Text
			judgeLocal(run, res, ex.StopCause)
		},
		// A retry continues the conversation of the failed attempt.
		Next: func(o *runner.Options, failed *record.Run) {
			if len(res.Transcript) == 0 {
				return
			}
			o.ResumeSession, o.History, o.Continuing = res.SessionID, res.Transcript, true
		},
	}, nil
}

// converse makes ac an interactive run's: its tool calls pass the run's
// gate (mode, rules, a person) and people's steering comes from the desk
// until ctx ends.
func converse(ctx context.Context, o runner.Options, ac *agent.Config, run *record.Run) {
	judged := o
	judged.Dir = ac.Dir // the folder as the model sees it, symlinks resolved
	gate := judged.NewGate(run, nil)
	ac.Approve = func(ctx context.Context, call provider.ToolCall, emit func(record.Event)) (approval.Decision, error) {
		return approveLocal(ctx, *gate, ac.Dir, call, emit)
	}
	ac.Steering = o.Desk.Steering(ctx, run.ID)
	ac.Delivered = func(s approval.Steer) {
		if err := o.Desk.Delivered(context.WithoutCancel(ctx), s); err != nil {
			slog.Warn("record a delivered message", "run", run.ID, "steer", s.ID, "err", err)
		}
	}
	ac.Linger = o.LingerWait()
}

// approveLocal passes one call of lane's own tools through the gate, whose
// events go to emit (the calling loop's, a subagent's included). A request
// that the end of its turn leaves unanswered (an interrupt) is closed with
// a decision of lane's, so that the trace holds no request left open.
func approveLocal(ctx context.Context, gate approval.Gate, dir string, call provider.ToolCall, emit func(record.Event)) (approval.Decision, error) {
	var open *record.Event
	gate.Emit = func(ev record.Event) {
		switch ev.Kind {
		case record.KindPermissionRequest:
			open = &ev
		case record.KindPermissionDecision:
			open = nil
		}
		emit(ev)
	}
	req := approval.Request{ToolUseID: call.ID, Tool: call.Name, Input: call.Arguments, Dir: dir}
	d, err := gate.Check(ctx, localCall(call.Name, call.Arguments), req)
	if err != nil && open != nil {
		emit(record.Event{
			Kind: record.KindPermissionDecision, ToolUseID: call.ID, ToolName: call.Name,
			Permission: &record.Permission{ID: open.Permission.ID, By: string(approval.ByLane),
				Message: "the turn ended before anyone answered: " + context.Cause(ctx).Error()},
		})
	}
	return d, err
}

// localCall is a call of lane's own tools as the permission rules see
// it: a file tool or search without a path works on the folder.
func localCall(name string, args json.RawMessage) approval.Call {
	c := *agent.Call(name, args)
	if len(c.Paths) == 0 && (c.Kind.ReadsOnly() || c.Kind.ChangesFiles()) {
		c.Paths = []string{"."}
	}
	return c
}

// runLoop runs the agent loop under the watchdogs, handing its events to
// emit, and returns how it ended and what stopped it (a watchdog, a cause
// emit named, such as a limit, or the caller's cancellation), if anything
// did.
func runLoop(ctx context.Context, ac agent.Config, prompt string, limits runner.Watchdogs, emit func(record.Event) error) (agent.Result, error) {
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	ctx, wd := runner.WatchLoop(ctx, limits)
	defer wd.Stop()
	var mu sync.Mutex // subagents and tool output emit from other goroutines
	res := agent.Run(ctx, ac, prompt, func(ev record.Event) {
		mu.Lock()
		defer mu.Unlock()
		wd.Observe(&ev)
		if cause := emit(ev); cause != nil {
			stop(cause) // the loop and its tools end with the context
		}
	})
	return res, context.Cause(ctx)
}

// newProvider builds the model API client of lane's own loop.
func newProvider(o runner.Options) provider.Provider {
	if o.API == "anthropic" {
		return provider.NewAnthropic(provider.AnthropicConfig{Name: o.Provider, BaseURL: o.BaseURL, APIKey: o.APIKey, KeyEnv: o.KeyEnv, Retry: provider.RetryPolicy(o.ProviderRetry)})
	}
	return provider.NewOpenAI(provider.OpenAIConfig{Name: o.Provider, BaseURL: o.BaseURL, APIKey: o.APIKey, KeyEnv: o.KeyEnv, Retry: provider.RetryPolicy(o.ProviderRetry)})
}

func localToolNames(ts []tools.Tool) []string {
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = t.Spec().Name
	}
	return names
}

// judgeLocal sets the run's status from the loop's result and from what
// stopped it.
func judgeLocal(run *record.Run, res agent.Result, stopCause error) {
	var timeout *runner.TimeoutError
	switch {
	case errors.As(stopCause, &timeout):
		run.Status, run.ErrorKind, run.ErrorMessage = record.StatusTimedOut, record.ErrorTimeout, timeout.Error()
		run.ErrorHint = "the model server may be hanging; raise --idle-timeout or --hard-timeout"
		return
	case stopCause != nil:
		run.Status, run.ErrorKind, run.ErrorMessage = record.StatusCancelled, record.ErrorCancelled, runner.ErrCancelled.Error()
		return
	}
	switch res.StopReason {
	case agent.StopDone:
		run.Status = record.StatusSucceeded
	case agent.StopCancelled, agent.StopInterrupted: // a person's cancel, or an interrupt nobody followed up
		run.Status, run.ErrorKind, run.ErrorMessage = record.StatusCancelled, record.ErrorCancelled, runner.ErrCancelled.Error()
		if res.Err != nil {
			run.ErrorMessage = res.Err.Error()
		}
		if res.StopReason == agent.StopInterrupted {
			run.ErrorHint = "lane resume continues the conversation"
		}
	case "max_turns":
		run.Status, run.ErrorKind = record.StatusFailed, record.ErrorTurnLimit
		run.ErrorMessage = fmt.Sprintf("reached the turn limit (%d turns)", res.Turns)
		run.ErrorHint = "raise --max-turns"
	case "max_cost":
		run.Status, run.ErrorKind = record.StatusFailed, record.ErrorAgent
		run.ErrorMessage = "stopped at the cost limit (" + console.USD(res.CostUSD) + " spent)"
		run.ErrorHint = "raise --max-cost"
	default:
		run.Status, run.ErrorKind = record.StatusFailed, record.ErrorAgent
		run.ErrorMessage = "the agent loop stopped: " + res.StopReason
		var pe *provider.Error
		if errors.As(res.Err, &pe) {
			run.ErrorMessage, run.ErrorHint = pe.Error(), pe.Hint
			switch pe.Kind {
			case provider.ErrAuth:
				run.ErrorKind = record.ErrorAuth
			case provider.ErrRateLimited, provider.ErrServer, provider.ErrUnreachable:
				run.ErrorKind = record.ErrorAPI
			}
		} else if res.Err != nil {
			run.ErrorMessage = res.Err.Error()
		}
	}
}

// localToolset is where lane's own loop runs its tools: the folder as the
// model sees it, the tools, the run's recorded confinement, and, for a
// folder elsewhere, how to start the tool host there (nil here).
type localToolset struct {
	dir        string
	tools      []tools.Tool
	permission string
	start      func(ctx context.Context) (stop func(), err error)
}

// localTools confines the tools to o.Dir on this machine with the sandbox
// asked for or, with o.Within, runs them where the folder is: a tool host
// (lane toolhost DIR) started there, the container being the confinement.
func localTools(o runner.Options, n int) (localToolset, error) {
	if o.Within != nil {
		return toolsElsewhere(o), nil
	}
	sb, err := sandbox.New(o.Sandbox, o.Dir)
	if err != nil {
		return localToolset{}, &runner.ConfigError{Err: fmt.Errorf("--sandbox %s: %w", o.Sandbox, err)}
	}
	if sb.Note != "" && o.Notice != nil && n == 1 {
		o.Notice(sb.Note)
	}
	ws, err := tools.NewWorkspace(o.Dir, sb)
	if err != nil {
		return localToolset{}, err
	}
	ws.BashTimeout = o.BashTimeout
	return localToolset{dir: ws.Dir, tools: tools.Builtin(ws), permission: "sandbox:" + string(sb.Mode)}, nil
}

// toolsElsewhere runs the tools through a tool host that o.Within starts
// where the folder is, from lane's own binary (o.Shim), which the caller
// has there at the same path.
func toolsElsewhere(o runner.Options) localToolset {
	var host *tools.Host
	ts := localToolset{dir: o.Dir, permission: "container", tools: tools.Remote(func() *tools.Host { return host })}
	ts.start = func(ctx context.Context) (func(), error) {
		self, err := filepath.EvalSymlinks(o.Shim)
		if err != nil || o.Shim == "" {
			return nil, fmt.Errorf("lane's own binary for the tool host: %v", err)
		}
		inv := o.Within(runner.Invocation{Path: self, Args: []string{"toolhost", o.Dir}, Dir: o.Dir})
		cctx, cancel := context.WithCancel(ctx)
		cmd := exec.CommandContext(cctx, inv.Path, inv.Args...)
		cmd.Env, cmd.Dir = inv.Env, inv.Dir
		in, err := cmd.StdinPipe()
		if err != nil {
			cancel()
			return nil, err
		}
		out, err := cmd.StdoutPipe()
		if err == nil {
			err = cmd.Start()
		}
		if err != nil {
			cancel()
			return nil, fmt.Errorf("start the tool host: %w", err)
		}
		host = tools.NewHost(in, out)
		return func() { in.Close(); cancel(); _ = cmd.Wait() }, nil
	}
	return ts
}
