package harbor

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/lanehq/lane/internal/container"
)

// Modes of [verifier] environment_mode.
const (
	// VerifierShared: the tests run in the agent's own container (Harbor's
	// default when [verifier] gives neither key).
	VerifierShared = "shared"
	// VerifierSeparate: the tests run in a container of their own, built
	// from tests/, which sees only what the agent left in ArtifactsDir.
	VerifierSeparate = "separate"
)

// ArtifactsDir is where the agent leaves what a separate verifier is to
// see: it is copied from the agent's container into the verifier's.
const ArtifactsDir = "/logs/artifacts"

// Separate says whether t's verifier runs in an environment of its own.
func (t *Task) Separate() bool { return t.Verifier.Mode == VerifierSeparate }

// VerifierEnvironment is the environment a separate verifier runs in:
// [verifier.environment], else a copy of [environment].
func (t *Task) VerifierEnvironment() EnvironmentConfig {
	if t.Verifier.Environment != nil {
		return *t.Verifier.Environment
	}
	return t.Environment
}

// verifierMode sets t.Verifier's Mode and Environment from [verifier]
// environment_mode and [verifier.environment], as Harbor resolves them: the
// mode given, else separate when the table is there, else shared. A shared
// verifier with an environment of its own is an error of the task.
func (t *Task) verifierMode(mode *string, table *rawEnvironment, fail func(key, format string, args ...any) error) error {
	t.Verifier.Mode = VerifierShared
	if table != nil {
		t.Verifier.Mode = VerifierSeparate
	}
	if mode != nil {
		switch *mode {
		case VerifierShared:
			if table != nil {
				return fail("verifier.environment_mode", "%q, but [verifier.environment] gives the verifier an environment of its own: a shared verifier runs in the agent's", *mode)
			}
		case VerifierSeparate:
		default:
			return fail("verifier.environment_mode", "%q is neither %s nor %s", *mode, VerifierShared, VerifierSeparate)
		}
		t.Verifier.Mode = *mode
	}
	if table == nil {
		return nil
	}
	prefixed := func(key, format string, args ...any) error { return fail("verifier."+key, format, args...) }
	env, err := environment(*table, prefixed)
	if err != nil {
		return err
	}
	t.Verifier.Environment = &env
	return nil
}

// loadVerifierEnvironment finds a separate verifier's image in the task
// folder dir: its environment's docker_image, else tests/Dockerfile. A
// compose file in tests/ is refused: lane runs a separate verifier as one
// container.
func (t *Task) loadVerifierEnvironment(dir string) error {
	if !t.Separate() {
		return nil
	}
	tests := filepath.Join(dir, "tests")
	for _, name := range composeFiles {
		if isFile(filepath.Join(tests, name)) {
			return fmt.Errorf("tests/%s: a compose file for a separate verifier ([verifier] environment_mode = %q) is %w yet", name, VerifierSeparate, ErrUnsupported)
		}
	}
	if df := filepath.Join(tests, "Dockerfile"); isFile(df) {
		t.Verifier.Dockerfile = df
	}
	if t.Verifier.Dockerfile == "" && t.VerifierEnvironment().DockerImage == "" {
		return fmt.Errorf("the verifier runs in an environment of its own ([verifier] environment_mode = %q), but tests/Dockerfile is missing and its environment names no docker_image", VerifierSeparate)
	}
	return nil
}

// verifierTask is t as its separate verifier runs: its environment (with
// the verifier phase's network from the start), none
// of the services of environment/'s compose file, and the tests run in
// its own container, as a shared verifier's do in the agent's.
func (t *Task) verifierTask() *Task {
	vt := *t
	vt.Environment = t.VerifierEnvironment()
	// Its container starts with the network the tests run with.
	phase := t.VerifierNetwork()
	vt.Environment.NetworkMode, vt.Environment.AllowedHosts = phase.Mode, phase.Hosts
	vt.Agent.Network, vt.Verifier.Network, vt.Net.Phases = nil, nil, nil
	vt.Services = nil
	vt.Verifier.Mode = VerifierShared
	return &vt
}

// VerifierImage returns the image of t's separate verifier, as Image does
// the task's: its environment's docker_image, else tests/Dockerfile built
// (with t.BuildArgs, tests/ as its context) within that environment's
// build_timeout_sec. For a shared verifier it returns "".
func VerifierImage(ctx context.Context, e *container.Engine, t *Task) (string, error) {
	if !t.Separate() {
		return "", nil
	}
	if img := t.VerifierEnvironment().DockerImage; img != "" {
		return qualify(ctx, e, img), nil
	}
	return build(ctx, e, t.verifierTask(), t.Name+"-verifier", filepath.Join(t.Dir, "tests"), t.Verifier.Dockerfile, t.BuildArgs)
}

// VerifySeparate scores the work done in agent, t's container, with t's
// separate verifier, started from image (VerifierImage). coll is what
// Collect copied out of agent (with StopMain); nil collects it here.
// agent is then removed with its services: nothing of it (its binaries,
// its /logs/verifier, its processes) reaches the verifier but those
// files. See VerifyCollected for the rest.
func VerifySeparate(ctx context.Context, e *container.Engine, agent *container.Container, t *Task, image string, coll *Collection, output io.Writer) (Reward, error) {
	if !t.Separate() {
		return Reward{}, fmt.Errorf("harbor: task %s: its verifier is not separate", t.Name)
	}
	if coll == nil {
		tmp, err := os.MkdirTemp("", "harbor-artifacts-")
		if err != nil {
			return Reward{}, fmt.Errorf("harbor: task %s: %w", t.Name, err)
		}
		defer os.RemoveAll(tmp)
		if coll, err = Collect(ctx, agent, t, CollectOptions{Dir: tmp, StopMain: true, Log: output}); err != nil {
			return Reward{}, err
		}
	}
	if err := agent.Remove(ctx); err != nil {
		return Reward{}, fmt.Errorf("harbor: task %s: stop the agent's container: %w", t.Name, err)
	}
	return VerifyCollected(ctx, e, t, image, coll, output)
}

// VerifyCollected runs t's separate verifier in a container of image: it
// starts with nothing mounted and no tests uploaded (its image holds
// /tests/test.sh), gets each artifact of coll at its source path
// (ArtifactsDir among them) and an empty /logs/verifier of its own, and
// runs the tests as Verify does; it is removed before VerifyCollected
// returns. It leaves the agent's container alone: a multi-step task's
// goes on to its next step.
//
// Its errors are Verify's, and a verifier's container that does not start
// is a *TaskError of kind ErrStart.
func VerifyCollected(ctx context.Context, e *container.Engine, t *Task, image string, coll *Collection, output io.Writer) (Reward, error) {
	vt := t.verifierTask()
	c, err := Start(ctx, e, vt, image)
	if err != nil {
		return Reward{}, err
	}
	defer func() { _ = c.Remove(context.WithoutCancel(ctx)) }()
	if err := AwaitHealthy(ctx, nil, c, vt); err != nil {
		return Reward{}, err
	}
	if err := giveArtifacts(ctx, c, coll, writerOr(output)); err != nil {
		return Reward{}, fmt.Errorf("harbor: task %s: %w", t.Name, err)
	}
	return runTests(ctx, c, vt, output)
}
