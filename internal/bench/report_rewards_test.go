package bench

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/lanehq/lane/internal/record"
)

// A Harbor bench whose verifiers write reward.json with several keys: the
// text report has each key's mean per model and per task beside the pass
// rate, and the JSON report has them under mean_rewards.
func TestReportRewardKeys(t *testing.T) {
	t.Parallel()
	b := record.Bench{ID: "3f2a9c1e", Name: "keys", Models: []string{"oracle"}, Repeat: 2, Status: record.StatusSucceeded}
	attempt := func(task string, n int, st record.AttemptStatus, r map[string]float64) record.Attempt {
		a := record.Attempt{BenchID: b.ID, TaskID: task, Model: "oracle", N: n, Status: st, Rewards: r}
		if v, ok := r["reward"]; ok {
			a.Reward = &v
		}
		return a
	}
	r := Compare(b, []record.Attempt{
		attempt("graded", 1, record.AttemptPassed, map[string]float64{"reward": 1, "style": 0.5}),
		attempt("graded", 2, record.AttemptFailed, map[string]float64{"reward": 0, "style": 0.25}),
		attempt("plain", 1, record.AttemptPassed, map[string]float64{"reward": 1}),
		attempt("plain", 2, record.AttemptErrored, map[string]float64{"accuracy": 1}),
	}, nil)

	var text bytes.Buffer
	if err := r.WriteTable(&text); err != nil {
		t.Fatal(err)
	}
	rows := map[string]string{}
	for _, line := range strings.Split(text.String(), "\n") {
		if f := strings.Fields(line); len(f) > 1 {
			rows[f[0]] = line
		}
	}
	for first, want := range map[string]string{
		"MODEL":  "REWARD KEYS",
		"oracle": "reward 0.67, style 0.38",
		"TASK":   "REWARD KEYS",
		"graded": "reward 0.50, style 0.38",
		"plain":  "reward 1.00  ",
	} {
		if !strings.Contains(rows[first], want) {
			t.Errorf("row %s lacks %q:\n%s", first, want, text.String())
		}
	}

	var js bytes.Buffer
	if err := r.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Models []struct {
			MeanRewards map[string]float64 `json:"mean_rewards"`
		}
		Tasks []struct {
			Task        string
			MeanReward  *float64           `json:"mean_reward"`
			MeanRewards map[string]float64 `json:"mean_rewards"`
		}
	}
	if err := json.Unmarshal(js.Bytes(), &got); err != nil || len(got.Tasks) != 2 || len(got.Models) != 1 {
		t.Fatalf("JSON report: %v\n%s", err, js.String())
	}
	if m := got.Models[0].MeanRewards; len(m) != 2 || m["style"] != 0.375 {
		t.Errorf("model's mean_rewards %v", m)
	}
	for _, task := range got.Tasks {
		want := map[string]float64{"graded": 0.5, "plain": 1}[task.Task]
		if task.MeanRewards["reward"] != want || task.MeanReward == nil || *task.MeanReward != want {
			t.Errorf("task %s: mean_reward %v, mean_rewards %v; want reward %v", task.Task, task.MeanReward, task.MeanRewards, want)
		}
	}
}

// The CSV report carries each reward key's mean in a mean_rewards column,
// per model and per task, a spreadsheet's to split on ';' and '='.
func TestReportRewardKeysCSV(t *testing.T) {
	t.Parallel()
	b := record.Bench{ID: "3f2a9c1e", Name: "keys", Models: []string{"oracle"}, Repeat: 2, Status: record.StatusSucceeded}
	r := Compare(b, []record.Attempt{
		{BenchID: b.ID, TaskID: "graded", Model: "oracle", N: 1, Status: record.AttemptPassed, Rewards: map[string]float64{"reward": 1, "style": 0.5}},
		{BenchID: b.ID, TaskID: "graded", Model: "oracle", N: 2, Status: record.AttemptFailed, Rewards: map[string]float64{"reward": 0, "style": 0.25}},
	}, nil)
	var out bytes.Buffer
	if err := r.WriteCSV(&out); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&out).ReadAll()
	if err != nil || len(rows) != 3 {
		t.Fatalf("CSV: %v\n%s", err, out.String())
	}
	col := slices.Index(rows[0], "mean_rewards")
	if col < 0 {
		t.Fatalf("no mean_rewards column in %v", rows[0])
	}
	for _, row := range rows[1:] {
		if row[col] != "reward=0.5;style=0.375" {
			t.Errorf("%s %s: mean_rewards %q, want reward=0.5;style=0.375", row[0], row[1], row[col])
		}
	}
}
