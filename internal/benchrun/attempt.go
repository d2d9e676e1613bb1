package benchrun

import (
	"cmp"
	"context"
	"io"
	"log/slog"

	"github.com/lanehq/lane/internal/approval/dbdesk"
	"github.com/lanehq/lane/internal/bench"
	"github.com/lanehq/lane/internal/changes"
	"github.com/lanehq/lane/internal/launch"
	"github.com/lanehq/lane/internal/record"
	"github.com/lanehq/lane/internal/recorder"
	"github.com/lanehq/lane/internal/telemetry"
)

// recordedRunner runs one attempt's agent as `lane run` would with the
// bench's runtime flags, recorded in the store, printing nothing of it
// but warnings; hooks are a lane worker's, nil for a bench run here.
func (r *Runner) recordedRunner(opts *Options, hooks *recorder.WorkerHooks) bench.RunFunc {
	// Nobody sits at a bench's terminal, but its attempts can still be
	// approved, steered and cancelled from elsewhere.
	desk := dbdesk.New(r.Store, dbdesk.Options{})
	return func(ctx context.Context, spec bench.RunSpec) (*record.Run, error) {
		ro := opts.Run
		ro.Desk = desk
		ro.Dir, ro.Model, ro.Task, ro.HermeticHome, ro.Profile = spec.Dir, spec.Model, spec.Prompt, spec.Home, spec.Profile
		ro.MaxTurns, ro.MaxCost, ro.OutputFormat = spec.MaxTurns, spec.MaxCostUSD, recorder.FormatNone
		if len(spec.MCPServers) > 0 {
			ro.MCPServers, ro.RequireMCP = mcpServers(spec.MCPServers), true
		}
		// A worker's own limits hold for a bench that gave none.
		ro.TokenLimit, ro.CostLimit = cmp.Or(spec.TokenLimit, ro.TokenLimit), cmp.Or(spec.CostLimitUSD, ro.CostLimit)
		if prev := spec.Resume; prev != nil {
			// A later try of the attempt: the same session, asked again.
			usage, err := launch.SessionUsage(ctx, r.Store, prev)
			if err != nil {
				return nil, err
			}
			ro.Resume, ro.ParentRunID, ro.Runtime = prev.SessionID, prev.ID, prev.Runtime
			ro.PriorSessionCostUSD, ro.PriorSessionUsage = prev.SessionCostUSD, usage
		}
		if spec.Timeout > 0 {
			ro.HardTimeout = spec.Timeout
		}
		killLeft := func() {}
		if spec.Container != nil {
			stop, kill, err := r.inContainer(ctx, &ro, spec)
			if err != nil {
				return nil, err
			}
			defer stop()
			killLeft = kill
		}
		rec := recorder.New(r.Store, io.Discard, false, recorder.FormatNone)
		rec.Worker = hooks
		rec.Notes, rec.InBench, rec.Origin = opts.Notes, true, opts.Origin
		rec.OTel = ro.OTelSink.ForRun(&telemetry.Bench{ID: spec.BenchID, Task: spec.TaskID, N: spec.N})
		run, err := launch.Execute(ctx, r.Env, r.Store, rec, r.Config, &ro, spec.Dir, nil)
		if err != nil || run.Status != record.StatusSucceeded {
			// A run lane stopped (a limit, a timeout) or that failed leaves
			// nothing of its agent running in the container, as it leaves
			// nothing here; a finished run's servers stay for the verifier,
			// as in Harbor.
			killLeft()
		}
		return run, err
	}
}

// forgetFolder drops lane's snapshots of a bench attempt's folder once
// the folder is removed: a copied fixture's would otherwise pile up in
// the state folder, one full copy per attempt.
func forgetFolder(env *launch.Env) func(dir string) {
	snap := changes.New(changes.Config{StateDir: env.StateDir()})
	return func(dir string) {
		if err := snap.Forget(dir); err != nil {
			slog.Warn("bench", "err", err)
		}
	}
}
