package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/lanehq/lane/internal/approval"
	"github.com/lanehq/lane/internal/approval/dbdesk"
	"github.com/lanehq/lane/internal/config"
	"github.com/lanehq/lane/internal/launch"
	"github.com/lanehq/lane/internal/record"
	"github.com/lanehq/lane/internal/recorder"
	"github.com/lanehq/lane/internal/runner"
	"github.com/lanehq/lane/internal/store"
)

// RunOptions are the flags of `lane run` (and `lane resume`).
type RunOptions = launch.Options

// Output formats shared by the commands that print runs.
const (
	formatText       = recorder.FormatText
	formatJSON       = recorder.FormatJSON
	formatStreamJSON = recorder.FormatStreamJSON
	formatNone       = recorder.FormatNone
)

func checkFormat(f string) error {
	switch f {
	case formatText, formatJSON, formatStreamJSON:
		return nil
	}
	return usageErrorf(fmt.Errorf("unknown --output-format %q (want text, json or stream-json)", f))
}

// NewCmdRun builds `lane run`. runF replaces the work in tests of flag parsing.
func NewCmdRun(f *Factory, runF func(context.Context, *RunOptions) error) *cobra.Command {
	opts := &RunOptions{}
	c := &cobra.Command{
		Use:   "run [flags] TASK|-",
		Short: "Run an agent on a folder and record the run",
		Long: `Run starts an agent in --dir on TASK, shows its work live and records the
run and every event in lane's database. Claude models (sonnet, opus, haiku,
claude-…) run on Claude Code, driven headless; PROVIDER:MODEL (ollama:…,
openai:…, anthropic:…, openai-compatible:… or an endpoint of the config file)
runs lane's own agent loop; RUNTIME:MODEL (codex:…, gemini:…, opencode:…,
qwen:…) runs that agent CLI, and RUNTIME:PROVIDER:MODEL points it at the
provider. TASK "-" reads the task from standard input; end lane's flags with
-- before a task that starts with "-".`,
		Args: exactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			task, err := readTask(args[0], f.IO.In)
			if err != nil {
				return err
			}
			opts.Task = task
			defaultModelOfRuntime(f, c, opts)
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return runRun(c.Context(), f, opts)
		},
	}
	addRunFlags(f, c, opts)
	c.Flags().StringVar(&opts.Resume, "resume", "", "resume this Claude session id")
	c.Flags().StringSliceVar(&opts.Models, "models", nil, "run the task on each of these models at once, each in a copy of --dir (a git worktree of it when it is a clean repository); lane apply brings one's changes in")
	c.Flags().StringVar(&opts.Check, "check", "", "with --models: a command (sh -c) run in each copy after its agent stops; exit 0 passes")
	c.Flags().DurationVar(&opts.CheckTimeout, "check-timeout", 10*time.Minute, "with --models: how long the check may take")
	return c
}

// defaultModelOfRuntime gives a runtime chosen with --runtime and no
// --model its own default model: lane's default model is a Claude one, and
// an agent CLI's own configuration names its model.
func defaultModelOfRuntime(f *Factory, c *cobra.Command, opts *RunOptions) {
	if rt, ok := f.runtimes().Lookup(opts.Runtime); ok && !c.Flags().Changed("model") {
		opts.Model = rt.DefaultModel
	}
}

// addRunFlags declares the flags shared by run and resume.
func addRunFlags(f *Factory, c *cobra.Command, opts *RunOptions) {
	fl := c.Flags()
	fl.StringVar(&opts.Dir, "dir", ".", "folder the agent works in")
	fl.StringVar(&opts.Model, "model", "sonnet", "a Claude model (sonnet, opus, haiku, claude-…), PROVIDER:MODEL for the local loop, or RUNTIME:MODEL ("+strings.Join(f.agentCLIs(), ", ")+")")
	fl.StringSliceVar(&opts.AddDirs, "add-dir", nil, "further folders the agent may use")
	fl.StringVar(&opts.AppendSystemPrompt, "append-system-prompt", "", "text appended to the runtime's system prompt")
	fl.IntVar(&opts.MaxTurns, "max-turns", 0, "stop after this many agent turns (0: no limit)")
	fl.StringVarP(&opts.OutputFormat, "output-format", "o", formatText, "text, json or stream-json")
	fl.Float64Var(&opts.MaxCost, "max-cost", 0, "stop before spending more than this many USD (local loop; 0: no limit)")
	fl.StringVar(&opts.Profile, "profile", "", "run under this profile of the config file: a login of its own (its config folder)")
	addRuntimeFlags(f, c, opts)
}

