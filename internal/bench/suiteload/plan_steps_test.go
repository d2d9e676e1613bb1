package suiteload

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// A dry run of a multi-step task says it runs, names its steps and where
// each is verified, and has an oracle only when every step has a solution.
func TestInspectHarborSteps(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	for name, content := range map[string]string{
		"task.toml":                 "multi_step_reward_strategy = \"final\"\n[[steps]]\nname = \"a\"\n[[steps]]\nname = \"b\"\n[steps.verifier]\nenvironment_mode = \"separate\"\n",
		"environment/Dockerfile":    "FROM scratch\n",
		"tests/test.sh":             "#!/bin/bash\n",
		"steps/a/instruction.md":    "a\n",
		"steps/a/solution/solve.sh": "true\n",
		"steps/b/instruction.md":    "b\n",
		"steps/b/tests/Dockerfile":  "FROM scratch\n",
	} {
		p := filepath.Join(root, "ledger", name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p, err := Inspect(context.Background(), root, Options{})
	if err != nil || len(p.Tasks) != 1 {
		t.Fatalf("plan %+v, %v", p, err)
	}
	task := p.Tasks[0]
	if want := "2 steps in one container, scored by the last step's rewards: a, b (a verifier of its own)"; !task.Runs || task.Check != want || task.Oracle {
		t.Errorf("task runs %v, check %q (want %q), oracle %v", task.Runs, task.Check, want, task.Oracle)
	}
}
