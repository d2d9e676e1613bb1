package harbor

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/lanehq/lane/internal/container"
)

const dataset = "testdata/dataset"

func TestLoadDataset(t *testing.T) {
	t.Parallel()
	if !IsDataset(dataset) || IsTask(dataset) {
		t.Fatalf("IsDataset(%s) = false or IsTask = true", dataset)
	}
	if !IsTask(filepath.Join(dataset, "oracle-pass")) || IsDataset(filepath.Join(dataset, "oracle-pass")) {
		t.Fatal("oracle-pass is not a task")
	}
	tasks, errs := LoadDataset(dataset)
	var names []string
	for _, task := range tasks {
		names = append(names, filepath.Base(task.Dir))
	}
	want := []string{"build-fails", "no-reward", "oracle-pass", "reward-json", "unknown-keys", "verifier-timeout"}
	if !slices.Equal(names, want) {
		t.Errorf("tasks %q, want %q", names, want)
	}
	if len(errs) != 1 {
		t.Fatalf("errors %v, want the broken task.toml's only", errs)
	}
	var pe *ParseError
	if !errors.As(errs[0], &pe) || !strings.HasSuffix(pe.File, filepath.Join("broken-toml", "task.toml")) || pe.Line != 6 {
		t.Fatalf("error %v (%#v), want a ParseError at broken-toml/task.toml:6", errs[0], pe)
	}
	if msg := errs[0].Error(); !strings.Contains(msg, "broken-toml/task.toml:6:") {
		t.Errorf("message %q does not name the file and line", msg)
	}

	_, errs = LoadDataset(t.TempDir())
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "no task folder") {
		t.Errorf("empty dataset: %v", errs)
	}
}

func load(t *testing.T, name string) *Task {
	t.Helper()
	task, err := LoadTask(filepath.Join(dataset, name))
	if err != nil {
		t.Fatal(err)
	}
	return task
}

func TestLoadTask(t *testing.T) {
	t.Parallel()
	task := load(t, "oracle-pass")
	abs, _ := filepath.Abs(filepath.Join(dataset, "oracle-pass"))
	want := &Task{
		Dir:           abs,
		Name:          "lane-test/oracle-pass",
		SchemaVersion: "1.1",
		Instruction:   "Write the word hello to `/app/hello.txt`.\n",
		Info: Info{
			Name:        "lane-test/oracle-pass",
			Description: "The oracle passes: solve.sh writes hello.txt, test.sh checks it and its own setup",
			Authors:     []Author{{Name: "Lane Tests", Email: "tests@lane.invalid"}},
			Keywords:    []string{"test"},
		},
		Metadata: Metadata{
			AuthorName: "Lane Tests", AuthorEmail: "tests@lane.invalid",
			Difficulty: "easy", Category: "testing", Tags: []string{"oracle", "reward-txt"},
			ExpertTimeEstimateMin: 1,
			All: map[string]any{
				"difficulty": "easy", "category": "testing", "tags": []any{"oracle", "reward-txt"},
				"expert_time_estimate_min": 1.0,
			},
		},
		Agent:    AgentConfig{Timeout: time.Minute},
		Verifier: VerifierConfig{Timeout: time.Minute, Env: map[string]string{"CHECK_VALUE": "expected"}, User: "agent", Mode: VerifierShared},
		Solution: SolutionConfig{Env: map[string]string{"SOLUTION_WORD": "hello"}},
		Environment: EnvironmentConfig{
			BuildTimeout: 2 * time.Minute, CPUs: 1, MemoryMB: 512, StorageMB: 1024,
			NetworkMode: NetworkNone, Workdir: "/app",
		},
		Dockerfile:  filepath.Join(abs, "environment", "Dockerfile"),
		HasSolution: true,
	}
	if !reflect.DeepEqual(task, want) {
		t.Errorf("LoadTask =\n%+v\nwant\n%+v", task, want)
	}
	if task.Environment.AllowInternet() {
		t.Error("allow_internet = false allows internet")
	}

	// Schema 1.0's spellings, and Harbor's defaults.
	task = load(t, "reward-json")
	if task.Name != "reward-json" || task.SchemaVersion != "1.0" || task.HasSolution ||
		task.Environment.CPUs != 0.5 || task.Environment.MemoryMB != 1024 || task.Environment.StorageMB != 2048 ||
		!task.Environment.AllowInternet() || task.Environment.Workdir != DefaultWorkdir ||
		task.Metadata.AuthorName != "Lane Tests" || task.Extra != nil {
		t.Errorf("reward-json: %+v", task)
	}
	task = load(t, "no-reward")
	if task.Verifier.Timeout != 30*time.Second || task.Agent.Timeout != 0 || task.Environment.BuildTimeout != DefaultBuildTimeout ||
		task.Environment.MemoryMB != DefaultMemoryMB || task.Environment.CPUs != DefaultCPUs || task.Verifier.User != "" {
		t.Errorf("no-reward: %+v", task)
	}
}

