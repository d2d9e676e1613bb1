package suiteload

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/lanehq/lane/internal/bench/harbor"
)

// harborStepsPlan fills pt with what the multi-step task t's steps use:
// the check names each step and where its verifier runs, and the oracle
// needs a solution for every step.
func harborStepsPlan(pt *PlanTask, t *harbor.Task) {
	names := make([]string, len(t.Steps))
	pt.Oracle = true
	for i, s := range t.Steps {
		names[i] = s.Name
		if s.Separate() {
			names[i] += " (a verifier of its own)"
		}
		if fi, err := os.Stat(filepath.Join(s.Solution, "solve.sh")); s.Solution == "" || err != nil || !fi.Mode().IsRegular() {
			pt.Oracle = false
		}
	}
	how := "the mean of their rewards"
	if t.StepRewards == harbor.StepsFinal {
		how = "the last step's rewards"
	}
	pt.Check = fmt.Sprintf("%d steps in one container, scored by %s: %s", len(t.Steps), how, strings.Join(names, ", "))
}

// verifierImage is where a separate verifier's image comes from: its
// environment's docker_image, else the Dockerfile in tests/.
func verifierImage(t *harbor.Task) string {
	if img := t.VerifierEnvironment().DockerImage; img != "" {
		return img
	}
	return "built from tests/"
}

// harborArtifactsPlan fills pt's artifacts (the task's, then each step's
// own) and collect hooks; /logs/artifacts, which every attempt keeps, is
// not listed.
func harborArtifactsPlan(pt *PlanTask, t *harbor.Task) {
	name := func(a harbor.Artifact, step string) string {
		var where []string
		if svc := a.ServiceName(); svc != harbor.MainService {
			where = append(where, "service "+svc)
		}
		if step != "" {
			where = append(where, "step "+step)
		}
		if len(where) == 0 {
			return a.Source
		}
		return a.Source + " (" + strings.Join(where, ", ") + ")"
	}
	for _, a := range t.Artifacts {
		pt.Artifacts = append(pt.Artifacts, name(a, ""))
	}
	for _, s := range t.Steps {
		for _, a := range s.Artifacts {
			pt.Artifacts = append(pt.Artifacts, name(a, s.Name))
		}
	}
	for _, h := range t.Verifier.Collect {
		pt.Collect = append(pt.Collect, h.Command)
	}
}
