package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/lanehq/lane/internal/bench"
	"github.com/lanehq/lane/internal/benchrun"
	"github.com/lanehq/lane/internal/config"
	"github.com/lanehq/lane/internal/record"
	"github.com/lanehq/lane/internal/runner"
	"github.com/lanehq/lane/internal/store"
)

// BenchOptions are the flags of `lane bench`.
type BenchOptions = benchrun.Options

// NewCmdBench builds `lane bench` and its subcommands.
func NewCmdBench(f *Factory, runF func(context.Context, *BenchOptions) error) *cobra.Command {
	opts := &BenchOptions{}
	c := &cobra.Command{
		Use:   "bench [flags] SUITE.yaml | bench --resume BENCH",
		Short: "Run a task suite across models and compare them",
		Long: `Bench runs every task of a suite file with every model, --repeat times, each
attempt a normal lane run in a fresh copy of the task's folder (a git
worktree of it when the folder is a git repository), checks the result, and
prints a comparison: pass rate with its 95% interval, pass@k, duration,
cost, tokens, files changed, failures by kind. See docs/bench.md.

A Harbor task that asks for what lane cannot do yet (multi-step tasks, MCP
servers, artifacts, GPUs…) is refused when the dataset loads, naming
the task and the key: lane runs no weaker task than Harbor would. --dry-run
lists every task with what it uses and whether lane runs it, and runs none.`,
		RunE: func(c *cobra.Command, args []string) error {
			switch {
			case opts.DryRun && (opts.Resume != "" || len(args) != 1):
				return usageErrorf(errors.New("--dry-run lists the tasks of a suite: give the suite, not --resume"))
			case opts.DryRun:
				opts.Suite = args[0]
				if runF != nil {
					return runF(c.Context(), opts)
				}
				return dryRunBench(c.Context(), f, opts)
			case opts.Resume != "" && len(args) == 0:
			case opts.Resume == "" && len(args) == 1:
				opts.Suite = args[0]
			default:
				return usageErrorf(errors.New("give a suite file, or --resume BENCH"))
			}
			opts.ParallelSet = c.Flags().Changed("parallel")
			opts.Retry.ExcludeSet = c.Flags().Changed("retry-exclude")
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return runBench(c.Context(), f, opts)
		},
	}
	fl := c.Flags()
	fl.StringSliceVar(&opts.Models, "models", nil, "models to compare (default: the suite's)")
	fl.IntVar(&opts.Repeat, "repeat", 0, "attempts per task and model (default: the suite's, else 1)")
	fl.IntVar(&opts.Parallel, "parallel", 1, "attempts run at once")
	fl.Float64Var(&opts.MaxCost, "max-cost", 0, "stop starting attempts once the bench has spent this many USD (0: no limit)")
	fl.IntVar(&opts.Run.MaxTurns, "max-turns", 0, "stop an attempt after this many agent turns, as --token-limit and --cost-limit stop one (0: no limit; a task's own limits win)")
	fl.StringVar(&opts.Format, "format", "", "what SUITE is: lane (a suite file) or polyglot (a checkout of Aider's polyglot benchmark); default: told by its layout")
	fl.StringSliceVar(&opts.Languages, "languages", nil, "polyglot: only these languages (cpp, go, java, javascript, python, rust)")
	fl.IntVar(&opts.Tries, "tries", 0, "polyglot: times the agent is asked, in one session, while the tests fail (default 2, as Aider's published figures)")
	fl.StringArrayVar(&opts.BuildArgs, "build-arg", nil, "KEY=VALUE for the image builds of Harbor tasks (repeatable)")
	fl.Float64Var(&opts.PassReward, "pass-reward", 1, "a Harbor task's attempt passes when its verifier's reward is at least this")
	fl.StringVar(&opts.PassKey, "pass-key", "", "the key of a Harbor verifier's reward.json that --pass-reward is compared with (default: reward); an attempt without it is an error of the task, no_pass_key")
	fl.StringVar(&opts.StepSession, "step-session", "fresh", "a multi-step Harbor task's agent: a fresh session each step, or continue the previous step's session (fresh or continue)")
	fl.StringVar(&opts.Engine, "engine", "", "the container engine for Harbor tasks: podman or docker (default: whichever is found)")
	fl.BoolVar(&opts.NoHermetic, "no-hermetic", false, "let each attempt's agent see the user's own setup for it (CLAUDE.md, settings, hooks, plugins, skills, MCP servers)")
	fl.BoolVar(&opts.Keep, "keep", false, "keep each attempt's folder (a git fixture's worktree stays registered in it)")
	fl.StringVar(&opts.Resume, "resume", "", "continue an interrupted bench: run only its unfinished attempts")
	fl.BoolVar(&opts.DryRun, "dry-run", false, "list every task of SUITE with what it uses and whether lane runs it, and run none (exit 2 when some would not run)")
	fl.BoolVar(&opts.SkipUnsupported, "skip-unsupported", false, "leave out the Harbor tasks lane refuses (what they ask for lane cannot do yet) and run the others, instead of refusing the dataset")
	fl.StringVarP(&opts.OutputFormat, "output-format", "o", formatText, "text or json")
	addLimitFlags(fl, &opts.Limits)
	fl.BoolVar(&opts.Workers, "workers", false, "run the attempts on the pool of lane workers of the shared PostgreSQL database")
	addRetryFlags(fl, &opts.Retry) // before the runtime flags: its --retries is the bench's
	addRuntimeFlags(f, c, &opts.Run)
	c.AddCommand(newCmdBenchReport(f), newCmdBenchList(f), newCmdBenchArtifacts(f))
	return c
}

