package suiteload

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lanehq/lane/internal/bench/harbor"
)

// harborDataset writes a dataset of two tasks: good, which lane runs, and
// judged, which asks for GPUs.
func harborDataset(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	for task, toml := range map[string]string{
		"good":   "[environment]\nnetwork_mode = \"no-network\"\n[[environment.mcp_servers]]\nname = \"docs\"\nurl = \"http://docs:8000/sse\"\n",
		"judged": "[environment]\ngpus = 2\n",
	} {
		for name, content := range map[string]string{
			"task.toml": toml, "instruction.md": "Do it.\n",
			"environment/Dockerfile": "FROM scratch\n", "tests/test.sh": "#!/bin/bash\n",
		} {
			p := filepath.Join(root, task, name)
			os.MkdirAll(filepath.Dir(p), 0o755)
			if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return root
}

// A dataset with a task lane refuses is refused whole, each refusal named;
// --skip-unsupported runs the others and tells which it left out.
func TestHarborDatasetRefused(t *testing.T) {
	t.Parallel()
	dir := harborDataset(t)
	_, err := Load(context.Background(), dir, Options{})
	var re *RefusedError
	if !errors.As(err, &re) || !errors.Is(err, harbor.ErrUnsupported) {
		t.Fatalf("Load = %v, want a RefusedError", err)
	}
	for _, want := range []string{"1 of the 2 tasks in " + dir + " asks", `task "judged": [environment] gpus = 2 is not supported yet`, "--skip-unsupported"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}

	l, err := Load(context.Background(), dir, Options{SkipUnsupported: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Suite.Tasks) != 1 || l.Suite.Tasks[0].ID != "good" {
		t.Errorf("tasks %+v, want good only", l.Suite.Tasks)
	}
	if len(l.Skipped) != 1 || !strings.HasPrefix(l.Skipped[0], `task "judged": [environment] gpus = 2`) {
		t.Errorf("skipped %q", l.Skipped)
	}
}

// A dry run's plan lists every task, the refused one with its refusal.
func TestInspectHarbor(t *testing.T) {
	t.Parallel()
	p, err := Inspect(context.Background(), harborDataset(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Format != FormatHarbor || len(p.Tasks) != 2 || p.AllRun() {
		t.Fatalf("plan %+v", p)
	}
	good, judged := p.Tasks[0], p.Tasks[1]
	if good.ID != "good" || !good.Runs || good.Network != harbor.NetworkNone || good.Image != "build environment/Dockerfile" ||
		good.CheckTimeoutSec != 600 || len(good.MCPServers) != 1 || good.MCPServers[0] != "docs (sse)" {
		t.Errorf("good: %+v", good)
	}
	if judged.ID != "judged" || judged.Runs || len(judged.Refusals) != 1 || judged.Refusals[0].Key != `[environment] gpus = 2` {
		t.Errorf("judged: %+v", judged)
	}

	var text, js bytes.Buffer
	if err := p.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"good: runs\n", "judged: refused\n", `refused:   [environment] gpus = 2 is not supported yet`,
		"network:   no-network", "mcp:       docs (sse)", "2 tasks: 1 run, 1 refused, 0 not run otherwise"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text does not say %q:\n%s", want, text.String())
		}
	}
	if err := p.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back Plan
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || len(back.Tasks) != 2 || back.Tasks[1].Refusals[0].Why == "" {
		t.Errorf("JSON %v:\n%s", err, js.String())
	}
}

// A suite file's tasks all run; a broken one is an error, as for Load.
func TestInspectSuiteFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "suite.yaml")
	os.WriteFile(file, []byte("tasks:\n  - id: hello\n    prompt: say hello\n    timeout: 2m\n    check: {command: test -f hello.txt}\n"), 0o644)
	p, err := Inspect(context.Background(), file, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !p.AllRun() || len(p.Tasks) != 1 || p.Tasks[0].Folder != "empty" || p.Tasks[0].Check != "test -f hello.txt" || p.Tasks[0].AgentTimeoutSec != 120 {
		t.Errorf("plan %+v", p.Tasks)
	}
	os.WriteFile(file, []byte("tasks: 3\n"), 0o644)
	if _, err := Inspect(context.Background(), file, Options{}); err == nil {
		t.Error("a broken suite file inspected")
	}
}

// A dry run says where a separate verifier runs, what each attempt keeps
// (the task's artifacts, a service's, a step's own) and the collect
// hooks that run before they are copied out.
func TestInspectHarborVerifierAndArtifacts(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	files := map[string]string{
		"apart/task.toml": `artifacts = ["/app/out.json", { source = "/var/log/db.log", service = "db" }]
[verifier]
environment_mode = "separate"
[[verifier.collect]]
command = "git diff > /logs/artifacts/model.patch"
`,
		"apart/instruction.md":                  "Do it.\n",
		"apart/environment/Dockerfile":          "FROM scratch\n",
		"apart/environment/docker-compose.yaml": "services:\n  db:\n    image: busybox\n",
		"apart/tests/test.sh":                   "#!/bin/bash\n",
		"apart/tests/Dockerfile":                "FROM scratch\n",
		"stepped/task.toml":                     "[[steps]]\nname = \"one\"\nartifacts = [\"/app/one.txt\"]\n",
		"stepped/environment/Dockerfile":        "FROM scratch\n",
		"stepped/tests/test.sh":                 "#!/bin/bash\n",
		"stepped/steps/one/instruction.md":      "Do one.\n",
		"stepped/steps/one/solution/solve.sh":   "true\n",
	}
	for name, content := range files {
		p := filepath.Join(root, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p, err := Inspect(context.Background(), root, Options{})
	if err != nil || len(p.Tasks) != 2 || !p.AllRun() {
		t.Fatalf("plan %+v, %v", p, err)
	}
	apart, stepped := p.Tasks[0], p.Tasks[1]
	if apart.Check != "tests/test.sh in a container of its own (built from tests/), given the artifacts" ||
		strings.Join(apart.Artifacts, ", ") != "/app/out.json, /var/log/db.log (service db)" ||
		len(apart.Collect) != 1 || apart.Collect[0] != "git diff > /logs/artifacts/model.patch" {
		t.Errorf("apart: check %q, artifacts %q, collect %q", apart.Check, apart.Artifacts, apart.Collect)
	}
	if strings.Join(stepped.Artifacts, ", ") != "/app/one.txt (step one)" {
		t.Errorf("stepped: artifacts %q", stepped.Artifacts)
	}
	var text bytes.Buffer
	if err := p.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"artifacts: /app/out.json, /var/log/db.log (service db)", "collect:   git diff > /logs/artifacts/model.patch",
		"artifacts: /app/one.txt (step one)"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text does not say %q:\n%s", want, text.String())
		}
	}
}
