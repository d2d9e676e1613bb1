package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	"github.com/lanehq/lane/internal/bench/harbor"
	"github.com/lanehq/lane/internal/container"
	"github.com/lanehq/lane/internal/record"
)

// Values of lane bench --step-session: the session a multi-step task's
// agent works each step after the first in.
const (
	// StepSessionFresh: a session of its own for each step (Harbor's
	// default).
	StepSessionFresh = "fresh"
	// StepSessionContinue: the previous step's session resumed (Harbor's
	// --resume-trajectory).
	StepSessionContinue = "continue"
)

// FailBelowMinReward is the failure kind of a step whose rewards fell
// short of its min_reward: the attempt ends after it, and its reward is
// rolled up from the steps that ran. Only a step has it, never an attempt.
const FailBelowMinReward = "below_min_reward"

// stepRun is an attempt at a multi-step task in its started container.
type stepRun struct {
	env   AttemptEnv
	task  *Task
	a     *record.Attempt
	ht    *harbor.Task
	c     *container.Container
	nw    *harbor.Network // the container's network, set per phase
	share string
	out   *capBuffer
	// prev is the run of the step before, which --step-session continue
	// resumes.
	prev *record.Run
}

// stepEnd is how a step ends the attempt's course.
type stepEnd int

const (
	stepNext  stepEnd = iota // verified: on to the next step
	stepGate                 // verified below its min_reward: no step after it
	stepAbort                // not verified: the attempt ends as the step did
)

// runSteps runs the steps of ht, a multi-step task, in their order in its
// one container c (started and healthy), as Harbor does: each step's
// workdir/ and setup.sh, its healthcheck, the agent (or the oracle) on its
// instruction, then its verifier. A step below its min_reward ends the
// attempt, whose reward is then the steps' rewards rolled up as the task
// says (their mean, or the last step's); a step whose setup, agent or
// verifier fails ends it as a single step's would end it, and the
// attempt's outcome is that step's.
func runSteps(ctx context.Context, env AttemptEnv, task *Task, a *record.Attempt, ht *harbor.Task, c *container.Container,
	nw *harbor.Network, share string) {
	a.Tries = 1
	sr := &stepRun{env: env, task: task, a: a, ht: ht, c: c, nw: nw, share: share, out: &capBuffer{limit: OutputLimit}}
	var verified []map[string]float64
	for i := range ht.Steps {
		s := &ht.Steps[i]
		fmt.Fprintf(sr.out, "[lane: step %d of %d: %s]\n", i+1, len(ht.Steps), s.Name)
		st, end, sa := sr.step(ctx, s, i == len(ht.Steps)-1)
		a.Steps = append(a.Steps, st)
		if end == stepAbort {
			a.Status, a.FailureKind, a.CheckExitCode = sa.Status, sa.FailureKind, sa.CheckExitCode
			a.CheckOutput = cmp.Or(sa.CheckOutput, sr.out.String())
			return
		}
		verified = append(verified, st.Rewards)
		if end == stepGate {
			break
		}
	}
	a.CheckOutput = sr.out.String()
	rolled, ok := harbor.StepRewardsOf(ht.StepRewards, verified)
	if !ok {
		errorAttempt(a, FailNoReward, a.CheckOutput+"\n[lane: the steps' verifiers wrote no reward key]")
		return
	}
	file := fmt.Sprintf("the mean of %d steps' rewards", len(verified))
	if ht.StepRewards == harbor.StepsFinal {
		file = fmt.Sprintf("step %s's rewards (the last that ran)", a.Steps[len(a.Steps)-1].Name)
	}
	score(a, task.Container, harbor.Reward{Value: rolled[harbor.RewardKey], Values: rolled, File: file})
}

