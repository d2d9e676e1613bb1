package harbor

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/lanehq/lane/internal/container"
)

// Paths in the task's container.
const (
	TestsDir    = "/tests"    // tests/, copied in by Verify only
	SolutionDir = "/solution" // solution/, copied in by RunOracle
)

// ImageRepo is the repository of the images Image builds:
// lane-harbor/NAME:DIGEST.
const ImageRepo = "lane-harbor"

// ImageTag is the tag Image builds t's environment under: the task's name
// and a hash of environment/ (names, modes, contents), of the Dockerfile's
// path in it and of t.BuildArgs, so that an unchanged environment is built
// once.
func ImageTag(t *Task) (string, error) {
	return buildTag(t.Name, filepath.Join(t.Dir, "environment"), t.Dockerfile, t.BuildArgs)
}

// buildTag is the tag of a build of ctxDir's Dockerfile with args.
func buildTag(name, ctxDir, dockerfile string, args map[string]string) (string, error) {
	digest, err := container.ContextDigest(ctxDir)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	fmt.Fprintf(h, "context %s\n", digest)
	rel, _ := filepath.Rel(ctxDir, dockerfile)
	fmt.Fprintf(h, "dockerfile %q\n", rel)
	names := make([]string, 0, len(args))
	for k := range args {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		fmt.Fprintf(h, "arg %q=%q\n", k, args[k])
	}
	return ImageRepo + "/" + tagName(name) + ":" + hex.EncodeToString(h.Sum(nil))[:20], nil
}

var notTagChars = regexp.MustCompile(`[^a-z0-9._-]+`)

// tagName makes a task name ("terminal-bench/regex-log") a repository path
// component: lower case letters, digits, '.', '_' and '-'.
func tagName(name string) string {
	s := strings.Trim(notTagChars.ReplaceAllString(strings.ToLower(name), "-"), "-._")
	if s == "" {
		s = "task"
	}
	if len(s) > 100 {
		s = s[:100]
	}
	return s
}

// Image returns the image for t's container: environment.docker_image as
// it is when set (the engine pulls it when starting, if need be), else
// environment/Dockerfile built under ImageTag within build_timeout_sec,
// unless an image of that tag exists. The build's output is not shown: a
// failed build is a *TaskError of kind ErrBuild that carries its end (and
// wraps the *container.BuildError). A build stopped because ctx is done
// is no TaskError: the caller gave up, the task did not fail.
func Image(ctx context.Context, e *container.Engine, t *Task) (string, error) {
	if img := t.Environment.DockerImage; img != "" {
		return qualify(ctx, e, img), nil
	}
	return build(ctx, e, t, t.Name, filepath.Join(t.Dir, "environment"), t.Dockerfile, t.BuildArgs)
}

// build builds ctxDir's Dockerfile with args for task t under buildTag,
// unless an image of that tag exists; see Image for its errors.
func build(ctx context.Context, e *container.Engine, t *Task, name, ctxDir, dockerfile string, args map[string]string) (string, error) {
	tag, err := buildTag(name, ctxDir, dockerfile, args)
	if err != nil {
		return "", &TaskError{Kind: ErrBuild, Task: t.Name, Err: err}
	}
	if e.ImageExists(ctx, tag) {
		return tag, nil
	}
	err = e.Build(ctx, container.BuildSpec{
		ContextDir: ctxDir,
		Dockerfile: dockerfile,
		Tag:        tag,
		BuildArgs:  args,
		Timeout:    t.Environment.BuildTimeout,
	})
	if err != nil {
		if ctx.Err() != nil {
			// Not the task's fault: the caller gave up.
			return "", fmt.Errorf("harbor: task %s: build: %w", t.Name, err)
		}
		te := &TaskError{Kind: ErrBuild, Task: t.Name, Err: err}
		var be *container.BuildError
		if errors.As(err, &be) {
			te.Output = be.Output
			te.Err = &buildCause{be}
		}
		return "", te
	}
	return tag, nil
}

// buildCause is a BuildError without the output in its message, which
// the TaskError carries.
type buildCause struct{ be *container.BuildError }

func (b *buildCause) Error() string { return fmt.Sprintf("build %s: %v", b.be.Tag, b.be.Err) }
func (b *buildCause) Unwrap() error { return b.be }

