package benchrun

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/lanehq/lane/internal/bench"
	"github.com/lanehq/lane/internal/container"
	"github.com/lanehq/lane/internal/container/netfwd"
	"github.com/lanehq/lane/internal/launch"
	"github.com/lanehq/lane/internal/runner"
)

// keyValues reads KEY=VALUE flags.
func keyValues(kvs []string) (map[string]string, error) {
	if len(kvs) == 0 {
		return nil, nil
	}
	out := map[string]string{}
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("%q: want KEY=VALUE", kv)
		}
		out[k] = v
	}
	return out, nil
}

// hasContainerTasks says whether a bench of suite needs a container engine.
func hasContainerTasks(s *bench.Suite) bool {
	for _, t := range s.Tasks {
		if t.Container != nil {
			return true
		}
	}
	return false
}

// containerMounts is what an agent of a model needs in a container task's
// container: lane's own binary at its path here (it forwards the model
// endpoint, and is the tool host of lane's own loop) and the runtime's
// files (see runner.ContainerProgram).
func (r *Runner) containerMounts(ctx context.Context, ro *launch.Options) bench.Mounts {
	return func(model, share string) ([]container.Mount, error) {
		self, err := laneBinary()
		if err != nil {
			return nil, err
		}
		mounts := []container.Mount{{Host: self, Container: self, ReadOnly: true}}
		_, prog, err := r.containerProgram(ctx, ro, model)
		if err != nil || prog == nil {
			return mounts, err
		}
		for _, file := range prog.Files {
			mounts = append(mounts, container.Mount{Host: file.Host, Container: file.At, ReadOnly: true})
		}
		return mounts, nil
	}
}

// containerProgram is how model's runtime starts in a task's container:
// the path lane finds its binary at here, which the runner starts, and
// what starts it there instead; nil for lane's own loop, which runs here.
func (r *Runner) containerProgram(ctx context.Context, ro *launch.Options, model string) (string, *runner.ContainerProgram, error) {
	t, err := r.Config.Resolve(model, ro.Runtime, ro.BaseURL, r.Env.Getenv)
	if err != nil {
		return "", nil, err
	}
	rt, _ := r.Env.Runtimes.Lookup(t.Runtime)
	if !rt.RunsElsewhere() {
		return "", nil, fmt.Errorf("%s does not run in a task's container yet (%s do)", rt.Title, runsElsewhere(r.Env.Runtimes))
	}
	if rt.InProcess() {
		return "", nil, nil
	}
	bin, err := rt.Find(ctx, launch.RuntimeBin(r.Env, ro, rt), r.Env.Environ(), r.Env.VersionCache())
	if err != nil {
		return "", nil, err
	}
	prog, err := rt.ContainerProgram(bin.Path, exec.LookPath)
	if err != nil {
		return "", nil, err
	}
	return bin.Path, &prog, nil
}

// runsElsewhere names the runtimes that run in a task's container, as
// "A, B and C".
func runsElsewhere(runtimes runner.Entries) string {
	var titles []string
	for _, rt := range runtimes {
		if rt.RunsElsewhere() {
			titles = append(titles, rt.Title)
		}
	}
	if len(titles) < 2 {
		return strings.Join(titles, "")
	}
	return strings.Join(titles[:len(titles)-1], ", ") + " and " + titles[len(titles)-1]
}

// laneBinary is this lane's executable, its real path.
func laneBinary() (string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(self)
}

