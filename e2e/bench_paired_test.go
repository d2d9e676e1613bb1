package e2e

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/lanehq/lane/internal/testkit/anthropictest"
	"github.com/lanehq/lane/internal/testkit/openaitest"
)

// pairedSuite: five tasks, two repeats, passed when the agent leaves a
// file named ok.
const pairedSuite = `name: paired
models: [sonnet, "` + localModel + `"]
repeat: 2
tasks:
  - {id: both, prompt: "TASK both: go", check: "test -f ok"}
  - {id: claude-only, prompt: "TASK claude-only: go", check: "test -f ok"}
  - {id: neither, prompt: "TASK neither: go", check: "test -f ok"}
  - {id: half, prompt: "TASK half: go", check: "test -f ok"}
  - {id: local-only, prompt: "TASK local-only: go", check: "test -f ok"}
`

// pairedReport is what the test reads of lane bench report -o json.
type pairedReport struct {
	Models []struct {
		Model string `json:"model"`
		Score struct {
			Tasks int      `json:"tasks"`
			Mean  *float64 `json:"mean"`
			SE    *float64 `json:"se"`
		} `json:"score"`
	} `json:"models"`
	Paired struct {
		Score    string `json:"score"`
		Baseline string `json:"baseline"`
		Pairs    []struct {
			A, B               string
			Tasks              int
			Wins, Losses, Ties int
			OnlyA              []string `json:"only_a"`
			Difference         *struct {
				Mean, SD, SE    float64
				Dist            string
				DF              int
				CILow           float64 `json:"ci_low"`
				CIHigh          float64 `json:"ci_high"`
				P               float64
				ExactP          *float64 `json:"exact_p"`
				MDE             float64
				TasksToHalveMDE int `json:"tasks_to_halve_mde"`
			}
		}
	}
}