// qualify gives a Docker Hub short name ("org/name:tag") its registry, as
// Docker assumes it and Podman may not (short names need its
// unqualified-search-registries), unless the engine has an image of that
// name already.
func qualify(ctx context.Context, e *container.Engine, ref string) string {
	first, _, hasSlash := strings.Cut(ref, "/")
	if hasSlash && (strings.ContainsAny(first, ".:") || first == "localhost") {
		return ref
	}
	if e.Kind() == container.Docker || e.ImageExists(ctx, ref) {
		return ref
	}
	if !hasSlash {
		return "docker.io/library/" + ref
	}
	return "docker.io/" + ref
}

// Start starts t's container from image: cpus and memory_mb as its limits,
// [environment] env as its environment, the workdir created, and
// extraMounts bound (a caller's log folders, say). Its network is the
// [environment]'s (BaseNetwork; see StartNetwork for the phases' after).
// Neither tests/ nor solution/ is in it: the agent works without them.
// The task's other services (t.Services) then start beside it, in its
// network, each healthy before the next; the container's Remove removes
// them too. A container that does not start, or a service that is not
// healthy in time, is a *TaskError of kind ErrStart; a service's image
// that does not build, of kind ErrBuild.
func Start(ctx context.Context, e *container.Engine, t *Task, image string, extraMounts ...container.Mount) (*container.Container, error) {
	c, _, err := StartNetwork(ctx, e, t, image, extraMounts...)
	return c, err
}

// StartNetwork starts t's container as Start does, and returns the
// Network that gives it each phase's network in turn (AgentNetwork,
// VerifierNetwork, t.Net.Phases). A container whose phases all want no
// network starts with none, one whose phases all want the engine's
// default starts on it, and one whose phases differ on a network of its
// own. Its errors are Start's, and a start network that cannot be set is
// a *TaskError of kind ErrNetwork.
func StartNetwork(ctx context.Context, e *container.Engine, t *Task, image string, extraMounts ...container.Mount) (*container.Container, *Network, error) {
	env, err := envList(t.Environment.Env, "[environment] env")
	if err != nil {
		return nil, nil, &TaskError{Kind: ErrStart, Task: t.Name, Err: err}
	}
	name := "lane-" + tagName(t.Name) + "-" + randomSuffix()
	plan := planNetwork(t)
	n, mounts, undo, err := prepareNetwork(ctx, e, t, name, plan, extraMounts)
	if err != nil {
		return nil, nil, err
	}
	network := plan.network
	if plan.own {
		network = name
	}
	c, err := e.Start(ctx, container.RunSpec{
		Image:    image,
		Name:     name,
		Workdir:  t.Environment.Workdir,
		CPUs:     t.Environment.CPUs,
		MemoryMB: t.Environment.MemoryMB,
		Network:  network,
		Mounts:   mounts,
		Env:      env,
		Labels:   map[string]string{"lane.harbor.task": t.Name},
		// The agent leaves in ArtifactsDir what is to be kept: open to
		// every user, as Harbor's is.
		OpenDirs: []string{ArtifactsDir},
	})
	if err != nil {
		undo()
		return nil, nil, startError(ctx, t, err)
	}
	if err := n.attach(ctx, c, t.BaseNetwork(), undo); err != nil {
		_ = c.Remove(context.WithoutCancel(ctx))
		return nil, nil, err
	}
	if err := startServices(ctx, e, t, c); err != nil {
		_ = c.Remove(context.WithoutCancel(ctx))
		return nil, nil, err
	}
	return c, n, nil
}

// startError is a container of t's that did not start: a *TaskError of
// kind ErrStart, unless ctx is done (the caller gave up).
func startError(ctx context.Context, t *Task, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("harbor: task %s: start: %w", t.Name, err)
	}
	te := &TaskError{Kind: ErrStart, Task: t.Name, Err: err}
	var se *container.StartError
	if errors.As(err, &se) {
		te.Output = se.Output
	}
	return te
}

func randomSuffix() string {
	b := make([]byte, 5)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}

// setupTimeout bounds the short commands around a script (mkdir, copy).
const setupTimeout = 2 * time.Minute

