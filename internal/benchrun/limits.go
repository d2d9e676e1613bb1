package benchrun

import (
	"fmt"
	"time"

	"github.com/lanehq/lane/internal/bench"
	"github.com/lanehq/lane/internal/launch"
)

// LimitFlags are how a bench or a worker meets a subscription's usage
// limit (lane bench and lane worker --on-limit, --limit-wait,
// --limit-reserve).
type LimitFlags struct {
	OnLimit string
	Wait    time.Duration
	Reserve int
}

// limits is the bench's Limits the flags ask for, reading the store's
// ledger so that what other processes saw counts too, and spreading
// attempts across the profiles of the config file that serve a model's
// runtime.
func (o LimitFlags) limits(r *Runner, ro *launch.Options) (*bench.Limits, error) {
	if o.OnLimit != "" && o.OnLimit != bench.OnLimitWait && o.OnLimit != bench.OnLimitFail {
		return nil, launch.UsageErrorf(fmt.Errorf("unknown --on-limit %q (want wait or fail)", o.OnLimit))
	}
	if o.Reserve < 0 || o.Reserve >= 100 || o.Wait < 0 {
		return nil, launch.UsageErrorf(fmt.Errorf("--limit-reserve must be 0 to 99 and --limit-wait not negative"))
	}
	profiles := func(model string) []string {
		t, err := r.Config.Resolve(model, ro.Runtime, ro.BaseURL, r.Env.Getenv)
		if err != nil {
			return nil // the run says why
		}
		return r.Config.ProfilesOf(t.Runtime)
	}
	return &bench.Limits{OnLimit: o.OnLimit, MaxWait: o.Wait, Reserve: o.Reserve, Ledger: r.Store.Limits, Profiles: profiles}, nil
}

// applyLimits gives each task of s that sets none of its own the limits
// on one attempt that the command line sets (--max-turns, --token-limit,
// --cost-limit). They are then the task's, stored with the bench, so that
// a lane worker that runs the attempt, or a resume, keeps them.
func applyLimits(s *bench.Suite, ro launch.Options) {
	for i := range s.Tasks {
		t := &s.Tasks[i]
		if t.MaxTurns == 0 {
			t.MaxTurns = ro.MaxTurns
		}
		if t.TokenLimit == 0 {
			t.TokenLimit = ro.TokenLimit
		}
		if t.CostLimitUSD == 0 {
			t.CostLimitUSD = ro.CostLimit
		}
	}
}
