package container

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Mount is a host folder or file bound into a container.
type Mount struct {
	Host      string // absolute path on the host
	Container string // absolute path in the container
	ReadOnly  bool
}

// RunSpec says what Start starts.
type RunSpec struct {
	Image string
	// Name is the container's name; "" makes one (lane-<random>).
	Name string
	// Workdir is where commands run when an ExecSpec names none; it is
	// created (as root) if the image lacks it. "" leaves the image's.
	Workdir string
	// OpenDirs are absolute folders made as the container starts (with
	// Workdir, in one exec), writable by every user. Not for a service.
	OpenDirs []string
	// CPUs and MemoryMB limit the container; 0 leaves the engine's default.
	CPUs     float64
	MemoryMB int
	// Network is "none" for no network, "" for the engine's default
	// network, or the name of a network.
	Network string
	Mounts  []Mount
	// Env is the container's environment, as NAME=value.
	Env    []string
	Labels map[string]string
	// Service, when set, makes the container run the image's own program
	// (a database, a server) instead of idling; Entrypoint and Command,
	// when set, replace the image's. User and Workdir apply to it.
	Service    bool
	Entrypoint []string
	Command    []string
	User       string
}

// StartError is a container that did not start: a missing image, a
// refused limit, an engine that cannot run containers here.
type StartError struct {
	Image  string
	Name   string
	Output string // the end of the engine's stderr
	Err    error
}

func (e *StartError) Error() string {
	return fmt.Sprintf("start container %s from %s: %v", e.Name, e.Image, e.Err)
}

func (e *StartError) Unwrap() error { return e.Err }

// Container is a running container started by Start. It idles (a sleep
// run by the image's sh) until it is removed; commands run in it through
// Exec or Command. Its methods are safe for concurrent use.
type Container struct {
	ID      string
	Name    string
	Workdir string // the default working folder of Exec and Command ("" is the image's)
	engine  *Engine

	mu       sync.Mutex
	besides  []*Container // started by StartBeside, removed with it
	env      []string     // SetEnv's
	atRemove []func(context.Context) error
}

// keepAlive is the container's own command: it must outlive every exec.
// Busybox's sleep may not know "infinity".
const keepAlive = "sleep infinity 2>/dev/null || while :; do sleep 3600; done"

// Start starts a container from spec.Image that idles until removed: the
// image's entrypoint is replaced by its sh running a sleep, with --init
// when the engine has an init program (so that orphans are reaped). The
// engine pulls an image it lacks. A failure is a *StartError, and whatever
// the engine created is removed.
func (e *Engine) Start(ctx context.Context, spec RunSpec) (*Container, error) {
	if spec.Name == "" {
		spec.Name = "lane-" + randomHex(6)
	}
	if spec.Workdir != "" && !path.IsAbs(spec.Workdir) {
		return nil, &StartError{Image: spec.Image, Name: spec.Name, Err: fmt.Errorf("workdir %q is not an absolute path", spec.Workdir)}
	}
	for {
		init := !e.noInit.Load()
		c, err := e.start(ctx, spec, init)
		if err == nil {
			return c, nil
		}
		var se *StartError
		if init && errors.As(err, &se) && missingInit(se.Output) {
			e.log().Warn("container engine has no init program: starting containers without --init", "bin", e.Bin)
			e.noInit.Store(true)
			continue
		}
		return nil, err
	}
}

// missingInit says whether a failed run's stderr blames the init program
// that --init asks for.
func missingInit(stderr string) bool {
	s := strings.ToLower(stderr)
	return strings.Contains(s, "init") && (strings.Contains(s, "not found") || strings.Contains(s, "no such file"))
}