// RunOracle runs the task's reference solution, as an agent would work:
// solution/ copied to /solution, then `bash /solution/solve.sh` in the
// workdir as [agent] user, with [solution] env, within [agent]
// timeout_sec if set. Its output goes to output. A non-zero exit is an
// *ExitError; a task without solve.sh, ErrNoSolution.
func RunOracle(ctx context.Context, c *container.Container, t *Task, output io.Writer) error {
	if !t.HasSolution {
		return fmt.Errorf("harbor: task %s: %w", t.Name, ErrNoSolution)
	}
	return runSolution(ctx, c, t, filepath.Join(t.Dir, "solution"), "solution/solve.sh", output)
}

// runSolution runs the solution folder dir's solve.sh (named script in
// errors) as RunOracle says.
func runSolution(ctx context.Context, c *container.Container, t *Task, dir, script string, output io.Writer) error {
	env, err := envList(t.Solution.Env, "[solution] env")
	if err != nil {
		return fmt.Errorf("harbor: task %s: %w", t.Name, err)
	}
	if err := replaceDir(ctx, c, SolutionDir, false, dir); err != nil {
		return fmt.Errorf("harbor: task %s: %w", t.Name, err)
	}
	rctx := ctx
	if t.Agent.Timeout > 0 {
		var cancel context.CancelFunc
		rctx, cancel = context.WithTimeoutCause(ctx, t.Agent.Timeout, fmt.Errorf("solve.sh ran past [agent] timeout_sec (%s): %w", t.Agent.Timeout, context.DeadlineExceeded))
		defer cancel()
	}
	code, err := c.Exec(rctx, container.ExecSpec{
		Argv: []string{"bash", SolutionDir + "/solve.sh"},
		Env:  env, User: t.Agent.User,
		Stdout: writerOr(output), Stderr: writerOr(output),
	})
	if err != nil {
		return fmt.Errorf("harbor: task %s: run %s: %w", t.Name, script, err)
	}
	if code != 0 {
		return &ExitError{Task: t.Name, Script: script, Code: code}
	}
	return nil
}

func writerOr(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}

// verifierTail is how much of the verifier's output a TaskError keeps.
const verifierTail = 4 << 10

// Verify runs the task's tests and returns the reward they wrote. Only now
// is tests/ copied in, to /tests (whatever the agent left there is
// removed first), and /logs/verifier emptied (so that a reward the agent
// wrote does not count) and made writable by any user. Then `bash
// /tests/test.sh` runs in the workdir as [verifier] user, with [verifier]
// env and TEST_DIR=/tests, within [verifier] timeout_sec, its output to
// output. Its exit status does not matter, the reward does (ReadReward).
//
// Errors of the task are *TaskErrors: ErrVerifierTimeout, ErrNoReward,
// ErrBadReward. Others (an engine failure, a cancelled ctx) are returned
// wrapped.
func Verify(ctx context.Context, c *container.Container, t *Task, output io.Writer) (Reward, error) {
	if _, err := envList(t.Verifier.Env, "[verifier] env"); err != nil {
		return Reward{}, fmt.Errorf("harbor: task %s: %w", t.Name, err)
	}
	if err := replaceDir(ctx, c, TestsDir, true, filepath.Join(t.Dir, "tests")); err != nil {
		return Reward{}, fmt.Errorf("harbor: task %s: %w", t.Name, err)
	}
	return runTests(ctx, c, t, output)
}

// runTests runs /tests/test.sh in c and reads the reward, as Verify says.
func runTests(ctx context.Context, c *container.Container, t *Task, output io.Writer) (Reward, error) {
	env, err := envList(t.Verifier.Env, "[verifier] env")
	if err != nil {
		return Reward{}, fmt.Errorf("harbor: task %s: %w", t.Name, err)
	}
	env = append(env, "TEST_DIR="+TestsDir)
	timeout := t.Verifier.Timeout
	if timeout <= 0 {
		timeout = DefaultVerifierTimeout
	}
	vctx, cancel := context.WithTimeoutCause(ctx, timeout, ErrVerifierTimeout)
	defer cancel()
	tail := &tailWriter{max: verifierTail}
	out := io.MultiWriter(writerOr(output), tail)
	code, err := c.Exec(vctx, container.ExecSpec{
		Argv: []string{"bash", TestsDir + "/test.sh"},
		Env:  env, User: t.Verifier.User,
		Stdout: out, Stderr: out,
	})
	if err != nil {
		if ctx.Err() == nil && errors.Is(context.Cause(vctx), ErrVerifierTimeout) {
			return Reward{}, &TaskError{Kind: ErrVerifierTimeout, Task: t.Name,
				Err: fmt.Errorf("tests/test.sh ran past [verifier] timeout_sec (%s)", timeout), Output: tail.String()}
		}
		return Reward{}, fmt.Errorf("harbor: task %s: run tests/test.sh: %w", t.Name, err)
	}
	r, err := ReadReward(ctx, c)
	switch {
	case errors.Is(err, ErrNoReward):
		return Reward{}, &TaskError{Kind: ErrNoReward, Task: t.Name,
			Err: fmt.Errorf("tests/test.sh exited with status %d and wrote neither %s/%s nor %s", code, VerifierLogsDir, RewardText, RewardJSON), Output: tail.String()}
	case errors.Is(err, ErrBadReward):
		return Reward{}, &TaskError{Kind: ErrBadReward, Task: t.Name, Err: errors.Unwrap(err), Output: tail.String()}
	case err != nil:
		return Reward{}, fmt.Errorf("harbor: task %s: %w", t.Name, err)
	}
	return r, nil
}

