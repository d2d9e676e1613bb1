package bench

import (
	"cmp"
	"slices"

	"github.com/lanehq/lane/internal/bench/stats"
	"github.com/lanehq/lane/internal/record"
)

// Report compares the models of a bench: per model over all tasks, and per
// task and model. Its figures are package stats', which the dashboard shows
// too.
type Report struct {
	Bench   record.Bench `json:"bench"`
	CostUSD float64      `json:"cost_usd"` // every attempt's cost, finished or not
	Models  []ModelStats `json:"models"`
	Tasks   []TaskStats  `json:"tasks"` // per task × model, in the suite's order
	// Accounts are the logins the attempts ran under (their runs'
	// accounts), for the runtimes lane keeps accounts of.
	Accounts []AccountAttempts `json:"accounts,omitempty"`
	// Steps are the attempts at multi-step tasks with their steps.
	Steps []StepAttempt `json:"steps,omitempty"`
	// Paired compares the models two by two on the tasks both finished;
	// nil with fewer than two models (the oracle aside).
	Paired *Paired `json:"paired,omitempty"`

	table stats.Table // what Paired is computed from, for SetBaseline
}

// AccountAttempts is how many attempts ran under one login.
type AccountAttempts struct {
	Runtime  string `json:"runtime"`
	Account  string `json:"account"`
	Attempts int    `json:"attempts"`
}

// ModelStats are one model's figures over every task.
type ModelStats struct {
	Model string `json:"model"`
	stats.Stats
	Changed
	// Score is the mean of the model's per-task scores and its standard
	// error clustered by task, beside Stats' Wilson interval over the
	// attempts.
	Score stats.ModelScore `json:"score"`
}

// TaskStats are one model's figures on one task.
type TaskStats struct {
	Task  string `json:"task"`
	Model string `json:"model"`
	stats.Stats
	Changed
}

// Changed is what the attempts' runs changed in their folders, over the
// attempts whose run recorded it.
type Changed struct {
	// MedianFilesChanged is the median of their runs' Changes.Files; nil
	// when no run recorded its changes.
	MedianFilesChanged *float64 `json:"median_files_changed,omitempty"`
}

// Compare computes the report of bench b from its attempts, and from the
// runs behind them (by run id; nil or missing ones are left out) what they
// changed. It leaves out the models without an attempt, and the task ×
// model pairs without one.
func Compare(b record.Bench, attempts []record.Attempt, runs map[string]*record.Run) Report {
	t := stats.Tabulate(b, attempts)
	r := Report{Bench: b, CostUSD: t.CostUSD}
	files := filesChanged(attempts, runs)
	for m, model := range t.Models {
		if s := t.ByModel[m]; s.Attempts > 0 {
			r.Models = append(r.Models, ModelStats{Model: model, Stats: s, Changed: medianOf(files[[2]string{"", model}]),
				Score: t.ModelScore(m, "")})
		}
	}
	for i, task := range t.Tasks {
		for m, c := range t.Cells[i] {
			if c.Stats.Attempts > 0 {
				model := t.Models[m]
				r.Tasks = append(r.Tasks, TaskStats{Task: task, Model: model, Stats: c.Stats,
					Changed: medianOf(files[[2]string{task, model}])})
			}
		}
	}
	r.Accounts = accountsOf(attempts, runs)
	r.Steps = stepAttempts(attempts)
	r.table = t
	r.Paired = t.Paired("")
	return r
}

// accountsOf counts the attempts by the account of their last run.
func accountsOf(attempts []record.Attempt, runs map[string]*record.Run) []AccountAttempts {
	var out []AccountAttempts
	for _, a := range attempts {
		run := runs[a.RunID]
		if run == nil || run.Account == "" {
			continue
		}
		i := slices.IndexFunc(out, func(c AccountAttempts) bool { return c.Runtime == run.Runtime && c.Account == run.Account })
		if i < 0 {
			out = append(out, AccountAttempts{Runtime: run.Runtime, Account: run.Account})
			i = len(out) - 1
		}
		out[i].Attempts++
	}
	slices.SortFunc(out, func(x, y AccountAttempts) int {
		return cmp.Or(cmp.Compare(x.Runtime, y.Runtime), cmp.Compare(x.Account, y.Account))
	})
	return out
}

// filesChanged is the Files of the recorded changes of every attempt's
// run, by task and model and by model alone (task ""). A run whose
// snapshot failed (Changes.Error) recorded no count.
func filesChanged(attempts []record.Attempt, runs map[string]*record.Run) map[[2]string][]int {
	out := map[[2]string][]int{}
	for _, a := range attempts {
		run := runs[a.RunID]
		if a.RunID == "" || run == nil || run.Changes == nil || run.Changes.Error != "" {
			continue
		}
		for _, k := range [][2]string{{a.TaskID, a.Model}, {"", a.Model}} {
			out[k] = append(out[k], run.Changes.Files)
		}
	}
	return out
}

func medianOf(xs []int) Changed {
	if len(xs) == 0 {
		return Changed{}
	}
	xs = slices.Sorted(slices.Values(xs))
	m := float64(xs[len(xs)/2])
	if len(xs)%2 == 0 {
		m = float64(xs[len(xs)/2-1]+xs[len(xs)/2]) / 2
	}
	return Changed{MedianFilesChanged: &m}
}
