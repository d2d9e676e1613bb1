package stats

import (
	"math"
	"slices"

	"github.com/lanehq/lane/internal/record"
)

// Paired comparisons follow "Adding Error Bars to Evals" (Miller, 2024):
// two models are compared on the tasks both finished, each task's repeats
// averaged first, so that the repeats of one task, which are not
// independent, do not pass for independent trials.

// Power and significance of the detectable difference: the difference a
// two-sided test at level Alpha finds with probability Power.
const (
	Alpha = 0.05
	Power = 0.8
)

// NormalFrom is the number of tasks from which the interval, p and the
// detectable difference take the t distribution as normal.
const NormalFrom = 30

// Distributions of a Difference.
const (
	DistT      = "t"
	DistNormal = "normal"
)

// SignTest names the exact test of a Difference whose scores are all 0 or
// 1: the two-sided sign test over the tasks that differ, which is
// McNemar's exact test of the paired passes.
const SignTest = "sign"

// Pair compares model A with model B on one score: A − B over the tasks
// both finished.
type Pair struct {
	A string `json:"a"`
	B string `json:"b"`
	// Key is the reward key compared; empty for the attempt's own score
	// (its reward, else pass = 1 and fail = 0).
	Key string `json:"key,omitempty"`
	// Tasks is how many tasks both finished: those the figures are over.
	Tasks int `json:"tasks"`
	// OnlyA and OnlyB are the tasks only one of them finished, left out.
	OnlyA []string `json:"only_a,omitempty"`
	OnlyB []string `json:"only_b,omitempty"`
	// Errored are the tasks left out because every attempt of A or of B
	// at them ended in an error of the task or its environment.
	Errored []string `json:"errored,omitempty"`
	// Wins are the shared tasks where A scored more, Losses where B did,
	// Ties where they scored the same.
	Wins   int `json:"wins"`
	Losses int `json:"losses"`
	Ties   int `json:"ties"`
	// Difference is nil when fewer than 2 tasks are shared: one task has
	// no spread to measure.
	Difference *Difference `json:"difference,omitempty"`
}

// Difference are the figures of the per-task differences A − B.
type Difference struct {
	Mean float64 `json:"mean"`
	SD   float64 `json:"sd"` // of the per-task differences, n − 1 in the denominator
	// SE is the standard error of Mean clustered by task: SD / √n.
	SE float64 `json:"se"`
	// Dist is the distribution of the interval, P and MDE: DistT with DF
	// degrees of freedom below NormalFrom tasks, DistNormal from there.
	Dist   string  `json:"dist"`
	DF     int     `json:"df,omitempty"`
	CILow  float64 `json:"ci_low"` // 95%
	CIHigh float64 `json:"ci_high"`
	P      float64 `json:"p"` // two-sided, of the paired t-test
	// ExactTest and ExactP are set when every score is 0 or 1: SignTest
	// and its two-sided p.
	ExactTest string   `json:"exact_test,omitempty"`
	ExactP    *float64 `json:"exact_p,omitempty"`
	// MDE is the smallest difference the tasks could detect, at Power
	// and two-sided level Alpha, given SD: (q(1−α/2) + q(power)) · SE.
	MDE float64 `json:"mde"`
	// TasksToHalveMDE is how many tasks would halve MDE: four times as
	// many, as SE shrinks with √n.
	TasksToHalveMDE int `json:"tasks_to_halve_mde"`
}

// ModelScore is one model's mean per-task score, with its standard error
// clustered by task: the spread of the per-task scores over √n. Unlike the
// Wilson interval over attempts, it does not count a task's repeats as
// independent trials.
type ModelScore struct {
	Tasks int      `json:"tasks"` // tasks the model finished
	Mean  *float64 `json:"mean"`  // nil when none
	SE    *float64 `json:"se"`    // nil below 2 tasks
}

// AttemptScore is what a finished attempt scored: its verifier's reward
// when it gave one, else 1 for a pass and 0 for a failure.
func AttemptScore(a record.Attempt) float64 {
	switch {
	case a.Reward != nil:
		return *a.Reward
	case a.Status == record.AttemptPassed:
		return 1
	}
	return 0
}

// KeyScore is what a finished attempt scored on a reward key: 0 when its
// verifier did not write the key (it earned nothing, as an attempt whose
// agent failed before any verifier ran).
func KeyScore(a record.Attempt, key string) float64 { return a.Rewards[key] }

// cellScore is a cell's score on key ("" for AttemptScore): the mean over
// its finished attempts; ok is false when none finished.
func cellScore(c Cell, key string) (float64, bool) {
	sum, n := 0.0, 0
	for _, a := range c.Attempts {
		if a.Status != record.AttemptPassed && a.Status != record.AttemptFailed {
			continue
		}
		n++
		if key == "" {
			sum += AttemptScore(a)
		} else {
			sum += KeyScore(a, key)
		}
	}
	if n == 0 {
		return 0, false
	}
	return sum / float64(n), true
}

