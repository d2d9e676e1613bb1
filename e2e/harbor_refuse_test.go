package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lanehq/lane/internal/record"
)

// refusedDataset is a Harbor dataset of two tasks: good (write-hello),
// which lane runs, and judged, write-hello that asks for GPUs and a skills
// folder.
func refusedDataset(t *testing.T) string {
	t.Helper()
	dataset := filepath.Join(t.TempDir(), "dataset")
	for _, task := range []string{"good", "judged"} {
		if err := os.CopyFS(filepath.Join(dataset, task), os.DirFS("testdata/harbor/write-hello")); err != nil {
			t.Fatal(err)
		}
	}
	judged := "schema_version = \"1.4\"\n\n" +
		"[environment]\nallow_internet = false\ngpus = 2\nskills_dir = \"/skills\"\n"
	if err := os.WriteFile(filepath.Join(dataset, "judged", "task.toml"), []byte(judged), 0o644); err != nil {
		t.Fatal(err)
	}
	return dataset
}

// A dataset with a task lane cannot run as Harbor would: lane bench
// --dry-run lists both tasks, the refused one with each key and why, and
// exits 2; lane bench refuses to start, naming the task and the keys, and
// records nothing; --skip-unsupported runs the other task.
//
// Long: suiteload's TestHarborDatasetRefused and TestInspectHarbor
// refuse and list the same in make test.
func TestHarborRefusedTaskInADatasetLong(t *testing.T) {
	t.Parallel()
	vars, base := containerVars(t)
	e := newLocalEnv(t)
	e.vars = append(e.vars, vars...)
	e.vars = append(e.vars, "LANE_DB="+e.db)
	dataset := refusedDataset(t)
	ctx := context.Background()

	r := e.lane(ctx, "bench", "--dry-run", dataset)
	wantExit(t, r, 2)
	for _, want := range []string{
		"good: runs\n", "judged: refused\n",
		`refused:   [environment] gpus = 2 is not supported yet: lane gives containers no GPU`,
		"refused:   [environment] skills_dir is not supported yet",
		"network:   no-network", "2 tasks: 1 run, 1 refused",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("dry run does not say %q:\n%s", want, r.stdout)
		}
	}
	if !strings.Contains(r.stderr, "1 of the 2 tasks of "+dataset+" would not run") {
		t.Errorf("stderr: %s", r.stderr)
	}

	r = e.lane(ctx, "bench", "--dry-run", dataset, "-o", "json")
	wantExit(t, r, 2)
	var plan struct {
		Tasks []struct {
			ID       string
			Runs     bool
			Refusals []struct{ Key, Why string }
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &plan); err != nil || len(plan.Tasks) != 2 {
		t.Fatalf("plan %v:\n%s", err, r.stdout)
	}
	if g, j := plan.Tasks[0], plan.Tasks[1]; g.ID != "good" || !g.Runs || j.ID != "judged" || j.Runs || len(j.Refusals) != 2 ||
		j.Refusals[0].Key != "[environment] gpus = 2" || j.Refusals[1].Key != "[environment] skills_dir" || j.Refusals[0].Why == "" {
		t.Errorf("plan %+v", plan.Tasks)
	}
	wantExit(t, e.lane(ctx, "bench", "--dry-run", filepath.Join(dataset, "good")), 0)

	r = e.lane(ctx, "bench", dataset, "--models", "oracle", "--build-arg", "BASE="+base)
	wantExit(t, r, 2)
	for _, want := range []string{
		"1 of the 2 tasks in " + dataset + " asks for what lane cannot do yet",
		`task "judged": [environment] gpus = 2 is not supported yet`,
		`task "judged": [environment] skills_dir is not supported yet`,
		"--skip-unsupported",
	} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("lane bench does not say %q:\n%s", want, r.stderr)
		}
	}
	st := e.openStore()
	defer st.Close()
	if benches, _ := st.ListBenches(ctx, 10); len(benches) != 0 {
		t.Fatalf("%d benches recorded for a refused dataset", len(benches))
	}

	r = e.lane(ctx, "bench", dataset, "--models", "oracle", "--build-arg", "BASE="+base, "--skip-unsupported")
	wantExit(t, r, 0)
	if !strings.Contains(r.stderr, `lane: skipped task "judged": [environment] gpus = 2`) {
		t.Errorf("the skipped task is not reported:\n%s", r.stderr)
	}
	attempts := latestBenchAttempts(t, st, 1)
	if a := attempts[0]; a.TaskID != "good" || a.Status != record.AttemptPassed {
		t.Errorf("attempt %s %s %s: %q", a.TaskID, a.Status, a.FailureKind, a.CheckOutput)
	}
}
