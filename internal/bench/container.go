package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/lanehq/lane/internal/bench/harbor"
	"github.com/lanehq/lane/internal/container"
	"github.com/lanehq/lane/internal/record"
)

// ContainerTask is a task that runs in a container of its own: a Harbor
// task (Terminal-Bench 2 and the rest of its format). Its image is built
// from the task's environment (once per content), the agent works inside
// the container, and the task's verifier scores the attempt with a reward.
type ContainerTask struct {
	Dir string `json:"dir"` // the Harbor task folder, absolute
	// Blob is the digest of the task folder as stored for lane workers
	// (a worker unpacks it rather than read Dir, which it may not have).
	Blob string `json:"blob,omitempty"`
	// BuildArgs are passed to the image's build (lane bench --build-arg).
	BuildArgs map[string]string `json:"build_args,omitempty"`
	// PassReward is the reward at or above which an attempt passed.
	PassReward float64 `json:"pass_reward"`
	// PassKey is the key of the verifier's reward that PassReward is
	// compared with ("": harbor.RewardKey, "reward").
	PassKey string `json:"pass_key,omitempty"`
	// StepSession is how a multi-step task's agent meets each step after
	// the first: StepSessionFresh ("" too) or StepSessionContinue.
	StepSession string `json:"step_session,omitempty"`
}

// Failure kinds of a container task's errored attempt.
const (
	FailNoEngine     = "no_container_engine"
	FailImage        = "image_build_failed"
	FailStart        = "container_start_failed"
	FailVerifierTime = "verifier_timeout"
	FailNoReward     = "no_reward"
	FailBadReward    = "bad_reward"
	FailTaskFormat   = "task_unreadable"
)

// Mounts says what an agent run of model needs mounted into the
// attempt's container (the runtime's binary, lane's own for forwarding),
// besides the attempt's share folder, at the same paths as on the host.
type Mounts func(model, share string) ([]container.Mount, error)

// runContainerAttempt is one attempt of a container task: build, start,
// the agent or the oracle inside, then the verifier's reward.
func runContainerAttempt(ctx context.Context, env AttemptEnv, task *Task, a *record.Attempt) {
	if env.Engine == nil {
		errorAttempt(a, FailNoEngine, "no container engine (Podman or Docker) on this machine")
		return
	}
	dir, cleanup, err := containerTaskDir(ctx, env, task.Container)
	if err != nil {
		failAttempt(a, FailSetup, err.Error(), -1)
		return
	}
	defer cleanup()
	ht, err := harbor.LoadTask(dir)
	if err == nil {
		err = ht.ExpandEnv(os.Getenv)
	}
	if err != nil {
		errorAttempt(a, FailTaskFormat, err.Error())
		return
	}
	ht.BuildArgs = task.Container.BuildArgs
	ht.Net.Dir = env.WorkDir
	image, err := harbor.Image(ctx, env.Engine, ht)
	var verifierImage string // a separate verifier's, "" for a shared one
	// A multi-step task's verifiers are its steps' (runSteps).
	if err == nil && !ht.HasSteps() {
		verifierImage, err = harbor.VerifierImage(ctx, env.Engine, ht)
	}
	if err != nil {
		errorAttempt(a, taskFailure(err), err.Error())
		return
	}
	share, cleanup, err := attemptShare(env, a)
	if err != nil {
		failAttempt(a, FailSetup, err.Error(), -1)
		return
	}
	defer cleanup()
	var mounts []container.Mount
	if share != "" && env.Mounts != nil {
		if mounts, err = env.Mounts(a.Model, share); err != nil {
			failAttempt(a, FailLane, "lane could not run the agent in a container: "+err.Error(), -1)
			return
		}
		mounts = append(mounts, container.Mount{Host: share, Container: share})
	}
	c, nw, err := harbor.StartNetwork(ctx, env.Engine, ht, image, mounts...)
	if err != nil {
		errorAttempt(a, taskFailure(err), err.Error())
		return
	}
	defer func() { _ = c.Remove(context.WithoutCancel(ctx)) }()
	if err := harbor.AwaitHealthy(ctx, nil, c, ht); err != nil {
		// Before the agent: a failed check leaves it unrun.
		errorAttempt(a, taskFailure(err), err.Error())
		return
	}
	if ht.HasSteps() {
		runSteps(ctx, env, task, a, ht, c, nw, share)
		return
	}

	workAndVerify(ctx, env, task, a, ht, c, nw, share, verifierImage)
}

