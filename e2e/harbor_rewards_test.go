package e2e

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// rewardReport is what a user reads of `lane bench report ID -o json`:
// per task its passes, errors and each reward key's mean.
type rewardReport struct {
	Bench struct{ ID string }
	Tasks []struct {
		Task        string
		Passed      int
		Failed      int
		Errored     int
		Errors      map[string]int
		MeanReward  *float64           `json:"mean_reward"`
		MeanRewards map[string]float64 `json:"mean_rewards"`
	}
}

// benchRewards runs the reward-keys dataset under the oracle, twice each,
// with args besides, and returns `lane bench report ID -o json` and the
// report's text.
func benchRewards(t *testing.T, args ...string) (rewardReport, string) {
	t.Helper()
	vars, base := containerVars(t)
	e := newLocalEnv(t)
	e.vars = append(e.vars, vars...)
	dataset := filepath.Join(t.TempDir(), "rewards")
	if err := os.CopyFS(dataset, os.DirFS("testdata/harbor-rewards")); err != nil {
		t.Fatal(err)
	}
	r := e.lane(context.Background(), append([]string{"bench", dataset, "--models", "oracle", "--repeat", "2",
		"--parallel", "2", "--build-arg", "BASE=" + base, "-o", "json"}, args...)...)
	wantExit(t, r, 0)
	var ran rewardReport
	if err := json.Unmarshal([]byte(r.stdout), &ran); err != nil || ran.Bench.ID == "" {
		t.Fatalf("lane bench -o json: %v\n%s", err, r.stdout)
	}
	rep := e.lane(context.Background(), "bench", "report", ran.Bench.ID[:8], "-o", "json")
	wantExit(t, rep, 0)
	var got rewardReport
	if err := json.Unmarshal([]byte(rep.stdout), &got); err != nil || len(got.Tasks) != 2 {
		t.Fatalf("lane bench report -o json: %v\n%s", err, rep.stdout)
	}
	text := e.lane(context.Background(), "bench", "report", ran.Bench.ID[:8])
	wantExit(t, text, 0)
	return got, text.stdout
}

// A verifier that writes reward.json with several keys: every key is
// recorded and the report gives each key's mean per task; the pass is the
// "reward" key's. A task whose reward.json has no "reward" key, and no
// --pass-key given, is an error of the task that says what to do, counted
// apart, neither a pass nor a fail.
func TestHarborRewardKeys(t *testing.T) {
	t.Parallel()
	rep, text := benchRewards(t)
	for _, task := range rep.Tasks {
		switch task.Task {
		case "graded":
			if task.Passed != 2 || task.Errored != 0 {
				t.Errorf("graded: %d passed, %d errored; want 2 passed", task.Passed, task.Errored)
			}
			if want := map[string]float64{"reward": 1, "style": 0.5, "lines": 3}; !maps.Equal(task.MeanRewards, want) {
				t.Errorf("graded: mean_rewards %v, want %v", task.MeanRewards, want)
			}
		case "keyless":
			if task.Passed+task.Failed != 0 || task.Errors["no_pass_key"] != 2 || task.MeanRewards != nil {
				t.Errorf("keyless: %d passed, %d failed, errors %v, mean_rewards %v; want 2 errors no_pass_key and no figures",
					task.Passed, task.Failed, task.Errors, task.MeanRewards)
			}
		default:
			t.Errorf("unknown task %s", task.Task)
		}
	}
	if !strings.Contains(text, "REWARD KEYS") || !strings.Contains(text, "lines 3.00, reward 1.00, style 0.50") ||
		!strings.Contains(text, "no_pass_key 2") {
		t.Errorf("text report lacks the keys' means or the errors:\n%s", text)
	}
}

// --pass-key names the key the pass is decided on: the task without a
// "reward" key passes on it, and the one whose reward.json lacks it is an
// error of the task. Long: TestHarborRewardKeys runs reward.json's keys
// through lane bench in make test, and bench's tests --pass-key.
func TestHarborPassKeyLong(t *testing.T) {
	t.Parallel()
	rep, _ := benchRewards(t, "--pass-key", "accuracy", "--pass-reward", "0.9")
	for _, task := range rep.Tasks {
		switch task.Task {
		case "keyless":
			if task.Passed != 2 || task.MeanReward == nil || *task.MeanReward != 1 {
				t.Errorf("keyless: %d passed, mean reward %v; want 2 passed on accuracy 1", task.Passed, task.MeanReward)
			}
			if want := map[string]float64{"accuracy": 1, "style": 0.25}; !maps.Equal(task.MeanRewards, want) {
				t.Errorf("keyless: mean_rewards %v, want %v", task.MeanRewards, want)
			}
		case "graded":
			if task.Errors["no_pass_key"] != 2 {
				t.Errorf("graded: errors %v, want no_pass_key 2 (it has no accuracy)", task.Errors)
			}
		}
	}
}
