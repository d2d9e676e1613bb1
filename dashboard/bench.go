package dashboard

import (
	"cmp"
	"encoding/json"
	"math"
	"net/http"
	"slices"

	"lane/trace"
)

// Page sizes of the bench list (API.md, Benches).
const (
	defaultBenchLimit = 50
	maxBenchLimit     = 500
)

// wilsonZ is the normal quantile of the 95% intervals the API reports.
const wilsonZ = 1.96

// ModelStats is one model's results in a bench (API.md, Benches). The
// figures are those of `lane bench`'s report (package bench, which the
// dashboard does not import): only finished attempts, passed or failed,
// count; unfinished and skipped ones are counted apart.
type ModelStats struct {
	Model string `json:"model"`
	// Attempts are the finished attempts; the pass rate and its interval
	// are over them.
	Attempts   int `json:"attempts"`
	Passed     int `json:"passed"`
	Failed     int `json:"failed"`
	Unfinished int `json:"unfinished"` // pending or running
	Skipped    int `json:"skipped"`
	// PassRate and the Wilson score interval (95%) are null without a
	// finished attempt.
	PassRate   *float64 `json:"pass_rate"`
	WilsonLow  *float64 `json:"wilson_low"`
	WilsonHigh *float64 `json:"wilson_high"`
	// CostUSD, Tokens and Usage are those of the finished attempts.
	CostUSD     float64  `json:"cost_usd"`
	CostPerPass *float64 `json:"cost_per_pass"` // null without a pass
	// MedianDurationMS is the median duration of the finished attempts'
	// agent runs (those with a run), null when there is none.
	MedianDurationMS *float64    `json:"median_duration_ms"`
	Tokens           int64       `json:"tokens"` // input + output + cache read + cache creation
	Usage            trace.Usage `json:"usage"`
}

// CellStats is one model on one task.
type CellStats struct {
	Model    string `json:"model"`
	Attempts int    `json:"attempts"` // finished, as in ModelStats
	Passed   int    `json:"passed"`
	// RunIDs are the runs of every attempt that has one (finished or not),
	// by repeat number.
	RunIDs []string `json:"run_ids"`
}

// TaskStats is one task across the models; Models has one cell per model,
// in the order of the bench's models.
type TaskStats struct {
	TaskID   string      `json:"task_id"`
	Attempts int         `json:"attempts"`
	Passed   int         `json:"passed"`
	Models   []CellStats `json:"models"`
}

// benchProgress counts a bench's attempts by status, for the list.
type benchProgress struct {
	Total   int `json:"total"`
	Passed  int `json:"passed"`
	Failed  int `json:"failed"`
	Running int `json:"running"`
	Pending int `json:"pending"`
	Skipped int `json:"skipped"`
}

// benchSummary is a bench as listed: the bench (without its suite) and
// what its attempts add up to.
type benchSummary struct {
	*trace.Bench
	Progress benchProgress `json:"progress"`
	CostUSD  float64       `json:"cost_usd"`
}

// wilson returns the Wilson score interval of passed successes out of n
// trials, for the normal quantile z.
func wilson(passed, n int, z float64) (lo, hi float64) {
	if n <= 0 {
		return 0, 1
	}
	nf := float64(n)
	p := float64(passed) / nf
	z2 := z * z
	den := 1 + z2/nf
	center := (p + z2/(2*nf)) / den
	half := z / den * math.Sqrt(p*(1-p)/nf+z2/(4*nf*nf))
	return max(0, center-half), min(1, center+half)
}

// benchModels returns the bench's models in its order, then those only its
// attempts name, in the order they first appear.
func benchModels(b *trace.Bench, attempts []trace.Attempt) []string {
	var models []string
	for _, m := range b.Models {
		if !slices.Contains(models, m) {
			models = append(models, m)
		}
	}
	for i := range attempts {
		if m := attempts[i].Model; !slices.Contains(models, m) {
			models = append(models, m)
		}
	}
	return models
}