// erroredCell says whether every ended attempt of a cell ended in an error
// of the task or its environment.
func erroredCell(c Cell) bool { return c.Stats.Finished == 0 && c.Stats.Errored > 0 }

// Scores are model m's per-task scores on key over the tasks it finished,
// by task index.
func (t Table) Scores(m int, key string) map[int]float64 {
	out := map[int]float64{}
	for i := range t.Tasks {
		if s, ok := cellScore(t.Cells[i][m], key); ok {
			out[i] = s
		}
	}
	return out
}

// ModelScore is model m's mean per-task score on key and its clustered
// standard error.
func (t Table) ModelScore(m int, key string) ModelScore {
	scores := t.Scores(m, key)
	ms := ModelScore{Tasks: len(scores)}
	if len(scores) == 0 {
		return ms
	}
	xs := make([]float64, 0, len(scores))
	for i := range t.Tasks {
		if s, ok := scores[i]; ok {
			xs = append(xs, s)
		}
	}
	ms.Mean = ptr(mean(xs))
	if len(xs) >= 2 {
		ms.SE = ptr(sd(xs) / math.Sqrt(float64(len(xs))))
	}
	return ms
}

// Compare compares models a and b (indexes of t.Models) on key: a's
// per-task scores minus b's over the tasks both finished.
func (t Table) Compare(a, b int, key string) Pair {
	p := Pair{A: t.Models[a], B: t.Models[b], Key: key}
	var diffs []float64
	binary := true
	for i, task := range t.Tasks {
		ca, cb := t.Cells[i][a], t.Cells[i][b]
		sa, okA := cellScore(ca, key)
		sb, okB := cellScore(cb, key)
		if (!okA && erroredCell(ca)) || (!okB && erroredCell(cb)) {
			p.Errored = append(p.Errored, task)
		}
		switch {
		case okA && okB:
			diffs = append(diffs, sa-sb)
			binary = binary && isBinary(sa) && isBinary(sb)
		case okA:
			p.OnlyA = append(p.OnlyA, task)
		case okB:
			p.OnlyB = append(p.OnlyB, task)
		}
	}
	p.Tasks = len(diffs)
	for _, d := range diffs {
		switch {
		case math.Abs(d) <= tieTolerance:
			p.Ties++
		case d > 0:
			p.Wins++
		default:
			p.Losses++
		}
	}
	if len(diffs) >= 2 {
		p.Difference = difference(diffs)
		if binary {
			p.Difference.ExactTest = SignTest
			p.Difference.ExactP = ptr(SignTestP(p.Wins, p.Losses))
		}
	}
	return p
}

// tieTolerance is how far apart two per-task means may be and still tie:
// the same scores averaged in another order differ in their last bits.
const tieTolerance = 1e-9

// snap is x, or 0 when x is within tieTolerance of it: the float noise of
// differences that are the same, or that cancel out.
func snap(x float64) float64 {
	if math.Abs(x) <= tieTolerance {
		return 0
	}
	return x
}

func isBinary(x float64) bool { return x == 0 || x == 1 }

// Pairs compares every two of models (indexes of t.Models), each with the
// later ones, on key.
func (t Table) Pairs(models []int, key string) []Pair {
	var out []Pair
	for i, a := range models {
		for _, b := range models[i+1:] {
			out = append(out, t.Compare(a, b, key))
		}
	}
	return out
}

// Against compares every one of models but base with base (indexes of
// t.Models), on key: each model minus base.
func (t Table) Against(base int, models []int, key string) []Pair {
	var out []Pair
	for _, m := range models {
		if m != base {
			out = append(out, t.Compare(m, base, key))
		}
	}
	return out
}

// difference computes the figures of two or more per-task differences.
func difference(diffs []float64) *Difference {
	n := len(diffs)
	d := &Difference{Mean: snap(mean(diffs)), SD: snap(sd(diffs)), TasksToHalveMDE: 4 * n}
	d.SE = d.SD / math.Sqrt(float64(n))
	var q func(p float64) float64 // the quantile of the distribution
	var twoSided func(x float64) float64
	if n < NormalFrom {
		d.Dist, d.DF = DistT, n-1
		q = func(p float64) float64 { return TQuantile(p, float64(d.DF)) }
		twoSided = func(x float64) float64 { return TTwoSided(x, float64(d.DF)) }
	} else {
		d.Dist = DistNormal
		q = NormalQuantile
		twoSided = NormalTwoSided
	}
	half := q(1-Alpha/2) * d.SE
	d.CILow, d.CIHigh = d.Mean-half, d.Mean+half
	d.MDE = (q(1-Alpha/2) + q(Power)) * d.SE
	switch {
	case d.SE > 0:
		d.P = twoSided(d.Mean / d.SE)
	case d.Mean == 0:
		d.P = 1 // every difference is 0
	default:
		d.P = 0 // every task differs by the same amount: no spread at all
	}
	return d
}

