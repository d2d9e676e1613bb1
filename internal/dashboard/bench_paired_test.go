package dashboard

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/lanehq/lane/internal/bench/stats"
	"github.com/lanehq/lane/internal/record"
)

// pairedBench is a bench of 6 tasks × 2 repeats whose pass pattern is
// known (P passed, F failed, E an error of the task's environment, R
// running, - not tried), each finished attempt $0.10, its run 2 s for the
// first repeat and 4 s for the second (so a cell of two has a median of
// 3 s):
//
//	task  sonnet  haiku  opus  qwen
//	t1    P P     F F    F F   P
//	t2    P P     P F    F F   -
//	t3    F F     P F    F F   -
//	t4    F F     F F    F F   -
//	t5    P P     E E    P P   -
//	t6    P P     -      R     -
//
// Per-task scores (the mean of the finished attempts, pass = 1):
//
//	sonnet 1, 1, 0, 0, 1, 1   haiku 0, ½, ½, 0 (t5 errored)
//	opus   0, 0, 0, 0, 1      qwen  1 (t1 only)
func pairedBench(id string, started time.Time) (*record.Bench, []record.Attempt) {
	b := &record.Bench{ID: id, Name: "paired", Models: []string{"sonnet", "haiku", "opus", "qwen"}, Repeat: 2, Parallel: 2,
		Status: record.StatusSucceeded, StartedAt: started, EndedAt: started.Add(time.Hour),
		Suite: []byte(`{"name":"paired","tasks":[{"id":"t1"},{"id":"t2"},{"id":"t3"},{"id":"t4"},{"id":"t5"},{"id":"t6"}]}`)}
	pattern := map[string][]string{
		"sonnet": {"PP", "PP", "FF", "FF", "PP", "PP"},
		"haiku":  {"FF", "PF", "PF", "FF", "EE", ""},
		"opus":   {"FF", "FF", "FF", "FF", "PP", "R"},
		"qwen":   {"P", "", "", "", "", ""},
	}
	status := map[rune]record.AttemptStatus{'P': record.AttemptPassed, 'F': record.AttemptFailed,
		'E': record.AttemptErrored, 'R': record.AttemptRunning}
	var as []record.Attempt
	for _, model := range b.Models {
		for i, tries := range pattern[model] {
			for n, c := range tries {
				a := att(fmt.Sprintf("t%d", i+1), model, n+1, status[c])
				if c != 'R' {
					a.CostUSD, a.DurationMS = 0.10, int64(2000*(n+1))
				}
				if c == 'E' {
					a.FailureKind = "environment_error"
				}
				as = append(as, a)
			}
		}
	}
	return b, as
}

type pairedDetail struct {
	Models []ModelStats  `json:"models"`
	Tasks  []TaskStats   `json:"tasks"`
	Paired *stats.Paired `json:"paired"`
}

// pairOf is the pair a − b of p on the score, nil when there is none.
func pairOf(p *stats.Paired, a, b string) *stats.Pair {
	if p == nil {
		return nil
	}
	i := slices.IndexFunc(p.Pairs, func(x stats.Pair) bool { return x.A == a && x.B == b && x.Key == "" })
	if i < 0 {
		return nil
	}
	return &p.Pairs[i]
}

