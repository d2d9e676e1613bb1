package harbor_test

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lanehq/lane/internal/bench/harbor"
	"github.com/lanehq/lane/internal/container"
)

// The agent's work under the oracle of testdata/artifacts/hack: its
// collect hooks run (main's, then db's once main is stopped), its
// artifacts are copied out (a destination, exclude patterns, a service's
// file; one never written is recorded missing and fails nothing), and
// its separate verifier sees each at its path in the agent's containers,
// but neither the agent's lying cat nor its /logs/verifier: the wrong
// answer scores 0.
func TestCollectArtifactsForASeparateVerifier(t *testing.T) {
	t.Parallel()
	a := prepareDir(t, "testdata/artifacts/hack")
	a.build(t)
	verifierImage, err := harbor.VerifierImage(a.ctx, a.e, a.task)
	if err != nil {
		t.Fatal(err)
	}
	pruneBuilds(t, a, verifierImage)
	c := a.start(t)
	var out bytes.Buffer
	if err := harbor.RunOracle(a.ctx, c, a.task, &out); err != nil {
		t.Fatalf("RunOracle: %v\n%s", err, out.String())
	}
	out.Reset()
	dir := filepath.Join(t.TempDir(), "artifacts")
	coll, err := harbor.Collect(a.ctx, c, a.task, harbor.CollectOptions{Dir: dir, StopMain: true, Log: &out})
	if err != nil {
		t.Fatalf("Collect: %v\n%s", err, out.String())
	}
	if out.Len() > 0 {
		t.Errorf("the hooks said: %s", out.String())
	}
	// main is stopped once its part is collected.
	if code, err := c.Exec(a.ctx, container.ExecSpec{Argv: []string{"true"}}); err == nil && code == 0 {
		t.Error("the agent's container still runs after Collect with StopMain")
	}

	files := map[string]string{}
	for _, f := range coll.Files {
		b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(f.Path)))
		if err != nil || int64(len(b)) != f.Size {
			t.Errorf("%s: %d bytes, %v; listed as %d", f.Path, len(b), err, f.Size)
		}
		files[f.Path] = f.Source + " " + f.Service + ": " + strings.TrimSpace(string(b))
	}
	want := map[string]string{
		"logs/artifacts/note.txt":         "/logs/artifacts/note.txt main: a note",
		"app/out/result.txt":              "/app/out/result.txt main: result",
		"app/out/hook.txt":                "/app/out/hook.txt main: hook saw 42",
		"build-output/answer.txt":         "/app/build/answer.txt main: 41",
		"build-output/keep/deep.txt":      "/app/build/keep/deep.txt main: deep",
		"var/lib/db/dump.txt":             "/var/lib/db/dump.txt db: row 1\ndumped",
		"agent-verifier-logs/reward.json": `/logs/verifier/reward.json main: {"reward": 1}`,
		"agent-verifier-logs/reward.txt":  "/logs/verifier/reward.txt main: 1",
	}
	for p, w := range want {
		if files[p] != w {
			t.Errorf("%s: %q, want %q", p, files[p], w)
		}
	}
	if len(files) != len(want) {
		t.Errorf("collected %d files, want %d: %v", len(files), len(want), files)
	}
	i := slices.IndexFunc(coll.Artifacts, func(ca harbor.CollectedArtifact) bool { return ca.Source == "/app/never-written.txt" })
	if i < 0 || coll.Artifacts[i].Status != harbor.ArtifactMissing {
		t.Errorf("the artifact never written: %+v", coll.Artifacts)
	}

	out.Reset()
	r, err := harbor.VerifySeparate(a.ctx, a.e, c, a.task, verifierImage, coll, &out)
	if err != nil {
		t.Fatalf("VerifySeparate: %v\n%s", err, out.String())
	}
	for _, line := range []string{
		"saw /logs/artifacts/note.txt: a note", "saw /app/out/result.txt: result", "saw /app/out/hook.txt: hook saw 42",
		"saw /app/build/answer.txt: 41", "saw /app/build/keep/deep.txt: deep", "saw /var/lib/db/dump.txt: row 1 dumped",
		"no /app/build/x.o", "no /app/build/cache/blob", "no /app/never-written.txt", "no /opt/agent-image",
		"answer: 41", "[lane: artifact /logs/verifier is not given to the verifier",
	} {
		if !strings.Contains(out.String(), line) {
			t.Errorf("the verifier's output lacks %q:\n%s", line, out.String())
		}
	}
	if r.Value != 0 || strings.Contains(out.String(), "verifier log:") {
		t.Errorf("reward %v, want 0 (the hacks must not reach the verifier); output:\n%s", r.Value, out.String())
	}
}
