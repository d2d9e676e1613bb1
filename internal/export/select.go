package export

import (
	"context"
	"slices"
	"time"

	"github.com/lanehq/lane/internal/record"
	"github.com/lanehq/lane/internal/store"
)

// Selection is which runs lane export writes: those named, every run of a
// bench, every run started since a time; any of them together.
type Selection struct {
	Runs  []string // ids or unique prefixes
	Bench string
	Since time.Time // zero: no time
}

// Select reads the runs sel names from st, each once, oldest first.
func Select(ctx context.Context, st *store.Store, sel Selection) ([]*record.Run, error) {
	var runs []*record.Run
	seen := map[string]bool{}
	add := func(r *record.Run) {
		if !seen[r.ID] {
			seen[r.ID] = true
			runs = append(runs, r)
		}
	}
	for _, id := range sel.Runs {
		r, err := st.GetRun(ctx, id)
		if err != nil {
			return nil, err
		}
		add(r)
	}
	if sel.Bench != "" {
		if err := benchRuns(ctx, st, sel.Bench, add); err != nil {
			return nil, err
		}
	}
	if !sel.Since.IsZero() {
		all, err := st.ListRuns(ctx, store.RunFilter{})
		if err != nil {
			return nil, err
		}
		for _, r := range all {
			if !r.StartedAt.Before(sel.Since) {
				add(r)
			}
		}
	}
	slices.SortStableFunc(runs, func(a, b *record.Run) int { return a.StartedAt.Compare(b.StartedAt) })
	return runs, nil
}

// benchRuns adds the run of each of the bench's attempts that has one,
// and each step's run of a multi-step attempt.
func benchRuns(ctx context.Context, st *store.Store, id string, add func(*record.Run)) error {
	b, err := st.GetBench(ctx, id)
	if err != nil {
		return err
	}
	as, err := st.Attempts(ctx, b.ID)
	if err != nil {
		return err
	}
	for _, a := range as {
		ids := []string{a.RunID}
		for _, step := range a.Steps {
			ids = append(ids, step.RunID)
		}
		for _, id := range ids {
			if id == "" {
				continue
			}
			r, err := st.GetRun(ctx, id)
			if err != nil {
				return err
			}
			add(r)
		}
	}
	return nil
}