func TestLoadTaskKeepsUnknownKeys(t *testing.T) {
	t.Parallel()
	task := load(t, "unknown-keys")
	var keys []string
	for k := range task.Extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	want := []string{
		"environment.gpu_types",
		"lane_future_key", "lane_future_table", "source",
	}
	if !slices.Equal(keys, want) {
		t.Errorf("Extra keys %q, want %q", keys, want)
	}
	if task.Extra["lane_future_key"] != int64(42) || task.Extra["source"] != "lane/testdata" {
		t.Errorf("Extra values: %v", task.Extra)
	}
	if table, _ := task.Extra["lane_future_table"].(map[string]any); table["topology"] != "2x4" {
		t.Errorf("lane_future_table = %v", task.Extra["lane_future_table"])
	}
	if task.Agent.User != "1000" || task.Environment.NetworkMode != NetworkNone || task.Environment.CPUs != 2 ||
		task.Info.Version != "1.0.0" || task.Metadata.All["custom_field"] != "kept in Metadata.All" || task.Environment.OS != "linux" {
		t.Errorf("unknown-keys: %+v", task)
	}
}

// writeTask makes a task folder with the given files (path → content);
// "-" as a content removes a default file.
func writeTask(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	all := map[string]string{
		"task.toml":              "schema_version = \"1.1\"\n",
		"instruction.md":         "Do it.\n",
		"environment/Dockerfile": "FROM scratch\n",
		"tests/test.sh":          "#!/bin/bash\n",
	}
	for k, v := range files {
		all[k] = v
	}
	for name, content := range all {
		if content == "-" {
			continue
		}
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestLoadTaskErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		files   map[string]string
		line    int    // of a ParseError; 0 when another error
		message string // in the error
		is      error
	}{
		{name: "no instruction", files: map[string]string{"instruction.md": "-"}, message: "instruction.md"},
		{name: "no test.sh", files: map[string]string{"tests/test.sh": "-"}, message: "tests/test.sh is missing"},
		{name: "no environment", files: map[string]string{"environment/Dockerfile": "-"}, message: "environment/Dockerfile is missing"},
		{name: "compose syntax", files: map[string]string{"environment/docker-compose.yaml": "services:\n  db:\n    image: [\n"}, line: 3},
		{name: "service without image", files: map[string]string{"environment/docker-compose.yaml": "services:\n  db:\n    command: run\n"}, line: 3, message: "neither image nor build"},
		{name: "unknown dependency", files: map[string]string{"environment/docker-compose.yaml": "services:\n  db:\n    image: pg\n    depends_on: [cache]\n"}, message: "db depends on cache, which is not defined"},
		{name: "dependency cycle", files: map[string]string{"environment/docker-compose.yaml": "services:\n  a:\n    image: x\n    depends_on: [b]\n  b:\n    image: y\n    depends_on: [a]\n"}, message: "depend on each other"},
		{name: "build outside", files: map[string]string{"environment/docker-compose.yaml": "services:\n  db:\n    build: ../tests\n"}, line: 3, message: "outside environment/"},
		{name: "step without instruction", files: map[string]string{"task.toml": "[[steps]]\nname = \"one\"\n"}, message: `step "one": steps/one/instruction.md is missing`},
		{name: "windows", files: map[string]string{"task.toml": "[environment]\nos = \"windows\"\n"}, message: "Linux", is: ErrUnsupported},
		{name: "cpus a string", files: map[string]string{"task.toml": "schema_version = \"1.1\"\n[environment]\ncpus = \"two\"\n"}, line: 3, message: "cpus"},
		{name: "negative timeout", files: map[string]string{"task.toml": "[verifier]\n\ntimeout_sec = -5\n"}, line: 3, message: "positive number of seconds"},
		{name: "bad memory", files: map[string]string{"task.toml": "[environment]\nmemory = \"lots\"\n"}, line: 2, message: `memory: want a size like "2G", "512M" or "1024K", not "lots"`},
		{name: "zero cpus", files: map[string]string{"task.toml": "[environment]\nbuild_timeout_sec = 1\ncpus = 0\n"}, line: 3, message: "environment.cpus"},
		{name: "bad network mode", files: map[string]string{"task.toml": "[environment]\nnetwork_mode = \"lan\"\n"}, line: 2, message: "network_mode"},
		{name: "relative workdir", files: map[string]string{"task.toml": "[environment]\nworkdir = \"app\"\n"}, line: 2, message: "absolute"},
		{name: "env not a table", files: map[string]string{"task.toml": "[verifier]\nenv = 3\n"}, line: 2, message: "env"},
		{name: "syntax", files: map[string]string{"task.toml": "a = 1\nb = \n"}, line: 2},
	} {
		_, err := LoadTask(writeTask(t, tc.files))
		if err == nil {
			t.Errorf("%s: LoadTask succeeded", tc.name)
			continue
		}
		var pe *ParseError
		if got := errors.As(err, &pe); got != (tc.line > 0) || (got && pe.Line != tc.line) {
			t.Errorf("%s: error %v, want a ParseError at line %d", tc.name, err, tc.line)
		}
		if !strings.Contains(err.Error(), tc.message) || (tc.is != nil && !errors.Is(err, tc.is)) {
			t.Errorf("%s: error %q, want %q (%v)", tc.name, err, tc.message, tc.is)
		}
	}

	// A prebuilt image needs no Dockerfile.
	task, err := LoadTask(writeTask(t, map[string]string{
		"environment/Dockerfile": "-",
		"task.toml":              "[environment]\ndocker_image = \"alexgshaw/regex-log:20251031\"\n",
	}))
	if err != nil || task.Dockerfile != "" || task.Environment.DockerImage != "alexgshaw/regex-log:20251031" {
		t.Errorf("docker_image task: %+v, %v", task, err)
	}
}