// workAndVerify does the attempt's work in its started container c, on
// the agent's network, collects what it left, and scores it with the
// task's verifier (in verifierImage's container, for a separate one).
func workAndVerify(ctx context.Context, env AttemptEnv, task *Task, a *record.Attempt, ht *harbor.Task,
	c *container.Container, nw *harbor.Network, share, verifierImage string) {
	a.Tries = 1
	out := &capBuffer{limit: OutputLimit}
	if err := nw.Set(ctx, ht.AgentNetwork()); err != nil {
		errorAttempt(a, taskFailure(err), err.Error())
		return
	}
	worked := workInContainer(ctx, env, task, a, ht, c, share, out)
	if ctx.Err() != nil {
		return
	}
	// Collected whether the agent's work is to be scored or not, as Harbor
	// does: what it left helps to see why it failed. The collect hooks
	// have the environment's network: the agent's was its run's only.
	if err := nw.Set(ctx, ht.BaseNetwork()); err != nil {
		errorAttempt(a, taskFailure(err), err.Error())
		return
	}
	coll, cleanupArtifacts := collectArtifacts(ctx, env, ht, c, a, Collect{StopMain: worked && ht.Separate()}, out)
	defer cleanupArtifacts()
	if !worked {
		return
	}
	reward, err := verify(ctx, env, ht, c, nw, verifierImage, coll, out)
	a.CheckOutput = out.String()
	if err != nil {
		errorAttempt(a, taskFailure(err), out.String()+"\n[lane: "+err.Error()+"]")
		return
	}
	score(a, task.Container, reward)
}

// errorAttempt marks a as errored (the attempt could not be made or
// scored, as opposed to failed), of kind, with output to show.
func errorAttempt(a *record.Attempt, kind, output string) {
	a.Status, a.FailureKind, a.CheckOutput = record.AttemptErrored, kind, output
}

// workInContainer does the attempt's work in its container c: the task's
// own solution for the oracle, else the agent's run, whose figures go on
// a. It says whether the work is done and the verifier is to score it;
// when not, a's outcome is set already.
func workInContainer(ctx context.Context, env AttemptEnv, task *Task, a *record.Attempt, ht *harbor.Task,
	c *container.Container, share string, out *capBuffer) bool {
	if a.Model == OracleModel {
		if err := harbor.RunOracle(ctx, c, ht, out); err != nil {
			kind := FailOracle
			if errors.Is(err, harbor.ErrNoSolution) {
				kind = FailNoOracle
			}
			errorAttempt(a, kind, out.String()+"\n[lane: "+err.Error()+"]")
			return false
		}
		return true
	}
	run, ok := agentRun(ctx, env, a, containerRunSpec(env, task, a, ht, c, share, ht.Instruction, cmp.Or(task.Timeout, ht.Agent.Timeout)))
	if !ok {
		return false
	}
	a.RunID, a.DurationMS, a.CostUSD = run.ID, run.DurationMS, run.CostUSD
	a.Usage, a.Turns, a.ToolCalls = run.Usage, run.Turns, run.ToolCalls
	if run.Status != record.StatusSucceeded {
		if why := cannotRunHere(run); why != "" {
			errorAttempt(a, FailEnvironment, "the agent's runtime cannot run in this task's image: "+why)
			return false
		}
		failRun(a, run)
		return false
	}
	return true
}

