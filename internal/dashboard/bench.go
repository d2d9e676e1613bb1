package dashboard

import (
	"net/http"
	"slices"

	"github.com/lanehq/lane/internal/bench/stats"
	"github.com/lanehq/lane/internal/record"
)

// Page sizes of the bench list (API.md, Benches).
const (
	defaultBenchLimit = 50
	maxBenchLimit     = 500
)

// ModelStats is one model's results in a bench (API.md, Benches). The
// figures are those of `lane bench`'s report, computed by the same code
// (package bench/stats, which brings none of bench's machinery): only
// finished attempts, passed or failed, count; unfinished and skipped ones
// are counted apart.
type ModelStats struct {
	Model string `json:"model"`
	// Attempts are the finished attempts; the pass rate and its interval
	// are over them.
	Attempts   int `json:"attempts"`
	Passed     int `json:"passed"`
	Failed     int `json:"failed"`
	Unfinished int `json:"unfinished"` // pending or running
	Skipped    int `json:"skipped"`
	Errored    int `json:"errored,omitempty"` // errors of the task or its environment, outside the rate
	// MeanReward is the mean of the verifier's rewards (Harbor tasks).
	MeanReward *float64 `json:"mean_reward,omitempty"`
	// MeanRewards are the mean of each key the verifiers wrote
	// (reward.json's), over the finished attempts that have it.
	MeanRewards map[string]float64 `json:"mean_rewards,omitempty"`
	// PassRateByTry[k-1] is the pass rate after try k (passed on one of
	// the first k tries), set when an attempt had several tries.
	PassRateByTry []float64 `json:"pass_rate_by_try,omitempty"`
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
	MedianDurationMS *float64     `json:"median_duration_ms"`
	Tokens           int64        `json:"tokens"` // input + output + cache read + cache creation
	Usage            record.Usage `json:"usage"`
	// Score is the mean of the model's per-task scores (each task's
	// finished attempts averaged) and its standard error clustered by
	// task, beside the Wilson interval over the attempts: the figure the
	// paired comparisons are of.
	Score stats.ModelScore `json:"score"`
}

// CellStats is one model on one task.
type CellStats struct {
	Model    string `json:"model"`
	Attempts int    `json:"attempts"` // finished, as in ModelStats
	Passed   int    `json:"passed"`
	// MeanReward and MeanRewards are as ModelStats', on this task.
	MeanReward  *float64           `json:"mean_reward,omitempty"`
	MeanRewards map[string]float64 `json:"mean_rewards,omitempty"`
	// Score is the task's score as the paired comparisons count it: the
	// mean over the finished attempts of their reward, else 1 for a pass
	// and 0 for a failure; null when none finished.
	Score   *float64 `json:"score"`
	Errored int      `json:"errored,omitempty"` // errors of the task or its environment
	// CostUSD is what the attempts cost and MedianDurationMS the median
	// duration of the finished ones' agent runs (null without one), as
	// ModelStats'.
	CostUSD          float64  `json:"cost_usd"`
	MedianDurationMS *float64 `json:"median_duration_ms"`
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
	Errored int `json:"errored,omitempty"` // errors of the task or its environment
}

// benchSummary is a bench as listed: the bench (without its suite) and
// what its attempts add up to.
type benchSummary struct {
	*record.Bench
	Progress benchProgress `json:"progress"`
	CostUSD  float64       `json:"cost_usd"`
}

