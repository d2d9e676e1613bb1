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

// A multi-step Harbor task with artifacts through lane bench under the
// oracle, then lane bench artifacts as a user gets them: the task's own
// artifact and each step's (one under a destination with its scratch
// files excluded) written per step under steps/<name>/, and the
// attempt's manifest.json listing each file with its step, its source and
// its size. The last step's separate verifier scores the step's artifact
// at its path. Long: internal/bench's TestStepsArtifacts collects and
// stores a step's artifacts in make test.
func TestHarborStepsArtifactsLong(t *testing.T) {
	t.Parallel()
	vars, base := containerVars(t)
	e := newLocalEnv(t)
	e.vars = append(e.vars, vars...)
	e.vars = append(e.vars, "LANE_DB="+e.db)
	dataset := t.TempDir()
	writeTree(t, filepath.Join(dataset, "ledger"), map[string]string{
		"task.toml": `schema_version = "1.4"
artifacts = ["/app/ledger"]
[environment]
allow_internet = false
[[steps]]
name = "draft"
artifacts = [{ source = "/app/drafts", destination = "drafts", exclude = ["*.tmp"] }]
[[steps]]
name = "total"
artifacts = ["/app/total.txt"]
[steps.verifier]
environment_mode = "separate"
`,
		"environment/Dockerfile":        "ARG BASE\nFROM ${BASE}\nRUN mkdir -p /app\n",
		"steps/draft/instruction.md":    "Draft the entries.\n",
		"steps/draft/solution/solve.sh": "mkdir -p /app/drafts && echo 10 > /app/drafts/entry.txt && echo scratch > /app/drafts/work.tmp\necho drafted > /app/ledger\n",
		"tests/test.sh":                 "if [ -f /app/drafts/entry.txt ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt\n",
		"steps/total/instruction.md":    "Total them.\n",
		"steps/total/solution/solve.sh": "echo 10 > /app/total.txt\necho totalled >> /app/ledger\n",
		"steps/total/tests/Dockerfile":  "ARG BASE\nFROM ${BASE}\nCOPY test.sh /tests/test.sh\n",
		"steps/total/tests/test.sh":     "mkdir -p /logs/verifier\nif [ \"$(cat /app/total.txt)\" = 10 ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt\n",
	})
	r := e.lane(context.Background(), "bench", dataset, "--models", "oracle", "--build-arg", "BASE="+base)
	wantExit(t, r, 0)
	st := e.openStore()
	attempts := latestBenchAttempts(t, st, 1)
	st.Close()
	if a := attempts[0]; a.Status != "passed" || len(a.Steps) != 2 {
		t.Fatalf("attempt %s, steps %+v\n%s", a.Status, a.Steps, a.CheckOutput)
	}

	out := filepath.Join(t.TempDir(), "artifacts")
	r = e.lane(context.Background(), "bench", "artifacts", attempts[0].BenchID[:8], "--out", out)
	wantExit(t, r, 0)
	if !strings.Contains(r.stdout, "of 1 attempts written to "+out) {
		t.Errorf("lane bench artifacts said:\n%s%s", r.stdout, r.stderr)
	}
	attempt := filepath.Join(out, "ledger", "oracle", "1")
	var written []string
	err := filepath.WalkDir(attempt, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(attempt, p)
		written = append(written, filepath.ToSlash(rel)+": "+strings.TrimSpace(string(b)))
		return err
	})
	want := []string{
		"manifest.json",
		"steps/draft/app/ledger: drafted",
		"steps/draft/drafts/entry.txt: 10",
		"steps/total/app/ledger: drafted\ntotalled",
		"steps/total/app/total.txt: 10",
	}
	if err != nil || len(written) != len(want) || !strings.HasPrefix(written[0], want[0]) || !reflect.DeepEqual(written[1:], want[1:]) {
		t.Errorf("written under %s: %q, %v; want %q", attempt, written, err, want)
	}

	var m struct {
		Task  string `json:"task"`
		Files []struct {
			Path, Source, Service, Step string
			Size                        int64
		} `json:"files"`
	}
	b, err := os.ReadFile(filepath.Join(attempt, "manifest.json"))
	if err != nil || json.Unmarshal(b, &m) != nil {
		t.Fatalf("manifest.json: %s, %v", b, err)
	}
	var files []string
	for _, f := range m.Files {
		files = append(files, strings.Join([]string{f.Step, f.Path, f.Source, f.Service, strings.Repeat("x", int(f.Size))}, " "))
	}
	wantFiles := []string{
		"draft steps/draft/app/ledger /app/ledger main xxxxxxxx",
		"draft steps/draft/drafts/entry.txt /app/drafts/entry.txt main xxx",
		"total steps/total/app/ledger /app/ledger main xxxxxxxxxxxxxxxxx",
		"total steps/total/app/total.txt /app/total.txt main xxx",
	}
	if m.Task != "ledger" || !reflect.DeepEqual(files, wantFiles) {
		t.Errorf("manifest.json's files %q, want %q\n%s", files, wantFiles, b)
	}
}