func TestParseSizes(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]int{"2G": 2048, "512M": 512, "1.5g": 1536, "2048K": 2, "4Gi": 4096, "1GB": 1024} {
		if got, err := parseSizeMB(in); err != nil || got != want {
			t.Errorf("parseSizeMB(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "2", "G", "-1G", "twoG"} {
		if _, err := parseSizeMB(in); err == nil {
			t.Errorf("parseSizeMB(%q) succeeded", in)
		}
	}
}

func TestParseReward(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		file, data string
		want       float64
		values     map[string]float64
		bad        bool
	}{
		{file: RewardText, data: "1\n", want: 1, values: map[string]float64{"reward": 1}},
		{file: RewardText, data: " 0.25 ", want: 0.25, values: map[string]float64{"reward": 0.25}},
		{file: RewardText, data: "", bad: true},
		{file: RewardText, data: "passed", bad: true},
		{file: RewardText, data: "NaN", bad: true},
		{file: RewardJSON, data: `{"reward": 0.5}`, want: 0.5, values: map[string]float64{"reward": 0.5}},
		{file: RewardJSON, data: `{"reward": 1, "style": 0}`, want: 1, values: map[string]float64{"reward": 1, "style": 0}},
		// No "reward" key: every key is kept, and none is made up from them.
		{file: RewardJSON, data: `{"a": 0.25, "b": 0.75, "c": true}`, want: 0, values: map[string]float64{"a": 0.25, "b": 0.75, "c": 1}},
		{file: RewardJSON, data: "", bad: true},
		{file: RewardJSON, data: "\n", bad: true},
		{file: RewardJSON, data: `{}`, bad: true},
		{file: RewardJSON, data: `[1]`, bad: true},
		{file: RewardJSON, data: `0.5`, bad: true},
		{file: RewardJSON, data: `{"reward": "high"}`, bad: true},
		{file: RewardJSON, data: `{"reward": "1"}`, bad: true},
		{file: RewardJSON, data: `{"reward": null}`, bad: true},
		{file: RewardJSON, data: `{"reward": 1, "parts": {"a": 1}}`, bad: true},
		{file: RewardJSON, data: `{"reward": [1]}`, bad: true},
		{file: RewardJSON, data: `{"reward": 1`, bad: true},
	} {
		r, err := ParseReward(tc.file, []byte(tc.data))
		if tc.bad {
			if !errors.Is(err, ErrBadReward) {
				t.Errorf("ParseReward(%s, %q) = %+v, %v; want ErrBadReward", tc.file, tc.data, r, err)
			}
			continue
		}
		if err != nil || r.Value != tc.want || !reflect.DeepEqual(r.Values, tc.values) || r.File != tc.file {
			t.Errorf("ParseReward(%s, %q) = %+v, %v; want %v %v", tc.file, tc.data, r, err, tc.want, tc.values)
		}
	}
}

