package harbor

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Strategies of multi_step_reward_strategy: how a multi-step task's
// reward comes from its steps' rewards.
const (
	// StepsMean is each reward key's mean over the steps that were
	// verified, a key a step's verifier did not write counting 0 for it
	// (Harbor's default for a task with steps).
	StepsMean = "mean"
	// StepsFinal is the rewards of the last step that ran.
	StepsFinal = "final"
)

// StepsDir is the folder of a multi-step task's steps: StepsDir/<name>/.
const StepsDir = "steps"

// Step is one of a multi-step task's [[steps]], read with its folder
// steps/<name>/ and with what it leaves out taken from the task, as Harbor
// resolves it: the agent runs on its instruction in the task's one
// container, after its workdir/ is uploaded and its setup.sh has run, and
// its own verifier scores it.
type Step struct {
	Name string // [[steps]] name
	Dir  string // steps/<name>/, absolute
	// Instruction is steps/<name>/instruction.md, verbatim.
	Instruction string
	// Agent is [steps.agent] timeout_sec, user and network (network_mode
	// with allowed_hosts), each else [agent]'s.
	Agent AgentConfig
	// Verifier is the step's verifier: [steps.verifier] timeout_sec, else
	// Harbor's default (a step's verifier table has its own default, which
	// [verifier] timeout_sec does not change); env laid over [verifier]
	// env; user, else [verifier]'s; environment_mode, else separate when
	// [steps.verifier.environment] is given, else the task's mode; for a
	// separate verifier, [steps.verifier.environment], else
	// [verifier.environment], else none (a copy of [environment]), and the
	// Dockerfile of VerifierContext.
	Verifier VerifierConfig
	// VerifierContext is the folder a separate verifier's image is built
	// from: steps/<name>/tests/ if it exists, else tests/.
	VerifierContext string
	// MinReward gates the steps after this one: the attempt ends when a
	// key of it is below its threshold, or missing, in the step's
	// rewards. A number in task.toml gates RewardKey. Nil: no gate.
	MinReward map[string]float64
	// Healthcheck is [steps.healthcheck], run after the step's setup.sh
	// and before its agent; nil when none.
	Healthcheck *Healthcheck
	// Artifacts are the step's own artifacts, collected after its agent
	// with the task's.
	Artifacts []Artifact

	// Tests is steps/<name>/tests/ if it exists, else "": uploaded over
	// the task's tests/ for a shared verifier.
	Tests string
	// Workdir is steps/<name>/workdir/ if it exists, else "": uploaded into
	// the container's working folder before the step. Setup says whether
	// it holds setup.sh, run there before the step's agent.
	Workdir string
	Setup   bool
	// Solution is the oracle's folder for the step: steps/<name>/solution/
	// if it exists (its solve.sh may still be missing), else the task's
	// solution/ if it holds solve.sh, else "".
	Solution string
}

// Separate says whether the step's verifier runs in an environment of its
// own.
func (s *Step) Separate() bool { return s.Verifier.Mode == VerifierSeparate }

// HasSteps says whether t is a multi-step task.
func (t *Task) HasSteps() bool { return len(t.Steps) > 0 }

// rawStep is one [[steps]] entry as decoded.
type rawStep struct {
	Name  *string `toml:"name"`
	Agent struct {
		TimeoutSec   *seconds  `toml:"timeout_sec"`
		User         user      `toml:"user"`
		NetworkMode  *string   `toml:"network_mode"`
		AllowedHosts *[]string `toml:"allowed_hosts"`
	} `toml:"agent"`
	Verifier struct {
		TimeoutSec      *seconds          `toml:"timeout_sec"`
		Env             map[string]string `toml:"env"`
		User            user              `toml:"user"`
		EnvironmentMode *string           `toml:"environment_mode"`
		Environment     *rawEnvironment   `toml:"environment"`
		NetworkMode     *string           `toml:"network_mode"`
		AllowedHosts    *[]string         `toml:"allowed_hosts"`
	} `toml:"verifier"`
	MinReward   rawValue        `toml:"min_reward"`
	Healthcheck *rawHealthcheck `toml:"healthcheck"`
	Artifacts   rawValue        `toml:"artifacts"`
}