func (e *Engine) start(ctx context.Context, spec RunSpec, init bool) (*Container, error) {
	args := []string{"run", "-d", "--name", spec.Name}
	if init {
		args = append(args, "--init")
	}
	if spec.Network != "" {
		args = append(args, "--network", spec.Network)
	}
	if spec.CPUs > 0 {
		args = append(args, "--cpus", strconv.FormatFloat(spec.CPUs, 'f', -1, 64))
	}
	if spec.MemoryMB > 0 {
		args = append(args, "--memory", strconv.Itoa(spec.MemoryMB)+"m")
	}
	labels := make([]string, 0, len(spec.Labels))
	for k, v := range spec.Labels {
		labels = append(labels, k+"="+v)
	}
	sort.Strings(labels)
	for _, l := range labels {
		args = append(args, "--label", l)
	}
	for _, m := range spec.Mounts {
		if !filepath.IsAbs(m.Host) || !path.IsAbs(m.Container) || strings.Contains(m.Host+m.Container, ",") {
			return nil, &StartError{Image: spec.Image, Name: spec.Name, Err: fmt.Errorf("mount %s:%s: paths must be absolute and without commas", m.Host, m.Container)}
		}
		opt := "type=bind,source=" + m.Host + ",target=" + m.Container
		if m.ReadOnly {
			opt += ",readonly"
		}
		args = append(args, "--mount", opt)
	}
	envArgs, cliEnv := passEnv(spec.Env)
	args = append(args, envArgs...)
	args = append(args, programArgs(spec)...)

	cmd := e.cmd(ctx, args...)
	cmd.Env = append(cmd.Env, cliEnv...)
	var out strings.Builder
	stderr := newTail(stderrTail)
	cmd.Stdout, cmd.Stderr = &out, stderr
	if err := e.wait(ctx, cmd, args, stderr); err != nil {
		// A name in use is another container's, which stays.
		if !strings.Contains(stderr.String(), "already in use") {
			e.cleanup(ctx, spec.Name)
		}
		return nil, &StartError{Image: spec.Image, Name: spec.Name, Output: stderr.String(), Err: err}
	}
	c := &Container{ID: strings.TrimSpace(out.String()), Name: spec.Name, Workdir: spec.Workdir, engine: e}
	if !spec.Service {
		if err := c.makeDirs(ctx, spec.Workdir, spec.OpenDirs); err != nil {
			e.cleanup(ctx, spec.Name)
			return nil, &StartError{Image: spec.Image, Name: spec.Name, Err: err}
		}
	}
	e.log().Debug("container started", "name", c.Name, "image", spec.Image)
	return c, nil
}

// programArgs ends a run's arguments: the image and what the container
// runs, an idling sh unless spec is a service.
func programArgs(spec RunSpec) []string {
	var args []string
	if spec.User != "" {
		args = append(args, "--user", spec.User)
	}
	if !spec.Service {
		return append(args, "--entrypoint", "sh", spec.Image, "-c", keepAlive)
	}
	if spec.Workdir != "" {
		args = append(args, "--workdir", spec.Workdir)
	}
	cmd := spec.Command
	if len(spec.Entrypoint) > 0 {
		// --entrypoint takes one word: the rest go before the command.
		args = append(args, "--entrypoint", spec.Entrypoint[0])
		cmd = append(slices.Clone(spec.Entrypoint[1:]), cmd...)
	}
	return append(append(args, spec.Image), cmd...)
}

// StartBeside starts spec's container in c's network namespace (each
// reaches the other at 127.0.0.1), whatever spec.Network says; c.Remove
// removes it too. It is how a task's other services run beside it.
func (c *Container) StartBeside(ctx context.Context, spec RunSpec) (*Container, error) {
	spec.Network = "container:" + c.Name
	if spec.Name == "" {
		spec.Name = c.Name + "-" + randomHex(3)
	}
	b, err := c.engine.Start(ctx, spec)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.besides = append(c.besides, b)
	c.mu.Unlock()
	return b, nil
}