func TestExpandEnv(t *testing.T) {
	t.Parallel()
	task := &Task{
		Name:        "t",
		Verifier:    VerifierConfig{Env: map[string]string{"KEY": "${JUDGE_KEY:-test}", "URL": "http://${HOST}/v1", "PLAIN": "x"}},
		Environment: EnvironmentConfig{Env: map[string]string{"E": "${MISSING:-}"}},
	}
	if _, err := envList(task.Verifier.Env, "[verifier] env"); err == nil || !strings.Contains(err.Error(), "ExpandEnv") {
		t.Errorf("envList of unexpanded values: %v", err)
	}
	getenv := func(k string) string { return map[string]string{"HOST": "judge.example"}[k] }
	if err := task.ExpandEnv(getenv); err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"KEY": "test", "URL": "http://judge.example/v1", "PLAIN": "x"}; !reflect.DeepEqual(task.Verifier.Env, want) {
		t.Errorf("verifier env %v, want %v", task.Verifier.Env, want)
	}
	if task.Environment.Env["E"] != "" {
		t.Errorf("environment env %v", task.Environment.Env)
	}
	list, err := envList(task.Verifier.Env, "[verifier] env")
	if err != nil || !slices.Equal(list, []string{"KEY=test", "PLAIN=x", "URL=http://judge.example/v1"}) {
		t.Errorf("envList = %q, %v", list, err)
	}
	bad := &Task{Name: "t", Solution: SolutionConfig{Env: map[string]string{"K": "${NOT_SET}"}}}
	if err := bad.ExpandEnv(getenv); err == nil || !strings.Contains(err.Error(), "NOT_SET") {
		t.Errorf("ExpandEnv of an unset variable: %v", err)
	}
}

func TestImageTag(t *testing.T) {
	t.Parallel()
	dir := writeTask(t, map[string]string{"task.toml": "[task]\nname = \"Org/Some Task!\"\n"})
	task, err := LoadTask(dir)
	if err != nil {
		t.Fatal(err)
	}
	tag, err := ImageTag(task)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(tag, "lane-harbor/org-some-task:") {
		t.Errorf("tag %q", tag)
	}
	if again, _ := ImageTag(task); again != tag {
		t.Errorf("tag changed: %s, then %s", tag, again)
	}
	task.BuildArgs = map[string]string{"BASE": "x"}
	withArg, _ := ImageTag(task)
	os.WriteFile(filepath.Join(dir, "environment", "Dockerfile"), []byte("FROM other\n"), 0o644)
	changed, _ := ImageTag(task)
	if withArg == tag || changed == withArg {
		t.Errorf("tags %s, %s, %s: a build argument or a changed Dockerfile must change the tag", tag, withArg, changed)
	}
}

