package launch

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/lanehq/lane/internal/agent"
	"github.com/lanehq/lane/internal/agent/sandbox"
	"github.com/lanehq/lane/internal/approval"
	"github.com/lanehq/lane/internal/config"
	"github.com/lanehq/lane/internal/record"
	"github.com/lanehq/lane/internal/recorder"
	"github.com/lanehq/lane/internal/runner"
	"github.com/lanehq/lane/internal/store"
)

// Execute runs one task on the runtime its model belongs to, with the
// fallback when that runtime cannot run it. lane run, lane resume and every
// attempt of lane bench go through here.
func Execute(ctx context.Context, env *Env, st *store.Store, rec *recorder.Recorder, cfg *config.File, opts *Options, dir string, addDirs []string) (*record.Run, error) {
	job, err := newJob(ctx, env, st, cfg, opts, dir, addDirs)
	if err != nil {
		return nil, err
	}
	fallback := opts.Fallback
	if fallback == "" {
		fallback = cfg.Fallback
	}
	if fallback != "" && job.Runtime.Fallback {
		// The same task afresh on the fallback model: not the runtime,
		// endpoint or session of the first.
		fo := *opts
		fo.Model, fo.Runtime, fo.BaseURL, fo.Resume, fo.ParentRunID = fallback, "", "", "", ""
		fo.PriorSessionCostUSD, fo.PriorSessionUsage = 0, record.Usage{}
		fb, err := newJob(ctx, env, st, cfg, &fo, dir, addDirs)
		if err != nil {
			return nil, UsageErrorf(fmt.Errorf("--fallback: %w", err))
		}
		if !fb.Runtime.Local {
			return nil, UsageErrorf(errFallbackNotLocal)
		}
		job.Fallback = &fb
	}
	run, err := runner.Run(ctx, job, rec)
	var ce *runner.ConfigError
	if errors.As(err, &ce) {
		return nil, UsageErrorf(err)
	}
	return run, err
}

// newJob resolves --model (with --runtime and --base-url) to its runtime
// and describes the task for it.
func newJob(ctx context.Context, env *Env, st *store.Store, cfg *config.File, opts *Options, dir string, addDirs []string) (runner.Job, error) {
	t, err := cfg.Resolve(opts.Model, opts.Runtime, opts.BaseURL, env.Getenv)
	if err != nil {
		return runner.Job{}, UsageErrorf(err)
	}
	rt, _ := env.Runtimes.Lookup(t.Runtime) // Resolve accepts only the table's names
	o := runOptions(env, cfg, t, opts, dir, addDirs)
	if err := runner.CheckPermissions(o); err != nil {
		return runner.Job{}, UsageErrorf(err)
	}
	if err := checkMCP(rt, o, opts.RequireMCP); err != nil {
		return runner.Job{}, err
	}
	if opts.Profile != "" {
		login, err := cfg.ProfileEnv(opts.Profile, t.Runtime)
		if err != nil {
			return runner.Job{}, UsageErrorf(err)
		}
		o.Env = append(o.Env, login)
	}
	o.Bin = RuntimeBin(env, opts, rt)
	if rt.Local && opts.ParentRunID != "" && opts.Resume != "" {
		// lane's own loop continues from the transcript it stored.
		ev, err := st.LastEventOfKind(ctx, opts.ParentRunID, record.KindTranscript)
		if err != nil {
			return runner.Job{}, fmt.Errorf("run %s left no transcript to resume: %w", opts.ParentRunID, err)
		}
		if o.History, err = agent.Transcript(*ev); err != nil {
			return runner.Job{}, err
		}
	}
	return runner.Job{Runtime: rt, Options: o}, nil
}

// checkMCP refuses a run that must have its MCP servers (required) on a
// runtime that would run without them.
func checkMCP(rt *runner.Runtime, o runner.Options, required bool) error {
	if !required || len(o.MCPServers) == 0 || rt.TakesMCP(o) {
		return nil
	}
	names := make([]string, len(o.MCPServers))
	for i, m := range o.MCPServers {
		names[i] = m.Name
	}
	return fmt.Errorf("%s cannot be given MCP servers, and the task gives its agent some (%s): lane does not run it without them",
		rt.Title, strings.Join(names, ", "))
}

// RuntimeBin is the binary the flags or the environment name for rt, ""
// to look for it in the usual places.
func RuntimeBin(env *Env, opts *Options, rt *runner.Runtime) string {
	bin := opts.RuntimeBin
	if rt.Name == runner.DefaultRuntime && opts.ClaudeBin != "" {
		bin = opts.ClaudeBin
	}
	if bin == "" {
		bin = env.Getenv(runner.BinEnv(rt.Name))
	}
	return bin
}