// runBench runs (or resumes) a bench and prints its comparison.
func runBench(ctx context.Context, f *Factory, opts *BenchOptions) error {
	if err := checkBenchFlags(opts); err != nil {
		return err
	}
	cfg, st, err := openForRuns(ctx, f)
	if err != nil {
		return err
	}
	defer st.Close()
	r := &benchrun.Runner{Env: f.env(), Config: cfg, Store: st}
	bn, err := r.Prepare(ctx, opts)
	if err != nil {
		return err
	}
	defer bn.Close(ctx)
	b, err := bn.Run(ctx)
	if b == nil {
		return err
	}
	if b.Workers && b.Status == record.StatusRunning {
		if err != nil {
			// Not detached: the bench could not enqueue; it is recorded,
			// its attempts pending.
			return fmt.Errorf("%w (the bench is recorded: lane bench --resume %s enqueues its attempts)", err, b.ID)
		}
		fmt.Fprintf(f.IO.ErrOut, "lane: detached from bench %s: the workers carry on; follow it with lane bench report %s, or the dashboard\n", b.ID, b.ID)
		return nil
	}
	// The comparison is printed whatever became of the bench.
	return benchrun.Outcome(b, err, printBenchReport(context.WithoutCancel(ctx), f, st, b, opts.OutputFormat))
}

// dryRunBench lists the suite's tasks and whether lane runs them, as
// text or JSON on stdout; when some would not run, it says so on stderr
// and exits as for other bad input.
func dryRunBench(ctx context.Context, f *Factory, opts *BenchOptions) error {
	if err := checkBenchFlags(opts); err != nil {
		return err
	}
	err := benchrun.DryRun(ctx, f.IO.Out, opts)
	var na *benchrun.NotAllRunError
	if errors.As(err, &na) {
		fmt.Fprintln(f.IO.ErrOut, "lane: "+err.Error())
		return fmt.Errorf("%w: %w", errReported, usageErrorf(err))
	}
	return err
}

// openForRuns is what a command that runs agents needs first: the config
// file, the store (the caller closes it), and lane as the subreaper of the
// processes it starts (a failure only weakens the clean-up of orphans).
func openForRuns(ctx context.Context, f *Factory) (*config.File, *store.Store, error) {
	cfg, err := config.Load(config.Path(f.Getenv), f.runtimes().Table())
	if err != nil {
		return nil, nil, usageErrorf(err)
	}
	st, err := f.OpenStore(ctx)
	if err != nil {
		return nil, nil, err
	}
	if err := runner.BecomeSubreaper(); err != nil {
		fmt.Fprintln(f.IO.ErrOut, "lane: warning:", err)
	}
	return cfg, st, nil
}