// sd is the sample standard deviation of xs (n − 1 in the denominator);
// xs has at least 2 values.
func sd(xs []float64) float64 {
	m := mean(xs)
	ss := 0.0
	for _, x := range xs {
		ss += (x - m) * (x - m)
	}
	return math.Sqrt(ss / float64(len(xs)-1))
}

// SignTestP is the two-sided p of the exact sign test of wins against
// losses (ties left out): the chance, under a fair coin, of a split at
// least as uneven, P(X ≤ min) + P(X ≥ max) for X ~ Binomial(n, ½), at
// most 1.
func SignTestP(wins, losses int) float64 {
	n := wins + losses
	if n == 0 {
		return 1
	}
	k := min(wins, losses)
	sum := 0.0
	for i := 0; i <= k; i++ {
		sum += math.Exp(logChoose(n, i) - float64(n)*math.Ln2)
	}
	return min(1, 2*sum)
}

func logChoose(n, k int) float64 {
	a, _ := math.Lgamma(float64(n + 1))
	b, _ := math.Lgamma(float64(k + 1))
	c, _ := math.Lgamma(float64(n - k + 1))
	return a - b - c
}

// NormalTwoSided is P(|Z| ≥ |z|) for a standard normal Z.
func NormalTwoSided(z float64) float64 { return math.Erfc(math.Abs(z) / math.Sqrt2) }

// NormalQuantile is the z with P(Z ≤ z) = p, for 0 < p < 1.
func NormalQuantile(p float64) float64 { return math.Sqrt2 * math.Erfinv(2*p-1) }

// TTwoSided is P(|T| ≥ |t|) for T of Student's t distribution with df
// degrees of freedom: I_x(df/2, ½) with x = df / (df + t²).
func TTwoSided(t, df float64) float64 {
	if math.IsInf(t, 0) {
		return 0
	}
	return RegIncBeta(df/2, 0.5, df/(df+t*t))
}

// TQuantile is the t with P(T ≤ t) = p for Student's t distribution with
// df degrees of freedom, for 0 < p < 1: found by bisection on TTwoSided,
// which falls as |t| grows.
func TQuantile(p, df float64) float64 {
	if p == 0.5 {
		return 0
	}
	if p < 0.5 {
		return -TQuantile(1-p, df)
	}
	target := 2 * (1 - p) // the two-sided tail of the t sought
	lo, hi := 0.0, 1.0
	for TTwoSided(hi, df) > target {
		lo, hi = hi, 2*hi
	}
	for range 200 {
		mid := (lo + hi) / 2
		if mid == lo || mid == hi {
			break
		}
		if TTwoSided(mid, df) > target {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2
}

// RegIncBeta is the regularized incomplete beta function I_x(a, b), for
// a, b > 0 and 0 ≤ x ≤ 1, from its continued fraction (Lentz's method),
// taken where it converges fast: directly for x < (a+1)/(a+b+2), else
// through I_x(a, b) = 1 − I_{1−x}(b, a).
func RegIncBeta(a, b, x float64) float64 {
	switch {
	case x <= 0:
		return 0
	case x >= 1:
		return 1
	}
	la, _ := math.Lgamma(a + b)
	lb, _ := math.Lgamma(a)
	lc, _ := math.Lgamma(b)
	front := math.Exp(la - lb - lc + a*math.Log(x) + b*math.Log1p(-x))
	if x < (a+1)/(a+b+2) {
		return front * betaFraction(a, b, x) / a
	}
	return 1 - front*betaFraction(b, a, 1-x)/b
}

// betaFraction evaluates the continued fraction of the incomplete beta
// function by the modified Lentz method.
func betaFraction(a, b, x float64) float64 {
	const tiny, eps = 1e-300, 1e-15
	c, d := 1.0, 1-(a+b)*x/(a+1)
	if math.Abs(d) < tiny {
		d = tiny
	}
	d = 1 / d
	h := d
	for m := 1; m <= 1000; m++ {
		fm := float64(m)
		for _, num := range []float64{
			fm * (b - fm) * x / ((a + 2*fm - 1) * (a + 2*fm)),            // even step
			-(a + fm) * (a + b + fm) * x / ((a + 2*fm) * (a + 2*fm + 1)), // odd step
		} {
			d = 1 + num*d
			if math.Abs(d) < tiny {
				d = tiny
			}
			c = 1 + num/c
			if math.Abs(c) < tiny {
				c = tiny
			}
			d = 1 / d
			h *= d * c
		}
		if math.Abs(d*c-1) < eps {
			break
		}
	}
	return h
}

// Keys are the reward keys of t's finished attempts, in name order.
func (t Table) Keys() []string {
	seen := map[string]bool{}
	for _, row := range t.Cells {
		for _, c := range row {
			for _, a := range c.Attempts {
				if a.Status != record.AttemptPassed && a.Status != record.AttemptFailed {
					continue
				}
				for k := range a.Rewards {
					seen[k] = true
				}
			}
		}
	}
	keys := make([]string, 0, len(seen))
	for k := range seen {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
