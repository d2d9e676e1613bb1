package bench

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"strings"
	"testing"

	"github.com/lanehq/lane/internal/bench/stats"
	"github.com/lanehq/lane/internal/record"
)

// pairedBench: three models, one attempt per task. a passes t1–t4, b
// passes t1, c passes t1 and t2 but errored on t3 and never ran t4, and the
// oracle, left out of the pairs, passes everything.
func pairedBench() Report {
	b := record.Bench{ID: "9e1c", Name: "paired", Models: []string{"a", "b", "c", OracleModel}, Repeat: 1,
		Status: record.StatusSucceeded}
	var as []record.Attempt
	add := func(task, model string, st record.AttemptStatus) {
		as = append(as, record.Attempt{BenchID: b.ID, TaskID: task, Model: model, N: 1, Status: st, CostUSD: 0.5,
			RunID: task + model, DurationMS: 2000})
	}
	for _, task := range []string{"t1", "t2", "t3", "t4", "t5"} {
		add(task, OracleModel, record.AttemptPassed)
		pass := map[string]bool{"t1": true, "t2": true, "t3": true, "t4": true}[task]
		add(task, "a", map[bool]record.AttemptStatus{true: record.AttemptPassed, false: record.AttemptFailed}[pass])
		add(task, "b", map[bool]record.AttemptStatus{true: record.AttemptPassed, false: record.AttemptFailed}[task == "t1"])
		switch task {
		case "t1", "t2":
			add(task, "c", record.AttemptPassed)
		case "t3":
			add(task, "c", record.AttemptErrored)
		case "t5":
			add(task, "c", record.AttemptFailed)
		}
	}
	return Compare(b, as, nil)
}

func TestReportPairs(t *testing.T) {
	t.Parallel()
	r := pairedBench()
	if r.Paired == nil || r.Paired.Score != ScorePass || len(r.Paired.Pairs) != 3 {
		t.Fatalf("paired %+v", r.Paired)
	}
	// a − b: differences 0, 1, 1, 1, 0 (stats' TestCompareBinary: mean
	// 0.6, sign test p 0.25); a − c over t1, t2, t5: 0, 0, 0.
	ab, ac := r.Paired.Pairs[0], r.Paired.Pairs[1]
	if ab.A != "a" || ab.B != "b" || ab.Tasks != 5 || ab.Difference == nil || ab.Difference.Mean != 0.6 {
		t.Errorf("a − b %+v", ab)
	}
	if ac.B != "c" || ac.Tasks != 3 || strings.Join(ac.OnlyA, ",") != "t3,t4" || strings.Join(ac.Errored, ",") != "t3" ||
		ac.Difference.P != 1 {
		t.Errorf("a − c %+v", ac)
	}
	var text bytes.Buffer
	if err := r.WriteTable(&text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"paired comparisons, every two models: pass = 1, fail = 0",
		"a  b  5      +60.0 pts  -8.0 to +128.0 pts",
		"a − c: only a finished t3, t4; 1 task left out for errors of the task or environment: t3",
		"TASK MEAN ± SE",
	} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("the text report lacks %q:\n%s", want, text.String())
		}
	}
	for _, p := range r.Paired.Pairs {
		if p.A == OracleModel || p.B == OracleModel {
			t.Errorf("the oracle is compared: %+v", p)
		}
	}
}

// --baseline: every other model minus the baseline; an unknown model is
// refused.
func TestReportBaseline(t *testing.T) {
	t.Parallel()
	r := pairedBench()
	if err := r.SetBaseline("b"); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range r.Paired.Pairs {
		got = append(got, p.A+"−"+p.B)
	}
	if strings.Join(got, " ") != "a−b c−b" || r.Paired.Baseline != "b" || r.Paired.Pairs[0].Difference.Mean != 0.6 {
		t.Errorf("against b: %v %+v", got, r.Paired)
	}
	for _, bad := range []string{"nope", OracleModel} {
		if err := r.SetBaseline(bad); err == nil || !strings.Contains(err.Error(), "its models: a, b, c") {
			t.Errorf("baseline %q: %v", bad, err)
		}
	}
	// A bench of the oracle alone has nothing to compare.
	only := Compare(record.Bench{ID: "b-oracle", Models: []string{OracleModel}, Repeat: 1},
		[]record.Attempt{{TaskID: "t", Model: OracleModel, N: 1, Status: record.AttemptPassed}}, nil)
	if err := only.SetBaseline("sonnet"); err == nil || !strings.Contains(err.Error(), "it has no model to compare, the oracle aside") {
		t.Errorf("baseline on an oracle bench: %v", err)
	}
}

