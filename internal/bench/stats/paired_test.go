package stats

import (
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/lanehq/lane/internal/record"
)

func near(got, want, tol float64) bool { return math.Abs(got-want) <= tol }

// The distributions against printed tables and closed forms.
func TestDistributions(t *testing.T) {
	t.Parallel()
	quantiles := []struct {
		p, df, want float64
	}{
		{0.975, 1, 12.7062}, // t tables
		{0.975, 4, 2.7764},
		{0.8, 4, 0.9410},
		{0.975, 10, 2.2281},
		{0.975, 29, 2.0452},
		{0.025, 4, -2.7764},
		{0.5, 7, 0},
	}
	for _, q := range quantiles {
		if got := TQuantile(q.p, q.df); !near(got, q.want, 1e-4) {
			t.Errorf("TQuantile(%v, %v df) = %.5f, want %.4f", q.p, q.df, got, q.want)
		}
	}
	// With 4 df, P(|T| ≥ t) = I_{4/(4+t²)}(2, ½) = 1 − 1.5w + 0.5w³,
	// w = t/√(4+t²) (integrate s(1−s)^−½ and divide by B(2, ½) = 4/3).
	// t = √6: w² = 0.6, p = 1 − 1.5·0.774597 + 0.5·0.464758 = 0.070484.
	// With 1 df (Cauchy), P(|T| ≥ 1) = 1 − 2·atan(1)/π = 0.5.
	for _, c := range []struct{ t, df, want float64 }{
		{math.Sqrt(6), 4, 0.070484}, {1, 1, 0.5}, {0, 3, 1}, {-1, 1, 0.5}, {math.Inf(1), 3, 0},
	} {
		if got := TTwoSided(c.t, c.df); !near(got, c.want, 1e-6) {
			t.Errorf("TTwoSided(%v, %v df) = %.6f, want %.6f", c.t, c.df, got, c.want)
		}
	}
	// I_0.4(2, 3) = Σ_{j=2..4} C(4,j)·0.4^j·0.6^(4−j) = 0.3456 + 0.1536 + 0.0256.
	if got := RegIncBeta(2, 3, 0.4); !near(got, 0.5248, 1e-12) {
		t.Errorf("I_0.4(2,3) = %v, want 0.5248", got)
	}
	if got := NormalQuantile(0.975); !near(got, 1.959964, 1e-6) {
		t.Errorf("z 0.975 = %v", got)
	}
	if got := NormalQuantile(0.8); !near(got, 0.841621, 1e-6) {
		t.Errorf("z 0.8 = %v", got)
	}
	if got := NormalTwoSided(1.959964); !near(got, 0.05, 1e-6) {
		t.Errorf("P(|Z| ≥ 1.96) = %v", got)
	}
}

func TestSignTestP(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		wins, losses int
		want         float64
	}{
		{5, 0, 0.0625},     // 2 · 1/2⁵
		{3, 0, 0.25},       // 2 · 1/2³
		{8, 2, 0.109375},   // 2 · (1 + 10 + 45)/1024
		{2, 8, 0.109375},   // the same, the other way
		{2, 1, 1},          // 2 · (1 + 3)/8, capped
		{0, 0, 1},          // nothing differs
		{20, 0, 1.9073e-6}, // 2 · 2⁻²⁰
	} {
		if got := SignTestP(c.wins, c.losses); !near(got, c.want, 1e-9) {
			t.Errorf("SignTestP(%d, %d) = %v, want %v", c.wins, c.losses, got, c.want)
		}
	}
}

// attempts builds attempts from "task model outcomes" lines, one outcome
// per repeat: p passed, f failed, e errored, s skipped, or a reward like
// 0.25 (passed at 1 or more).
func attempts(lines ...string) []record.Attempt {
	var out []record.Attempt
	for _, l := range lines {
		f := strings.Fields(l)
		for n, o := range f[2:] {
			a := record.Attempt{TaskID: f[0], Model: f[1], N: n + 1}
			switch o {
			case "p":
				a.Status = record.AttemptPassed
			case "f":
				a.Status = record.AttemptFailed
			case "e":
				a.Status, a.FailureKind = record.AttemptErrored, "environment"
			case "s":
				a.Status = record.AttemptSkipped
			default:
				var r float64
				for i, part := range strings.Split(o, "/") { // reward, then keyed "k=v"
					if i == 0 {
						r = parseFloat(part)
						continue
					}
					k, v, _ := strings.Cut(part, "=")
					if a.Rewards == nil {
						a.Rewards = map[string]float64{}
					}
					a.Rewards[k] = parseFloat(v)
				}
				a.Reward, a.Status = &r, record.AttemptFailed
				if r >= 1 {
					a.Status = record.AttemptPassed
				}
			}
			out = append(out, a)
		}
	}
	return out
}

