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
