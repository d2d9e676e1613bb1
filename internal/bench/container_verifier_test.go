package bench

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/lanehq/lane/internal/record"
	"github.com/lanehq/lane/internal/testkit/containertest"
)

// Harbor tasks whose verifier runs in an environment of its own, under
// the oracle: the one whose solution writes a wrong answer and plants a
// lying cat and a reward of 1 in its container fails with reward 0; the
// one whose answer is right, in /logs/artifacts, passes. Long: e2e's
// TestHarborSeparateVerifier runs the same through lane bench in make test.
func TestContainerAttemptWithASeparateVerifierLong(t *testing.T) {
	t.Parallel()
	eng := containertest.Engine(t)
	base := containertest.BaseImage(t, eng)
	st := openStore(t)
	suite := &Suite{Name: "separate", Dir: t.TempDir()}
	for _, name := range []string{"hack", "right"} {
		dir, _ := filepath.Abs(filepath.Join("harbor/testdata/separate", name))
		suite.Tasks = append(suite.Tasks, Task{ID: name, Prompt: "p", SetupTimeout: time.Minute,
			Container: &ContainerTask{Dir: dir, BuildArgs: map[string]string{"BASE": base}, PassReward: 1}})
	}
	bn, err := Run(context.Background(), Config{Suite: suite, Models: []string{OracleModel}, Parallel: 2, Store: st,
		WorkDir: t.TempDir(), Engine: eng, Run: func(context.Context, RunSpec) (*record.Run, error) { return nil, fmt.Errorf("no agent") }})
	if err != nil {
		t.Fatal(err)
	}
	attempts := attemptsOf(t, st, bn.ID)
	if a := attempts["hack/oracle/1"]; a.Status != record.AttemptFailed || a.FailureKind != FailCheck || a.Reward == nil || *a.Reward != 0 {
		t.Errorf("hack: %s %s reward %v: %q", a.Status, a.FailureKind, a.Reward, a.CheckOutput)
	}
	if a := attempts["right/oracle/1"]; a.Status != record.AttemptPassed || a.Reward == nil || *a.Reward != 1 {
		t.Errorf("right: %s %s reward %v: %q", a.Status, a.FailureKind, a.Reward, a.CheckOutput)
	}
}
