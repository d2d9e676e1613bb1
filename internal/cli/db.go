package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/lanehq/lane/internal/proc"
	"github.com/lanehq/lane/internal/runner"
	"github.com/lanehq/lane/internal/store"
)

// DBCopyOptions are the flags of `lane db copy`.
type DBCopyOptions struct {
	From, To string
}

// NewCmdDB builds `lane db` and its subcommands.
func NewCmdDB(f *Factory) *cobra.Command {
	c := &cobra.Command{
		Use:   "db",
		Short: "Work on lane's databases: copy a history from one to another, rebuild the stats",
		Args:  noArgs,
		RunE: func(c *cobra.Command, args []string) error {
			return c.Help()
		},
	}
	c.AddCommand(NewCmdDBCopy(f, nil), NewCmdDBRebuildStats(f, nil))
	return c
}

// NewCmdDBRebuildStats builds `lane db rebuild-stats`.
func NewCmdDBRebuildStats(f *Factory, runF func(context.Context) error) *cobra.Command {
	return &cobra.Command{
		Use:   "rebuild-stats",
		Short: "Recompute the daily roll-ups of the dashboard's stats from the runs",
		Long: `Rebuild-stats recomputes, from the runs, the daily roll-ups that the
dashboard's stats (/api/stats) read for whole days, in the database --db or
LANE_DB names. lane keeps them up to date as runs are written, whoever
writes them; rebuild them after changing the database by other means, for
example a TRUNCATE of runs or a table restored by hand.`,
		Args: noArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if runF != nil {
				return runF(c.Context())
			}
			return runDBRebuildStats(c.Context(), f)
		},
	}
}

func runDBRebuildStats(ctx context.Context, f *Factory) error {
	st, err := f.OpenStore(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	n, err := st.RebuildStats(ctx)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(f.IO.Out, "rebuilt the stats of %s\n", plural(n, "run", "runs"))
	return err
}

// NewCmdDBCopy builds `lane db copy`.
func NewCmdDBCopy(f *Factory, runF func(context.Context, *DBCopyOptions) error) *cobra.Command {
	opts := &DBCopyOptions{}
	c := &cobra.Command{
		Use:   "copy --from DB --to DB",
		Short: "Copy runs, their events and benches from one database to another",
		Long: `Copy copies the history of one database into another, each a SQLite file or a
postgres:// URL: runs with their events (and so their sessions), benches with
their attempts, attempt runs, artifacts and blobs; not the pool's workers, which are live
state. It adds only what the target lacks, so copying again copies nothing and
the target's own runs stay. A run in both is replaced only by one further
along: a finished run over a running one, one that ended on its own over one
lane marked interrupted. A copy that stops keeps what it wrote; copy again to
go on.

Both --from and --to must be given: --db and LANE_DB name neither, so that a
copy never goes from or to a database by default.`,
		Args: noArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return runDBCopy(c.Context(), f, opts)
		},
	}
	fl := c.Flags()
	fl.StringVar(&opts.From, "from", "", "the database to copy from: a SQLite file or a postgres:// URL")
	fl.StringVar(&opts.To, "to", "", "the database to copy into: a SQLite file (made if missing) or a postgres:// URL")
	return c
}

// copyProgressEvery is how often a long copy says how far it is.
const copyProgressEvery = 2 * time.Second

func runDBCopy(ctx context.Context, f *Factory, opts *DBCopyOptions) error {
	if opts.From == "" || opts.To == "" {
		return usageErrorf(errors.New("lane db copy needs both --from and --to"))
	}
	// Opening a path that names no file would make an empty database.
	if !store.IsURL(opts.From) {
		if _, err := os.Stat(opts.From); err != nil {
			return usageErrorf(fmt.Errorf("--from: %w", err))
		}
	}
	from, err := store.Open(ctx, opts.From, store.WithOwnerCheck(proc.Alive))
	if err != nil {
		return fmt.Errorf("--from: %w", err)
	}
	defer from.Close()
	to, err := store.Open(ctx, opts.To, store.WithOwnerCheck(proc.Alive))
	if err != nil {
		return fmt.Errorf("--to: %w", err)
	}
	defer to.Close()

	names := fmt.Sprintf("from %s to %s", store.Redact(opts.From), store.Redact(opts.To))
	last := time.Now()
	st, err := store.Copy(ctx, from, to, store.CopyOptions{Progress: func(s store.CopyStats) {
		if time.Since(last) >= copyProgressEvery {
			last = time.Now()
			fmt.Fprintf(f.IO.ErrOut, "lane: copying: %s so far\n", copySummary(s))
		}
	}})
	switch {
	case errors.Is(err, store.ErrSameDatabase):
		return usageErrorf(fmt.Errorf("will not copy %s: %w", names, store.ErrSameDatabase))
	case err != nil:
		// What was committed stays: say what it was.
		if werr := printCopy(f.IO.Out, st, names); werr != nil {
			return werr
		}
		if ctx.Err() != nil {
			err = fmt.Errorf("copy: %w", runner.ErrCancelled)
		}
		return fmt.Errorf("%w (%s; what it copied stays: copy again to go on)", err, names)
	}
	return printCopy(f.IO.Out, st, names)
}

// printCopy says what a copy did, on two lines: the counts, then which
// databases, their passwords left out.
func printCopy(w io.Writer, st store.CopyStats, names string) error {
	_, err := fmt.Fprintf(w, "copied %s\n%s\n", copySummary(st), names)
	return err
}

// copySummary is "120 runs (3 already there), 4800 events, …": what was
// copied of each kind and, in brackets, what was not.
func copySummary(st store.CopyStats) string {
	kinds := []struct {
		one, many string
		n         store.CopyCount
	}{
		{"run", "runs", st.Runs},
		{"event", "events", st.Events},
		{"bench", "benches", st.Benches},
		{"attempt", "attempts", st.Attempts},
		{"attempt run", "attempt runs", st.AttemptRuns},
		{"blob", "blobs", st.Blobs},
		{"request for approval", "requests for approval", st.Approvals},
		{"message", "messages", st.Steers},
		{"stored diff", "stored diffs", st.RunChanges},
		{"attempt's artifacts", "attempts' artifacts", st.Artifacts},
	}
	parts := make([]string, len(kinds))
	for i, k := range kinds {
		parts[i] = plural(k.n.Copied, k.one, k.many)
		var notes []string
		for _, n := range []struct {
			n    int64
			what string
		}{
			{k.n.Present, "already there"},
			{k.n.Updated, "updated"},
			{k.n.Kept, "different there and kept"},
			{k.n.Deferred, "left for the next copy"},
		} {
			if n.n > 0 {
				notes = append(notes, fmt.Sprintf("%d %s", n.n, n.what))
			}
		}
		if len(notes) > 0 {
			parts[i] += " (" + strings.Join(notes, ", ") + ")"
		}
	}
	return strings.Join(parts, ", ")
}

func plural(n int64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