// addRuntimeFlags declares how runs are executed and guarded: the flags
// lane bench shares with lane run.
func addRuntimeFlags(f *Factory, c *cobra.Command, opts *RunOptions) {
	fl := c.Flags()
	fl.StringSliceVar(&opts.AllowedTools, "allowed-tools", nil, "tools (and permission rules) the agent may use without asking (default "+
		strings.Join(approval.DefaultAllowRules(), ",")+"; in the modes that ask, "+strings.Join(approval.ReadOnlyRules(), ",")+")")
	fl.StringVar(&opts.PermissionMode, "permission-mode", "bypassPermissions", "bypassPermissions (approve every tool call), default (ask a person for anything --allowed-tools does not allow), acceptEdits (edits in the folder approved, the rest asks) or plan (no changes), for every runtime")
	fl.DurationVar(&opts.ApprovalTimeout, "approval-timeout", approval.DefaultApprovalTimeout, "deny a tool call that nobody approved within this time")
	fl.DurationVar(&opts.Linger, "linger", runner.DefaultLinger, "after an interrupt, how long the run waits for a follow-up message before it ends")
	addOTelFlags(fl, &opts.OTel)
	fl.BoolVar(&opts.AllowMCP, "allow-mcp", false, "let the runtime load your MCP servers (default: isolated with --strict-mcp-config)")
	fl.StringVar(&opts.ClaudeBin, "claude-bin", "", "Claude Code binary (default $LANE_CLAUDE_BIN, PATH, usual install places)")
	fl.DurationVar(&opts.FirstByteTimeout, "first-byte-timeout", 2*time.Minute, "fail if the runtime prints nothing this long after starting (0: off)")
	fl.DurationVar(&opts.IdleTimeout, "idle-timeout", 5*time.Minute, "fail after this long without output while no tool runs (0: off)")
	fl.DurationVar(&opts.HardTimeout, "hard-timeout", time.Hour, "fail if the whole run takes longer (0: off)")
	fl.Int64Var(&opts.TokenLimit, "token-limit", 0, "stop a run (each attempt) at the first report of more than this many tokens: input, output, cache reads and writes (0: no limit)")
	fl.Float64Var(&opts.CostLimit, "cost-limit", 0, "stop a run (each attempt) once it has cost more than this many USD, as lane prices it while it goes (0: no limit)")
	if fl.Lookup("retries") == nil {
		// lane bench has its own: it retries the attempt afresh, as Harbor
		// does, not the run in the attempt's folder.
		fl.IntVar(&opts.Retries, "retries", 0, "re-run a timeout, API overload or crash this many times")
	}
	fl.StringVar(&opts.RuntimeBin, "runtime-bin", "", "the agent CLI's binary (default $LANE_<RUNTIME>_BIN, PATH, usual install places)")
	fl.StringVar(&opts.Runtime, "runtime", "", strings.Join(f.runtimes().Names(), ", ")+" (default: from --model)")
	fl.StringVar(&opts.BaseURL, "base-url", "", "the model server's API base URL (local loop, or an agent CLI pointed at it)")
	fl.StringVar(&opts.ToolMode, "tool-mode", "native", "native tool calls, or text: JSON action blocks in the model's prose (local loop)")
	fl.StringVar(&opts.Sandbox, "sandbox", "auto", "confine bash: auto, landlock, bwrap or off (local loop)")
	fl.StringVar(&opts.Fallback, "fallback", "", "when Claude Code cannot run the task, rerun it on this PROVIDER:MODEL")
	fl.DurationVar(&opts.BashTimeout, "bash-timeout", 2*time.Minute, "default timeout of one bash command (local loop)")
	fl.BoolVar(&opts.NoChanges, "no-changes", false, "do not record what the run changes in its folder (lane diff, lane undo)")
}

func readTask(arg string, in io.Reader) (string, error) {
	if arg != "-" {
		if strings.TrimSpace(arg) == "" {
			return "", usageErrorf(errors.New("the task is empty"))
		}
		return arg, nil
	}
	b, err := io.ReadAll(in)
	if err != nil {
		return "", fmt.Errorf("read task from stdin: %w", err)
	}
	task := strings.TrimRight(string(b), "\n")
	if strings.TrimSpace(task) == "" {
		return "", usageErrorf(errors.New("the task read from stdin is empty"))
	}
	return task, nil
}

