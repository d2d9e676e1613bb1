package bench

import (
	"cmp"
	"encoding/json"
	"math"
	"slices"

	"lane/trace"
)

// z95 is the normal quantile of a two-sided 95% interval.
const z95 = 1.96

// Report compares the models of a bench: per model over all tasks, and per
// task and model.
type Report struct {
	Bench   trace.Bench  `json:"bench"`
	CostUSD float64      `json:"cost_usd"` // every attempt's cost, finished or not
	Models  []ModelStats `json:"models"`
	Tasks   []TaskStats  `json:"tasks"` // per task × model, in the suite's order
}

// ModelStats are one model's figures over every task.
type ModelStats struct {
	Model string `json:"model"`
	Stats
}

// TaskStats are one model's figures on one task.
type TaskStats struct {
	Task  string `json:"task"`
	Model string `json:"model"`
	Stats
}

// PassAtK is the chance that at least one of k attempts passes, estimated
// without bias from n attempts of which c passed: 1 - C(n-c,k)/C(n,k). Over
// several tasks it is the mean over the tasks with at least k attempts.
type PassAtK struct {
	K     int     `json:"k"`
	Value float64 `json:"value"`
}

// Stats are the figures of a set of attempts. Only finished attempts
// (passed or failed) count; skipped and unfinished ones are counted apart.
// Optional figures are nil when there is nothing to compute them from.
type Stats struct {
	Attempts int `json:"attempts"` // all, whatever their status
	Finished int `json:"finished"` // passed + failed
	Passed   int `json:"passed"`
	Failed   int `json:"failed"`
	Skipped  int `json:"skipped"`
	Pending  int `json:"pending"` // not finished: pending or running
	Runs     int `json:"runs"`    // finished attempts whose agent ran (the others failed setup)

	PassRate *float64 `json:"pass_rate"` // Passed / Finished
	// CILow and CIHigh bound the pass rate: the Wilson score interval, 95%.
	CILow   *float64  `json:"ci_low"`
	CIHigh  *float64  `json:"ci_high"`
	PassAtK []PassAtK `json:"pass_at_k,omitempty"` // k = 1 and the bench's repeat, when repeat > 1

	MedianDurationMS *float64 `json:"median_duration_ms"` // of the agent's runs
	MeanDurationMS   *float64 `json:"mean_duration_ms"`

	CostUSD           float64  `json:"cost_usd"`
	CostPerAttemptUSD *float64 `json:"cost_per_attempt_usd"` // CostUSD / Runs
	CostPerPassUSD    *float64 `json:"cost_per_pass_usd"`    // CostUSD / Passed

	Usage         trace.Usage `json:"usage"`
	Tokens        int64       `json:"tokens"` // all four kinds of Usage
	Turns         int         `json:"turns"`
	ToolCalls     int         `json:"tool_calls"`
	MeanTokens    *float64    `json:"mean_tokens"` // per run
	MeanTurns     *float64    `json:"mean_turns"`
	MeanToolCalls *float64    `json:"mean_tool_calls"`

	Failures map[string]int `json:"failures,omitempty"` // failed attempts by failure kind
}

// Wilson returns the Wilson score interval of passed successes in n trials
// at normal quantile z; ok is false when n is 0.
//
//	center = (p + z²/2n) / (1 + z²/n)
//	half   = z / (1 + z²/n) · √(p(1−p)/n + z²/4n²)
func Wilson(passed, n int, z float64) (low, high float64, ok bool) {
	if n <= 0 {
		return 0, 0, false
	}
	nf := float64(n)
	p := float64(passed) / nf
	z2 := z * z
	denom := 1 + z2/nf
	center := (p + z2/(2*nf)) / denom
	half := z / denom * math.Sqrt(p*(1-p)/nf+z2/(4*nf*nf))
	return max(center-half, 0), min(center+half, 1), true
}

// PassAt returns the unbiased pass@k estimate from n attempts with c
// passes, 1 - C(n-c,k)/C(n,k), computed as 1 - ∏_{i=n-c+1..n} (1 - k/i);
// ok is false when n < k.
func PassAt(n, c, k int) (float64, bool) {
	if k <= 0 || n < k {
		return 0, false
	}
	if n-c < k {
		return 1, true
	}
	if k == 1 {
		return float64(c) / float64(n), true // the same, without rounding
	}
	prod := 1.0
	for i := n - c + 1; i <= n; i++ {
		prod *= 1 - float64(k)/float64(i)
	}
	return 1 - prod, true
}

