package stats

import "slices"

// OracleModel is the model that is no model: its attempts run the tasks'
// own solutions (lane bench --models oracle), so it is never compared.
const OracleModel = "oracle"

// Scores of Paired.Score.
const (
	ScorePass   = "pass"
	ScoreReward = "reward"
)

// Paired are a bench's paired comparisons: every two models in the
// bench's order, or every model against Baseline. `lane bench report` and
// the dashboard's bench page both show them.
type Paired struct {
	// Score is what a task's score is: ScorePass (pass = 1, fail = 0)
	// when no verifier gave a reward, else ScoreReward (the reward; an
	// attempt without one scores 1 for a pass and 0 for a failure).
	Score    string `json:"score"`
	Baseline string `json:"baseline,omitempty"`
	// Pairs are on Score, then on each reward key apart (their Key set)
	// when a verifier wrote keys other than "reward".
	Pairs []Pair `json:"pairs"`
}

// Paired compares t's models two by two, or each against baseline when it
// is not empty. The models without an attempt and the oracle are left
// out. It is nil with fewer than two models to compare, or when baseline
// is not one of them.
func (t Table) Paired(baseline string) *Paired {
	var models []int
	base := -1
	p := &Paired{Score: ScorePass, Baseline: baseline}
	for m, name := range t.Models {
		if t.ByModel[m].Attempts == 0 || name == OracleModel {
			continue
		}
		models = append(models, m)
		if name == baseline {
			base = m
		}
		if t.ByModel[m].MeanReward != nil {
			p.Score = ScoreReward
		}
	}
	if len(models) < 2 || (baseline != "" && base < 0) {
		return nil
	}
	keys := []string{""}
	if all := t.Keys(); slices.ContainsFunc(all, func(k string) bool { return k != "reward" }) {
		keys = append(keys, all...)
	}
	for _, k := range keys {
		if base >= 0 {
			p.Pairs = append(p.Pairs, t.Against(base, models, k)...)
		} else {
			p.Pairs = append(p.Pairs, t.Pairs(models, k)...)
		}
	}
	return p
}