// AddHosts adds names for ip to the container's /etc/hosts (as root,
// with its sh), so that a task's commands reach its services by name.
func (c *Container) AddHosts(ctx context.Context, ip string, names ...string) error {
	if len(names) == 0 {
		return nil
	}
	line := ip + " " + strings.Join(names, " ")
	return c.rootExec(ctx, "sh", "-c", `printf '%s\n' "$1" >> /etc/hosts`, "sh", line)
}

// cleanup removes what a failed start left, even when ctx is done.
func (e *Engine) cleanup(ctx context.Context, name string) {
	c := &Container{Name: name, engine: e}
	if err := c.Remove(ctx); err != nil {
		e.log().Warn("remove container after a failed start", "name", name, "err", err)
	}
}

// passEnv turns NAME=value pairs into exec/run arguments. A value is
// passed by name (`--env NAME`, the CLI taking it from its own
// environment, cliEnv) so that it does not show in the host's process
// list; names that the CLI itself reads, and empty values, go on the
// command line instead.
func passEnv(env []string) (args, cliEnv []string) {
	for _, kv := range env {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || name == "" {
			continue
		}
		if value == "" || cliReads(name) {
			args = append(args, "--env", kv)
			continue
		}
		args = append(args, "--env", name)
		cliEnv = append(cliEnv, kv)
	}
	return args, cliEnv
}

