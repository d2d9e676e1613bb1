package stats

import (
	"slices"
	"testing"

	"github.com/lanehq/lane/internal/record"
)

// Paired leaves out the oracle and the models without an attempt, compares
// every two of the others or each against a baseline, and adds a pair per
// reward key when the verifiers wrote keys other than "reward".
func TestTablePaired(t *testing.T) {
	b := record.Bench{Models: []string{OracleModel, "a", "b", "c", "idle"}}
	var as []record.Attempt
	for _, m := range []string{OracleModel, "a", "b", "c"} {
		for _, task := range []string{"t1", "t2"} {
			as = append(as, record.Attempt{TaskID: task, Model: m, N: 1, Status: record.AttemptPassed})
		}
	}
	tab := Tabulate(b, as)
	names := func(p *Paired) []string {
		var out []string
		for _, x := range p.Pairs {
			out = append(out, x.A+"-"+x.B+":"+x.Key)
		}
		return out
	}
	p := tab.Paired("")
	if p == nil || p.Score != ScorePass || !slices.Equal(names(p), []string{"a-b:", "a-c:", "b-c:"}) {
		t.Fatalf("every two: %+v", p)
	}
	if p := tab.Paired("b"); p == nil || p.Baseline != "b" || !slices.Equal(names(p), []string{"a-b:", "c-b:"}) {
		t.Errorf("against b: %+v", p)
	}
	for _, base := range []string{OracleModel, "idle", "nobody"} {
		if p := tab.Paired(base); p != nil {
			t.Errorf("against %s: %+v, want none", base, p)
		}
	}

	one := 1.0
	var ab []record.Attempt
	for _, a := range as {
		if a.Model == "a" || a.Model == "b" {
			a.Reward, a.Rewards = &one, map[string]float64{"reward": 1, "style": 0.5}
			ab = append(ab, a)
		}
	}
	p = Tabulate(record.Bench{Models: []string{"a", "b"}}, ab).Paired("")
	if p == nil || p.Score != ScoreReward || !slices.Equal(names(p), []string{"a-b:", "a-b:reward", "a-b:style"}) {
		t.Errorf("rewarded: %+v", p)
	}
	if p := Tabulate(record.Bench{Models: []string{OracleModel, "a"}}, as[:4]).Paired(""); p != nil {
		t.Errorf("one model and the oracle: %+v, want none", p)
	}
}
