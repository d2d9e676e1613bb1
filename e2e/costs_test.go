package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"lane/internal/anthropictest"
	"lane/internal/clitest"
	"lane/store"
)

// ccusageBin is ccusage's native build, pinned in testdata/runtimes (the
// npm command is a node script that starts it). Missing, it skips the test,
// or fails it under LANE_REQUIRE_RUNTIMES=1.
func ccusageBin(t testing.TB) string {
	t.Helper()
	root, err := clitest.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(root, "testdata", "runtimes", "node_modules", "@ccusage", "ccusage-linux-x64", "bin", "ccusage")
	if _, err := os.Stat(bin); err != nil {
		if os.Getenv(clitest.RequireEnv) == "1" {
			t.Fatalf("%s=1: ccusage not installed (make test-deps): %v", clitest.RequireEnv, err)
		}
		t.Skipf("ccusage not installed (make test-deps): %v", err)
	}
	return bin
}

// ccusageDay is a day of `ccusage daily --json`.
type ccusageDay struct {
	Period              string  `json:"period"`
	InputTokens         int64   `json:"inputTokens"`
	OutputTokens        int64   `json:"outputTokens"`
	CacheCreationTokens int64   `json:"cacheCreationTokens"`
	CacheReadTokens     int64   `json:"cacheReadTokens"`
	TotalTokens         int64   `json:"totalTokens"`
	TotalCost           float64 `json:"totalCost"`
	ModelBreakdowns     []struct {
		ModelName      string  `json:"modelName"`
		Cost           float64 `json:"cost"`
		MissingPricing bool    `json:"missingPricing"`
	} `json:"modelBreakdowns"`
}

type ccusageDaily struct {
	Daily  []ccusageDay `json:"daily"`
	Totals struct {
		ccusageDay
		UnpricedModels []string `json:"unpricedModels"`
	} `json:"totals"`
}

// ccusage runs `ccusage daily --json --offline` over the transcripts under
// configDir (a CLAUDE_CONFIG_DIR), its days in UTC.
func ccusage(t testing.TB, configDir string, args ...string) ccusageDaily {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, ccusageBin(t), append([]string{"daily", "--json", "--offline", "--timezone", "UTC"}, args...)...)
	cmd.Env = append(clitest.Env(filepath.Dir(configDir)), "CLAUDE_CONFIG_DIR="+configDir, "TZ=UTC")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("ccusage: %v\n%s", err, errOut.String())
	}
	var d ccusageDaily
	if err := json.Unmarshal(out.Bytes(), &d); err != nil {
		t.Fatalf("ccusage's output: %v\n%s", err, out.String())
	}
	return d
}

// costs runs `lane costs -o json --timezone UTC` with args.
func (e *env) costs(args ...string) store.Costs {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r := e.lane(ctx, append([]string{"costs", "-o", "json", "--timezone", "UTC"}, args...)...)
	wantExit(e.t, r, 0)
	var c store.Costs
	if err := json.Unmarshal([]byte(r.stdout), &c); err != nil {
		e.t.Fatalf("lane costs' output: %v\n%s", err, r.stdout)
	}
	return c
}

func (e *env) home() string {
	for _, v := range e.vars {
		if h, ok := strings.CutPrefix(v, "HOME="); ok {
			return h
		}
	}
	e.t.Fatal("no HOME in the test's environment")
	return ""
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9+1e-9*math.Abs(b) }