// The bench API gives the paired comparisons of every two models, or of
// each against ?baseline=, and each model's clustered standard error, as
// `lane bench report` computes them; every cell its score, cost and median
// time.
func TestBenchAPIPaired(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpt{})
	b, as := pairedBench("p-0030-paired", time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))
	recordBench(t, e.other, b, as)

	var d pairedDetail
	e.getJSON("/api/benches/p-0030", 200, &d)
	if d.Paired == nil || d.Paired.Score != stats.ScorePass || d.Paired.Baseline != "" {
		t.Fatalf("paired %+v, want every two models on passes", d.Paired)
	}
	var names []string
	for _, p := range d.Paired.Pairs {
		names = append(names, p.A+"-"+p.B)
	}
	if want := []string{"sonnet-haiku", "sonnet-opus", "sonnet-qwen", "haiku-opus", "haiku-qwen", "opus-qwen"}; !slices.Equal(names, want) {
		t.Fatalf("pairs %v, want %v", names, want)
	}

	// sonnet − haiku on t1…t4 (t5: haiku's attempts all errored; t6: haiku
	// never finished it): differences 1, ½, −½, 0.
	//   mean 0.25; sd² = (0.75² + 0.25² + 0.75² + 0.25²) / 3 = 1.25/3, sd 0.645497
	//   SE = sd/√4 = 0.322749; t with 3 df: q(0.975) = 3.182446, q(0.8) = 0.978472
	//   95% CI 0.25 ± 3.182446·0.322749 = [−0.777126, 1.277126]
	//   t = 0.25/0.322749 = 0.774597, two-sided p (3 df) = 0.4950
	//   wins t1, t2; loss t3; tie t4; a score of ½: no exact test
	//   detectable (3.182446 + 0.978472)·0.322749 = 1.342946; 16 tasks halve it
	sh := pairOf(d.Paired, "sonnet", "haiku")
	checkPair(t, sh, pairWant{tasks: 4, wins: 2, losses: 1, ties: 1, mean: 0.25, sd: 0.645497, se: 0.322749, df: 3,
		low: -0.777126, high: 1.277126, p: 0.4950, mde: 1.342946, halve: 16,
		onlyA: []string{"t5", "t6"}, errored: []string{"t5"}})

	// sonnet − opus on t1…t5 (t6: opus's attempt runs): 1, 1, 0, 0, 0.
	//   mean 0.4; sd² = (2·0.6² + 3·0.4²)/4 = 0.3, sd 0.547723; SE 0.244949
	//   t with 4 df: q(0.975) = 2.776445, q(0.8) = 0.940965
	//   CI 0.4 ± 0.680087 = [−0.280087, 1.080087]; t = 1.632993, p = 0.1778
	//   every score 0 or 1: sign test over the 2 tasks that differ, both
	//   won: p = 2·(½)² = 0.5
	//   detectable (2.776445 + 0.940965)·0.244949 = 0.910590
	so := pairOf(d.Paired, "sonnet", "opus")
	checkPair(t, so, pairWant{tasks: 5, wins: 2, ties: 3, mean: 0.4, sd: 0.547723, se: 0.244949, df: 4,
		low: -0.280087, high: 1.080087, p: 0.1778, exact: ptrTo(0.5), mde: 0.910590, halve: 20, onlyA: []string{"t6"}})

	// sonnet − qwen share t1 alone: fewer than 2 tasks, no figures.
	sq := pairOf(d.Paired, "sonnet", "qwen")
	if sq == nil || sq.Tasks != 1 || sq.Difference != nil || sq.Ties != 1 ||
		!slices.Equal(sq.OnlyA, []string{"t2", "t3", "t4", "t5", "t6"}) {
		t.Errorf("sonnet − qwen %+v, want 1 shared task (a tie) and no figures", sq)
	}

	// Each model's mean per-task score and its SE clustered by task:
	//   sonnet 4/6 = 0.666667, sd² = (4·(1/3)² + 2·(2/3)²)/5 = 0.266667, SE = 0.516398/√6 = 0.210819
	//   haiku  0.25, sd² = 4·0.25²/3, SE = 0.288675/2 = 0.144338
	//   opus   0.2, sd² = (4·0.2² + 0.8²)/4 = 0.2, SE = 0.447214/√5 = 0.2
	//   qwen   1 on one task: no SE
	for i, want := range []struct {
		tasks    int
		mean, se float64
	}{{6, 2.0 / 3, 0.210819}, {4, 0.25, 0.144338}, {5, 0.2, 0.2}, {1, 1, -1}} {
		s := d.Models[i].Score
		if s.Tasks != want.tasks || !ptrNear(s.Mean, want.mean) || (want.se < 0) != (s.SE == nil) || (s.SE != nil && !near(*s.SE, want.se)) {
			t.Errorf("%s's score %d tasks, mean %v, SE %v; want %d, %v, %v", d.Models[i].Model, s.Tasks, fp(s.Mean), fp(s.SE),
				want.tasks, want.mean, want.se)
		}
	}

	// Cells: score, cost and the median time of the finished attempts.
	cell := func(task string, m int) CellStats {
		return d.Tasks[slices.IndexFunc(d.Tasks, func(x TaskStats) bool { return x.TaskID == task })].Models[m]
	}
	if c := cell("t2", 1); c.Model != "haiku" || c.Passed != 1 || c.Attempts != 2 || !ptrNear(c.Score, 0.5) ||
		!near(c.CostUSD, 0.2) || !ptrNear(c.MedianDurationMS, 3000) {
		t.Errorf("t2 × haiku %+v, want 1/2, score 0.5, $0.20, 3 s", c)
	}
	if c := cell("t5", 1); c.Attempts != 0 || c.Errored != 2 || c.Score != nil || c.MedianDurationMS != nil {
		t.Errorf("t5 × haiku %+v, want two errors, no score", c)
	}
	if c := cell("t6", 2); c.Attempts != 0 || c.Score != nil || !slices.Equal(c.RunIDs, []string{"run-opus-t6-1"}) {
		t.Errorf("t6 × opus %+v, want its running attempt's run and no score", c)
	}

	// Against a baseline: each other model − opus, in the models' order.
	d = pairedDetail{}
	e.getJSON("/api/benches/p-0030?baseline=opus", 200, &d)
	names = nil
	for _, p := range d.Paired.Pairs {
		names = append(names, p.A+"-"+p.B)
	}
	if d.Paired.Baseline != "opus" || !slices.Equal(names, []string{"sonnet-opus", "haiku-opus", "qwen-opus"}) {
		t.Fatalf("baseline opus: %s pairs %v", d.Paired.Baseline, names)
	}
	checkPair(t, pairOf(d.Paired, "sonnet", "opus"), pairWant{tasks: 5, wins: 2, ties: 3, mean: 0.4, sd: 0.547723, se: 0.244949,
		df: 4, low: -0.280087, high: 1.080087, p: 0.1778, exact: ptrTo(0.5), mde: 0.910590, halve: 20, onlyA: []string{"t6"}})
	// haiku − opus on t1…t4: 0, ½, ½, 0; mean 0.25, SE 0.144338 (as
	// haiku's own), CI 0.25 ± 3.182446·0.144338 = [−0.209350, 0.709350];
	// t = 1.732051, p (3 df) = 0.1817; t5: haiku errored, opus finished.
	checkPair(t, pairOf(d.Paired, "haiku", "opus"), pairWant{tasks: 4, wins: 2, ties: 2, mean: 0.25, sd: 0.288675, se: 0.144338,
		df: 3, low: -0.209350, high: 0.709350, p: 0.1817, mde: 0.600575, halve: 16, onlyB: []string{"t5"}, errored: []string{"t5"}})

	e.getJSON("/api/benches/p-0030?baseline=mistral", 400, nil)
	e.getJSON("/api/benches/p-0030?baseline=oracle", 400, nil)
}

