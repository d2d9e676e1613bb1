package bench

import (
	"lane/bench/stats"
	"lane/trace"
)

// Report compares the models of a bench: per model over all tasks, and per
// task and model. Its figures are package stats', which the dashboard shows
// too.
type Report struct {
	Bench   trace.Bench  `json:"bench"`
	CostUSD float64      `json:"cost_usd"` // every attempt's cost, finished or not
	Models  []ModelStats `json:"models"`
	Tasks   []TaskStats  `json:"tasks"` // per task × model, in the suite's order
}

// ModelStats are one model's figures over every task.
type ModelStats struct {
	Model string `json:"model"`
	stats.Stats
}

// TaskStats are one model's figures on one task.
type TaskStats struct {
	Task  string `json:"task"`
	Model string `json:"model"`
	stats.Stats
}

// Compare computes the report of bench b from its attempts. It leaves out
// the models without an attempt, and the task × model pairs without one.
func Compare(b trace.Bench, attempts []trace.Attempt) Report {
	t := stats.Tabulate(b, attempts)
	r := Report{Bench: b, CostUSD: t.CostUSD}
	for m, model := range t.Models {
		if s := t.ByModel[m]; s.Attempts > 0 {
			r.Models = append(r.Models, ModelStats{Model: model, Stats: s})
		}
	}
	for i, task := range t.Tasks {
		for m, c := range t.Cells[i] {
			if c.Stats.Attempts > 0 {
				r.Tasks = append(r.Tasks, TaskStats{Task: task, Model: t.Models[m], Stats: c.Stats})
			}
		}
	}
	return r
}
