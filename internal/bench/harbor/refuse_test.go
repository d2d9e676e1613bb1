package harbor

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Every feature of Harbor's format lane cannot carry out refuses the task
// when it loads, naming the task and the key as task.toml spells it; what
// changes nothing here loads.
func TestLoadTaskRefuses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		toml string
		keys []string // refused; none: the task loads
	}{
		{name: "windows", toml: "[environment]\nos = \"windows\"\n", keys: []string{`[environment] os = "windows"`}},
		{name: "gpus", toml: "[environment]\ngpus = 1\ngpu_types = [\"H100\"]\n", keys: []string{"[environment] gpus = 1"}},
		{name: "tpu", toml: "[environment.tpu]\ntype = \"v6e\"\ntopology = \"2x4\"\n", keys: []string{"[environment.tpu]"}},
		{name: "skills", toml: "[environment]\nskills_dir = \"/skills\"\n", keys: []string{"[environment] skills_dir"}},
		{name: "several", toml: "[environment]\ngpus = 2\nskills_dir = \"/skills\"\n",
			keys: []string{"[environment] gpus = 2", "[environment] skills_dir"}},

		// What lane does anyway, or what changes no figure.
		{name: "linux", toml: "[environment]\nos = \"Linux\"\n"},
		{name: "healthcheck", toml: "[environment.healthcheck]\ncommand = \"test -f /ready\"\n"},
		{name: "mcp servers", toml: "[[environment.mcp_servers]]\nname = \"docs\"\nurl = \"http://docs:8000/sse\"\n"},
		{name: "shared verifier", toml: "[verifier]\nenvironment_mode = \"shared\"\n"},
		{name: "collect hooks", toml: "[[verifier.collect]]\ncommand = \"git diff > /logs/artifacts/model.patch\"\n"},
		{name: "artifacts", toml: "artifacts = [\"/app/out.json\"]\n"},
		{name: "artifact tables", toml: "[[artifacts]]\nsource = \"/app/out\"\nexclude = [\"*.log\"]\n"},
		{name: "empty lists", toml: "artifacts = []\n[environment]\nmcp_servers = []\nallowed_hosts = []\n"},
		{name: "no gpu", toml: "[environment]\ngpus = 0\n"},
		{name: "storage", toml: "[environment]\nstorage_mb = 1\n"},
		{name: "allowlist", toml: "[environment]\nnetwork_mode = \"allowlist\"\nallowed_hosts = [\"PyPI.org.\"]\n"},
		{name: "phase networks", toml: "[environment]\nallow_internet = false\n[agent]\nnetwork_mode = \"allowlist\"\nallowed_hosts = [\"api.github.com\"]\n[verifier]\nnetwork_mode = \"public\"\n"},
	} {
		dir := writeTask(t, map[string]string{"task.toml": tc.toml})
		task, err := LoadTask(dir)
		if len(tc.keys) == 0 {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
			continue
		}
		var ue *UnsupportedError
		if task != nil || !errors.Is(err, ErrUnsupported) || !errors.As(err, &ue) {
			t.Errorf("%s: LoadTask = %v, %v; want an UnsupportedError", tc.name, task, err)
			continue
		}
		var keys []string
		for _, r := range ue.Refusals {
			keys = append(keys, r.Key)
		}
		if !slices.Equal(keys, tc.keys) {
			t.Errorf("%s: refused %q, want %q", tc.name, keys, tc.keys)
		}
		name := filepath.Base(dir)
		for i, line := range strings.Split(err.Error(), "\n") {
			if want := `task "` + name + `": ` + tc.keys[min(i, len(tc.keys)-1)] + " is not supported yet: "; !strings.HasPrefix(line, want) {
				t.Errorf("%s: line %q, want it to start %q", tc.name, line, want)
			}
		}
	}
}

// The refusals say what lane would do instead.
func TestRefusalMessages(t *testing.T) {
	t.Parallel()
	dir := writeTask(t, map[string]string{"task.toml": "[task]\nname = \"org/judged\"\n[environment]\ngpus = 2\n"})
	_, err := LoadTask(dir)
	want := `task "org/judged" (folder ` + filepath.Base(dir) + `): [environment] gpus = 2 is not supported yet: lane gives containers no GPU`
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("error %v, want %q", err, want)
	}
	_, err = LoadTask(writeTask(t, map[string]string{"task.toml": "[environment]\nos = \"windows\"\n"}))
	if err == nil || !strings.Contains(err.Error(), "Linux") {
		t.Errorf("windows: %v", err)
	}
}

// Inspect gives a refused task as far as it can be read, with its
// refusals.
func TestInspect(t *testing.T) {
	t.Parallel()
	dir := writeTask(t, map[string]string{
		"task.toml":      "[environment]\nnetwork_mode = \"no-network\"\nskills_dir = \"/skills\"\n",
		"tests/test.sh":  "-",
		"instruction.md": "-",
	})
	task, refused, err := Inspect(dir)
	if err != nil || task == nil || len(refused) != 1 || refused[0].Key != "[environment] skills_dir" {
		t.Fatalf("Inspect = %+v, %v, %v", task, refused, err)
	}
	if task.Dockerfile != filepath.Join(task.Dir, "environment", "Dockerfile") || task.Environment.NetworkMode != NetworkNone {
		t.Errorf("task %+v", task)
	}

	task, refused, err = Inspect(writeTask(t, nil))
	if err != nil || task == nil || refused != nil {
		t.Errorf("a task lane runs: %+v, %v, %v", task, refused, err)
	}
	if _, _, err = Inspect(writeTask(t, map[string]string{"tests/test.sh": "-"})); err == nil {
		t.Error("a broken task inspected without error")
	}
}

// A dataset of a task lane runs and one it refuses loads the first and
// reports the second, naming its key.
func TestLoadDatasetRefuses(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	for name, dir := range map[string]string{"good": writeTask(t, nil), "judged": writeTask(t, map[string]string{
		"task.toml": "[environment]\ngpus = 2\n",
	})} {
		if err := os.CopyFS(filepath.Join(root, name), os.DirFS(dir)); err != nil {
			t.Fatal(err)
		}
	}
	tasks, errs := LoadDataset(root)
	if len(tasks) != 1 || tasks[0].Name != "good" {
		t.Errorf("tasks %+v, want good's", tasks)
	}
	if len(errs) != 1 || !errors.Is(errs[0], ErrUnsupported) ||
		!strings.Contains(errs[0].Error(), `task "judged": [environment] gpus = 2`) {
		t.Errorf("errors %v, want judged's refusal", errs)
	}
}