// replaceDir replaces dst in c with the host folders srcs, layered, and
// readable by every user; for the verifier it also empties
// /logs/verifier and opens it to every user.
func replaceDir(ctx context.Context, c *container.Container, dst string, verifier bool, srcs ...string) error {
	sctx, cancel := context.WithTimeout(ctx, setupTimeout)
	defer cancel()
	p := container.Put{Sources: srcs, Dest: dst, Readable: true}
	if verifier {
		p.Fresh = []string{VerifierLogsDir}
	}
	return c.Put(sctx, p)
}

// tailWriter keeps the last max bytes written to it.
type tailWriter struct {
	max int
	buf []byte
}

func (w *tailWriter) Write(p []byte) (int, error) {
	w.buf = append(w.buf, p...)
	if over := len(w.buf) - w.max; over > 0 {
		w.buf = append(w.buf[:0], w.buf[over:]...)
	}
	return len(p), nil
}

func (w *tailWriter) String() string { return string(w.buf) }

// hostVar matches the host-variable references in task.toml env values.
var hostVar = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(:-([^}]*))?\}`)

// ExpandEnv replaces, in the env tables of t ([environment], [verifier],
// [solution]), each ${NAME} with getenv(NAME) and each ${NAME:-default}
// with getenv(NAME), or default when that is empty, as Harbor resolves
// them from the host. A ${NAME} whose variable is empty is an error naming
// it. Start, RunOracle and Verify refuse a value still holding a
// reference, so a caller that runs tasks with such values calls ExpandEnv
// first, choosing what getenv may give away.
func (t *Task) ExpandEnv(getenv func(string) string) error {
	tables := []struct {
		name string
		env  map[string]string
	}{{"[environment] env", t.Environment.Env}, {"[verifier] env", t.Verifier.Env}, {"[solution] env", t.Solution.Env}}
	if ve := t.Verifier.Environment; ve != nil {
		tables = append(tables, struct {
			name string
			env  map[string]string
		}{"[verifier.environment] env", ve.Env})
	}
	for _, svc := range t.Services {
		tables = append(tables, struct {
			name string
			env  map[string]string
		}{"service " + svc.Name + " environment", svc.Env})
	}
	tables = append(tables, t.stepEnvTables()...)
	for _, table := range tables {
		for k, v := range table.env {
			var missing []string
			expanded := hostVar.ReplaceAllStringFunc(v, func(ref string) string {
				m := hostVar.FindStringSubmatch(ref)
				if val := getenv(m[1]); val != "" {
					return val
				}
				if m[2] != "" {
					return m[3]
				}
				missing = append(missing, m[1])
				return ""
			})
			if len(missing) > 0 {
				return fmt.Errorf("harbor: task %s: %s %s needs host variable %s, which is not set", t.Name, table.name, k, strings.Join(missing, ", "))
			}
			table.env[k] = expanded
		}
	}
	return nil
}

// envList makes an env table a sorted NAME=value list, refusing values
// with host-variable references that ExpandEnv has not replaced.
func envList(env map[string]string, table string) ([]string, error) {
	list := make([]string, 0, len(env))
	for k, v := range env {
		if hostVar.MatchString(v) {
			return nil, fmt.Errorf("%s %s=%q refers to a host variable: call Task.ExpandEnv first", table, k, v)
		}
		list = append(list, k+"="+v)
	}
	sort.Strings(list)
	return list, nil
}