func TestQualify(t *testing.T) {
	t.Parallel()
	// An engine that has no image at all.
	e := &container.Engine{Bin: "/bin/false"}
	for in, want := range map[string]string{
		"alexgshaw/regex-log:20251031": "docker.io/alexgshaw/regex-log:20251031",
		"ubuntu:24.04":                 "docker.io/library/ubuntu:24.04",
		"ghcr.io/org/img:1":            "ghcr.io/org/img:1",
		"localhost/lane:1":             "localhost/lane:1",
		"registry:5000/img":            "registry:5000/img",
	} {
		if got := qualify(t.Context(), e, in); got != want {
			t.Errorf("qualify(%q) = %q, want %q", in, got, want)
		}
	}
}

// A compose file's main service folds into the task; the others become
// services in the order they start, each read in compose's spellings.
func TestLoadTaskWithServices(t *testing.T) {
	t.Parallel()
	task, err := LoadTask("testdata/compose/web-service")
	if err != nil {
		t.Fatal(err)
	}
	if task.Environment.Env["ANSWER_URL"] != "http://answers:8080/answer.txt" || task.Environment.AllowInternet() {
		t.Errorf("main's environment %v, internet %v", task.Environment.Env, task.Environment.AllowInternet())
	}
	if len(task.Services) != 1 {
		t.Fatalf("services %+v", task.Services)
	}
	svc := task.Services[0]
	abs, _ := filepath.Abs("testdata/compose/web-service/environment/answers")
	if svc.Name != "answers" || svc.Build == nil || svc.Build.Context != abs || svc.Build.Dockerfile != filepath.Join(abs, "Dockerfile") || svc.Build.Args["WORD"] != "forty-two" {
		t.Errorf("service %+v, build %+v", svc, svc.Build)
	}
	if !slices.Equal(svc.Command, []string{"httpd", "-f", "-p", "8080", "-h", "/www"}) {
		t.Errorf("command %q", svc.Command)
	}
	if h := svc.Health; h == nil || !slices.Equal(h.Test, []string{"wget", "-q", "-O", "/dev/null", "http://127.0.0.1:8080/answer.txt"}) || h.Deadline() != 60*time.Second {
		t.Errorf("healthcheck %+v", h)
	}
	if !slices.Equal(task.ComposeIgnored, []string{"services.answers.ports"}) {
		t.Errorf("ignored %q", task.ComposeIgnored)
	}

	dir := writeTask(t, map[string]string{"environment/docker-compose.yaml": `
services:
  web:
    image: nginx
    depends_on: [db]
    entrypoint: ["/bin/sh", "-c"]
    command: 'echo "a b" c\ d'
    environment: [A=1, B]
    healthcheck: {test: ["CMD-SHELL", "curl -f localhost"], start_period: 5s}
  db:
    image: postgres:15
    environment: {POSTGRES_PASSWORD: "${PGPASS:-secret}"}
    healthcheck: {test: ["NONE"]}
`})
	task, err = LoadTask(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(task.Services) != 2 || task.Services[0].Name != "db" || task.Services[1].Name != "web" {
		t.Fatalf("services in order %+v", task.Services)
	}
	db, web := task.Services[0], task.Services[1]
	if db.Health != nil || db.Image != "postgres:15" {
		t.Errorf("db %+v", db)
	}
	if !slices.Equal(web.Entrypoint, []string{"/bin/sh", "-c"}) || !slices.Equal(web.Command, []string{"echo", "a b", "c d"}) ||
		web.Env["A"] != "1" || web.Env["B"] != "" || len(web.Env) != 2 {
		t.Errorf("web %+v", web)
	}
	if h := web.Health; h == nil || !slices.Equal(h.Test, []string{"sh", "-c", "curl -f localhost"}) || h.Deadline() != 5*time.Second+3*30*time.Second {
		t.Errorf("web's healthcheck %+v", h)
	}
	if err := task.ExpandEnv(func(string) string { return "" }); err != nil || task.Services[0].Env["POSTGRES_PASSWORD"] != "secret" {
		t.Errorf("ExpandEnv: %v; db's env %v", err, task.Services[0].Env)
	}
}
