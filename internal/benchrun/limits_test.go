package benchrun

import (
	"testing"

	"github.com/lanehq/lane/internal/bench"
	"github.com/lanehq/lane/internal/launch"
)

// The command line's limits are each task's unless the task has its own,
// limit by limit.
func TestApplyLimits(t *testing.T) {
	s := &bench.Suite{Tasks: []bench.Task{
		{ID: "plain"},
		{ID: "own", MaxTurns: 5, TokenLimit: 1000},
	}}
	applyLimits(s, launch.Options{MaxTurns: 30, TokenLimit: 400_000, CostLimit: 2})
	if p := s.Tasks[0]; p.MaxTurns != 30 || p.TokenLimit != 400_000 || p.CostLimitUSD != 2 {
		t.Errorf("plain task: %+v", p)
	}
	if o := s.Tasks[1]; o.MaxTurns != 5 || o.TokenLimit != 1000 || o.CostLimitUSD != 2 {
		t.Errorf("task with its own limits: %+v", o)
	}
}