// checkRunFlags refuses timeouts, limits and modes that make no run, as a
// usage error.
func checkRunFlags(opts *RunOptions) error {
	for _, d := range []time.Duration{opts.FirstByteTimeout, opts.IdleTimeout, opts.HardTimeout, opts.BashTimeout} {
		if d < 0 {
			return usageErrorf(errors.New("timeouts must not be negative"))
		}
	}
	if opts.Retries < 0 || opts.MaxTurns < 0 || opts.MaxCost < 0 {
		return usageErrorf(errors.New("--retries, --max-turns and --max-cost must not be negative"))
	}
	if opts.TokenLimit < 0 || opts.CostLimit < 0 {
		return usageErrorf(errors.New("--token-limit and --cost-limit must not be negative"))
	}
	if opts.ToolMode != "native" && opts.ToolMode != "text" {
		return usageErrorf(fmt.Errorf("unknown --tool-mode %q (want native or text)", opts.ToolMode))
	}
	if opts.ApprovalTimeout < 0 || opts.Linger < 0 {
		return usageErrorf(errors.New("--approval-timeout and --linger must not be negative"))
	}
	return nil
}

func runRun(ctx context.Context, f *Factory, opts *RunOptions) error {
	if err := checkFormat(opts.OutputFormat); err != nil {
		return err
	}
	if len(opts.Models) > 0 {
		if opts.Resume != "" || opts.Profile != "" {
			return usageErrorf(errors.New("--models starts runs of its own: not with --resume or --profile"))
		}
		return runCompare(ctx, f, opts)
	}
	if opts.Check != "" {
		return usageErrorf(errors.New("--check goes with --models"))
	}
	dir, err := launch.ResolveDir(opts.Dir)
	if err != nil {
		return err
	}
	var addDirs []string
	for _, d := range opts.AddDirs {
		ad, err := launch.ResolveDir(d)
		if err != nil {
			return err
		}
		addDirs = append(addDirs, ad)
	}
	if err := checkRunFlags(opts); err != nil {
		return err
	}
	cfg, err := config.Load(config.Path(f.Getenv), f.runtimes().Table())
	if err != nil {
		return usageErrorf(err)
	}
	if _, err := cfg.Resolve(opts.Model, opts.Runtime, opts.BaseURL, f.Getenv); err != nil {
		return usageErrorf(err)
	}
	st, err := f.OpenStore(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	if err := runner.BecomeSubreaper(); err != nil {
		// Only the clean-up of orphaned tools after a stop is weaker.
		fmt.Fprintln(f.IO.ErrOut, "lane: warning:", err)
	}
	rec := recorder.New(st, f.IO.Out, f.IO.Color, opts.OutputFormat)
	sink, err := launch.StartOTel(ctx, f.env(), &opts.OTel)
	if err != nil {
		return err
	}
	defer sink.Close(ctx)
	rec.OTel = sink.ForRun(nil)
	if rec.Notes, err = launch.StartNotify(f.env(), cfg, st, false); err != nil {
		return err
	}
	defer rec.Notes.Close(ctx)
	desk, closeDesk := runDesk(f, st, cfg, opts, rec)
	defer closeDesk()
	opts.Desk, opts.Attended = desk, true
	run, err := launch.Execute(ctx, f.env(), st, rec, cfg, opts, dir, addDirs)
	if err != nil {
		return err
	}
	if err := rec.Finish(run); err != nil {
		return err
	}
	if run.Status != record.StatusSucceeded {
		return &RunOutcomeError{Run: run}
	}
	return nil
}

// runDesk is the desk of lane run's runs: the database, and this terminal
// when a person sits at it (stdin is a terminal, the run is shown as text,
// and its mode may ask).
func runDesk(f *Factory, st *store.Store, cfg *config.File, opts *RunOptions, rec *recorder.Recorder) (approval.Desk, func()) {
	o := dbdesk.Options{}
	if f.OpenTerminal != nil && opts.OutputFormat == formatText && approval.Mode(opts.PermissionMode).Asks() {
		if term, err := f.OpenTerminal(); err == nil {
			o.Terminal = term
			if rec.Printer != nil {
				rec.Printer.Asking = true
			}
			return dbdesk.New(st, o), func() { term.Close() }
		}
	}
	return dbdesk.New(st, o), func() {}
}