// benchStats computes the statistics of API.md from a bench's attempts:
// one ModelStats per model, one TaskStats per task that has attempts, and
// the paired comparisons (every two models, or each against baseline when
// it is not empty; nil with fewer than two models). The figures and the
// order of models and tasks are package stats', as in `lane bench report`;
// this only puts them under the API's names. A baseline that is not one of
// the bench's models, or the oracle, is a bad request.
func benchStats(b *record.Bench, attempts []record.Attempt, baseline string) ([]ModelStats, []TaskStats, *stats.Paired, error) {
	t := stats.Tabulate(*b, attempts)
	if baseline != "" && (!slices.Contains(t.Models, baseline) || baseline == stats.OracleModel) {
		return nil, nil, nil, badf("baseline %q is not a model of bench %s that can be compared", baseline, b.ID)
	}
	models := make([]ModelStats, len(t.Models))
	scores := make([]map[int]float64, len(t.Models))
	for m, model := range t.Models {
		models[m] = modelStats(model, t.ByModel[m])
		models[m].Score = t.ModelScore(m, "")
		scores[m] = t.Scores(m, "")
	}
	tasks := make([]TaskStats, len(t.Tasks))
	for i, id := range t.Tasks {
		task := TaskStats{TaskID: id, Models: make([]CellStats, len(t.Models))}
		for m, c := range t.Cells[i] {
			task.Models[m] = cellStats(t.Models[m], c)
			if s, ok := scores[m][i]; ok {
				task.Models[m].Score = &s
			}
			task.Attempts += c.Stats.Finished
			task.Passed += c.Stats.Passed
		}
		tasks[i] = task
	}
	return models, tasks, t.Paired(baseline), nil
}

// cellStats is one model's figures on one task under the API's names, but
// its score.
func cellStats(model string, c stats.Cell) CellStats {
	return CellStats{Model: model, Attempts: c.Stats.Finished, Passed: c.Stats.Passed,
		MeanReward: c.Stats.MeanReward, MeanRewards: c.Stats.MeanRewards, Errored: c.Stats.Errored,
		CostUSD: c.Stats.CostUSD, MedianDurationMS: c.Stats.MedianDurationMS, RunIDs: runIDs(c.Attempts)}
}

// modelStats is one model's figures under the API's names.
func modelStats(model string, s stats.Stats) ModelStats {
	return ModelStats{
		Model: model, Attempts: s.Finished, Passed: s.Passed, Failed: s.Failed, Unfinished: s.Pending, Skipped: s.Skipped,
		Errored: s.Errored, MeanReward: s.MeanReward, MeanRewards: s.MeanRewards, PassRateByTry: s.PassRateByTry,
		PassRate: s.PassRate, WilsonLow: s.CILow, WilsonHigh: s.CIHigh,
		CostUSD: s.CostUSD, CostPerPass: s.CostPerPassUSD, MedianDurationMS: s.MedianDurationMS,
		Tokens: s.Tokens, Usage: s.Usage,
	}
}

// runIDs are the runs of the attempts that have one, in their order; never
// nil, so that the API says [] rather than null.
func runIDs(attempts []record.Attempt) []string {
	ids := []string{}
	for _, a := range attempts {
		if a.RunID != "" {
			ids = append(ids, a.RunID)
		}
	}
	return ids
}

// progress counts attempts by status.
func progress(attempts []record.Attempt) (benchProgress, float64) {
	var p benchProgress
	var cost float64
	for i := range attempts {
		a := &attempts[i]
		p.Total++
		cost += a.CostUSD
		switch a.Status {
		case record.AttemptPassed:
			p.Passed++
		case record.AttemptFailed:
			p.Failed++
		case record.AttemptRunning:
			p.Running++
		case record.AttemptSkipped:
			p.Skipped++
		case record.AttemptErrored:
			p.Errored++
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
		attempts = []record.Attempt{}
	}
	models, tasks, paired, err := benchStats(b, attempts, r.URL.Query().Get("baseline"))
	if err != nil {
		writeStoreError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, struct {
		Bench    *record.Bench    `json:"bench"`
		Attempts []record.Attempt `json:"attempts"`
		Models   []ModelStats     `json:"models"`
		Tasks    []TaskStats      `json:"tasks"`
		Paired   *stats.Paired    `json:"paired"`
	}{b, attempts, models, tasks, paired})
}