// runOptions are the runner's options for a task on target t.
func runOptions(env *Env, cfg *config.File, t config.Target, opts *Options, dir string, addDirs []string) runner.Options {
	return runner.Options{
		VersionCache: env.VersionCache(),
		Shim:         env.Shim,
		Dir:          dir,
		AddDirs:      addDirs,
		Prompt:       opts.Task,
		Model:        t.Model,
		Label:        t.Recorded(),
		Provider:     t.Provider,
		API:          t.API,
		BaseURL:      t.BaseURL,
		APIKey:       t.APIKey,
		KeyEnv:       t.KeyEnv,

		ContextWindow:       t.ContextWindow,
		AllowedTools:        AllowRules(cfg, opts),
		PermissionMode:      opts.PermissionMode,
		DenyRules:           cfg.Permissions.Deny,
		Desk:                opts.Desk,
		Attended:            opts.Attended,
		ApprovalTimeout:     opts.ApprovalTimeout,
		Linger:              opts.Linger,
		AllowMCP:            opts.AllowMCP,
		MCPServers:          opts.MCPServers,
		AppendSystemPrompt:  opts.AppendSystemPrompt,
		ResumeSession:       opts.Resume,
		MaxTurns:            opts.MaxTurns,
		MaxCost:             opts.MaxCost,
		TokenLimit:          opts.TokenLimit,
		CostLimit:           opts.CostLimit,
		Env:                 env.Environ(),
		Retries:             opts.Retries,
		ParentRunID:         opts.ParentRunID,
		PriorSessionCostUSD: opts.PriorSessionCostUSD,
		PriorSessionUsage:   opts.PriorSessionUsage,
		Price:               PriceFunc(cfg, t),
		StateDir:            cmp.Or(opts.StateDir, env.StateDir()),
		HermeticHome:        opts.HermeticHome,
		Within:              opts.Within,
		TempDir:             opts.TempDir,
		Changes:             snapshotter(env, cfg, opts),
		ToolMode:            opts.ToolMode,
		Sandbox:             sandbox.Mode(opts.Sandbox),
		BashTimeout:         opts.BashTimeout,
		SkillDirs:           []string{filepath.Join(filepath.Dir(config.Path(env.Getenv)), "skills")},
		Notice:              func(s string) { fmt.Fprintln(env.ErrOut, "lane: "+s) }, // stderr: the data formats stay clean
		Watchdogs: runner.Watchdogs{
			FirstByte: opts.FirstByteTimeout,
			Idle:      opts.IdleTimeout,
			Hard:      opts.HardTimeout,
		},
	}
}

// ResolveDir is folder d, absolute, when it is one.
func ResolveDir(d string) (string, error) {
	abs, err := filepath.Abs(d)
	if err != nil {
		return "", UsageErrorf(fmt.Errorf("--dir %s: %w", d, err))
	}
	st, err := os.Stat(abs)
	if err != nil {
		return "", UsageErrorf(fmt.Errorf("folder %s does not exist", abs))
	}
	if !st.IsDir() {
		return "", UsageErrorf(fmt.Errorf("%s is not a folder", abs))
	}
	return abs, nil
}

// OpenRun looks a run up by id or unique prefix, with errors a person can act on.
func OpenRun(ctx context.Context, st *store.Store, id string) (*record.Run, error) {
	r, err := st.GetRun(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("no run has an id starting with %q (see lane runs): %w", id, store.ErrNotFound)
	}
	return r, err
}

// AllowRules are --allowed-tools and, in the modes that ask, the config
// file's allow rules: in bypassPermissions the list also limits the tools
// the agent sees, which the config's rules must not widen. Without
// --allowed-tools, a mode that asks allows only reading without asking.
func AllowRules(cfg *config.File, opts *Options) []string {
	asks := approval.Mode(opts.PermissionMode).Asks()
	allowed := opts.AllowedTools
	switch {
	case allowed == nil && asks:
		allowed = approval.ReadOnlyRules()
	case allowed == nil:
		allowed = approval.DefaultAllowRules()
	}
	if !asks || len(cfg.Permissions.Allow) == 0 {
		return allowed
	}
	return append(append([]string{}, allowed...), cfg.Permissions.Allow...)
}

// SessionUsage is the token total of the session that run ended with, as
// lane recorded it: the usage of run and of the runs before it in the same
// session, followed through their parents. Codex reports a resumed
// thread's running total, from which this tells the new run's own usage.
func SessionUsage(ctx context.Context, st *store.Store, run *record.Run) (record.Usage, error) {
	var total record.Usage
	seen := map[string]bool{}
	for r := run; r != nil && r.SessionID == run.SessionID && !seen[r.ID]; {
		seen[r.ID] = true
		total = total.Add(r.Usage)
		if r.ParentRunID == "" {
			break
		}
		parent, err := st.GetRun(ctx, r.ParentRunID)
		if err != nil {
			return total, fmt.Errorf("run %s's parent: %w", r.ID, err)
		}
		r = parent
	}
	return total, nil
}
