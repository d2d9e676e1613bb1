package export

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/lanehq/lane/internal/record"
)

// lane export --bench of a multi-step attempt writes each step's own run as
// a trajectory of its own, in the order the steps ran, each naming its
// bench attempt, its step (name, place, rewards) and the attempt's
// rolled-up rewards, as Harbor keeps a trial's steps apart.
func TestATIFStepsOfAnAttempt(t *testing.T) {
	t.Parallel()
	first, fevs := recordedRun(t, "a_tool_then_text")
	second, sevs := recordedRun(t, "j_subagent")
	second.StartedAt = first.StartedAt.Add(time.Minute)
	st := storeOf(t, map[*record.Run][]record.Event{first: fevs, second: sevs})
	ctx := context.Background()
	b := &record.Bench{ID: "b-steps", Name: "milestones", Models: []string{"sonnet"}, Repeat: 1, Parallel: 1,
		Status: record.StatusSucceeded, StartedAt: first.StartedAt}
	if err := st.CreateBench(ctx, b); err != nil {
		t.Fatal(err)
	}
	a := &record.Attempt{BenchID: b.ID, TaskID: "ledger", Model: "sonnet", N: 1, Status: record.AttemptFailed,
		FailureKind: "below_min_reward", Rewards: map[string]float64{"reward": 0.5},
		Steps: []record.AttemptStep{
			{Name: "open", RunID: first.ID, Status: record.AttemptPassed, Rewards: map[string]float64{"reward": 1}},
			{Name: "post", RunID: second.ID, Status: record.AttemptFailed, FailureKind: "below_min_reward", Rewards: map[string]float64{"reward": 0}},
		}}
	if err := st.SaveAttempt(ctx, a); err != nil {
		t.Fatal(err)
	}
	runs, err := Select(ctx, st, Selection{Bench: b.ID})
	if err != nil || len(runs) != 2 {
		t.Fatalf("the bench's runs: %d, %v; want its two steps' runs", len(runs), err)
	}
	var out bytes.Buffer
	if err := WriteATIF(ctx, &out, st, runs, ATIFOptions{}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d trajectories, want 2:\n%s", len(lines), out.String())
	}
	for i, want := range []struct {
		run, step, status string
		reward            float64
	}{{first.ID, "open", "passed", 1}, {second.ID, "post", "failed", 0}} {
		for _, e := range atifErrors([]byte(lines[i])) {
			t.Errorf("trajectory %d: %s", i+1, e)
		}
		var tr struct {
			TrajectoryID string `json:"trajectory_id"`
			Extra        struct {
				Lane struct {
					Bench struct {
						BenchID string             `json:"bench_id"`
						TaskID  string             `json:"task_id"`
						N       int                `json:"n"`
						Rewards map[string]float64 `json:"rewards"`
						Step    struct {
							Name    string             `json:"name"`
							Index   int                `json:"index"`
							Of      int                `json:"of"`
							Status  string             `json:"status"`
							Rewards map[string]float64 `json:"rewards"`
						} `json:"step"`
					} `json:"bench"`
				} `json:"lane"`
			} `json:"extra"`
		}
		if err := json.Unmarshal([]byte(lines[i]), &tr); err != nil {
			t.Fatal(err)
		}
		got := tr.Extra.Lane.Bench
		if tr.TrajectoryID != want.run || got.BenchID != b.ID || got.TaskID != "ledger" || got.N != 1 ||
			got.Step.Name != want.step || got.Step.Index != i+1 || got.Step.Of != 2 || got.Step.Status != want.status ||
			got.Step.Rewards["reward"] != want.reward || got.Rewards["reward"] != 0.5 {
			t.Errorf("trajectory %d: %s's bench %+v; want step %d of 2 %q %s, reward %v, the attempt's 0.5",
				i+1, tr.TrajectoryID, got, i+1, want.step, want.status, want.reward)
		}
	}
}