type pairWant struct {
	tasks, wins, losses, ties int
	mean, sd, se              float64
	df                        int
	low, high, p              float64
	exact                     *float64
	mde                       float64
	halve                     int
	onlyA, onlyB, errored     []string
}

func ptrTo(v float64) *float64 { return &v }

// checkPair checks p's figures against w's, to 4 decimals (p to 3).
func checkPair(t *testing.T, p *stats.Pair, w pairWant) {
	t.Helper()
	if p == nil || p.Difference == nil {
		t.Errorf("no pair, or no figures: %+v", p)
		return
	}
	d := p.Difference
	if p.Tasks != w.tasks || p.Wins != w.wins || p.Losses != w.losses || p.Ties != w.ties {
		t.Errorf("%s − %s: %d tasks, %d/%d/%d; want %d, %d/%d/%d", p.A, p.B, p.Tasks, p.Wins, p.Losses, p.Ties,
			w.tasks, w.wins, w.losses, w.ties)
	}
	if !near(d.Mean, w.mean) || !near(d.SD, w.sd) || !near(d.SE, w.se) || d.Dist != stats.DistT || d.DF != w.df ||
		!near(d.CILow, w.low) || !near(d.CIHigh, w.high) || !near(d.MDE, w.mde) || d.TasksToHalveMDE != w.halve ||
		d.P < w.p-5e-4 || d.P > w.p+5e-4 {
		t.Errorf("%s − %s: %+v, want %+v", p.A, p.B, *d, w)
	}
	if (w.exact == nil) != (d.ExactP == nil) || (w.exact != nil && (d.ExactTest != stats.SignTest || !near(*d.ExactP, *w.exact))) {
		t.Errorf("%s − %s: exact %q %v, want %v", p.A, p.B, d.ExactTest, fp(d.ExactP), fp(w.exact))
	}
	if !slices.Equal(p.OnlyA, w.onlyA) || !slices.Equal(p.OnlyB, w.onlyB) || !slices.Equal(p.Errored, w.errored) {
		t.Errorf("%s − %s: only A %v, only B %v, errored %v; want %v, %v, %v", p.A, p.B, p.OnlyA, p.OnlyB, p.Errored,
			w.onlyA, w.onlyB, w.errored)
	}
}
