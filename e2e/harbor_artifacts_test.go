package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Artifacts through lane bench and lane bench artifacts, as a user gets
// them: a Harbor dataset under the oracle (a task whose verifier shares
// the agent's container, with a collect hook, a destination, an exclude
// pattern and an artifact never written, which fails nothing; and one
// with a separate verifier and a service's artifact), then every
// attempt's files written out, with a manifest.json each.
//
// Long: internal/bench/harbor's TestCollectArtifactsForASeparateVerifier
// collects and stores them with the real Podman in make test.
func TestHarborArtifactsLong(t *testing.T) {
	t.Parallel()
	vars, base := containerVars(t)
	e := newLocalEnv(t)
	e.vars = append(e.vars, vars...)
	e.vars = append(e.vars, "LANE_DB="+e.db)
	dataset, _ := filepath.Abs("../internal/bench/harbor/testdata/artifacts")
	r := e.lane(context.Background(), "bench", dataset, "--models", "oracle", "--build-arg", "BASE="+base, "--parallel", "2")
	wantExit(t, r, 0)
	st := e.openStore()
	attempts := latestBenchAttempts(t, st, 2)
	st.Close()
	got := map[string]string{}
	for _, a := range attempts {
		got[a.TaskID] = string(a.Status) + " " + a.FailureKind
	}
	// The artifact never written fails nothing; the hacks score 0.
	if got["shared"] != "passed " || got["hack"] != "failed check_failed" {
		t.Errorf("attempts: %v", got)
	}
	bench := attempts[0].BenchID

	out := filepath.Join(t.TempDir(), "artifacts")
	r = e.lane(context.Background(), "bench", "artifacts", bench[:8], "--out", out)
	wantExit(t, r, 0)
	if !strings.Contains(r.stdout, "of 2 attempts written to "+out) {
		t.Errorf("lane bench artifacts said:\n%s%s", r.stdout, r.stderr)
	}
	for name, want := range map[string]string{
		"shared/oracle/1/report/summary.txt":           "one\ntwo\n",
		"shared/oracle/1/logs/artifacts/answer.txt":    "42\n",
		"shared/oracle/1/logs/artifacts/lines.txt":     "2\n",
		"hack/oracle/1/build-output/answer.txt":        "41\n",
		"hack/oracle/1/var/lib/db/dump.txt":            "row 1\ndumped\n",
		"hack/oracle/1/agent-verifier-logs/reward.txt": "1\n",
	} {
		b, err := os.ReadFile(filepath.Join(out, name))
		if err != nil || string(b) != want {
			t.Errorf("%s: %q, %v; want %q", name, b, err, want)
		}
	}
	for _, name := range []string{"shared/oracle/1/report/scratch.tmp", "hack/oracle/1/build-output/x.o", "shared/oracle/1/app/missing.txt"} {
		if _, err := os.Stat(filepath.Join(out, name)); err == nil {
			t.Errorf("%s was written", name)
		}
	}

	var m struct {
		Task  string `json:"task"`
		Model string `json:"model"`
		N     int    `json:"n"`
		Files []struct {
			Path, Source, Service string
			Size                  int64
		} `json:"files"`
		Artifacts []struct{ Source, Service, Path, Status string } `json:"artifacts"`
	}
	b, err := os.ReadFile(filepath.Join(out, "shared/oracle/1/manifest.json"))
	if err != nil || json.Unmarshal(b, &m) != nil {
		t.Fatalf("manifest.json: %s, %v", b, err)
	}
	files := map[string]string{}
	for _, f := range m.Files {
		files[f.Path] = f.Source + " " + f.Service + " " + strings.Repeat("x", int(f.Size))
	}
	if m.Task != "shared" || m.Model != "oracle" || m.N != 1 || len(files) != 3 ||
		files["report/summary.txt"] != "/app/report/summary.txt main xxxxxxxx" ||
		files["logs/artifacts/answer.txt"] != "/logs/artifacts/answer.txt main xxx" {
		t.Errorf("manifest.json: %s", b)
	}
	statuses := map[string]string{}
	for _, a := range m.Artifacts {
		statuses[a.Source] = a.Status
	}
	if statuses["/app/missing.txt"] != "missing" || statuses["/app/report"] != "ok" || statuses["/logs/artifacts"] != "ok" {
		t.Errorf("manifest.json's artifacts: %s", b)
	}
}