// A bench over Claude Code and lane's own loop whose pass pattern is
// known; lane bench report's paired figures, in JSON, are the ones
// computed by hand.
func TestBenchPairedComparison(t *testing.T) {
	t.Parallel()
	e := newLocalEnv(t)
	claude := anthropictest.ClaudeBin(t)
	cs := anthropictest.NewServer(t)
	home := filepath.Join(t.TempDir(), "home")
	os.Mkdir(home, 0o755)
	e.vars = append(e.vars, anthropictest.ClaudeEnv(cs.URL(), home)...)
	e.vars = append(e.vars, "LANE_CLAUDE_BIN="+claude, "HOME="+home)

	// Claude Code passes both and claude-only; lane's loop passes both,
	// local-only, and half on one of its two attempts.
	cs.SetResponder(func(r anthropictest.Request) (anthropictest.Turn, bool) {
		var all strings.Builder
		answered := false
		for _, m := range r.Messages {
			all.WriteString(m.Text())
			for _, b := range m.Blocks() {
				answered = answered || b.Type == "tool_result"
			}
		}
		m := taskTag.FindStringSubmatch(all.String())
		if m == nil || answered || (m[1] != "both" && m[1] != "claude-only") {
			return anthropictest.Text("done"), true
		}
		return anthropictest.Tools(anthropictest.Bash("", "touch ok")), true
	})
	var mu sync.Mutex
	halfStarts := 0
	e.model.SetResponder(func(r openaitest.Request) (openaitest.Turn, bool) {
		var all strings.Builder
		answered := false
		for _, m := range r.Messages {
			all.WriteString(m.Content)
			answered = answered || m.Role == "tool"
		}
		m := taskTag.FindStringSubmatch(all.String())
		if m == nil || answered {
			return openaitest.Text("done"), true
		}
		pass := m[1] == "both" || m[1] == "local-only"
		if m[1] == "half" {
			mu.Lock()
			halfStarts++
			pass = halfStarts == 1
			mu.Unlock()
		}
		if !pass {
			return openaitest.Text("I cannot."), true
		}
		return openaitest.ToolCalls(openaitest.Call("", "write_file", map[string]any{"path": "ok", "content": "ok\n"})), true
	})

	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "suite.yaml"), []byte(pairedSuite), 0o644); err != nil {
		t.Fatal(err)
	}
	wantExit(t, e.lane(context.Background(), "bench", "--parallel", "4", filepath.Join(dir, "suite.yaml")), 0)
	bn, _ := onlyBenchAttempts(t, e.openStore(), 20)

	r := e.lane(context.Background(), "bench", "report", bn.ID[:8], "-o", "json")
	wantExit(t, r, 0)
	var got pairedReport
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("%v\n%s", err, r.stdout)
	}
	// Per task (both, claude-only, neither, half, local-only): sonnet 1, 1,
	// 0, 0, 0; the local model 1, 0, 0, 0.5, 1.
	// sonnet: mean 0.4, deviations 0.6 ×2, −0.4 ×3, squares 0.72 + 0.48 =
	// 1.2, variance 0.3, SE √(0.3/5) = 0.244949.
	// local: mean 0.5, deviations ±0.5 ×4 and 0, squares 1, variance 0.25,
	// SE √(0.25/5) = 0.223607.
	checkScore(t, got, "sonnet", 0.4, 0.244949)
	checkScore(t, got, localModel, 0.5, 0.223607)

	// sonnet − local: 0, 1, 0, −0.5, −1. Mean −0.1; deviations 0.1, 1.1,
	// 0.1, −0.4, −0.9, squares 0.01 + 1.21 + 0.01 + 0.16 + 0.81 = 2.2,
	// variance 0.55, sd 0.741620, SE √(0.55/5) = √0.11 = 0.331662.
	// 5 tasks: t with 4 df, t(0.975) = 2.776445: −0.1 ± 0.920844.
	// t² = 0.01/0.11 = 1/11; with 4 df p = 1 − 1.5w + 0.5w³ where w² =
	// t²/(4+t²) = 1/45, w = 0.149071: p = 1 − 0.223607 + 0.001656 =
	// 0.778050. MDE = (2.776445 + t(0.8) 0.940965) · 0.331662 = 1.232924.
	// Scores of 0.5: no exact test. 1 win, 2 losses, 2 ties.
	if got.Paired.Score != "pass" || len(got.Paired.Pairs) != 1 {
		t.Fatalf("paired %+v", got.Paired)
	}
	p := got.Paired.Pairs[0]
	d := p.Difference
	if p.A != "sonnet" || p.B != localModel || p.Tasks != 5 || p.Wins != 1 || p.Losses != 2 || p.Ties != 2 ||
		len(p.OnlyA) != 0 || d == nil {
		t.Fatalf("pair %+v", p)
	}
	for _, f := range []struct {
		name      string
		got, want float64
	}{
		{"mean", d.Mean, -0.1}, {"sd", d.SD, 0.741620}, {"se", d.SE, 0.331662},
		{"ci_low", d.CILow, -0.1 - 0.920844}, {"ci_high", d.CIHigh, -0.1 + 0.920844},
		{"p", d.P, 0.778050}, {"mde", d.MDE, 1.232924},
	} {
		if math.Abs(f.got-f.want) > 2e-6 {
			t.Errorf("%s = %.7f, want %.6f", f.name, f.got, f.want)
		}
	}
	if d.Dist != "t" || d.DF != 4 || d.ExactP != nil || d.TasksToHalveMDE != 20 {
		t.Errorf("difference %+v", *d)
	}

	// Against sonnet, the local model's difference is the same, turned.
	r = e.lane(context.Background(), "bench", "report", bn.ID[:8], "-o", "json", "--baseline", "sonnet")
	wantExit(t, r, 0)
	var base pairedReport
	if err := json.Unmarshal([]byte(r.stdout), &base); err != nil {
		t.Fatal(err)
	}
	if b := base.Paired.Pairs; base.Paired.Baseline != "sonnet" || len(b) != 1 || b[0].A != localModel ||
		math.Abs(b[0].Difference.Mean-0.1) > 1e-12 || b[0].Wins != 2 {
		t.Errorf("against sonnet %+v", base.Paired)
	}
	wantExit(t, e.lane(context.Background(), "bench", "report", bn.ID[:8], "--baseline", "gpt-9"), 2)

	// The text report and the matrix a person reads.
	r = e.lane(context.Background(), "bench", "report", bn.ID[:8])
	wantExit(t, r, 0)
	for _, want := range []string{"TASK MEAN ± SE", "40% ±24", "-10.0 pts", "-102.1 to +82.1 pts", "t, 4 df", "0.778"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("the text report lacks %q:\n%s", want, r.stdout)
		}
	}
	r = e.lane(context.Background(), "bench", "report", bn.ID[:8], "--matrix", "--format", "markdown")
	wantExit(t, r, 0)
	if !strings.Contains(r.stdout, "| half | 0/2 · ") || !strings.Contains(r.stdout, "| claude-only | 2/2 · ") {
		t.Errorf("the matrix:\n%s", r.stdout)
	}
}

func checkScore(t *testing.T, r pairedReport, model string, mean, se float64) {
	t.Helper()
	for _, m := range r.Models {
		if m.Model != model {
			continue
		}
		if m.Score.Tasks != 5 || m.Score.Mean == nil || m.Score.SE == nil ||
			math.Abs(*m.Score.Mean-mean) > 1e-9 || math.Abs(*m.Score.SE-se) > 1e-6 {
			t.Errorf("%s's score %+v, want mean %v, se %v", model, m.Score, mean, se)
		}
		return
	}
	t.Errorf("no model %s", model)
}