// containerRunSpec is the agent's run on prompt in a container task's
// container c, within timeout, with the bench's limits and the task's MCP
// servers; its home is the attempt's share folder when the bench is
// hermetic.
func containerRunSpec(env AttemptEnv, task *Task, a *record.Attempt, ht *harbor.Task, c *container.Container,
	share, prompt string, timeout time.Duration) RunSpec {
	spec := RunSpec{
		Dir: ht.Environment.Workdir, Prompt: prompt, Model: a.Model, BenchID: a.BenchID, TaskID: a.TaskID, N: a.N,
		Timeout: timeout, MaxTurns: task.MaxTurns, MaxCostUSD: task.MaxCostUSD,
		TokenLimit: task.TokenLimit, CostLimitUSD: task.CostLimitUSD,
		Container: c, Share: share, MCPServers: ht.Environment.MCPServers,
	}
	if env.Hermetic {
		spec.Home = share
	}
	return spec
}

// containerTaskDir is the Harbor task's folder: where the bench found it,
// or, on a worker, the stored copy unpacked into a folder of the
// attempt's own (the image's tag is the hash of environment/'s content,
// so a copy builds nothing new).
func containerTaskDir(ctx context.Context, env AttemptEnv, ct *ContainerTask) (string, func(), error) {
	if ct.Blob == "" || env.Blob == nil {
		return ct.Dir, func() {}, nil
	}
	dir, err := os.MkdirTemp(env.WorkDir, "harbor-task-")
	if err != nil {
		return "", func() {}, fmt.Errorf("make the Harbor task's folder: %w", err)
	}
	cleanup := func() { _ = removeTree(dir) }
	if err := unpackStored(ctx, env, ct.Blob, dir); err != nil {
		cleanup()
		//lint:ignore ST1005 Harbor is a proper noun, and lane's users read this message as it is
		return "", func() {}, fmt.Errorf("Harbor task %s: %w", filepath.Base(ct.Dir), err)
	}
	return dir, cleanup, nil
}

// attemptShare is the attempt's folder that its container has at the same
// path: the agent's runtime configuration (its home, hermetic or not) and
// the sockets its model endpoint is forwarded through. The oracle needs
// none: "".
func attemptShare(env AttemptEnv, a *record.Attempt) (string, func(), error) {
	if a.Model == OracleModel {
		return "", func() {}, nil
	}
	home, err := os.MkdirTemp(env.WorkDir, folderName(a))
	if err != nil {
		return "", func() {}, fmt.Errorf("make the attempt's runtime home: %w", err)
	}
	return home, func() { _ = removeTree(home) }, nil
}

// cannotRunHere is why a run's runtime could not start in a container's
// image (a C library it links, or a program it needs, missing there), ""
// when it did start.
func cannotRunHere(run *record.Run) string {
	for _, sign := range []string{"error while loading shared libraries", "cannot execute: required file not found",
		"no such file or directory: unknown", "exec format error"} {
		if i := strings.Index(run.ErrorMessage, sign); i >= 0 {
			line := run.ErrorMessage[i:]
			if j := strings.IndexByte(line, '\n'); j >= 0 {
				line = line[:j]
			}
			return line
		}
	}
	// The loader's own words do not always come back through the engine
	// (podman exec can lose what a process printed as it exited at once);
	// exit status 127 before any turn is the loader's or the shell's "not
	// found".
	if run.ExitCode != nil && *run.ExitCode == 127 && run.Turns == 0 {
		return "it exited with status 127 before its first turn: a library it links or a program it runs is not in the image"
	}
	return ""
}

// taskFailure is the failure kind of a Harbor step's error: an error of
// the task or its environment.
func taskFailure(err error) string {
	for _, k := range []struct {
		err  error
		kind string
	}{
		{harbor.ErrBuild, FailImage}, {harbor.ErrStart, FailStart}, {harbor.ErrHealthcheck, FailEnvironment},
		{harbor.ErrVerifierTimeout, FailVerifierTime},
		{harbor.ErrNoReward, FailNoReward}, {harbor.ErrBadReward, FailBadReward},
	} {
		if errors.Is(err, k.err) {
			return k.kind
		}
	}
	return FailEnvironment
}
