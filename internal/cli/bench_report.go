package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/lanehq/lane/internal/bench"
	"github.com/lanehq/lane/internal/benchrun"
)

// benchReportOptions are the flags of `lane bench report`.
type benchReportOptions struct {
	format   string
	baseline string
	matrix   bool
}

func newCmdBenchReport(f *Factory) *cobra.Command {
	opts := &benchReportOptions{}
	c := &cobra.Command{
		Use:   "report BENCH",
		Short: "Print a bench's comparison as text, markdown, csv or json",
		Long: `Report prints a bench's comparison: per model (pass rate with its Wilson
interval over the attempts, and the mean per-task score with its standard
error clustered by task), per task and model, then the models compared in
pairs on the tasks both finished: the mean difference, its 95% interval,
p, wins/losses/ties and the smallest difference the bench could detect.
--baseline compares every other model against one instead. --matrix prints
the tasks × models grid instead. See docs/comparing.md.`,
		Args: exactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			return benchReport(c, f, opts, args[0])
		},
	}
	// -o as lane bench's own -o (--output-format) names it.
	c.Flags().StringVarP(&opts.format, "format", "o", "text", "text, markdown, csv or json")
	c.Flags().StringVar(&opts.baseline, "baseline", "", "compare every other model against this one, instead of every two models")
	c.Flags().BoolVar(&opts.matrix, "matrix", false, "print the tasks × models grid (passes/attempts or mean reward, cost, median time), as text or markdown")
	return c
}

// benchReport prints the report of bench id as opts ask.
func benchReport(c *cobra.Command, f *Factory, opts *benchReportOptions, id string) error {
	switch opts.format {
	case "text", "markdown", "md", "csv", "json":
	default:
		return usageErrorf(fmt.Errorf("unknown --format %q (want text, markdown, csv or json)", opts.format))
	}
	if opts.matrix && (opts.format == "csv" || opts.format == "json") {
		return usageErrorf(fmt.Errorf("--matrix prints text or markdown; the %s report holds every cell already", opts.format))
	}
	ctx := c.Context()
	st, err := f.OpenStore(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	b, err := st.GetBench(ctx, id)
	if err != nil {
		return err
	}
	r, err := benchrun.Report(ctx, st, b)
	if err != nil {
		return err
	}
	if opts.baseline != "" {
		if err := r.SetBaseline(opts.baseline); err != nil {
			return usageErrorf(err)
		}
	}
	return writeBenchReport(f, r, opts)
}

func writeBenchReport(f *Factory, r bench.Report, opts *benchReportOptions) error {
	switch {
	case opts.matrix && opts.format == "text":
		return r.WriteMatrix(f.IO.Out, false)
	case opts.matrix:
		return r.WriteMatrix(f.IO.Out, true)
	}
	switch opts.format {
	case "markdown", "md":
		return r.WriteMarkdown(f.IO.Out)
	case "csv":
		return r.WriteCSV(f.IO.Out)
	case "json":
		return r.WriteJSON(f.IO.Out)
	}
	return r.WriteTable(f.IO.Out)
}
