package bench

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/lanehq/lane/internal/record"
)

// StepAttempt is an attempt at a multi-step task, as a report shows it:
// the attempt's outcome and rolled-up rewards, and each of its steps.
type StepAttempt struct {
	Task        string               `json:"task"`
	Model       string               `json:"model"`
	N           int                  `json:"n"`
	Status      record.AttemptStatus `json:"status"`
	FailureKind string               `json:"failure_kind,omitempty"`
	Reward      *float64             `json:"reward,omitempty"`
	Rewards     map[string]float64   `json:"rewards,omitempty"`
	Steps       []record.AttemptStep `json:"steps"`
}

// stepAttempts are the attempts of attempts that have steps, in the order
// of task, model and number.
func stepAttempts(attempts []record.Attempt) []StepAttempt {
	var out []StepAttempt
	for _, a := range attempts {
		if len(a.Steps) == 0 {
			continue
		}
		out = append(out, StepAttempt{Task: a.TaskID, Model: a.Model, N: a.N, Status: a.Status, FailureKind: a.FailureKind,
			Reward: a.Reward, Rewards: a.Rewards, Steps: a.Steps})
	}
	slices.SortFunc(out, func(x, y StepAttempt) int {
		return cmp.Or(cmp.Compare(x.Task, y.Task), cmp.Compare(x.Model, y.Model), cmp.Compare(x.N, y.N))
	})
	return out
}

// stepsText is the steps of the report's multi-step attempts, an attempt
// a line and then a line a step, each with its rewards; "" when none.
func (r Report) stepsText() string {
	if len(r.Steps) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\nsteps of multi-step attempts:\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	for _, a := range r.Steps {
		fmt.Fprintf(tw, "  %s %s #%d\t%s\t%s\n", a.Task, a.Model, a.N, outcomeText(a.Status, a.FailureKind), rewardsText(a.Rewards))
		for _, s := range a.Steps {
			fmt.Fprintf(tw, "    %s\t%s\t%s\n", s.Name, outcomeText(s.Status, s.FailureKind), rewardsText(s.Rewards))
		}
	}
	_ = tw.Flush() // a strings.Builder takes every write
	return b.String()
}

// outcomeText is "passed", or "failed (check_failed)".
func outcomeText(status record.AttemptStatus, kind string) string {
	if kind == "" {
		return string(status)
	}
	return string(status) + " (" + kind + ")"
}

// rewardsText is "reward 0.833, style 0.333": each key, in name order,
// "reward" first; "no reward" when there is none.
func rewardsText(rewards map[string]float64) string {
	if len(rewards) == 0 {
		return "no reward"
	}
	keys := slices.Sorted(maps.Keys(rewards))
	slices.SortStableFunc(keys, func(x, y string) int { return cmp.Compare(boolInt(x != "reward"), boolInt(y != "reward")) })
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + " " + strconv.FormatFloat(rewards[k], 'g', 3, 64)
	}
	return strings.Join(parts, ", ")
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