// step runs step s (last says whether it is the task's last) and records
// it. With stepAbort, sa holds the outcome the attempt ends with.
func (sr *stepRun) step(ctx context.Context, s *harbor.Step, last bool) (record.AttemptStep, stepEnd, *record.Attempt) {
	sa := &record.Attempt{BenchID: sr.a.BenchID, TaskID: sr.a.TaskID, Model: sr.a.Model, N: sr.a.N}
	st := record.AttemptStep{Name: s.Name}
	abort := func(err error) (record.AttemptStep, stepEnd, *record.Attempt) {
		if err != nil {
			errorAttempt(sa, taskFailure(err), sr.out.String()+"\n[lane: "+err.Error()+"]")
			st.Error = err.Error()
		}
		st.Status, st.FailureKind = sa.Status, sa.FailureKind
		return st, stepAbort, sa
	}
	// As in Harbor, a phase's network is its agent's run's or its tests'
	// only: setup.sh, the healthcheck and the collect hooks have the
	// environment's, whatever the step before had.
	err := sr.nw.Set(ctx, sr.ht.BaseNetwork())
	if err == nil {
		err = harbor.PrepareStep(ctx, sr.c, sr.ht, s, sr.out)
	}
	if err == nil {
		err = harbor.AwaitStepHealthy(ctx, nil, sr.c, sr.ht, s)
	}
	if err == nil {
		err = sr.nw.Set(ctx, sr.ht.StepTask(s).AgentNetwork())
	}
	if err != nil {
		return abort(err)
	}
	worked := sr.work(ctx, s, sa, &st)
	var coll *harbor.Collection
	if ctx.Err() == nil {
		if err := sr.nw.Set(ctx, sr.ht.BaseNetwork()); err != nil {
			return abort(err)
		}
		// Collected whether the step's work is to be scored or not, as
		// Harbor does, under steps/<name>/ of the attempt's artifacts.
		var cleanup func()
		coll, cleanup = collectArtifacts(ctx, sr.env, sr.ht, sr.c, sr.a,
			Collect{Step: s.Name, Artifacts: s.Artifacts, StopMain: worked && last && s.Separate()}, sr.out)
		defer cleanup()
	}
	if !worked {
		return abort(nil)
	}
	reward, err := sr.verify(ctx, s, coll, last)
	if err != nil {
		return abort(err)
	}
	scoreStep(&st, sr.task.Container, reward)
	if key, threshold, v, below := s.BelowMinReward(reward.Values); below {
		st.Status, st.FailureKind = record.AttemptFailed, FailBelowMinReward
		st.Error = fmt.Sprintf("%s = %v, below its min_reward %v: the steps after it did not run", key, v, threshold)
		return st, stepGate, nil
	}
	return st, stepNext, nil
}

// work does step s's work in the container: the step's solution for the
// oracle, else the agent's run on its instruction, a fresh session or the
// previous step's resumed (--step-session). The run's figures go on st and
// add up on the attempt. It says whether the verifier is to score the
// step; when not, sa holds the outcome and st its error.
func (sr *stepRun) work(ctx context.Context, s *harbor.Step, sa *record.Attempt, st *record.AttemptStep) bool {
	if sa.Model == OracleModel {
		if err := harbor.RunStepOracle(ctx, sr.c, sr.ht, s, sr.out); err != nil {
			kind := FailOracle
			if errors.Is(err, harbor.ErrNoSolution) {
				kind = FailNoOracle
			}
			errorAttempt(sa, kind, sr.out.String()+"\n[lane: "+err.Error()+"]")
			st.Error = err.Error()
			return false
		}
		return true
	}
	spec := containerRunSpec(sr.env, sr.task, sa, sr.ht, sr.c, sr.share, s.Instruction, cmp.Or(s.Agent.Timeout, sr.task.Timeout))
	if sr.task.Container.StepSession == StepSessionContinue {
		spec.Resume = sr.prev
	}
	run, ok := agentRun(ctx, sr.env, sa, spec)
	if !ok {
		st.Error = sa.CheckOutput
		return false
	}
	sr.prev = run
	st.RunID, st.DurationMS, st.CostUSD = run.ID, run.DurationMS, run.CostUSD
	a := sr.a
	a.RunID, a.DurationMS, a.CostUSD = run.ID, a.DurationMS+run.DurationMS, a.CostUSD+run.CostUSD
	a.Usage, a.Turns, a.ToolCalls = a.Usage.Add(run.Usage), a.Turns+run.Turns, a.ToolCalls+run.ToolCalls
	if run.Status != record.StatusSucceeded {
		st.Error = run.ErrorMessage
		if why := cannotRunHere(run); why != "" {
			errorAttempt(sa, FailEnvironment, "the agent's runtime cannot run in this task's image: "+why)
			return false
		}
		failRun(sa, run)
		return false
	}
	return true
}

// verify scores step s with its verifier: in the agent's container, on
// the step's verifier network, or in one of its own that gets coll, what
// was collected of the step (last says whether the agent's container then
// goes: after the task's last step only, as in Harbor).
func (sr *stepRun) verify(ctx context.Context, s *harbor.Step, coll *harbor.Collection, last bool) (harbor.Reward, error) {
	if !s.Separate() {
		if err := sr.nw.Set(ctx, sr.ht.StepTask(s).VerifierNetwork()); err != nil {
			return harbor.Reward{}, err
		}
		return harbor.VerifyStep(ctx, sr.c, sr.ht, s, sr.out)
	}
	image, err := harbor.StepVerifierImage(ctx, sr.env.Engine, sr.ht, s)
	if err != nil {
		return harbor.Reward{}, err
	}
	return harbor.VerifyStepSeparate(ctx, sr.env.Engine, sr.c, sr.ht, s, image, coll, last, sr.out)
}