func parseFloat(s string) float64 {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		panic(err)
	}
	return v
}

// Two repeats, ties, a task only A finished and one where every attempt
// of A errored; the figures computed by hand.
func TestCompareWithRepeats(t *testing.T) {
	t.Parallel()
	tb := Tabulate(record.Bench{Models: []string{"A", "B"}, Repeat: 2}, attempts(
		"t1 A p p", "t1 B p f", // 1 − 0.5 = 0.5
		"t2 A p f", "t2 B f f", // 0.5 − 0 = 0.5
		"t3 A p p", "t3 B p p", // 1 − 1 = 0, a tie
		"t4 A f f", "t4 B p f", // 0 − 0.5 = −0.5
		"t5 A p p", "t5 B f f", // 1 − 0 = 1
		"t6 A p p",             // B never tried it
		"t7 A e e", "t7 B p p", // A's attempts all errored
		"t8 A p s", "t8 B s s", // B skipped it
	))
	p := tb.Compare(0, 1, "")
	// Differences 0.5, 0.5, 0, −0.5, 1 (t1–t5): n = 5, mean 1.5/5 = 0.3;
	// deviations 0.2, 0.2, −0.3, −0.8, 0.7, squares sum to 1.3, variance
	// 1.3/4 = 0.325, sd 0.570088, SE √(0.325/5) = √0.065 = 0.254951.
	// Below 30 tasks: t with 4 df, quantile 2.776445, so the interval is
	// 0.3 ± 0.707857. t = 0.3/0.254951 = 1.176697, t² = 18/13; with 4 df
	// p = 1 − 1.5w + 0.5w³, w² = t²/(4+t²) = 9/35, w = 0.507093:
	// p = 1 − 0.760639 + 0.065198 = 0.304559. MDE = (2.776445 + t(0.8, 4
	// df) 0.940965) · 0.254951 = 0.947757. Halving it takes 4 × 5 tasks.
	want := Pair{A: "A", B: "B", Tasks: 5, OnlyA: []string{"t6", "t8"}, OnlyB: []string{"t7"},
		Errored: []string{"t7"}, Wins: 3, Losses: 1, Ties: 1}
	d := p.Difference
	p.Difference = nil
	if !reflect.DeepEqual(p, want) {
		t.Errorf("pair\n%+v, want\n%+v", p, want)
	}
	if d == nil {
		t.Fatal("no figures")
	}
	checkDiff(t, d, Difference{Mean: 0.3, SD: 0.570088, SE: 0.254951, Dist: DistT, DF: 4,
		CILow: 0.3 - 0.707857, CIHigh: 0.3 + 0.707857, P: 0.304559, MDE: 0.947757, TasksToHalveMDE: 20})
	if d.ExactP != nil {
		t.Errorf("scores of 0.5 got an exact test: %v", *d.ExactP)
	}
	// B against A: the same figures, the other way round.
	r := tb.Compare(1, 0, "")
	if r.Wins != 1 || r.Losses != 3 || !near(r.Difference.Mean, -0.3, 1e-12) || !near(r.Difference.P, d.P, 1e-12) ||
		!slices.Equal(r.OnlyA, []string{"t7"}) {
		t.Errorf("B against A: %+v %+v", r, r.Difference)
	}
	// A per model: t1–t6 and t8 (t7 errored): 1, 0.5, 1, 0, 1, 1, 1 →
	// mean 5.5/7 = 0.785714; deviations 0.214286 ×5, −0.285714,
	// −0.785714: squares 0.229592 + 0.081633 + 0.617347 = 0.928571;
	// variance /6 = 0.154762, SE √(0.154762/7) = 0.148691.
	ms := tb.ModelScore(0, "")
	if ms.Tasks != 7 || !near(*ms.Mean, 0.785714, 1e-6) || !near(*ms.SE, 0.148691, 1e-6) {
		t.Errorf("A's score %+v %v %v", ms, *ms.Mean, *ms.SE)
	}
}

func checkDiff(t *testing.T, got *Difference, want Difference) {
	t.Helper()
	if got.Dist != want.Dist || got.DF != want.DF || got.TasksToHalveMDE != want.TasksToHalveMDE ||
		got.ExactTest != want.ExactTest {
		t.Errorf("difference %+v, want %+v", *got, want)
	}
	for _, f := range []struct {
		name      string
		got, want float64
	}{
		{"mean", got.Mean, want.Mean}, {"sd", got.SD, want.SD}, {"se", got.SE, want.SE},
		{"ci low", got.CILow, want.CILow}, {"ci high", got.CIHigh, want.CIHigh},
		{"p", got.P, want.P}, {"mde", got.MDE, want.MDE},
	} {
		if !near(f.got, f.want, 2e-6) {
			t.Errorf("%s = %.7f, want %.6f", f.name, f.got, f.want)
		}
	}
}

