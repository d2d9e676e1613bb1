package e2e

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/lanehq/lane/internal/record"
)

// Harbor's retry rules on Harbor tasks, with a real engine: a solution
// that fails (an error of the attempt Harbor retries) is run again in a
// fresh container, each retry counted on the attempt; a verifier that runs
// out of time is not (Harbor's default exclusion). lane bench --resume
// --rerun verifier_timeout then runs that attempt alone again.
func TestBenchHarborRetriesAndResumeRerun(t *testing.T) {
	t.Parallel()
	vars, base := containerVars(t)
	e := newLocalEnv(t)
	e.vars = append(e.vars, vars...)
	dataset := filepath.Join(t.TempDir(), "dataset")
	write := func(name, content string, mode os.FileMode) {
		t.Helper()
		p := filepath.Join(dataset, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
	}
	for _, task := range []string{"solution-fails", "verifier-hangs"} {
		write(task+"/task.toml", "schema_version = \"1.1\"\n\n[verifier]\ntimeout_sec = 3\n\n[environment]\nallow_internet = false\nworkdir = \"/app\"\n", 0o644)
		write(task+"/instruction.md", "Write hello.txt.\n", 0o644)
		write(task+"/environment/Dockerfile", "ARG BASE=lane-test-base\nFROM ${BASE}\n", 0o644)
	}
	write("solution-fails/solution/solve.sh", "#!/bin/bash\necho the solution fails >&2\nexit 3\n", 0o755)
	write("solution-fails/tests/test.sh", "#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n", 0o755)
	write("verifier-hangs/solution/solve.sh", "#!/bin/bash\ntrue\n", 0o755)
	write("verifier-hangs/tests/test.sh", "#!/bin/bash\nsleep 300\n", 0o755)

	r := e.lane(context.Background(), "bench", dataset, "--models", "oracle", "--build-arg", "BASE="+base,
		"--retries", "2", "-o", "json")
	wantExit(t, r, 0)
	st := e.openStore()
	defer st.Close()
	b, attempts := onlyBenchAttempts(t, st, 2)
	got := map[string]record.Attempt{}
	for _, a := range attempts {
		got[a.TaskID] = a
	}
	if a := got["solution-fails"]; a.Status != record.AttemptErrored || a.FailureKind != "oracle_failed" || a.Retries != 2 {
		t.Errorf("solution-fails: %s %q, %d retries; want errored oracle_failed, retried twice", a.Status, a.FailureKind, a.Retries)
	}
	if a := got["verifier-hangs"]; a.Status != record.AttemptErrored || a.FailureKind != "verifier_timeout" || a.Retries != 0 {
		t.Errorf("verifier-hangs: %s %q, %d retries; want errored verifier_timeout, not retried", a.Status, a.FailureKind, a.Retries)
	}

	// The verifier is mended, and given the time a loaded machine may take
	// to start it; --rerun verifier_timeout runs that attempt alone again.
	write("verifier-hangs/tests/test.sh", "#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n", 0o755)
	write("verifier-hangs/task.toml", "schema_version = \"1.1\"\n\n[verifier]\ntimeout_sec = 120\n\n[environment]\nallow_internet = false\nworkdir = \"/app\"\n", 0o644)
	r = e.lane(context.Background(), "bench", "--resume", b.ID[:8], "--rerun", "verifier_timeout", "-o", "json")
	wantExit(t, r, 0)
	_, after := onlyBenchAttempts(t, st, 2)
	for _, a := range after {
		was := got[a.TaskID]
		switch a.TaskID {
		case "verifier-hangs":
			if a.Status != record.AttemptPassed || !a.StartedAt.After(was.StartedAt) {
				t.Errorf("verifier-hangs after --rerun verifier_timeout: %s %q started %v (was %v)", a.Status, a.FailureKind, a.StartedAt, was.StartedAt)
			}
		default:
			if !a.StartedAt.Equal(was.StartedAt) || a.Retries != was.Retries || a.FailureKind != was.FailureKind {
				t.Errorf("%s ran again: %+v, was %+v", a.TaskID, a, was)
			}
		}
	}
}
