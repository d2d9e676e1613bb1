package cmd

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"lane/agent"
	"lane/config"
	"lane/pricing"
	"lane/provider"
	"lane/runner"
	"lane/sandbox"
	"lane/store"
	"lane/tools"
	"lane/trace"
)

// newProvider builds the model API client for a local target.
func newProvider(t config.Target) provider.Provider {
	if t.API == "anthropic" {
		return provider.NewAnthropic(provider.AnthropicConfig{Name: t.Provider, BaseURL: t.BaseURL, APIKey: t.APIKey, KeyEnv: t.KeyEnv})
	}
	return provider.NewOpenAI(provider.OpenAIConfig{Name: t.Provider, BaseURL: t.BaseURL, APIKey: t.APIKey, KeyEnv: t.KeyEnv})
}

// priceFunc prices a local target's usage: the config file's prices first,
// then lane's table; models served by Ollama cost nothing.
func priceFunc(cfg *config.File, t config.Target) func(string, trace.Usage) (float64, bool) {
	table := pricing.Default()
	return func(model string, u trace.Usage) (float64, bool) {
		for _, key := range []string{t.Label(), model} {
			if p, ok := cfg.Prices[key]; ok {
				return (float64(u.InputTokens)*p.Input + float64(u.OutputTokens)*p.Output +
					float64(u.CacheReadTokens)*p.CacheRead + float64(u.CacheCreationTokens)*p.CacheWrite) / 1e6, true
			}
		}
		if t.Provider == "ollama" {
			return 0, true
		}
		return table.Cost(model, u)
	}
}

// runLocal runs opts on lane's own agent loop.
func runLocal(ctx context.Context, f *Factory, st *store.Store, rec *runRecorder, cfg *config.File, t config.Target, opts *RunOptions, dir string, addDirs []string) (*trace.Run, error) {
	mode := sandbox.Mode(opts.Sandbox)
	sb, err := sandbox.New(mode, dir)
	if err != nil {
		return nil, usageErrorf(fmt.Errorf("--sandbox %s: %w", opts.Sandbox, err))
	}
	if sb.Note != "" {
		fmt.Fprintln(f.IO.ErrOut, "lane: "+sb.Note) // stderr: the data formats stay clean
	}
	ws, err := tools.NewWorkspace(dir, sb)
	if err != nil {
		return nil, err
	}
	ws.BashTimeout = opts.BashTimeout
	ac := agent.Config{
		Provider:      newProvider(t),
		Model:         t.Model,
		Dir:           ws.Dir,
		Tools:         tools.Builtin(ws),
		SystemAppend:  opts.AppendSystemPrompt,
		MaxTurns:      opts.MaxTurns,
		MaxCostUSD:    opts.MaxCost,
		Price:         priceFunc(cfg, t),
		ToolMode:      opts.ToolMode,
		ContextWindow: t.ContextWindow,
		SkillDirs:     []string{filepath.Join(filepath.Dir(config.Path(f.Getenv)), "skills")},
	}
	if opts.ParentRunID != "" && opts.Resume != "" {
		ev, err := st.LastEventOfKind(ctx, opts.ParentRunID, trace.KindTranscript)
		if err != nil {
			return nil, usageErrorf(fmt.Errorf("run %s left no transcript to resume: %w", opts.ParentRunID, err))
		}
		if ac.History, err = runner.Transcript(*ev); err != nil {
			return nil, err
		}
		ac.SessionID = opts.Resume
	}
	return runner.RunLocal(ctx, runner.LocalOptions{
		Label:       t.Label(),
		Agent:       ac,
		Prompt:      opts.Task,
		ParentRunID: opts.ParentRunID,
		Watchdogs:   runner.Watchdogs{FirstByte: opts.FirstByteTimeout, Idle: opts.IdleTimeout, Hard: opts.HardTimeout},
		Capability: trace.Capability{
			Dir: dir, AddDirs: addDirs, AllowedTools: toolNames(ac.Tools),
			PermissionMode: "sandbox:" + string(sb.Mode), MCPIsolated: true,
		},
	}, rec)
}

func toolNames(ts []tools.Tool) []string {
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = t.Spec().Name
	}
	return names
}

// fallbackWorthy says whether a failed Claude run should be rerun on the
// fallback model: Claude Code could not run the task at all.
func fallbackWorthy(r *trace.Run) bool {
	switch r.ErrorKind {
	case trace.ErrorRuntimeMissing, trace.ErrorAuth, trace.ErrorAPI:
		return true
	}
	return false
}

var errFallbackNotLocal = errors.New("--fallback must name a model of the local loop (PROVIDER:MODEL)")