// lane costs over lane's own Claude Code runs against ccusage over the
// transcripts those runs left in Claude Code's folder: the tokens agree to
// the token, day by day. The cost agrees on every model ccusage has a price
// for; a model it has none for (the scripted server's claude-sonnet-5-5)
// ccusage counts as $0 and lists as unpriced, while lane keeps what Claude
// Code itself reported the run cost, which the transcript's own cost-state
// line shows.
func TestCostsAgreeWithCcusageOnLaneRuns(t *testing.T) {
	ccusageBin(t)
	e := newEnv(t,
		anthropictest.Tools(anthropictest.Bash("toolu_1", "echo one")), anthropictest.Text("one done"),
		anthropictest.Text("two done"),
		anthropictest.Tools(anthropictest.Bash("toolu_3", "echo three")), anthropictest.Text("three done"))
	unpriced := map[string]float64{} // run id → its cost, of the runs on a model ccusage has no price for
	for _, model := range []string{"", "claude-sonnet-4-5", "claude-haiku-4-5"} {
		args := []string{"-o", "json", "do it"}
		if model != "" {
			args = append([]string{"--model", model}, args...)
		}
		r := e.run(args...)
		wantExit(t, r, 0)
		run := lastRun(t, r)
		if run.CostUSD <= 0 || run.CostEstimate {
			t.Fatalf("run on %q: cost %v estimate %v, want Claude Code's own figure", model, run.CostUSD, run.CostEstimate)
		}
		if model == "" {
			unpriced[run.ID] = run.CostUSD
		}
	}
	cc := ccusage(t, filepath.Join(e.home(), ".claude"))
	lane := e.costs("--by", "day")

	if len(cc.Daily) == 0 || len(lane.Rows) != len(cc.Daily) {
		t.Fatalf("days: lane %+v, ccusage %+v", lane.Rows, cc.Daily)
	}
	for i, d := range cc.Daily {
		l := lane.Rows[i]
		if l.Key != d.Period || l.InputTokens != d.InputTokens || l.OutputTokens != d.OutputTokens ||
			l.CacheReadTokens != d.CacheReadTokens || l.CacheCreationTokens != d.CacheCreationTokens ||
			l.TotalTokens != d.TotalTokens {
			t.Errorf("day %d: lane %+v, ccusage %+v", i, l, d)
		}
	}
	if got, want := cc.Totals.UnpricedModels, []string{"claude-sonnet-5-5"}; strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("ccusage's unpriced models %v, want %v", got, want)
	}
	if cc.Totals.TotalCost <= 0 {
		t.Fatalf("ccusage priced nothing: %+v", cc.Totals)
	}
	t.Logf("lane: $%v (%+v); ccusage: $%v (%+v)", lane.Total.CostUSD, lane.Total.Usage, cc.Totals.TotalCost, cc.Totals)
	var missing float64
	for _, c := range unpriced {
		missing += c
	}
	if !near(lane.Total.CostUSD-missing, cc.Totals.TotalCost) {
		t.Errorf("lane's cost %v less the runs on claude-sonnet-5-5 (%v) = %v; ccusage's %v",
			lane.Total.CostUSD, missing, lane.Total.CostUSD-missing, cc.Totals.TotalCost)
	}
	if lane.Total.EstimatedUSD != 0 || !near(lane.Total.ReportedUSD, lane.Total.CostUSD) {
		t.Errorf("lane's runs of Claude Code are priced by Claude Code: %+v", lane.Total)
	}
	checkCostState(t, filepath.Join(e.home(), ".claude", "projects"), unpriced, e)
}

// checkCostState finds, in each transcript of a run on an unpriced model,
// the cost-state line Claude Code ends a session with, and checks that its
// totalCostUSD is the run's cost lane reports: the raw line lane's figure
// comes from.
func checkCostState(t *testing.T, projects string, runs map[string]float64, e *env) {
	t.Helper()
	st := e.openStore()
	for id, cost := range runs {
		run, err := st.GetRun(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		files, _ := filepath.Glob(filepath.Join(projects, "*", run.SessionID+".jsonl"))
		if len(files) != 1 {
			t.Fatalf("transcript of session %s: %v", run.SessionID, files)
		}
		b, err := os.ReadFile(files[0])
		if err != nil {
			t.Fatal(err)
		}
		var total *float64
		for line := range strings.SplitSeq(string(b), "\n") {
			var rec struct {
				Type         string   `json:"type"`
				TotalCostUSD *float64 `json:"totalCostUSD"`
			}
			if json.Unmarshal([]byte(line), &rec) == nil && rec.Type == "cost-state" {
				total = rec.TotalCostUSD
			}
		}
		if total == nil || !near(*total, cost) {
			t.Errorf("session %s: the transcript's cost-state says %v, lane %v", run.SessionID, total, cost)
		}
	}
}
