package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"lane/agent"
	"lane/provider"
	"lane/sandbox"
	"lane/tools"
	"lane/trace"
)

// localRuntime is lane's own agent loop, for any model behind an OpenAI-
// or Anthropic-compatible API: its "process" is the loop, in lane itself.
func localRuntime() *Runtime {
	return &Runtime{
		Name: "local", Title: "lane's own loop", Local: true,
		About:     "lane's own loop (needs a model server: ollama, vLLM, llama.cpp, any OpenAI- or Anthropic-compatible API)",
		inProcess: localAttempt,
	}
}

// localAttempt builds attempt number n of a task on lane's own loop: the
// folder's confinement, the tools and the model API client.
func localAttempt(o Options, n int) (*attempt, error) {
	sb, err := sandbox.New(o.Sandbox, o.Dir)
	if err != nil {
		return nil, &ConfigError{Err: fmt.Errorf("--sandbox %s: %w", o.Sandbox, err)}
	}
	if sb.Note != "" && o.Notice != nil && n == 1 {
		o.Notice(sb.Note)
	}
	ws, err := tools.NewWorkspace(o.Dir, sb)
	if err != nil {
		return nil, err
	}
	ws.BashTimeout = o.BashTimeout
	ac := agent.Config{
		Provider:      newProvider(o),
		Model:         o.Model,
		Dir:           ws.Dir,
		Tools:         tools.Builtin(ws),
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
	return &attempt{
		run: &trace.Run{
			ParentRunID: o.ParentRunID,
			Attempt:     n,
			Runtime:     "local",
			Model:       o.Label,
			Dir:         o.Dir,
			Prompt:      o.Prompt,
			SessionID:   o.ResumeSession,
			Capability: trace.Capability{
				Dir: o.Dir, AddDirs: o.AddDirs, AllowedTools: localToolNames(ac.Tools),
				PermissionMode: "sandbox:" + string(sb.Mode), MCPIsolated: true,
			},
		},
		execute: func(ctx context.Context, emit func(trace.Event) error) (Exit, error) {
			prompt := o.Prompt
			if o.continuing {
				prompt = "" // the task is in the history already
			}
			var stop error
			res, stop = runLoop(ctx, ac, prompt, o.Watchdogs, emit)
			return Exit{StopCause: stop}, nil
		},
		finish: func(run *trace.Run, ex Exit) {
			run.SessionID = res.SessionID
			run.Usage, run.Turns, run.ToolCalls = res.Usage, res.Turns, res.ToolCalls
			run.CostUSD, run.CostEstimate = res.CostUSD, !res.CostKnown
			run.ResultText = res.Text
			judgeLocal(run, res, ex.StopCause)
		},
		// A retry continues the conversation of the failed attempt.
		next: func(o *Options, failed *trace.Run) {
			if len(res.Transcript) == 0 {
				return
			}
			o.ResumeSession, o.History, o.continuing = res.SessionID, res.Transcript, true
		},
	}, nil
}

// runLoop runs the agent loop under the watchdogs, handing its events to
// emit, and returns how it ended and what stopped it (a watchdog, or the
// caller's cancellation), if anything did.
func runLoop(ctx context.Context, ac agent.Config, prompt string, limits Watchdogs, emit func(trace.Event) error) (agent.Result, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	wd := newWatchTimer(newWatch(limits, time.Now(), nil), time.Now, func(cause error) { cancel(cause) })
	defer wd.stop()
	var mu sync.Mutex // subagents and tool output emit from other goroutines
	res := agent.Run(ctx, ac, prompt, func(ev trace.Event) {
		mu.Lock()
		defer mu.Unlock()
		ev.CapOutput(MaxEventOutput)
		wd.observe(ev)
		_ = emit(ev) // the loop's events name no cause to stop on
	})
	return res, context.Cause(ctx)
}

// newProvider builds the model API client of lane's own loop.
func newProvider(o Options) provider.Provider {
	if o.API == "anthropic" {
		return provider.NewAnthropic(provider.AnthropicConfig{Name: o.Provider, BaseURL: o.BaseURL, APIKey: o.APIKey, KeyEnv: o.KeyEnv, Retry: o.ProviderRetry})
	}
	return provider.NewOpenAI(provider.OpenAIConfig{Name: o.Provider, BaseURL: o.BaseURL, APIKey: o.APIKey, KeyEnv: o.KeyEnv, Retry: o.ProviderRetry})
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
func judgeLocal(run *trace.Run, res agent.Result, stopCause error) {
	var timeout *TimeoutError
	switch {
	case errors.As(stopCause, &timeout):
		run.Status, run.ErrorKind, run.ErrorMessage = trace.StatusTimedOut, trace.ErrorTimeout, timeout.Error()
		run.ErrorHint = "the model server may be hanging; raise --idle-timeout or --hard-timeout"
		return
	case stopCause != nil:
		run.Status, run.ErrorKind, run.ErrorMessage = trace.StatusCancelled, trace.ErrorCancelled, ErrCancelled.Error()
		return
	}
	switch res.StopReason {
	case "done":
		run.Status = trace.StatusSucceeded
	case "max_turns":
		run.Status, run.ErrorKind = trace.StatusFailed, trace.ErrorMaxTurns
		run.ErrorMessage = fmt.Sprintf("reached the turn limit (%d turns)", res.Turns)
		run.ErrorHint = "raise --max-turns"
	case "max_cost":
		run.Status, run.ErrorKind = trace.StatusFailed, trace.ErrorAgent
		run.ErrorMessage = fmt.Sprintf("stopped at the cost limit ($%.4f spent)", res.CostUSD)
		run.ErrorHint = "raise --max-cost"
	default:
		run.Status, run.ErrorKind = trace.StatusFailed, trace.ErrorAgent
		run.ErrorMessage = "the agent loop stopped: " + res.StopReason
		var pe *provider.Error
		if errors.As(res.Err, &pe) {
			run.ErrorMessage, run.ErrorHint = pe.Error(), pe.Hint
			switch pe.Kind {
			case provider.ErrAuth:
				run.ErrorKind = trace.ErrorAuth
			case provider.ErrRateLimited, provider.ErrServer, provider.ErrUnreachable:
				run.ErrorKind = trace.ErrorAPI
			}
		} else if res.Err != nil {
			run.ErrorMessage = res.Err.Error()
		}
	}
}

// Transcript decodes a transcript event's raw JSON for lane resume.
func Transcript(ev trace.Event) ([]provider.Message, error) {
	var msgs []provider.Message
	if err := json.Unmarshal(ev.Raw, &msgs); err != nil {
		return nil, fmt.Errorf("decode transcript of run %s: %w", ev.RunID, err)
	}
	return msgs, nil
}
