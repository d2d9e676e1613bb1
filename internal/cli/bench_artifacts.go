package cli

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/lanehq/lane/internal/benchrun"
)

func newCmdBenchArtifacts(f *Factory) *cobra.Command {
	var opts benchrun.ArtifactsOptions
	c := &cobra.Command{
		Use:   "artifacts BENCH --out DIR",
		Short: "Write the artifacts a bench's Harbor attempts collected, with a manifest.json per attempt",
		Long: `Write the artifacts that a bench's Harbor attempts collected (/logs/artifacts, and
what task.toml's artifacts name) as DIR/TASK/MODEL/N/[steps/STEP/]PATH, each
attempt's folder replaced, with a manifest.json in it listing each file (its
path, source, service and size) and each artifact with how its collection went.`,
		Args: exactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if opts.Out == "" {
				return usageErrorf(errors.New("--out DIR is required"))
			}
			ctx := c.Context()
			st, err := f.OpenStore(ctx)
			if err != nil {
				return err
			}
			defer st.Close()
			b, err := st.GetBench(ctx, args[0])
			if err != nil {
				return err
			}
			done, err := benchrun.WriteArtifacts(ctx, st, b, opts)
			if err != nil {
				return err
			}
			if done.Attempts == 0 {
				fmt.Fprintf(f.IO.ErrOut, "bench %s: no attempt with artifacts\n", b.ID[:8])
				return nil
			}
			fmt.Fprintf(f.IO.Out, "%d files (%d bytes) of %d attempts written to %s\n", done.Files, done.Bytes, done.Attempts, opts.Out)
			return nil
		},
	}
	fl := c.Flags()
	fl.StringVar(&opts.Out, "out", "", "the folder to write them in")
	fl.StringVar(&opts.Task, "task", "", "only this task's attempts")
	fl.StringVar(&opts.Model, "model", "", "only this model's attempts")
	return c
}