// checkBenchFlags refuses flags that make no bench, as a usage error.
func checkBenchFlags(opts *BenchOptions) error {
	if opts.OutputFormat != formatText && opts.OutputFormat != formatJSON {
		return usageErrorf(fmt.Errorf("unknown --output-format %q (want text or json)", opts.OutputFormat))
	}
	if s := opts.StepSession; s != "" && s != bench.StepSessionFresh && s != bench.StepSessionContinue {
		return usageErrorf(fmt.Errorf("unknown --step-session %q (want %s or %s)", opts.StepSession, bench.StepSessionFresh, bench.StepSessionContinue))
	}
	if opts.Parallel < 1 || opts.Repeat < 0 || opts.MaxCost < 0 {
		return usageErrorf(errors.New("--parallel must be at least 1; --repeat and --max-cost must not be negative"))
	}
	if opts.Run.MaxTurns < 0 || opts.Run.TokenLimit < 0 || opts.Run.CostLimit < 0 {
		return usageErrorf(errors.New("--max-turns, --token-limit and --cost-limit must not be negative"))
	}
	return nil
}

// printBenchReport prints bench b's comparison from its stored attempts,
// as JSON or as text tables.
func printBenchReport(ctx context.Context, f *Factory, st *store.Store, b *record.Bench, format string) error {
	report, err := benchrun.Report(ctx, st, b)
	if err != nil {
		return err
	}
	if format == formatJSON {
		return report.WriteJSON(f.IO.Out)
	}
	return report.WriteTable(f.IO.Out)
}

func newCmdBenchList(f *Factory) *cobra.Command {
	var limit int
	c := &cobra.Command{
		Use:   "list",
		Short: "List past benches, newest first",
		Args:  noArgs,
		RunE: func(c *cobra.Command, args []string) error {
			ctx := c.Context()
			st, err := f.OpenStore(ctx)
			if err != nil {
				return err
			}
			defer st.Close()
			benches, err := st.ListBenches(ctx, limit)
			if err != nil {
				return err
			}
			if len(benches) == 0 {
				fmt.Fprintln(f.IO.ErrOut, "no benches recorded yet")
				return nil
			}
			return benchesTable(ctx, f.IO.Out, st, benches)
		},
	}
	c.Flags().IntVarP(&limit, "limit", "n", 20, "how many benches to list")
	return c
}

// benchesTable lists benches one a line under a header row, as lane runs
// lists runs.
func benchesTable(ctx context.Context, w io.Writer, st *store.Store, benches []*record.Bench) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATUS\tNAME\tPASSED\tSTARTED\tMODELS")
	for _, b := range benches {
		attempts, err := st.Attempts(ctx, b.ID)
		if err != nil {
			return err
		}
		passed := 0
		for _, a := range attempts {
			if a.Status == record.AttemptPassed {
				passed++
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d/%d\t%s\t%s\n", b.ID[:8], b.Status, b.Name,
			passed, len(attempts), b.StartedAt.Local().Format("2006-01-02 15:04"), strings.Join(b.Models, ","))
	}
	return tw.Flush()
}

// addRetryFlags adds lane bench's flags of retries and reruns.
func addRetryFlags(fl *pflag.FlagSet, r *benchrun.RetryFlags) {
	fl.IntVar(&r.Retries, "retries", 0, "run a failed attempt again up to N times, replacing it, unless its failure kind is excluded (see --retry-exclude)")
	fl.StringSliceVar(&r.Include, "retry-include", nil, "retry only attempts that failed with these failure kinds")
	fl.StringSliceVar(&r.Exclude, "retry-exclude", nil, "never retry these failure kinds; replaces the default, Harbor's: "+
		strings.Join(bench.DefaultRetryExclude, ","))
	fl.StringSliceVar(&r.Rerun, "rerun", nil, "with --resume: run again the finished attempts that ended with these failure kinds")
}
