package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// writeTree writes files (path: content) under dir.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

// A dataset with a multi-step Harbor task under the oracle, through lane
// bench, then lane bench report -o json as a user reads it: the attempt's
// three steps in order, each with the rewards its own verifier wrote
// (step two's tests/ its own, step three gated by min_reward and run
// after step two's setup.sh left its file), and the attempt's reward their
// mean. The single-step task beside it has no steps.
func TestHarborSteps(t *testing.T) {
	t.Parallel()
	vars, base := containerVars(t)
	e := newLocalEnv(t)
	e.vars = append(e.vars, vars...)
	e.vars = append(e.vars, "LANE_DB="+e.db)
	dataset := t.TempDir()
	dockerfile := "ARG BASE\nFROM ${BASE}\nRUN mkdir -p /app\n"
	writeTree(t, filepath.Join(dataset, "ledger"), map[string]string{
		"task.toml": `schema_version = "1.4"
[environment]
allow_internet = false
[[steps]]
name = "open"
[[steps]]
name = "post"
min_reward = 0.5
[[steps]]
name = "close"
`,
		"environment/Dockerfile":       dockerfile,
		"steps/open/instruction.md":    "Open the ledger.\n",
		"steps/open/solution/solve.sh": "echo open > /app/ledger\n",
		"steps/post/instruction.md":    "Post an entry.\n",
		"steps/post/workdir/setup.sh":  "echo 10 > /app/entry\n",
		"steps/post/solution/solve.sh": "cat /app/entry >> /app/ledger\n",
		"steps/post/tests/test.sh":     "if grep -qx 10 /app/ledger; then echo '{\"reward\": 1, \"entries\": 1}'; else echo '{\"reward\": 0}'; fi > /logs/verifier/reward.json\n",
		"steps/close/instruction.md":   "Close the ledger.\n",
		"solution/solve.sh":            "echo closed >> /app/ledger\n",
		"tests/test.sh":                "if [ -s /app/ledger ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt\n",
	})
	writeTree(t, filepath.Join(dataset, "single"), map[string]string{
		"task.toml":              "[environment]\nallow_internet = false\n",
		"instruction.md":         "Do it.\n",
		"environment/Dockerfile": dockerfile,
		"solution/solve.sh":      "true\n",
		"tests/test.sh":          "echo 1 > /logs/verifier/reward.txt\n",
	})

	r := e.lane(context.Background(), "bench", dataset, "--models", "oracle", "--build-arg", "BASE="+base, "--parallel", "2")
	wantExit(t, r, 0)
	st := e.openStore()
	benches, err := st.ListBenches(context.Background(), 1)
	st.Close()
	if err != nil || len(benches) != 1 {
		t.Fatalf("benches %v, %v", benches, err)
	}
	rep := e.lane(context.Background(), "bench", "report", benches[0].ID[:8], "-o", "json")
	wantExit(t, rep, 0)
	var report stepsReport
	if err := json.Unmarshal([]byte(rep.stdout), &report); err != nil || len(report.Steps) != 1 {
		t.Fatalf("report's steps %+v, %v\n%s", report.Steps, err, rep.stdout)
	}
	a := report.Steps[0]
	var got []string
	for _, s := range a.Steps {
		got = append(got, s.Name+" "+s.Status)
	}
	if !reflect.DeepEqual(got, []string{"open passed", "post passed", "close passed"}) ||
		!reflect.DeepEqual(a.Steps[1].Rewards, map[string]float64{"reward": 1, "entries": 1}) ||
		!reflect.DeepEqual(a.Steps[2].Rewards, map[string]float64{"reward": 1}) {
		t.Fatalf("steps %v: %+v", got, a.Steps)
	}
	// entries: (0 + 1 + 0) / 3; reward: 1 on each step.
	if a.Task != "ledger" || a.Status != "passed" || a.Reward == nil || *a.Reward != 1 ||
		a.Rewards["entries"] < 0.333 || a.Rewards["entries"] > 0.334 {
		t.Errorf("attempt %s %s reward %v %v", a.Task, a.Status, a.Reward, a.Rewards)
	}
	text := e.lane(context.Background(), "bench", "report", benches[0].ID[:8])
	wantExit(t, text, 0)
	if !strings.Contains(text.stdout, "steps of multi-step attempts:") || !strings.Contains(text.stdout, "entries 1") {
		t.Errorf("text report without the steps:\n%s", text.stdout)
	}
}