// Compare computes the report of bench b from its attempts.
func Compare(b trace.Bench, attempts []trace.Attempt) Report {
	r := Report{Bench: b}
	var suite struct {
		Tasks []struct {
			ID string `json:"id"`
		} `json:"tasks"`
	}
	_ = json.Unmarshal(b.Suite, &suite) // without it, tasks are in id order

	models := slices.Clone(b.Models)
	var tasks []string
	for _, t := range suite.Tasks {
		tasks = append(tasks, t.ID)
	}
	var extraTasks []string
	for _, a := range attempts {
		r.CostUSD += a.CostUSD
		if !slices.Contains(models, a.Model) {
			models = append(models, a.Model)
		}
		if !slices.Contains(tasks, a.TaskID) && !slices.Contains(extraTasks, a.TaskID) {
			extraTasks = append(extraTasks, a.TaskID)
		}
	}
	slices.Sort(extraTasks)
	tasks = append(tasks, extraTasks...)

	var ks []int
	if b.Repeat > 1 {
		ks = []int{1, b.Repeat}
	}
	for _, m := range models {
		var all []trace.Attempt
		var perTask []Stats
		for _, t := range tasks {
			var these []trace.Attempt
			for _, a := range attempts {
				if a.Model == m && a.TaskID == t {
					these = append(these, a)
				}
			}
			if len(these) == 0 {
				continue
			}
			all = append(all, these...)
			s := stats(these)
			s.PassAtK = passAtKs(ks, []Stats{s})
			perTask = append(perTask, s)
			r.Tasks = append(r.Tasks, TaskStats{Task: t, Model: m, Stats: s})
		}
		if len(all) == 0 {
			continue
		}
		s := stats(all)
		s.PassAtK = passAtKs(ks, perTask)
		r.Models = append(r.Models, ModelStats{Model: m, Stats: s})
	}
	// Per task, then model, as the suite and the bench list them.
	taskIdx := func(id string) int { return slices.Index(tasks, id) }
	slices.SortStableFunc(r.Tasks, func(x, y TaskStats) int {
		return cmp.Or(cmp.Compare(taskIdx(x.Task), taskIdx(y.Task)),
			cmp.Compare(slices.Index(models, x.Model), slices.Index(models, y.Model)))
	})
	return r
}

// passAtKs is pass@k for each k, the mean over the tasks with at least k
// finished attempts; a k that no task allows is left out.
func passAtKs(ks []int, tasks []Stats) []PassAtK {
	var out []PassAtK
	for _, k := range ks {
		sum, n := 0.0, 0
		for _, t := range tasks {
			if v, ok := PassAt(t.Finished, t.Passed, k); ok {
				sum += v
				n++
			}
		}
		if n > 0 {
			out = append(out, PassAtK{K: k, Value: sum / float64(n)})
		}
	}
	return out
}

func stats(attempts []trace.Attempt) Stats {
	var s Stats
	var durations []float64
	for _, a := range attempts {
		s.Attempts++
		switch a.Status {
		case trace.AttemptPassed:
			s.Passed++
		case trace.AttemptFailed:
			s.Failed++
			if s.Failures == nil {
				s.Failures = map[string]int{}
			}
			s.Failures[cmp.Or(a.FailureKind, "unknown")]++
		case trace.AttemptSkipped:
			s.Skipped++
			continue
		default:
			s.Pending++
			continue
		}
		s.Finished++
		s.CostUSD += a.CostUSD
		s.Usage = s.Usage.Add(a.Usage)
		s.Turns += a.Turns
		s.ToolCalls += a.ToolCalls
		if a.RunID != "" {
			s.Runs++
			durations = append(durations, float64(a.DurationMS))
		}
	}
	u := s.Usage
	s.Tokens = u.InputTokens + u.OutputTokens + u.CacheReadTokens + u.CacheCreationTokens
	if s.Finished > 0 {
		s.PassRate = ptr(float64(s.Passed) / float64(s.Finished))
		lo, hi, _ := Wilson(s.Passed, s.Finished, z95)
		s.CILow, s.CIHigh = ptr(lo), ptr(hi)
	}
	if s.Runs > 0 {
		runs := float64(s.Runs)
		s.MedianDurationMS, s.MeanDurationMS = ptr(median(durations)), ptr(mean(durations))
		s.CostPerAttemptUSD = ptr(s.CostUSD / runs)
		s.MeanTokens = ptr(float64(s.Tokens) / runs)
		s.MeanTurns = ptr(float64(s.Turns) / runs)
		s.MeanToolCalls = ptr(float64(s.ToolCalls) / runs)
	}
	if s.Passed > 0 {
		s.CostPerPassUSD = ptr(s.CostUSD / float64(s.Passed))
	}
	return s
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

func mean(xs []float64) float64 {
	sum := 0.0
	for _, x := range xs {
		sum += x
	}
	return sum / float64(len(xs))
}

func ptr[T any](v T) *T { return &v }