// cliReads says whether the engine CLI (or a program it starts) could
// change behaviour on the variable: such a value cannot be passed through
// the CLI's own environment.
func cliReads(name string) bool {
	switch strings.ToUpper(name) {
	case "PATH", "HOME", "TMPDIR", "USER", "LOGNAME", "SHELL", "PWD", "LANG", "LANGUAGE", "TZ",
		"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY", "NOTIFY_SOCKET", "DBUS_SESSION_BUS_ADDRESS":
		return true
	}
	for _, p := range []string{"LC_", "XDG_", "CONTAINERS_", "CONTAINER_", "DOCKER_", "BUILDAH_", "PODMAN_", "STORAGE_", "REGISTRY_", "GO", "LD_", "SSL_", "SSH_"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}

// ExecSpec says what Exec or Command runs.
type ExecSpec struct {
	Argv []string // the program and its arguments, no shell involved
	// Env is added to the container's environment, as NAME=value.
	Env []string
	// Workdir is where it runs; "" is the container's Workdir.
	Workdir string
	// User is a name or uid[:gid]; "" is the image's user.
	User string
	// Stdin, when not nil, streams to the command (`exec -i`); Stdout and
	// Stderr receive its output (nil discards it).
	Stdin          io.Reader
	Stdout, Stderr io.Writer
}

// ExecError is an exec the engine could not carry out: the container is not
// running, the user does not exist. The command's own failures are exit
// codes, not errors.
type ExecError struct {
	Container string
	ExitCode  int
	Stderr    string // the end of the engine's (and the command's) stderr
}

func (e *ExecError) Error() string {
	return fmt.Sprintf("exec in container %s: %s", e.Container, strings.TrimSpace(lastLines(e.Stderr, 3)))
}

// pidDir is where the wrapper of every exec writes its pid: /dev/shm is a
// world-writable tmpfs in every container Podman or Docker runs.
const pidDir = "/dev/shm"

// execWrapper is the sh script every exec runs first: it writes its pid to
// the file named by $0, marks the command's environment with that name
// (LANE_CONTAINER_EXEC), then becomes the command. An exec's process leads
// a process group (and session) of its own, so the pid is also the group
// that killInside kills; the mark, which every process the command starts
// inherits, finds those that left the group (a detached tool of an agent,
// a setsid), which would otherwise run on until the container goes.
const execWrapper = `{ echo $$ >"$0"; } 2>/dev/null; export LANE_CONTAINER_EXEC="$0"; exec "$@"`

// killScript kills the process group whose leader's pid is in the file $0,
// then every process marked with $0 (see execWrapper), where the image has
// tr and grep to find them (a grep may stop at a NUL: environ's are made
// lines first). A marked process may start another after the search
// listed /proc and before the search killed it: the search runs again
// until a pass finds none (at most 20 passes). It waits up to 3 s for the
// file: a command cancelled as it starts has not written it yet.
const killScript = `i=0; while [ ! -s "$0" ] && [ $i -lt 30 ]; do sleep 0.1 2>/dev/null || sleep 1; i=$((i+1)); done
p=$(cat "$0" 2>/dev/null) || exit 0; [ -n "$p" ] || exit 0
kill -9 -"$p" 2>/dev/null || kill -9 "$p" 2>/dev/null
n=0; while [ $n -lt 20 ]; do k=0
for d in /proc/[0-9]*; do tr '\0' '\n' <"$d/environ" 2>/dev/null | grep -qxF "LANE_CONTAINER_EXEC=$0" && kill -9 "${d#/proc/}" 2>/dev/null && k=1; done
[ $k = 0 ] && break; n=$((n+1)); done
rm -f "$0"; exit 0`

// killTimeout bounds the exec that kills a cancelled command inside its
// container.
const killTimeout = 15 * time.Second

// execCmd makes the `exec` command for spec and the pid file its wrapper
// writes.
func (c *Container) execCmd(ctx context.Context, spec ExecSpec, interactive bool) (*exec.Cmd, string, error) {
	if len(spec.Argv) == 0 {
		return nil, "", errors.New("container: exec needs a command")
	}
	args := []string{"exec"}
	if interactive {
		args = append(args, "-i")
	}
	if spec.User != "" {
		args = append(args, "--user", spec.User)
	}
	if wd := cmpOr(spec.Workdir, c.Workdir); wd != "" {
		args = append(args, "--workdir", wd)
	}
	envArgs, cliEnv := passEnv(c.execEnv(spec))
	args = append(args, envArgs...)
	pidFile := pidDir + "/lane-exec-" + randomHex(8)
	args = append(args, c.Name, "sh", "-c", execWrapper, pidFile)
	args = append(args, spec.Argv...)
	cmd := c.engine.cmd(ctx, args...)
	cmd.Env = append(cmd.Env, cliEnv...)
	cmd.Cancel = func() error {
		c.killInside(ctx, pidFile)
		return killGroup(cmd, syscall.SIGKILL)
	}
	return cmd, pidFile, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// killInside kills the process group of the exec whose wrapper wrote
// pidFile: killing the CLI alone leaves the command running in the
// container.
func (c *Container) killInside(ctx context.Context, pidFile string) {
	kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), killTimeout)
	defer cancel()
	if err := c.engine.run(kctx, nil, io.Discard, "exec", "--user", "0", c.Name, "sh", "-c", killScript, pidFile); err != nil {
		c.engine.log().Warn("kill a cancelled command in its container", "container", c.Name, "err", err)
	}
}

