package bench

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/lanehq/lane/internal/container"
	"github.com/lanehq/lane/internal/record"
	"github.com/lanehq/lane/internal/store"
	"github.com/lanehq/lane/internal/testkit/containertest"
)

// writeStepTask writes a Harbor task of files (path: content) into a
// folder named name, FROM the test base image: /app open to every user,
// and a marker of the agent's image at /opt/agent-image.
func writeStepTask(t testing.TB, name string, files map[string]string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	all := map[string]string{
		"environment/Dockerfile": "ARG BASE\nFROM ${BASE}\nRUN mkdir -p /app /opt && chmod 777 /app && touch /opt/agent-image\n",
	}
	for k, v := range files {
		all[k] = v
	}
	for p, content := range all {
		p = filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// threeSteps is a task of three steps that each append their name to
// /app/log.txt (step three by the task's own solve.sh). Step one uploads a
// workdir whose setup.sh runs as the agent user; the task's test.sh scores
// steps one and three on reward.json; step two's own tests/ score it 0.5
// on reward.txt, which counts only if /logs/verifier was emptied of step
// one's reward.json, and only if step one's files are still there. Step
// three's setup.sh makes what its healthcheck waits for, and its test
// fails if step two's tests/ were left in /tests.
func threeSteps(strategy string) map[string]string {
	return map[string]string{
		"task.toml": `schema_version = "1.4"
multi_step_reward_strategy = "` + strategy + `"
[environment]
allow_internet = false
workdir = "/app"
[verifier]
timeout_sec = 60
env = { WANT = "task" }

[[steps]]
name = "one"
[steps.agent]
user = "agent"
[steps.verifier]
env = { STEP = "one" }

[[steps]]
name = "two"

[[steps]]
name = "three"
[steps.verifier]
env = { STEP = "three" }
[steps.healthcheck]
command = "test -f /app/three-ready"
interval_sec = 0.2
retries = 2
`,
		"steps/one/instruction.md":     "Write one.\n",
		"steps/one/workdir/seed.txt":   "seeded\n",
		"steps/one/workdir/setup.sh":   "cp seed.txt count.txt && id -un > /app/setup-user\n",
		"steps/one/solution/solve.sh":  "echo one >> /app/log.txt\n",
		"steps/two/instruction.md":     "Write two.\n",
		"steps/two/solution/solve.sh":  "echo two >> /app/log.txt\n",
		"steps/two/tests/only-two.txt": "\n",
		"steps/two/tests/test.sh": `ok=0.5
grep -qx seeded /app/count.txt || ok=0
grep -qx agent /app/setup-user || ok=0
[ "$(cat /app/log.txt | tr '\n' ' ')" = "one two " ] || ok=0
echo $ok > /logs/verifier/reward.txt
`,
		"steps/three/instruction.md":   "Write three.\n",
		"steps/three/workdir/setup.sh": "touch /app/three-ready\n",
		"solution/solve.sh":            "echo three >> /app/log.txt\n",
		"tests/test.sh": `if grep -qx "$STEP" /app/log.txt && [ "$WANT" = task ] && [ ! -e /tests/only-two.txt ]; then
  echo '{"reward": 1, "style": 0.5}' > /logs/verifier/reward.json
else
  echo '{"reward": 0}' > /logs/verifier/reward.json
fi
`,
	}
}

// runStepTasks runs tasks (name: folder) with models, the agents' runs
// made by agent (nil: none), and returns their attempts by task/model/n.
func runStepTasks(t *testing.T, tasks map[string]string, models []string, agent *fakeAgent, session string) map[string]record.Attempt {
	t.Helper()
	st, id := runStepBench(t, tasks, models, agent, session)
	return attemptsOf(t, st, id)
}

// runStepBench runs tasks as runStepTasks does, their artifacts stored,
// and returns the store and the bench's id.
func runStepBench(t *testing.T, tasks map[string]string, models []string, agent *fakeAgent, session string) (*store.Store, string) {
	t.Helper()
	eng := containertest.Engine(t)
	base := containertest.BaseImage(t, eng)
	st := openStore(t)
	suite := &Suite{Name: "steps", Dir: t.TempDir()}
	for name, dir := range tasks {
		suite.Tasks = append(suite.Tasks, Task{ID: name, Prompt: "p", SetupTimeout: time.Minute,
			Container: &ContainerTask{Dir: dir, BuildArgs: map[string]string{"BASE": base}, PassReward: 1, StepSession: session}})
	}
	run := func(context.Context, RunSpec) (*record.Run, error) { return nil, fmt.Errorf("no agent") }
	if agent != nil {
		agent.st, run = st, agent.run
	}
	bn, err := Run(context.Background(), Config{Suite: suite, Models: models, Parallel: 2, Store: st,
		WorkDir: t.TempDir(), Engine: eng, Run: run, PutBlob: st.PutBlob})
	if err != nil {
		t.Fatal(err)
	}
	return st, bn.ID
}

func stepNames(a record.Attempt) []string {
	var names []string
	for _, s := range a.Steps {
		names = append(names, fmt.Sprintf("%s:%s:%s", s.Name, s.Status, s.FailureKind))
	}
	return names
}

// The three-step task under the oracle: each step's workdir, setup.sh,
// healthcheck, solution and tests, files kept from one step to the next,
// and the rewards rolled up by mean and by final, as computed by hand.
func TestStepsMeanAndFinal(t *testing.T) {
	t.Parallel()
	attempts := runStepTasks(t, map[string]string{
		"mean":  writeStepTask(t, "mean", threeSteps("mean")),
		"final": writeStepTask(t, "final", threeSteps("final")),
	}, []string{OracleModel}, nil, "")
	wantSteps := []record.AttemptStep{
		{Name: "one", Status: record.AttemptPassed, Reward: new(1.0), Rewards: map[string]float64{"reward": 1, "style": 0.5}},
		{Name: "two", Status: record.AttemptFailed, FailureKind: FailCheck, Reward: new(0.5), Rewards: map[string]float64{"reward": 0.5}},
		{Name: "three", Status: record.AttemptPassed, Reward: new(1.0), Rewards: map[string]float64{"reward": 1, "style": 0.5}},
	}
	mean := attempts["mean/oracle/1"]
	if !reflect.DeepEqual(mean.Steps, wantSteps) {
		t.Fatalf("mean's steps = %+v\nwant %+v\n%s", mean.Steps, wantSteps, mean.CheckOutput)
	}
	// reward (1 + 0.5 + 1) / 3, style (0.5 + 0 + 0.5) / 3: step two wrote no style.
	if mean.Status != record.AttemptFailed || mean.Reward == nil || math.Abs(*mean.Reward-2.5/3) > 1e-9 ||
		math.Abs(mean.Rewards["style"]-1.0/3) > 1e-9 || len(mean.Rewards) != 2 {
		t.Errorf("mean: %s reward %v %v", mean.Status, mean.Reward, mean.Rewards)
	}
	final := attempts["final/oracle/1"]
	if !reflect.DeepEqual(final.Steps, wantSteps) {
		t.Errorf("final's steps = %+v", final.Steps)
	}
	if final.Status != record.AttemptPassed || final.Reward == nil || *final.Reward != 1 ||
		!reflect.DeepEqual(final.Rewards, map[string]float64{"reward": 1, "style": 0.5}) {
		t.Errorf("final: %s reward %v %v\n%s", final.Status, final.Reward, final.Rewards, final.CheckOutput)
	}
	if !strings.Contains(final.CheckOutput, "[lane: step 3 of 3: three]") {
		t.Errorf("output without the steps' headings:\n%s", final.CheckOutput)
	}
}

// A step below its min_reward ends the attempt: a number gates "reward"
// (0.25 at 0.25 passes), a table each key it names (a missing one is
// below); the step after never runs, and the reward is the mean of the
// steps that ran.
func TestStepsMinRewardGate(t *testing.T) {
	t.Parallel()
	task := writeStepTask(t, "gate", map[string]string{
		"task.toml": `[environment]
allow_internet = false
[[steps]]
name = "a"
min_reward = 0.25
[[steps]]
name = "b"
min_reward = { reward = 0, quality = 0.5 }
[[steps]]
name = "c"
`,
		"steps/a/instruction.md":    "a\n",
		"steps/a/tests/test.sh":     "echo 0.25 > /logs/verifier/reward.txt\n",
		"steps/b/instruction.md":    "b\n",
		"steps/b/tests/test.sh":     "echo '{\"reward\": 1}' > /logs/verifier/reward.json\n",
		"steps/c/instruction.md":    "c\n",
		"steps/c/tests/test.sh":     "echo 1 > /logs/verifier/reward.txt\n",
		"solution/solve.sh":         "true\n",
		"steps/c/solution/solve.sh": "exit 9\n", // never runs
	})
	attempts := runStepTasks(t, map[string]string{"gate": task}, []string{OracleModel}, nil, "")
	a := attempts["gate/oracle/1"]
	if got := stepNames(a); !reflect.DeepEqual(got, []string{"a:failed:check_failed", "b:failed:below_min_reward"}) {
		t.Fatalf("steps %v\n%s", got, a.CheckOutput)
	}
	if !strings.Contains(a.Steps[1].Error, "quality = -Inf, below its min_reward 0.5") {
		t.Errorf("gate's error %q", a.Steps[1].Error)
	}
	// (0.25 + 1) / 2.
	if a.Status != record.AttemptFailed || a.FailureKind != FailCheck || a.Reward == nil || *a.Reward != 0.625 {
		t.Errorf("attempt %s %s reward %v", a.Status, a.FailureKind, a.Reward)
	}
}

// A step whose setup.sh fails ends the attempt as an error of the
// environment, its output kept; its agent never runs.
func TestStepsSetupFails(t *testing.T) {
	t.Parallel()
	task := writeStepTask(t, "setup", map[string]string{
		"task.toml":                    "[environment]\nallow_internet = false\n[[steps]]\nname = \"one\"\n[[steps]]\nname = \"two\"\n",
		"steps/one/instruction.md":     "one\n",
		"steps/two/instruction.md":     "two\n",
		"steps/two/workdir/setup.sh":   "echo cannot set up the database >&2\nexit 3\n",
		"steps/two/solution/solve.sh":  "exit 9\n",
		"steps/one/solution/solve.sh":  "true\n",
		"tests/test.sh":                "echo 1 > /logs/verifier/reward.txt\n",
		"steps/two/workdir/readme.txt": "\n",
	})
	attempts := runStepTasks(t, map[string]string{"setup": task}, []string{OracleModel}, nil, "")
	a := attempts["setup/oracle/1"]
	if got := stepNames(a); !reflect.DeepEqual(got, []string{"one:passed:", "two:errored:environment_error"}) {
		t.Fatalf("steps %v\n%s", got, a.CheckOutput)
	}
	if e := a.Steps[1].Error; !strings.Contains(e, "steps/two/workdir/setup.sh exited with status 3") || !strings.Contains(e, "cannot set up the database") {
		t.Errorf("step two's error %q", e)
	}
	if a.Status != record.AttemptErrored || a.FailureKind != FailEnvironment || a.Reward != nil ||
		!strings.Contains(a.CheckOutput, "cannot set up the database") {
		t.Errorf("attempt %s %s reward %v:\n%s", a.Status, a.FailureKind, a.Reward, a.CheckOutput)
	}
}

// A step with a verifier of its own, built from its tests/, sees only
// /logs/artifacts of the agent's container: the reward its solution
// planted and the wrong answer in /app do not count. The agent's container
// runs on for the next step, whose shared verifier finds step one's files.
// Long: TestStepsArtifacts runs a separate step verifier and its reward
// hack in make test.
func TestStepsSeparateVerifierLong(t *testing.T) {
	t.Parallel()
	task := writeStepTask(t, "separate", map[string]string{
		"task.toml": `[environment]
allow_internet = false
[[steps]]
name = "one"
[[steps]]
name = "two"
[steps.verifier]
environment_mode = "separate"
[[steps]]
name = "three"
`,
		"steps/one/instruction.md":    "one\n",
		"steps/one/solution/solve.sh": "echo one > /app/one.txt\n",
		"steps/two/instruction.md":    "two\n",
		"steps/two/solution/solve.sh": "echo 41 > /app/answer.txt\necho 42 > /logs/artifacts/answer.txt\nmkdir -p /logs/verifier && echo 1 > /logs/verifier/reward.txt\n",
		"steps/two/tests/Dockerfile":  "ARG BASE\nFROM ${BASE}\nCOPY test.sh /tests/test.sh\n",
		"steps/two/tests/test.sh": `r=0
[ "$(cat /logs/artifacts/answer.txt)" = 42 ] && [ ! -e /opt/agent-image ] && [ ! -e /app/one.txt ] && r=0.75
mkdir -p /logs/verifier && echo $r > /logs/verifier/reward.txt
`,
		"steps/three/instruction.md":    "three\n",
		"steps/three/solution/solve.sh": "true\n",
		"tests/test.sh":                 "if [ -f /app/one.txt ] && [ -f /opt/agent-image ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt\n",
	})
	attempts := runStepTasks(t, map[string]string{"separate": task}, []string{OracleModel}, nil, "")
	a := attempts["separate/oracle/1"]
	var rewards []float64
	for _, s := range a.Steps {
		if s.Reward != nil {
			rewards = append(rewards, *s.Reward)
		}
	}
	if !reflect.DeepEqual(rewards, []float64{1, 0.75, 1}) {
		t.Fatalf("steps %v rewards %v\n%s", stepNames(a), rewards, a.CheckOutput)
	}
}

// An agent on each step's instruction, in the task's container: a fresh
// session each step by default; with --step-session continue, each step
// after the first resumes the run before it. Each step records its run,
// and the attempt adds up their cost.
func TestStepsAgentSessions(t *testing.T) {
	t.Parallel()
	files := threeSteps("mean")
	files["task.toml"] = strings.Replace(files["task.toml"], "[steps.agent]\nuser = \"agent\"\n", "", 1)
	files["steps/two/tests/test.sh"] = "echo 1 > /logs/verifier/reward.txt\n"
	task := writeStepTask(t, "agent", files)
	for _, session := range []string{StepSessionFresh, StepSessionContinue} {
		t.Run(session, func(t *testing.T) {
			t.Parallel()
			agent := &fakeAgent{act: func(ctx context.Context, spec RunSpec) outcome {
				word := strings.TrimSuffix(strings.TrimPrefix(spec.Prompt, "Write "), ".\n")
				_, _ = spec.Container.Exec(ctx, container.ExecSpec{Argv: []string{"sh", "-c", "echo " + word + " >> /app/log.txt"}})
				return outcome{cost: 0.5}
			}}
			attempts := runStepTasks(t, map[string]string{"agent": task}, []string{"fake"}, agent, session)
			a := attempts["agent/fake/1"]
			if got := stepNames(a); !reflect.DeepEqual(got, []string{"one:passed:", "two:passed:", "three:passed:"}) {
				t.Fatalf("steps %v\n%s", got, a.CheckOutput)
			}
			if len(agent.specs) != 3 || a.CostUSD != 1.5 || a.RunID != a.Steps[2].RunID {
				t.Fatalf("%d runs, cost %v, run %s", len(agent.specs), a.CostUSD, a.RunID)
			}
			for i, spec := range agent.specs {
				want := ""
				if session == StepSessionContinue && i > 0 {
					want = a.Steps[i-1].RunID
				}
				got := ""
				if spec.Resume != nil {
					got = spec.Resume.ID
				}
				if got != want || a.Steps[i].RunID == "" || spec.Dir != "/app" {
					t.Errorf("step %d resumed %q, want %q (run %q, dir %s)", i+1, got, want, a.Steps[i].RunID, spec.Dir)
				}
			}
		})
	}
}
