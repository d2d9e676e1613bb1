package harbor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"path/filepath"

	"github.com/lanehq/lane/internal/container"
)

// ErrStepSetup is the TaskError kind of a step whose workdir/setup.sh did
// not run to exit status 0: an error of the environment, and the step's
// agent never ran.
var ErrStepSetup = errors.New("the step's setup.sh failed")

// setupTail is how much of a failed setup.sh's output its error keeps.
const setupTail = 4 << 10

// PrepareStep readies t's container c for step s, as Harbor does before a
// step's agent: s's workdir/ uploaded into the container's working folder
// (merged into what earlier steps left there), then its setup.sh run
// there with bash as the step's agent user, its output to output. A
// setup.sh that fails is a *TaskError of kind ErrStepSetup carrying the
// end of its output.
func PrepareStep(ctx context.Context, c *container.Container, t *Task, s *Step, output io.Writer) error {
	if s.Workdir == "" {
		return nil
	}
	wd := t.Environment.Workdir
	if err := c.CopyTo(ctx, s.Workdir, wd); err != nil {
		return fmt.Errorf("harbor: task %s: step %s: upload workdir/: %w", t.Name, s.Name, err)
	}
	if !s.Setup {
		return nil
	}
	tail := &tailWriter{max: setupTail}
	out := io.MultiWriter(writerOr(output), tail)
	code, err := c.Exec(ctx, container.ExecSpec{
		Argv: []string{"bash", path.Join(wd, "setup.sh")}, Workdir: wd, User: s.Agent.User,
		Stdout: out, Stderr: out,
	})
	switch {
	case err != nil && ctx.Err() != nil:
		return fmt.Errorf("harbor: task %s: step %s: setup.sh: %w", t.Name, s.Name, err)
	case err != nil:
		return &TaskError{Kind: ErrStepSetup, Task: t.Name, Err: fmt.Errorf("step %s: %w", s.Name, err), Output: tail.String()}
	case code != 0:
		return &TaskError{Kind: ErrStepSetup, Task: t.Name,
			Err: fmt.Errorf("step %s: %s/%s/workdir/setup.sh exited with status %d", s.Name, StepsDir, s.Name, code), Output: tail.String()}
	}
	return nil
}

// AwaitStepHealthy runs step s's [steps.healthcheck] in c, after its
// setup and before its agent, as AwaitHealthy runs the environment's
// (clk nil is the real clock); a step without one passes at once.
func AwaitStepHealthy(ctx context.Context, clk Clock, c *container.Container, t *Task, s *Step) error {
	if s.Healthcheck == nil {
		return nil
	}
	if clk == nil {
		clk = realClock{}
	}
	return checkHealth(ctx, clk, t.Name+" (step "+s.Name+")", s.Healthcheck, execTry(c, s.Healthcheck))
}

// RunStepOracle runs step s's reference solution as RunOracle runs a
// task's: steps/<name>/solution/ if the step has that folder, else the
// task's solution/, as the step's agent user within its timeout. A step
// without either is ErrNoSolution.
func RunStepOracle(ctx context.Context, c *container.Container, t *Task, s *Step, output io.Writer) error {
	if s.Solution == "" || !isFile(filepath.Join(s.Solution, "solve.sh")) {
		return fmt.Errorf("harbor: task %s: step %s: %w", t.Name, s.Name, ErrNoSolution)
	}
	script := "solution/solve.sh"
	if rel, err := filepath.Rel(t.Dir, s.Solution); err == nil {
		script = filepath.ToSlash(rel) + "/solve.sh"
	}
	return runSolution(ctx, c, t.StepTask(s), s.Solution, script, output)
}

// VerifyStep scores step s in t's container c with a shared verifier, as
// Harbor does: /tests and /logs/verifier emptied, the task's tests/ (if
// any) copied to /tests, then the step's tests/ over it, and /tests/
// test.sh (so the step's own if it has one) run with the step's verifier
// settings. Its errors are Verify's.
func VerifyStep(ctx context.Context, c *container.Container, t *Task, s *Step, output io.Writer) (Reward, error) {
	st := t.StepTask(s)
	if _, err := envList(st.Verifier.Env, "[verifier] env"); err != nil {
		return Reward{}, fmt.Errorf("harbor: task %s: %w", t.Name, err)
	}
	// The task's tests/, then the step's over it.
	var tests []string
	if dir := filepath.Join(t.Dir, "tests"); isDir(dir) {
		tests = append(tests, dir)
	}
	if s.Tests != "" {
		tests = append(tests, s.Tests)
	}
	if err := replaceDir(ctx, c, TestsDir, true, tests...); err != nil {
		return Reward{}, fmt.Errorf("harbor: task %s: step %s: %w", t.Name, s.Name, err)
	}
	return runTests(ctx, c, st, output)
}

// StepVerifierImage returns the image of step s's separate verifier, as
// VerifierImage does a task's: its environment's docker_image, else the
// Dockerfile of s.VerifierContext built there. For a shared verifier it
// returns "".
func StepVerifierImage(ctx context.Context, e *container.Engine, t *Task, s *Step) (string, error) {
	if !s.Separate() {
		return "", nil
	}
	st := t.StepTask(s)
	if img := st.VerifierEnvironment().DockerImage; img != "" {
		return qualify(ctx, e, img), nil
	}
	return build(ctx, e, st.verifierTask(), t.Name+"-"+s.Name+"-verifier", s.VerifierContext, s.Verifier.Dockerfile, t.BuildArgs)
}

// VerifyStepSeparate scores step s with its separate verifier, started
// from image (StepVerifierImage), as VerifySeparate scores a task: only
// coll, what was collected of the step (ArtifactsDir and the declared
// artifacts), reaches it. As Harbor does, the agent's container is
// removed first only after the last step (last): after an earlier one it
// runs on, untouched, for the next step, while the verifier's own
// container comes and goes.
func VerifyStepSeparate(ctx context.Context, e *container.Engine, agent *container.Container, t *Task, s *Step,
	image string, coll *Collection, last bool, output io.Writer) (Reward, error) {
	if !s.Separate() {
		return Reward{}, fmt.Errorf("harbor: task %s: step %s: its verifier is not separate", t.Name, s.Name)
	}
	if last {
		if err := agent.Remove(ctx); err != nil {
			return Reward{}, fmt.Errorf("harbor: task %s: stop the agent's container: %w", t.Name, err)
		}
	}
	return VerifyCollected(ctx, e, t.StepTask(s), image, coll, output)
}
