package harbor_test

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lanehq/lane/internal/bench/harbor"
	"github.com/lanehq/lane/internal/container"
	"github.com/lanehq/lane/internal/testkit/containertest"
)

// separateAttempt runs the task testdata/separate/NAME under the oracle,
// as lane bench does, and returns the reward with the verifier's output.
func separateAttempt(t *testing.T, name string) (harbor.Reward, string) {
	t.Helper()
	a := prepareDir(t, filepath.Join("testdata/separate", name))
	a.build(t)
	verifierImage, err := harbor.VerifierImage(a.ctx, a.e, a.task)
	if err != nil {
		t.Fatal(err)
	}
	if a.task.Separate() != (verifierImage != "") {
		t.Fatalf("separate %v, verifier image %q", a.task.Separate(), verifierImage)
	}
	if verifierImage != "" {
		pruneBuilds(t, a, verifierImage)
	}
	c := a.start(t)
	var out bytes.Buffer
	if err := harbor.RunOracle(a.ctx, c, a.task, &out); err != nil {
		t.Fatalf("RunOracle: %v\n%s", err, out.String())
	}
	out.Reset()
	if !a.task.Separate() {
		r, err := harbor.Verify(a.ctx, c, a.task, &out)
		if err != nil {
			t.Fatalf("Verify: %v\n%s", err, out.String())
		}
		return r, out.String()
	}
	r, err := harbor.VerifySeparate(a.ctx, a.e, c, a.task, verifierImage, nil, &out)
	if err != nil {
		t.Fatalf("VerifySeparate: %v\n%s", err, out.String())
	}
	// The agent's container is gone once the verifier starts.
	if _, err := c.ReadFile(a.ctx, "/logs/artifacts/answer.txt"); err == nil {
		t.Error("the agent's container outlived the verifier")
	}
	return r, out.String()
}

// pruneBuilds removes the older builds of image's repository.
func pruneBuilds(t *testing.T, a *attempt, image string) {
	t.Helper()
	repo, _, _ := strings.Cut(image, ":")
	if a.e.Kind() == container.Podman {
		repo, image = "localhost/"+repo, "localhost/"+image
	}
	containertest.PruneTags(t, a.e, repo, image)
}

// The agent writes a wrong answer and plants two reward hacks in its
// container: a cat that gives the right answer, and /logs/verifier/
// reward.txt of 1. In the agent's container (a shared verifier) the lying
// cat wins, as it would under Harbor; a separate verifier, built from
// tests/, sees only /logs/artifacts, and scores 0.
func TestSeparateVerifierDefeatsRewardHacks(t *testing.T) {
	t.Parallel()
	t.Run("shared", func(t *testing.T) {
		t.Parallel()
		r, out := separateAttempt(t, "shared-hack")
		if r.Value != 1 || !strings.Contains(out, "answer: 42") {
			t.Errorf("shared verifier: reward %v, want the hack's 1; output:\n%s", r.Value, out)
		}
	})
	t.Run("separate", func(t *testing.T) {
		t.Parallel()
		r, out := separateAttempt(t, "hack")
		if r.Value != 0 || !strings.Contains(out, "answer: 41") || strings.Contains(out, "agent's image") {
			t.Errorf("separate verifier: reward %v, want 0; output:\n%s", r.Value, out)
		}
	})
}

// The answer the agent leaves in /logs/artifacts reaches the separate
// verifier, which runs with [verifier.environment]'s settings (its env
// names the answer expected), in its own image. Long:
// TestCollectArtifactsForASeparateVerifier runs a separate verifier given
// the artifacts in make test.
func TestSeparateVerifierSeesTheArtifactsLong(t *testing.T) {
	t.Parallel()
	r, out := separateAttempt(t, "right")
	if r.Value != 1 || !strings.Contains(out, "answer: forty-two") {
		t.Errorf("reward %v, want 1; output:\n%s", r.Value, out)
	}
}

// An agent that leaves nothing in /logs/artifacts (or makes it a file)
// gives the verifier an empty folder: its tests run, and score.
func TestSeparateVerifierWithoutArtifacts(t *testing.T) {
	t.Parallel()
	a := prepareDir(t, "testdata/separate/right")
	a.build(t)
	verifierImage, err := harbor.VerifierImage(a.ctx, a.e, a.task)
	if err != nil {
		t.Fatal(err)
	}
	pruneBuilds(t, a, verifierImage)
	c := a.start(t)
	code, err := c.Exec(a.ctx, container.ExecSpec{Argv: []string{"sh", "-c", "rm -rf /logs/artifacts && echo forty-two > /logs/artifacts"}})
	if err != nil || code != 0 {
		t.Fatalf("exit %d, %v", code, err)
	}
	var out bytes.Buffer
	r, err := harbor.VerifySeparate(a.ctx, a.e, c, a.task, verifierImage, nil, &out)
	if err != nil || r.Value != 0 {
		t.Errorf("reward %v, %v; output:\n%s", r.Value, err, out.String())
	}
}