// inContainer sets ro up for an agent run inside the attempt's container:
// the runtime is started through the engine (exec -i, supervised as any
// run), its home and per-run configuration are in the attempt's share
// folder, lane does not snapshot a folder it cannot see, and every model
// endpoint on this machine's loopback is forwarded into the container
// through a socket in the share folder (so that a container without a
// network reaches it, and nothing else). The returned stop ends the
// forwarding; kill kills in the container what the runtime left running
// there (lane's stop of a run reaches the engine's CLI, not the runtime
// inside).
func (r *Runner) inContainer(ctx context.Context, ro *launch.Options, spec bench.RunSpec) (stop, kill func(), err error) {
	c, share := spec.Container, spec.Share
	found, prog, err := r.containerProgram(ctx, ro, spec.Model)
	if err != nil {
		return nil, nil, err
	}
	// A runtime's config file (opencode's) and lasting home (Gemini CLI's)
	// must be where the container sees them too.
	ro.NoChanges, ro.TempDir, ro.StateDir = true, share, share
	var mu sync.Mutex
	var execs []*exec.Cmd // the runtime's, one a start
	ro.Within = func(inv runner.Invocation) runner.Invocation {
		argv := append([]string{inv.Path}, inv.Args...)
		if prog != nil && inv.Path == found {
			argv = append(slices.Clone(prog.Argv), inv.Args...)
		}
		cmd := c.Command(ctx, container.ExecSpec{Argv: argv, Env: append(inv.Env, "HOME="+share), Workdir: inv.Dir})
		mu.Lock()
		execs = append(execs, cmd)
		mu.Unlock()
		return runner.Invocation{Path: cmd.Path, Args: cmd.Args[1:], Env: cmd.Env, Dir: share, Stdin: inv.Stdin,
			Kill: func() { _ = cmd.Cancel() }} // the command itself is never started: Cancel kills inside
	}
	kill = func() {
		mu.Lock()
		defer mu.Unlock()
		for _, cmd := range execs {
			_ = cmd.Cancel() // kills inside: the command itself is never started
		}
	}
	fctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	stop = func() { cancel(); wg.Wait() }
	self, err := laneBinary()
	if err != nil {
		stop()
		return nil, nil, err
	}
	for i, addr := range loopbackEndpoints(r.Env, ro) {
		sock := filepath.Join(share, fmt.Sprintf("endpoint-%d.sock", i))
		wg.Go(func() { _ = netfwd.Serve(fctx, sock, addr) }) // ends with fctx
		inside := c.Command(fctx, container.ExecSpec{Argv: []string{self, "forward", addr, sock}})
		out, err := inside.StdoutPipe()
		if err == nil {
			err = inside.Start()
		}
		if err != nil {
			stop()
			return nil, nil, fmt.Errorf("forward %s into the container: %w", addr, err)
		}
		wg.Go(func() { _ = inside.Wait() })
		// lane forward says "ready" once it listens.
		if line, _ := bufio.NewReader(out).ReadString('\n'); strings.TrimSpace(line) != "ready" {
			stop()
			return nil, nil, fmt.Errorf("forward %s into the container: it did not start", addr)
		}
	}
	return stop, kill, nil
}

// loopbackEndpoints are the model endpoints this run may use that are on
// this machine's loopback (a base URL in lane's environment or --base-url),
// as host:port.
func loopbackEndpoints(env *launch.Env, ro *launch.Options) []string {
	var urls []string
	if ro.BaseURL != "" {
		urls = append(urls, ro.BaseURL)
	}
	for _, kv := range env.Environ() {
		if k, v, _ := strings.Cut(kv, "="); strings.HasSuffix(k, "_BASE_URL") {
			urls = append(urls, v)
		}
	}
	seen := map[string]bool{}
	var out []string
	for _, raw := range urls {
		u, err := url.Parse(raw)
		if err != nil || u.Port() == "" || seen[u.Host] {
			continue
		}
		if h := u.Hostname(); h == "127.0.0.1" || h == "localhost" || h == "::1" {
			seen[u.Host] = true
			out = append(out, u.Host)
		}
	}
	return out
}

// benchSuite is the suite a bench runs: the loaded one, or a resumed
// bench's stored one (nil when it cannot be read; the bench says so).
func benchSuite(bc bench.Config) *bench.Suite {
	if bc.Resume == nil {
		return bc.Suite
	}
	var s bench.Suite
	if json.Unmarshal(bc.Resume.Suite, &s) != nil {
		return nil
	}
	return &s
}