// One attempt per task: every score is 0 or 1, so the sign test is given.
func TestCompareBinary(t *testing.T) {
	t.Parallel()
	tb := Tabulate(record.Bench{Models: []string{"A", "B"}, Repeat: 1}, attempts(
		"t1 A p", "t1 B p", "t2 A p", "t2 B f", "t3 A p", "t3 B f", "t4 A p", "t4 B f", "t5 A f", "t5 B f",
	))
	p := tb.Compare(0, 1, "")
	// Differences 0, 1, 1, 1, 0: mean 0.6; deviations −0.6 ×2, 0.4 ×3,
	// squares 0.72 + 0.48 = 1.2, variance 0.3, SE √(0.3/5) = 0.244949;
	// interval 0.6 ± 2.776445 · 0.244949 = 0.6 ± 0.680087. t = √6: p =
	// 0.070484 (TestDistributions). Sign test: 3 wins, 0 losses, 2 · 1/2³.
	if p.Wins != 3 || p.Losses != 0 || p.Ties != 2 {
		t.Errorf("wins %d losses %d ties %d", p.Wins, p.Losses, p.Ties)
	}
	checkDiff(t, p.Difference, Difference{Mean: 0.6, SD: math.Sqrt(0.3), SE: 0.244949, Dist: DistT, DF: 4,
		CILow: 0.6 - 0.680087, CIHigh: 0.6 + 0.680087, P: 0.070484, ExactTest: SignTest,
		MDE: (2.776445 + 0.940965) * 0.244949, TasksToHalveMDE: 20})
	if p.Difference.ExactP == nil || !near(*p.Difference.ExactP, 0.25, 1e-12) {
		t.Errorf("exact p %v, want 0.25", p.Difference.ExactP)
	}
}

// Rewards are the score; each reward key is compared apart, an attempt
// that did not write the key scoring 0 on it.
func TestCompareRewards(t *testing.T) {
	t.Parallel()
	tb := Tabulate(record.Bench{Models: []string{"A", "B"}, Repeat: 2}, attempts(
		"t1 A 1/acc=1 0.5/acc=0.5", "t1 B 0.5/acc=0.5 0.5/acc=0.25",
		"t2 A 0.25/acc=0.25 0.75/acc=0.75", "t2 B 1/acc=1 0/acc=0",
		"t3 A 0/acc=0 0.5", "t3 B f 0.5/acc=0.5", // a failure without a reward scores 0
	))
	if !slices.Equal(tb.Keys(), []string{"acc"}) {
		t.Errorf("keys %v", tb.Keys())
	}
	// Rewards: A 0.75, 0.5, 0.25; B 0.5, 0.5, 0.25 → differences 0.25,
	// 0, 0: mean 0.083333, deviations 0.166667, −0.083333 ×2, squares
	// 0.027778 + 0.013889 = 0.041667, variance 0.020833, SE
	// √(0.020833/3) = 0.083333; 2 df, t(0.975, 2) = 4.302653, t(0.8, 2)
	// = 1.060660: interval 0.083333 ± 0.358554, MDE 0.446943. t = 1: with
	// 2 df P(|T| ≥ t) = 1 − t/√(2+t²) = 1 − 1/√3 = 0.422650.
	p := tb.Compare(0, 1, "")
	if p.Wins != 1 || p.Ties != 2 || p.Difference.ExactP != nil {
		t.Errorf("rewards: %+v", p)
	}
	checkDiff(t, p.Difference, Difference{Mean: 0.083333, SD: math.Sqrt(0.0625 / 3), SE: 0.083333, Dist: DistT, DF: 2,
		CILow: 0.083333 - 0.358554, CIHigh: 0.083333 + 0.358554, P: 0.422650, MDE: 0.446943, TasksToHalveMDE: 12})
	// acc: A 0.75, 0.5, 0 (t3's second attempt wrote no acc); B 0.375,
	// 0.5, 0.25 → differences 0.375, 0, −0.25: mean 0.041667; deviations
	// 0.333333, −0.041667, −0.291667, squares 0.111111 + 0.001736 +
	// 0.085069 = 0.197917, variance 0.098958, SE √(0.098958/3) = 0.181621.
	k := tb.Compare(0, 1, "acc")
	if k.Key != "acc" || k.Wins != 1 || k.Losses != 1 || k.Ties != 1 {
		t.Errorf("acc: %+v", k)
	}
	if d := k.Difference; !near(d.Mean, 0.041667, 1e-6) || !near(d.SE, 0.181621, 1e-6) {
		t.Errorf("acc: %+v", *d)
	}
}

