package harbor

import (
	"errors"
	"math"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// stepsTOML is a three-step task: the first step takes [agent] and
// [verifier] as they are but for an env key, the second overrides each,
// the third has a verifier of its own built from its tests/.
const stepsTOML = `schema_version = "1.4"
multi_step_reward_mode = "per-step"

[agent]
timeout_sec = 100
user = "agent"

[verifier]
timeout_sec = 900
user = "checker"
env = { A = "task", B = "task" }

[[steps]]
name = "one"
min_reward = 0.5
[steps.verifier]
env = { B = "step" }

[[steps]]
name = "two"
min_reward = { reward = 1, style = 0.5 }
[steps.agent]
timeout_sec = 30
user = 1000
[steps.verifier]
timeout_sec = 20.5
user = "judge"
[steps.healthcheck]
command = "test -f ready"
retries = 1

[[steps]]
name = "three"
[steps.verifier]
environment_mode = "separate"
`

func TestLoadSteps(t *testing.T) {
	t.Parallel()
	dir := writeTask(t, map[string]string{
		"task.toml":                      stepsTOML,
		"instruction.md":                 "-", // a multi-step task's root one is not read
		"solution/solve.sh":              "echo root\n",
		"steps/one/instruction.md":       "Do one.\n",
		"steps/one/workdir/setup.sh":     "touch ready\n",
		"steps/one/workdir/data.txt":     "1\n",
		"steps/two/instruction.md":       "Do two.\n",
		"steps/two/tests/test.sh":        "echo 1 > /logs/verifier/reward.txt\n",
		"steps/two/solution/solve.sh":    "echo two\n",
		"steps/three/instruction.md":     "Do three.\n",
		"steps/three/tests/Dockerfile":   "FROM scratch\n",
		"steps/three/tests/test.sh":      "echo 1 > /logs/verifier/reward.txt\n",
		"steps/three/workdir/notes.md":   "no setup here\n",
		"steps/unused/instruction.md":    "Not a step of the task.\n",
		"steps/three/solution/README.md": "no solve.sh\n",
	})
	task, err := LoadTask(dir)
	if err != nil {
		t.Fatal(err)
	}
	dir = task.Dir
	if !task.HasSteps() || task.StepRewards != StepsMean || task.Instruction != "" || task.Extra != nil {
		t.Errorf("task: steps %d, rewards %q, instruction %q, extra %v", len(task.Steps), task.StepRewards, task.Instruction, task.Extra)
	}
	step := func(name string) string { return filepath.Join(dir, "steps", name) }
	want := []Step{{
		Name: "one", Dir: step("one"), Instruction: "Do one.\n",
		Agent:           AgentConfig{Timeout: 100 * time.Second, User: "agent"},
		Verifier:        VerifierConfig{Timeout: DefaultVerifierTimeout, User: "checker", Mode: VerifierShared, Env: map[string]string{"A": "task", "B": "step"}},
		VerifierContext: filepath.Join(dir, "tests"),
		MinReward:       map[string]float64{"reward": 0.5},
		Workdir:         filepath.Join(step("one"), "workdir"), Setup: true,
		Solution: filepath.Join(dir, "solution"),
	}, {
		Name: "two", Dir: step("two"), Instruction: "Do two.\n",
		Agent:           AgentConfig{Timeout: 30 * time.Second, User: "1000"},
		Verifier:        VerifierConfig{Timeout: 20500 * time.Millisecond, User: "judge", Mode: VerifierShared, Env: map[string]string{"A": "task", "B": "task"}},
		VerifierContext: filepath.Join(step("two"), "tests"),
		MinReward:       map[string]float64{"reward": 1, "style": 0.5},
		Healthcheck: &Healthcheck{Command: "test -f ready", Interval: DefaultHealthInterval, Timeout: DefaultHealthTimeout,
			StartInterval: DefaultHealthStartInterval, Retries: 1},
		Tests:    filepath.Join(step("two"), "tests"),
		Solution: filepath.Join(step("two"), "solution"),
	}, {
		Name: "three", Dir: step("three"), Instruction: "Do three.\n",
		Agent: AgentConfig{Timeout: 100 * time.Second, User: "agent"},
		Verifier: VerifierConfig{Timeout: DefaultVerifierTimeout, User: "checker", Mode: VerifierSeparate, Env: map[string]string{"A": "task", "B": "task"},
			Dockerfile: filepath.Join(step("three"), "tests", "Dockerfile")},
		VerifierContext: filepath.Join(step("three"), "tests"),
		Tests:           filepath.Join(step("three"), "tests"),
		Workdir:         filepath.Join(step("three"), "workdir"),
		Solution:        filepath.Join(step("three"), "solution"),
	}}
	if len(task.Steps) != len(want) {
		t.Fatalf("%d steps, want %d", len(task.Steps), len(want))
	}
	for i := range want {
		if !reflect.DeepEqual(task.Steps[i], want[i]) {
			t.Errorf("step %d =\n%+v\nwant\n%+v", i+1, task.Steps[i], want[i])
		}
	}
	if !task.Steps[2].Separate() || task.Steps[0].Separate() {
		t.Error("Separate says otherwise than environment_mode")
	}
}

// A task's separate verifier is each step's, but for a step that says
// shared; a step's [steps.verifier.environment] makes its own separate,
// built from the task's tests/ when the step has none.
func TestStepVerifierModes(t *testing.T) {
	t.Parallel()
	task, err := LoadTask(writeTask(t, map[string]string{
		"task.toml": `multi_step_reward_strategy = "final"
[verifier]
environment_mode = "separate"
[verifier.environment]
docker_image = "verifier:1"
[[steps]]
name = "a"
[[steps]]
name = "b"
[steps.verifier]
environment_mode = "shared"
[[steps]]
name = "c"
[steps.verifier.environment]
cpus = 2
`,
		"tests/Dockerfile":       "FROM scratch\n",
		"steps/a/instruction.md": "a\n",
		"steps/b/instruction.md": "b\n",
		"steps/c/instruction.md": "c\n",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if task.StepRewards != StepsFinal {
		t.Errorf("strategy %q", task.StepRewards)
	}
	a, b, c := task.Steps[0], task.Steps[1], task.Steps[2]
	if !a.Separate() || a.Verifier.Environment == nil || a.Verifier.Environment.DockerImage != "verifier:1" {
		t.Errorf("a: %+v", a.Verifier)
	}
	if b.Separate() || b.Verifier.Environment != nil {
		t.Errorf("b: %+v", b.Verifier)
	}
	if !c.Separate() || c.Verifier.Environment == nil || c.Verifier.Environment.CPUs != 2 ||
		c.Verifier.Dockerfile != filepath.Join(task.Dir, "tests", "Dockerfile") {
		t.Errorf("c: %+v", c.Verifier)
	}
}

func TestLoadStepsErrors(t *testing.T) {
	t.Parallel()
	step := func(toml string) map[string]string {
		return map[string]string{"task.toml": "[[steps]]\nname = \"one\"\n" + toml, "steps/one/instruction.md": "Do it.\n"}
	}
	for _, tc := range []struct {
		name    string
		files   map[string]string
		line    int // of a ParseError; 0 when another error
		message string
		is      error
	}{
		{name: "strategy", files: map[string]string{"task.toml": "multi_step_reward_strategy = \"median\"\n"}, line: 1, message: `"median" is neither mean nor final`},
		{name: "no name", files: map[string]string{"task.toml": "[[steps]]\n[steps.agent]\ntimeout_sec = 5\n"}, message: "step 1 has no name"},
		{name: "path as name", files: map[string]string{"task.toml": "[[steps]]\nname = \"../up\"\n"}, message: `"../up" is not a folder's name`},
		{name: "twice", files: step("[[steps]]\nname = \"one\"\n"), message: `"one" names two steps`},
		{name: "min_reward a string", files: step("min_reward = \"high\"\n"), line: 3, message: `(step "one") want a number`},
		{name: "min_reward key a string", files: step("min_reward = { reward = \"x\" }\n"), line: 3, message: "reward = x is not a number"},
		{name: "healthcheck without command", files: step("[steps.healthcheck]\nretries = 2\n"), message: `steps.healthcheck.command: (step "one") is required`},
		{name: "shared with a table", files: step("[steps.verifier]\nenvironment_mode = \"shared\"\n[steps.verifier.environment]\ncpus = 1\n"),
			message: `steps.verifier.environment_mode: (step "one") "shared"`},
		{name: "no test.sh", files: map[string]string{"task.toml": "[[steps]]\nname = \"one\"\n", "tests/test.sh": "-", "steps/one/instruction.md": "x"},
			message: `step "one": neither steps/one/tests/test.sh nor tests/test.sh`},
		{name: "separate without a Dockerfile", files: step("[steps.verifier]\nenvironment_mode = \"separate\"\n"),
			message: `step "one": its verifier runs in an environment of its own, but tests/Dockerfile is missing`},
		{name: "agent's hosts without an allowlist", files: step("[steps.agent]\nallowed_hosts = [\"pypi.org\"]\n"),
			message: `steps.agent.allowed_hosts: (step "one") only an allowlist has allowed hosts`},
		{name: "verifier's bad mode", files: step("[steps.verifier]\nnetwork_mode = \"open\"\n"),
			message: `steps.verifier.network_mode: (step "one") "open" is none of public, no-network, allowlist`},
		{name: "artifacts with ..", files: step("artifacts = [\"/app/../etc\"]\n"), message: `steps.artifacts: (step "one")`},
		{name: "separate compose", files: map[string]string{"task.toml": "[[steps]]\nname = \"one\"\n[steps.verifier]\nenvironment_mode = \"separate\"\n",
			"steps/one/instruction.md": "x", "steps/one/tests/docker-compose.yaml": "services: {}\n"},
			message: "steps/one/tests/docker-compose.yaml: a compose file", is: ErrUnsupported},
	} {
		_, err := LoadTask(writeTask(t, tc.files))
		if err == nil {
			t.Errorf("%s: LoadTask succeeded", tc.name)
			continue
		}
		var pe *ParseError
		if tc.line > 0 && (!errors.As(err, &pe) || pe.Line != tc.line) {
			t.Errorf("%s: error %v, want a ParseError at line %d", tc.name, err, tc.line)
		}
		if !strings.Contains(err.Error(), tc.message) || (tc.is != nil && !errors.Is(err, tc.is)) {
			t.Errorf("%s: error %q, want %q (%v)", tc.name, err, tc.message, tc.is)
		}
	}
}

// The roll-up of hand-computed step rewards: mean is per key over the
// steps verified, a missing key counting 0; final is the last step's.
func TestStepRewardsOf(t *testing.T) {
	t.Parallel()
	steps := []map[string]float64{{"reward": 1, "style": 0.5}, nil, {"reward": 0.5}, {"reward": 0, "style": 1}}
	for _, tc := range []struct {
		strategy string
		steps    []map[string]float64
		want     map[string]float64
		ok       bool
	}{
		// (1 + 0.5 + 0) / 3 and (0.5 + 0 + 1) / 3: the unverified step is left out.
		{StepsMean, steps, map[string]float64{"reward": 0.5, "style": 0.5}, true},
		{StepsFinal, steps, map[string]float64{"reward": 0, "style": 1}, true},
		{StepsMean, steps[:1], map[string]float64{"reward": 1, "style": 0.5}, true},
		{StepsFinal, steps[:2], nil, false},
		{StepsMean, []map[string]float64{nil, nil}, nil, false},
		{StepsMean, nil, nil, false},
	} {
		got, ok := StepRewardsOf(tc.strategy, tc.steps)
		if ok != tc.ok || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s of %v = %v, %v; want %v, %v", tc.strategy, tc.steps, got, ok, tc.want, tc.ok)
		}
	}
}

// A number gates "reward"; a table gates each key it names, a missing key
// counting as below.
func TestBelowMinReward(t *testing.T) {
	t.Parallel()
	number := Step{MinReward: map[string]float64{"reward": 0.5}}
	table := Step{MinReward: map[string]float64{"reward": 1, "style": 0.5}}
	for _, tc := range []struct {
		step    Step
		rewards map[string]float64
		key     string
		value   float64
	}{
		{number, map[string]float64{"reward": 0.5}, "", 0},
		{number, map[string]float64{"reward": 0.49}, "reward", 0.49},
		{number, map[string]float64{"style": 1}, "reward", math.Inf(-1)},
		{table, map[string]float64{"reward": 1, "style": 0.5, "extra": 0}, "", 0},
		{table, map[string]float64{"reward": 1, "style": 0.25}, "style", 0.25},
		{table, map[string]float64{"reward": 1}, "style", math.Inf(-1)},
		{table, nil, "reward", math.Inf(-1)},
		{Step{}, nil, "", 0},
	} {
		key, _, value, below := tc.step.BelowMinReward(tc.rewards)
		if below != (tc.key != "") || key != tc.key || (below && value != tc.value) {
			t.Errorf("%v against %v: %q %v %v; want %q %v", tc.step.MinReward, tc.rewards, key, value, below, tc.key, tc.value)
		}
	}
}

// ExpandEnv expands the host variables of each step's verifier env, the
// task's laid under it.
func TestExpandStepEnv(t *testing.T) {
	t.Parallel()
	task, err := LoadTask(writeTask(t, map[string]string{
		"task.toml":                "[verifier]\nenv = { KEY = \"${LANE_KEY}\" }\n[[steps]]\nname = \"one\"\n[steps.verifier]\nenv = { MODE = \"${LANE_MODE:-strict}\" }\n",
		"steps/one/instruction.md": "x\n",
	}))
	if err != nil {
		t.Fatal(err)
	}
	getenv := func(k string) string { return map[string]string{"LANE_KEY": "sk-1"}[k] }
	if err := task.ExpandEnv(getenv); err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"KEY": "sk-1", "MODE": "strict"}; !reflect.DeepEqual(task.Steps[0].Verifier.Env, want) {
		t.Errorf("step env %v, want %v", task.Steps[0].Verifier.Env, want)
	}
}

// A step's network and artifacts: [steps.agent] and [steps.verifier]
// network_mode / allowed_hosts give that step's phases their networks,
// else [agent]'s and [verifier]'s, else [environment]'s; a step's
// artifacts are its own, beside the task's.
func TestStepNetworksAndArtifacts(t *testing.T) {
	t.Parallel()
	task, err := LoadTask(writeTask(t, map[string]string{
		"task.toml": `artifacts = ["/app/log.txt"]
[environment]
network_mode = "no-network"
[agent]
network_mode = "allowlist"
allowed_hosts = ["PyPI.org"]
[[steps]]
name = "offline"
artifacts = [{ source = "/app/out", destination = "out", exclude = ["*.tmp"] }]
[steps.agent]
network_mode = "no-network"
[steps.verifier]
network_mode = "public"
[[steps]]
name = "inherits"
`,
		"tests/test.sh": "exit 0\n", "steps/offline/instruction.md": "one", "steps/inherits/instruction.md": "two",
	}))
	if err != nil {
		t.Fatal(err)
	}
	off, inh := task.StepTask(&task.Steps[0]), task.StepTask(&task.Steps[1])
	for _, tc := range []struct {
		name      string
		got, want NetworkSpec
	}{
		{"offline's agent", off.AgentNetwork(), NetworkSpec{Mode: NetworkNone}},
		{"offline's verifier", off.VerifierNetwork(), NetworkSpec{Mode: NetworkPublic}},
		{"inherited agent", inh.AgentNetwork(), NetworkSpec{Mode: NetworkAllowlist, Hosts: []string{"pypi.org"}}},
		{"inherited verifier", inh.VerifierNetwork(), NetworkSpec{Mode: NetworkNone}},
	} {
		if !tc.got.Equal(tc.want) {
			t.Errorf("%s network %v, want %v", tc.name, tc.got, tc.want)
		}
	}
	if p := planNetwork(task); !p.own || !p.allowlist {
		t.Errorf("plan %+v: the steps' phases differ and one is an allowlist, so the container needs a network of its own and the proxy", p)
	}
	want := []Artifact{{Source: "/app/out", Destination: "out", Exclude: []string{"*.tmp"}}}
	if got := task.Steps[0].Artifacts; !reflect.DeepEqual(got, want) || task.Steps[1].Artifacts != nil {
		t.Errorf("steps' artifacts %+v and %+v, want %+v and none", got, task.Steps[1].Artifacts, want)
	}
	if len(task.Artifacts) != 1 || task.Artifacts[0].Source != "/app/log.txt" {
		t.Errorf("task's artifacts %+v, want /app/log.txt", task.Artifacts)
	}
}
