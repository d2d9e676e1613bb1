package bench

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/lanehq/lane/internal/record"
)

// A bench with a multi-step task: the text report lists each multi-step
// attempt with its outcome and rewards, then each of its steps with its
// own; the JSON report has them under steps. An attempt of one step is
// not listed.
func TestReportSteps(t *testing.T) {
	t.Parallel()
	b := record.Bench{ID: "3f2a9c1e", Name: "steps", Models: []string{"oracle"}, Repeat: 1, Status: record.StatusSucceeded}
	steps := []record.AttemptStep{
		{Name: "one", Status: record.AttemptPassed, Reward: new(1.0), Rewards: map[string]float64{"style": 0.5, "reward": 1}},
		{Name: "two", Status: record.AttemptFailed, FailureKind: FailBelowMinReward, Reward: new(0.25), Rewards: map[string]float64{"reward": 0.25},
			Error: "reward = 0.25, below its min_reward 0.5: the steps after it did not run"},
	}
	r := Compare(b, []record.Attempt{
		{BenchID: b.ID, TaskID: "ledger", Model: "oracle", N: 1, Status: record.AttemptFailed, FailureKind: FailCheck,
			Reward: new(0.625), Rewards: map[string]float64{"reward": 0.625, "style": 0.25}, Steps: steps},
		{BenchID: b.ID, TaskID: "plain", Model: "oracle", N: 1, Status: record.AttemptPassed, Reward: new(1.0),
			Rewards: map[string]float64{"reward": 1}},
	}, nil)

	var text bytes.Buffer
	if err := r.WriteTable(&text); err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(text.String(), "steps of multi-step attempts:\n")
	if !ok {
		t.Fatalf("no steps section:\n%s", text.String())
	}
	lines := strings.Split(section, "\n")
	for i, want := range [][]string{
		{"ledger oracle #1", "failed (check_failed)", "reward 0.625, style 0.25"},
		{"one", "passed", "reward 1, style 0.5"},
		{"two", "failed (below_min_reward)", "reward 0.25"},
	} {
		for _, w := range want {
			if !strings.Contains(lines[i], w) {
				t.Errorf("line %d %q lacks %q", i+1, lines[i], w)
			}
		}
	}
	if strings.Contains(section, "plain") {
		t.Errorf("a single-step attempt among the steps:\n%s", section)
	}

	var js bytes.Buffer
	if err := r.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Steps []StepAttempt `json:"steps"`
	}
	if err := json.Unmarshal(js.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Steps) != 1 || got.Steps[0].Task != "ledger" || *got.Steps[0].Reward != 0.625 || !reflect.DeepEqual(got.Steps[0].Steps, steps) {
		t.Errorf("JSON steps = %+v", got.Steps)
	}
}