// rawValue is a value of task.toml as the TOML library decodes it, kept
// whole (its keys count as decoded, so that none lands in Task.Extra).
type rawValue struct{ v any }

func (r *rawValue) UnmarshalTOML(v any) error {
	r.v = v
	return nil
}

// steps reads the [[steps]] and multi_step_reward_strategy into t (their folders are read later,
// by loadSteps); fail makes the error of a key whose value is wrong.
func (t *Task) steps(steps []rawStep, strategy *string, fail func(key, format string, args ...any) error) error {
	if strategy != nil {
		switch *strategy {
		case StepsMean, StepsFinal:
			t.StepRewards = *strategy
		default:
			return fail("multi_step_reward_strategy", "%q is neither %s nor %s", *strategy, StepsMean, StepsFinal)
		}
	}
	if len(steps) == 0 {
		return nil
	}
	if t.StepRewards == "" {
		t.StepRewards = StepsMean
	}
	seen := map[string]bool{}
	for i, rs := range steps {
		s, err := t.step(i, rs, fail)
		if err != nil {
			return err
		}
		if seen[s.Name] {
			return fail("steps.name", "%q names two steps", s.Name)
		}
		seen[s.Name] = true
		t.Steps = append(t.Steps, s)
	}
	return nil
}

// step is the i'th [[steps]] entry rs, with what it leaves out taken from
// t (whose [agent] and [verifier] are read already).
func (t *Task) step(i int, rs rawStep, fail func(key, format string, args ...any) error) (Step, error) {
	if rs.Name == nil || strings.TrimSpace(*rs.Name) == "" {
		return Step{}, fail("steps.name", "step %d has no name (it names its folder steps/<name>/)", i+1)
	}
	name := *rs.Name
	if name == "." || name == ".." || strings.ContainsAny(name, `/\`) {
		return Step{}, fail("steps.name", "%q is not a folder's name in steps/", name)
	}
	// Errors of the step's keys name the step; their line is the first
	// step's, which is as near as keyLine can tell.
	stepFail := func(key, format string, args ...any) error {
		return fail(key, "(step %q) "+format, append([]any{name}, args...)...)
	}
	// healthcheck and verifierMode name their keys as [environment]'s
	// and [verifier]'s.
	healthFail := func(key, format string, args ...any) error {
		return stepFail("steps."+strings.TrimPrefix(key, "environment."), format, args...)
	}
	verifierFail := func(key, format string, args ...any) error {
		return stepFail("steps."+key, format, args...)
	}
	s := Step{
		Name: name,
		Agent: AgentConfig{Timeout: rs.Agent.TimeoutSec.duration(t.Agent.Timeout), User: cmp.Or(string(rs.Agent.User), t.Agent.User),
			Network: t.Agent.Network},
	}
	network, err := phaseNetwork("steps.agent", rs.Agent.NetworkMode, rs.Agent.AllowedHosts, stepFail)
	if err != nil {
		return Step{}, err
	}
	if network != nil {
		s.Agent.Network = network
	}
	if s.Artifacts, err = ParseArtifacts(rs.Artifacts.v); err != nil {
		return Step{}, stepFail("steps.artifacts", "%w", err)
	}
	if s.Verifier, err = t.stepVerifier(rs, verifierFail); err != nil {
		return Step{}, err
	}
	if s.MinReward, err = minReward(rs.MinReward.v, stepFail); err != nil {
		return Step{}, err
	}
	if s.Healthcheck, err = healthcheck(rs.Healthcheck, healthFail); err != nil {
		return Step{}, err
	}
	return s, nil
}

// stepVerifier is the verifier of the step rs, as Step.Verifier says.
func (t *Task) stepVerifier(rs rawStep, fail func(key, format string, args ...any) error) (VerifierConfig, error) {
	rv := rs.Verifier
	v := VerifierConfig{
		Timeout: rv.TimeoutSec.duration(DefaultVerifierTimeout),
		User:    cmp.Or(string(rv.User), t.Verifier.User),
		Mode:    t.Verifier.Mode,
		Network: t.Verifier.Network,
	}
	// fail prefixes "steps." to a key, which phaseNetwork's table has.
	unprefixed := func(key, format string, args ...any) error {
		return fail(strings.TrimPrefix(key, "steps."), format, args...)
	}
	network, err := phaseNetwork("steps.verifier", rv.NetworkMode, rv.AllowedHosts, unprefixed)
	if err != nil {
		return VerifierConfig{}, err
	}
	if network != nil {
		v.Network = network
	}
	if len(t.Verifier.Env) > 0 || len(rv.Env) > 0 {
		v.Env = maps.Clone(t.Verifier.Env)
		if v.Env == nil {
			v.Env = map[string]string{}
		}
		maps.Copy(v.Env, rv.Env)
	}
	// The step's own setting first, then the task's (already in Mode).
	view := &Task{}
	if err := view.verifierMode(rv.EnvironmentMode, rv.Environment, fail); err != nil {
		return VerifierConfig{}, err
	}
	if rv.EnvironmentMode != nil || rv.Environment != nil {
		v.Mode = view.Verifier.Mode
	}
	if v.Mode == VerifierSeparate {
		v.Environment = cmp.Or(view.Verifier.Environment, t.Verifier.Environment)
	}
	return v, nil
}

// minReward reads min_reward: a number gates RewardKey, a table of numbers
// each key it names.
func minReward(v any, fail func(key, format string, args ...any) error) (map[string]float64, error) {
	num := func(x any) (float64, bool) {
		switch n := x.(type) {
		case int64:
			return float64(n), true
		case float64:
			return n, !math.IsNaN(n)
		}
		return 0, false
	}
	switch x := v.(type) {
	case nil:
		return nil, nil
	case map[string]any:
		out := make(map[string]float64, len(x))
		for k, val := range x {
			n, ok := num(val)
			if !ok {
				return nil, fail("steps.min_reward", "%s = %v is not a number", k, val)
			}
			out[k] = n
		}
		return out, nil
	}
	if n, ok := num(v); ok {
		return map[string]float64{RewardKey: n}, nil
	}
	return nil, fail("steps.min_reward", "want a number, or a table of reward keys and numbers, not %v", v)
}

// loadSteps reads each step's folder steps/<name>/ of the task folder dir:
// its instruction.md (required), tests/, workdir/ (and setup.sh in it) and
// solution/, and, for a separate verifier, its image's Dockerfile. A step
// a shared verifier scores needs a test.sh, its own or the task's.
func (t *Task) loadSteps(dir string) error {
	rootTests := filepath.Join(dir, "tests")
	rootSolution := filepath.Join(dir, "solution")
	for i := range t.Steps {
		s := &t.Steps[i]
		s.Dir = filepath.Join(dir, StepsDir, s.Name)
		b, err := os.ReadFile(filepath.Join(s.Dir, "instruction.md"))
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("step %q: %s/%s/instruction.md is missing", s.Name, StepsDir, s.Name)
			}
			return fmt.Errorf("step %q: %w", s.Name, err)
		}
		s.Instruction = string(b)
		if d := filepath.Join(s.Dir, "tests"); isDir(d) {
			s.Tests = d
		}
		if d := filepath.Join(s.Dir, "workdir"); isDir(d) {
			s.Workdir, s.Setup = d, isFile(filepath.Join(d, "setup.sh"))
		}
		switch d := filepath.Join(s.Dir, "solution"); {
		case isDir(d):
			s.Solution = d
		case isFile(filepath.Join(rootSolution, "solve.sh")):
			s.Solution = rootSolution
		}
		s.VerifierContext = cmp.Or(s.Tests, rootTests)
		if err := t.loadStepVerifier(s, rootTests); err != nil {
			return err
		}
	}
	return nil
}

// loadStepVerifier checks that step s can be verified: a shared verifier
// needs a test.sh (the step's, else the task's), a separate one a
// Dockerfile in its build context or a docker_image.
func (t *Task) loadStepVerifier(s *Step, rootTests string) error {
	rel := func(p string) string {
		r, err := filepath.Rel(t.Dir, p)
		if err != nil {
			return p
		}
		return filepath.ToSlash(r)
	}
	if !s.Separate() {
		if !isFile(filepath.Join(s.Dir, "tests", "test.sh")) && !isFile(filepath.Join(rootTests, "test.sh")) {
			return fmt.Errorf("step %q: neither %s/%s/tests/test.sh nor tests/test.sh is there to verify it", s.Name, StepsDir, s.Name)
		}
		return nil
	}
	for _, name := range composeFiles {
		if isFile(filepath.Join(s.VerifierContext, name)) {
			return fmt.Errorf("step %q: %s/%s: a compose file for a separate verifier is %w yet", s.Name, rel(s.VerifierContext), name, ErrUnsupported)
		}
	}
	if df := filepath.Join(s.VerifierContext, "Dockerfile"); isFile(df) {
		s.Verifier.Dockerfile = df
	}
	if s.Verifier.Dockerfile == "" && t.stepVerifierEnvironment(s).DockerImage == "" {
		return fmt.Errorf("step %q: its verifier runs in an environment of its own, but %s/Dockerfile is missing and its environment names no docker_image", s.Name, rel(s.VerifierContext))
	}
	return nil
}

// stepVerifierEnvironment is the environment step s's separate verifier
// runs in: its own, else a copy of [environment].
func (t *Task) stepVerifierEnvironment(s *Step) EnvironmentConfig {
	if s.Verifier.Environment != nil {
		return *s.Verifier.Environment
	}
	return t.Environment
}

// StepTask is t as step s runs: its instruction, its agent's settings,
// its verifier, and no steps. Verify, RunOracle and the separate
// verifier's functions take it for the step.
func (t *Task) StepTask(s *Step) *Task {
	st := *t
	st.Instruction = s.Instruction
	st.Agent = s.Agent
	st.Verifier = s.Verifier
	st.Steps = nil
	return &st
}

// StepRewardsOf rolls the rewards of the steps that ran up into the
// attempt's, by strategy (StepsMean or StepsFinal): each element of
// verified is a step's rewards, nil for a step that was not verified. ok is
// false when there is nothing to roll up: no step verified (mean), or the
// last step not verified (final), or no key at all.
func StepRewardsOf(strategy string, verified []map[string]float64) (map[string]float64, bool) {
	if len(verified) == 0 {
		return nil, false
	}
	if strategy == StepsFinal {
		last := verified[len(verified)-1]
		return maps.Clone(last), last != nil
	}
	var steps []map[string]float64
	keys := map[string]bool{}
	for _, r := range verified {
		if r == nil {
			continue
		}
		steps = append(steps, r)
		for k := range r {
			keys[k] = true
		}
	}
	if len(keys) == 0 {
		return nil, false
	}
	out := make(map[string]float64, len(keys))
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		sum := 0.0
		for _, r := range steps {
			sum += r[k] // a key the step did not write counts 0
		}
		out[k] = sum / float64(len(steps))
	}
	return out, true
}

// BelowMinReward is the first key (in order of name) of step s's
// min_reward that rewards, the step's, falls short of, with its threshold
// and value (math.Inf(-1) when rewards lack the key); ok is false when the
// step passes its gate, or has none.
func (s *Step) BelowMinReward(rewards map[string]float64) (key string, threshold, value float64, ok bool) {
	for _, k := range slices.Sorted(maps.Keys(s.MinReward)) {
		v, has := rewards[k]
		if !has {
			v = math.Inf(-1)
		}
		if v < s.MinReward[k] {
			return k, s.MinReward[k], v, true
		}
	}
	return "", 0, 0, false
}

// stepEnvTables are the env tables of t's steps, for ExpandEnv: each
// step's verifier env (the task's laid under it) and its verifier's own
// environment's.
func (t *Task) stepEnvTables() []struct {
	name string
	env  map[string]string
} {
	var out []struct {
		name string
		env  map[string]string
	}
	for _, s := range t.Steps {
		out = append(out, struct {
			name string
			env  map[string]string
		}{fmt.Sprintf("step %s [verifier] env", s.Name), s.Verifier.Env})
		if ve := s.Verifier.Environment; ve != nil && ve != t.Verifier.Environment {
			out = append(out, struct {
				name string
				env  map[string]string
			}{fmt.Sprintf("step %s [verifier.environment] env", s.Name), ve.Env})
		}
	}
	return out
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}