// Command returns the `exec -i` command for spec, for a caller that
// supervises the process itself (an agent CLI driven over stdin and
// stdout): stdin, stdout and stderr stream as they would for a local
// process. Its Stdin, Stdout and Stderr are spec's. The command is in a
// process group of its own; when ctx is done, its Cancel kills the
// command's processes inside the container, then the CLI's group.
// A caller that kills the CLI by other means (its group, say) leaves the
// command running in the container until the container is removed,
// unless it calls Cancel itself; so does one that starts a process of its
// own from the command's path and arguments, whose Cancel then kills
// what that process left in the container.
func (c *Container) Command(ctx context.Context, spec ExecSpec) *exec.Cmd {
	cmd, _, err := c.execCmd(ctx, spec, true)
	if err != nil {
		// No command to run: a command that fails the same way.
		cmd = exec.CommandContext(ctx, "/nonexistent/lane-container-exec-without-argv")
		cmd.Err = err
		return cmd
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = spec.Stdin, spec.Stdout, spec.Stderr
	return cmd
}

// Exec runs a command in the container and returns its exit code. The
// error is not nil only when the command could not be run or finish: the
// engine failed (an *ExecError), or ctx was done, in which case the
// command is killed inside the container too and the error wraps the
// context's cause.
func (c *Container) Exec(ctx context.Context, spec ExecSpec) (int, error) {
	cmd, _, err := c.execCmd(ctx, spec, spec.Stdin != nil)
	if err != nil {
		return -1, err
	}
	// Keep the end of stderr to explain an engine failure, without
	// breaking os/exec's promise of one writer goroutine when Stdout and
	// Stderr are the same writer.
	errTail := newTail(stderrTail)
	stderr := io.Writer(errTail)
	if spec.Stderr != nil {
		stderr = io.MultiWriter(spec.Stderr, errTail)
	}
	stdout := spec.Stdout
	if spec.Stdout != nil && sameWriter(spec.Stdout, spec.Stderr) {
		stdout = stderr
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = spec.Stdin, stdout, stderr
	start := time.Now()
	err = cmd.Run()
	c.engine.log().Debug("container exec", "container", c.Name, "argv0", spec.Argv[0], "duration", time.Since(start), "err", err)
	if ctx.Err() != nil {
		return -1, fmt.Errorf("exec %s in container %s: %w", spec.Argv[0], c.Name, context.Cause(ctx))
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code := ee.ExitCode()
		if (code == 125 && c.engine.Kind() == Podman) || code < 0 {
			return code, &ExecError{Container: c.Name, ExitCode: code, Stderr: errTail.String()}
		}
		return code, nil
	}
	if err != nil {
		return -1, fmt.Errorf("exec %s in container %s: %w", spec.Argv[0], c.Name, err)
	}
	return 0, nil
}

func sameWriter(a, b io.Writer) (same bool) {
	defer func() {
		if recover() != nil {
			same = false // not comparable
		}
	}()
	return a == b
}

// rootExec runs a short command as root, and returns an error for a
// non-zero exit too.
func (c *Container) rootExec(ctx context.Context, argv ...string) error {
	args := append([]string{"exec", "--user", "0", c.Name}, argv...)
	if err := c.engine.run(ctx, nil, io.Discard, args...); err != nil {
		return fmt.Errorf("in container %s: %w", c.Name, err)
	}
	return nil
}

// makeDirsScript makes the folder $1 (if not "") and the folders after
// it, which it opens to every user.
const makeDirsScript = `w=$1; shift; [ -z "$w" ] || mkdir -p "$w" || exit 1
for d; do mkdir -p "$d" && chmod 777 "$d" || exit 1; done`

// makeDirs makes a starting container's workdir (Podman, unlike Docker,
// refuses a workdir the image lacks) and its open folders, in one exec.
func (c *Container) makeDirs(ctx context.Context, workdir string, open []string) error {
	if workdir == "" && len(open) == 0 {
		return nil
	}
	for _, d := range open {
		if !path.IsAbs(d) {
			return fmt.Errorf("open folder %q is not an absolute path", d)
		}
	}
	return c.rootExec(ctx, append([]string{"sh", "-c", makeDirsScript, "sh", workdir}, open...)...)
}

func (c *Container) mkdir(ctx context.Context, dir string) error {
	return c.rootExec(ctx, "mkdir", "-p", dir)
}

// CopyTo copies a host file or folder into the container (`cp`). A folder's
// contents land in containerPath, which is created if missing (a folder
// there already is merged into); a file becomes containerPath, whose parent
// folders are created. The copies belong to root.
func (c *Container) CopyTo(ctx context.Context, hostPath, containerPath string) error {
	if !path.IsAbs(containerPath) {
		return fmt.Errorf("copy %s to container %s: %q is not an absolute path", hostPath, c.Name, containerPath)
	}
	fi, err := os.Stat(hostPath)
	if err != nil {
		return fmt.Errorf("copy to container %s: %w", c.Name, err)
	}
	src, dir := hostPath, path.Dir(containerPath)
	if fi.IsDir() {
		src, dir = filepath.Clean(hostPath)+"/.", containerPath
	}
	// The engine makes a folder's last part but not its parents: they are
	// made, and the copy tried again, only when the copy fails, which
	// spares an exec in the usual case.
	if err := c.engine.run(ctx, nil, io.Discard, "cp", src, c.Name+":"+containerPath); err == nil {
		return nil
	}
	if err := c.mkdir(ctx, dir); err != nil {
		return fmt.Errorf("copy %s to %s: %w", hostPath, containerPath, err)
	}
	if err := c.engine.run(ctx, nil, io.Discard, "cp", src, c.Name+":"+containerPath); err != nil {
		return fmt.Errorf("copy %s to %s in container %s: %w", hostPath, containerPath, c.Name, err)
	}
	return nil
}

// CopyFrom copies a file or folder out of the container (`cp`), as cp(1)
// would: if hostPath is an existing folder, the copy goes inside it, else
// it becomes hostPath (whose parent must exist).
func (c *Container) CopyFrom(ctx context.Context, containerPath, hostPath string) error {
	if err := c.engine.run(ctx, nil, io.Discard, "cp", c.Name+":"+containerPath, hostPath); err != nil {
		var ce *CommandError
		if errors.As(err, &ce) && strings.Contains(ce.Stderr, "no such file") {
			return fmt.Errorf("copy %s from container %s: %w", containerPath, c.Name, fs.ErrNotExist)
		}
		return fmt.Errorf("copy %s from container %s: %w", containerPath, c.Name, err)
	}
	return nil
}

// readScript prints the file $0, or exits 66 if there is none.
const readScript = `[ -e "$0" ] || exit 66; exec cat "$0"`

// ReadFile returns the content of a file in the container, read as root.
// A missing file is an error that matches fs.ErrNotExist.
func (c *Container) ReadFile(ctx context.Context, name string) ([]byte, error) {
	out, err := c.engine.output(ctx, nil, "exec", "--user", "0", c.Name, "sh", "-c", readScript, name)
	if err != nil {
		var ce *CommandError
		if errors.As(err, &ce) && ce.ExitCode == 66 {
			return nil, fmt.Errorf("read %s in container %s: %w", name, c.Name, fs.ErrNotExist)
		}
		return nil, fmt.Errorf("read %s in container %s: %w", name, c.Name, err)
	}
	return out, nil
}

// removeTimeout bounds Remove.
const removeTimeout = time.Minute

// Remove kills and removes the container with its anonymous volumes, and
// the containers started beside it. It
// works when ctx is already done (it then has removeTimeout of its own),
// so that a caller can defer it; a container already gone is no error.
func (c *Container) Remove(ctx context.Context) error {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), removeTimeout)
	defer cancel()
	// The containers in c's network go first, one by one: the engine
	// refuses to remove a namespace others still use.
	c.mu.Lock()
	besides := c.besides
	c.besides = nil
	c.mu.Unlock()
	for i := len(besides) - 1; i >= 0; i-- {
		if err := besides[i].remove(rctx); err != nil {
			return err
		}
	}
	if err := c.remove(rctx); err != nil {
		return err
	}
	return c.runAtRemove(rctx)
}

func (c *Container) remove(ctx context.Context) error {
	args := []string{"rm", "-f", "-v"}
	if c.engine.Kind() == Podman {
		args = append(args, "-t", "0")
	}
	args = append(args, c.Name)
	if err := c.engine.run(ctx, nil, io.Discard, args...); err != nil {
		var ce *CommandError
		if errors.As(err, &ce) && strings.Contains(strings.ToLower(ce.Stderr), "no such container") {
			return nil
		}
		return fmt.Errorf("remove container %s: %w", c.Name, err)
	}
	c.engine.log().Debug("container removed", "name", c.Name)
	return nil
}