// A pair with fewer than 2 shared tasks has no figures, only its counts
// and the tasks left out.
func TestCompareTooFewTasks(t *testing.T) {
	t.Parallel()
	tb := Tabulate(record.Bench{Models: []string{"A", "B"}, Repeat: 1}, attempts(
		"t1 A p", "t1 B f", "t2 A p", "t3 B p", "t4 A e", "t4 B e",
	))
	p := tb.Compare(0, 1, "")
	want := Pair{A: "A", B: "B", Tasks: 1, OnlyA: []string{"t2"}, OnlyB: []string{"t3"}, Errored: []string{"t4"}, Wins: 1}
	if !reflect.DeepEqual(p, want) {
		t.Errorf("pair %+v, want %+v", p, want)
	}
	if ms := tb.ModelScore(0, ""); ms.Tasks != 2 || *ms.Mean != 1 || *ms.SE != 0 {
		t.Errorf("A's score %+v", ms)
	}
	if ms := Tabulate(record.Bench{Models: []string{"A"}}, attempts("t1 A p")).ModelScore(0, ""); ms.SE != nil {
		t.Errorf("one task has a standard error: %+v", ms)
	}
}

// From 30 tasks on, the normal distribution; identical differences have
// no spread, and then p is 0 (or 1 when they are all 0).
func TestCompareManyTasksAndNoSpread(t *testing.T) {
	t.Parallel()
	var lines []string
	for i := range 30 {
		b := "f"
		if i%2 == 1 {
			b = "p"
		}
		lines = append(lines, "t"+string(rune('a'+i/26))+string(rune('a'+i%26))+" A p", "t"+string(rune('a'+i/26))+string(rune('a'+i%26))+" B "+b)
	}
	p := Tabulate(record.Bench{Models: []string{"A", "B"}, Repeat: 1}, attempts(lines...)).Compare(0, 1, "")
	// Differences 1, 0 alternating ×15: mean 0.5, squares 30 · 0.25 = 7.5,
	// variance 7.5/29 = 0.258621, SE √(0.258621/30) = 0.092848; normal:
	// 0.5 ± 1.959964 · 0.092848 = 0.5 ± 0.181978, z = 5.385165, MDE
	// (1.959964 + 0.841621) · 0.092848 = 0.260121. Sign test 15–0: 2⁻¹⁴.
	checkDiff(t, p.Difference, Difference{Mean: 0.5, SD: math.Sqrt(7.5 / 29), SE: 0.092848, Dist: DistNormal,
		CILow: 0.5 - 0.181978, CIHigh: 0.5 + 0.181978, P: math.Erfc(5.385165 / math.Sqrt2), ExactTest: SignTest,
		MDE: 0.260121, TasksToHalveMDE: 120})
	if !near(*p.Difference.ExactP, math.Pow(2, -14), 1e-12) {
		t.Errorf("exact p %v", *p.Difference.ExactP)
	}

	same := Tabulate(record.Bench{Models: []string{"A", "B"}, Repeat: 1},
		attempts("t1 A p", "t1 B f", "t2 A p", "t2 B f", "t3 A p", "t3 B f")).Compare(0, 1, "")
	if d := same.Difference; d.SE != 0 || d.P != 0 || d.CILow != 1 || d.CIHigh != 1 || !near(*d.ExactP, 0.25, 1e-12) {
		t.Errorf("every task differs by 1: %+v", *d)
	}
	tied := Tabulate(record.Bench{Models: []string{"A", "B"}, Repeat: 1},
		attempts("t1 A p", "t1 B p", "t2 A f", "t2 B f")).Compare(0, 1, "")
	if d := tied.Difference; d.P != 1 || d.MDE != 0 || *d.ExactP != 1 {
		t.Errorf("every task ties: %+v", *d)
	}
}

// Pairs takes every two models in order; Against sets each against one.
func TestPairsAndAgainst(t *testing.T) {
	t.Parallel()
	tb := Tabulate(record.Bench{Models: []string{"A", "B", "C"}, Repeat: 1},
		attempts("t1 A p", "t1 B f", "t1 C p", "t2 A f", "t2 B f", "t2 C p"))
	var got []string
	for _, p := range tb.Pairs([]int{0, 1, 2}, "") {
		got = append(got, p.A+"-"+p.B)
	}
	if !slices.Equal(got, []string{"A-B", "A-C", "B-C"}) {
		t.Errorf("pairs %v", got)
	}
	got = nil
	for _, p := range tb.Against(1, []int{0, 1, 2}, "") {
		got = append(got, p.A+"-"+p.B)
	}
	if !slices.Equal(got, []string{"A-B", "C-B"}) {
		t.Errorf("against B %v", got)
	}
}