// The figures in JSON and CSV, at full precision.
func TestReportPairsJSONAndCSV(t *testing.T) {
	t.Parallel()
	r := pairedBench()
	var js bytes.Buffer
	if err := r.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Models []struct {
			Model string           `json:"model"`
			Score stats.ModelScore `json:"score"`
		} `json:"models"`
		Paired Paired `json:"paired"`
	}
	if err := json.Unmarshal(js.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	// a: 1, 1, 1, 1, 0 → mean 0.8, sd √0.2, SE √(0.2/5) = 0.2.
	if a := got.Models[0]; a.Model != "a" || a.Score.Tasks != 5 || *a.Score.Mean != 0.8 || !near(*a.Score.SE, 0.2) {
		t.Errorf("a's score %+v", a)
	}
	if d := got.Paired.Pairs[0].Difference; d == nil || d.ExactTest != stats.SignTest || !near(*d.ExactP, 0.25) ||
		d.Dist != stats.DistT || d.DF != 4 {
		t.Errorf("a − b in JSON %+v", got.Paired.Pairs[0])
	}

	var out bytes.Buffer
	if err := r.WriteCSV(&out); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&out).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	var pairs int
	for _, row := range rows[1:] {
		if row[0] == "model" && row[col["model"]] == "a" && row[col["task_se"]] != "0.2" {
			t.Errorf("a's task_se %q", row[col["task_se"]])
		}
		if row[0] != "pair" {
			continue
		}
		pairs++
		if row[col["model"]] == "a" && row[col["model_b"]] == "b" &&
			(row[col["difference"]] != "0.6" || row[col["wins"]] != "3" || row[col["ties"]] != "2" || row[col["df"]] != "4") {
			t.Errorf("a − b row %v", row)
		}
	}
	if pairs != 3 {
		t.Errorf("%d pair rows, want 3", pairs)
	}
}

func near(x, y float64) bool { return x-y < 1e-9 && y-x < 1e-9 }

// A verifier's keys are compared apart, after the reward.
func TestReportPairsPerRewardKey(t *testing.T) {
	t.Parallel()
	b := record.Bench{ID: "k", Name: "keys", Models: []string{"a", "b"}, Repeat: 1, Status: record.StatusSucceeded}
	var as []record.Attempt
	for i, v := range []float64{1, 0.5, 0.25} {
		for _, m := range []string{"a", "b"} {
			r := v
			if m == "b" {
				r = v / 2
			}
			as = append(as, record.Attempt{TaskID: string(rune('p' + i)), Model: m, N: 1, Status: record.AttemptFailed,
				Reward: &r, Rewards: map[string]float64{"reward": r, "style": 1 - r}})
		}
	}
	r := Compare(b, as, nil)
	if r.Paired.Score != ScoreReward || len(r.Paired.Pairs) != 3 || r.Paired.Pairs[1].Key != "reward" ||
		r.Paired.Pairs[2].Key != "style" {
		t.Fatalf("paired %+v", r.Paired)
	}
	var md bytes.Buffer
	if err := r.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	// Differences 0.5, 0.25, 0.125: mean 0.291667.
	for _, want := range []string{"the verifier's reward", "reward key style", "| a | b | 3 | +0.292 |", "0.58 ±0.22"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, md.String())
		}
	}
}

// The matrix: a row per task, a column per model.
func TestReportMatrix(t *testing.T) {
	t.Parallel()
	r := pairedBench()
	var text, md bytes.Buffer
	if err := r.WriteMatrix(&text, false); err != nil {
		t.Fatal(err)
	}
	if err := r.WriteMatrix(&md, true); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"TASK  a             b             c             oracle",
		"t3    1/1 $0.50 2s  0/1 $0.50 2s  error         1/1 $0.50 2s",
		"t4    1/1 $0.50 2s  0/1 $0.50 2s  -             1/1 $0.50 2s",
	} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("the text matrix lacks %q:\n%s", want, text.String())
		}
	}
	if !strings.Contains(md.String(), "| t1 | 1/1 · $0.50 · 2s | 1/1 · $0.50 · 2s | 1/1 · $0.50 · 2s | 1/1 · $0.50 · 2s |") ||
		!strings.Contains(md.String(), "|---|---:|---:|---:|---:|") {
		t.Errorf("the markdown matrix:\n%s", md.String())
	}
}