// benchStats computes the statistics of API.md from a bench's attempts:
// one ModelStats per model, one TaskStats per task in the order the tasks
// first appear.
func benchStats(b *trace.Bench, attempts []trace.Attempt) ([]ModelStats, []TaskStats) {
	models := benchModels(b, attempts)
	modelIdx := make(map[string]int, len(models))
	for i, m := range models {
		modelIdx[m] = i
	}
	// Tasks in the suite's order, then those it does not list (or all,
	// when the suite says nothing) in the order of the attempts.
	var ids []string
	seen := map[string]bool{}
	for i := range attempts {
		if id := attempts[i].TaskID; !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	suitePos := map[string]int{}
	for i, id := range suiteTasks(b.Suite) {
		if _, ok := suitePos[id]; !ok {
			suitePos[id] = i
		}
	}
	pos := func(id string) int {
		if p, ok := suitePos[id]; ok {
			return p
		}
		return len(suitePos)
	}
	slices.SortStableFunc(ids, func(x, y string) int { return cmp.Compare(pos(x), pos(y)) })
	taskIdx := make(map[string]int, len(ids))
	tasks := make([]TaskStats, len(ids))
	for i, id := range ids {
		taskIdx[id] = i
		tasks[i].TaskID = id
	}

	// By task, model and repeat, so that run ids come in repeat order.
	sorted := make([]*trace.Attempt, len(attempts))
	for i := range attempts {
		sorted[i] = &attempts[i]
	}
	slices.SortStableFunc(sorted, func(x, y *trace.Attempt) int {
		return cmp.Or(cmp.Compare(taskIdx[x.TaskID], taskIdx[y.TaskID]),
			cmp.Compare(modelIdx[x.Model], modelIdx[y.Model]), cmp.Compare(x.N, y.N))
	})

	ms := make([]ModelStats, len(models))
	durations := make([][]int64, len(models))
	for i, m := range models {
		ms[i].Model = m
	}
	for i := range tasks {
		tasks[i].Models = make([]CellStats, len(models))
		for j, m := range models {
			tasks[i].Models[j] = CellStats{Model: m, RunIDs: []string{}}
		}
	}
	for _, a := range sorted {
		mi := modelIdx[a.Model]
		m := &ms[mi]
		task := &tasks[taskIdx[a.TaskID]]
		cell := &task.Models[mi]
		if a.RunID != "" {
			cell.RunIDs = append(cell.RunIDs, a.RunID)
		}
		switch a.Status {
		case trace.AttemptPassed, trace.AttemptFailed:
		case trace.AttemptSkipped:
			m.Skipped++
			continue
		default:
			m.Unfinished++
			continue
		}
		m.Attempts++
		cell.Attempts++
		task.Attempts++
		if a.Status == trace.AttemptPassed {
			m.Passed++
			cell.Passed++
			task.Passed++
		} else {
			m.Failed++
		}
		m.CostUSD += a.CostUSD
		m.Usage = m.Usage.Add(a.Usage)
		if a.RunID != "" {
			durations[mi] = append(durations[mi], a.DurationMS)
		}
	}
	for i := range ms {
		m := &ms[i]
		u := m.Usage
		m.Tokens = u.InputTokens + u.OutputTokens + u.CacheReadTokens + u.CacheCreationTokens
		if m.Attempts > 0 {
			rate := float64(m.Passed) / float64(m.Attempts)
			lo, hi := wilson(m.Passed, m.Attempts, wilsonZ)
			m.PassRate, m.WilsonLow, m.WilsonHigh = &rate, &lo, &hi
		}
		if m.Passed > 0 {
			cpp := m.CostUSD / float64(m.Passed)
			m.CostPerPass = &cpp
		}
		if d := durations[i]; len(d) > 0 {
			med := median(d)
			m.MedianDurationMS = &med
		}
	}
	return ms, tasks
}

// suiteTasks returns the task ids of a bench's suite in the suite's order,
// when the suite is an object with a "tasks" list of objects with an "id";
// nil otherwise (the page then orders tasks as the store does, by id).
func suiteTasks(suite json.RawMessage) []string {
	var s struct {
		Tasks []struct {
			ID string `json:"id"`
		} `json:"tasks"`
	}
	if len(suite) == 0 || json.Unmarshal(suite, &s) != nil {
		return nil
	}
	var ids []string
	for _, t := range s.Tasks {
		if t.ID != "" {
			ids = append(ids, t.ID)
		}
	}
	return ids
}

// median returns the median of d (the mean of the middle two for an even
// count); it sorts d.
func median(d []int64) float64 {
	slices.Sort(d)
	n := len(d)
	if n%2 == 1 {
		return float64(d[n/2])
	}
	return (float64(d[n/2-1]) + float64(d[n/2])) / 2
}

// progress counts attempts by status.
func progress(attempts []trace.Attempt) (benchProgress, float64) {
	var p benchProgress
	var cost float64
	for i := range attempts {
		a := &attempts[i]
		p.Total++
		cost += a.CostUSD
		switch a.Status {
		case trace.AttemptPassed:
			p.Passed++
		case trace.AttemptFailed:
			p.Failed++
		case trace.AttemptRunning:
			p.Running++
		case trace.AttemptSkipped:
			p.Skipped++
		default:
			p.Pending++
		}
	}
	return p, cost
}

func (s *Server) listBenches(w http.ResponseWriter, r *http.Request) {
	limit, err := intParam(r.URL.Query(), "limit", defaultBenchLimit, 1, maxBenchLimit)
	if err != nil {
		writeStoreError(w, err)
		return
	}
	benches, err := s.st.ListBenches(r.Context(), int(limit))
	if err != nil {
		writeStoreError(w, err)
		return
	}
	out := make([]benchSummary, 0, len(benches))
	for _, b := range benches {
		attempts, err := s.st.Attempts(r.Context(), b.ID)
		if err != nil {
			writeStoreError(w, err)
			return
		}
		c := *b
		c.Suite = nil
		p, cost := progress(attempts)
		out = append(out, benchSummary{Bench: &c, Progress: p, CostUSD: cost})
	}
	writeJSON(w, http.StatusOK, struct {
		Benches []benchSummary `json:"benches"`
	}{out})
}

func (s *Server) getBench(w http.ResponseWriter, r *http.Request) {
	b, err := s.st.GetBench(r.Context(), r.PathValue("id"))
	if err != nil {
		writeStoreError(w, err)
		return
	}
	attempts, err := s.st.Attempts(r.Context(), b.ID)
	if err != nil {
		writeStoreError(w, err)
		return
	}
	if attempts == nil {
		attempts = []trace.Attempt{}
	}
	models, tasks := benchStats(b, attempts)
	writeJSON(w, http.StatusOK, struct {
		Bench    *trace.Bench    `json:"bench"`
		Attempts []trace.Attempt `json:"attempts"`
		Models   []ModelStats    `json:"models"`
		Tasks    []TaskStats     `json:"tasks"`
	}{b, attempts, models, tasks})
}
