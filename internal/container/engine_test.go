package container_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lanehq/lane/internal/container"
	"github.com/lanehq/lane/internal/testkit/containertest"
)

// testTimeout bounds each engine test.
const testTimeout = 2 * time.Minute

func setup(t *testing.T) (context.Context, *container.Engine, string) {
	t.Helper()
	e := containertest.Engine(t)
	image := containertest.BaseImage(t, e)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return ctx, e, image
}

func start(t *testing.T, ctx context.Context, e *container.Engine, spec container.RunSpec) *container.Container {
	t.Helper()
	if spec.Labels == nil {
		spec.Labels = map[string]string{"lane.test": t.Name()}
	}
	c, err := e.Start(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Remove(ctx); err != nil {
			t.Error(err)
		}
	})
	return c
}

// sh runs a script in c as root and returns its exit code and output.
func sh(t *testing.T, ctx context.Context, c *container.Container, script string) (int, string) {
	t.Helper()
	var out bytes.Buffer
	code, err := c.Exec(ctx, container.ExecSpec{Argv: []string{"sh", "-c", script}, Stdout: &out, Stderr: &out})
	if err != nil {
		t.Fatalf("exec %q: %v", script, err)
	}
	return code, out.String()
}

// inspect returns a container's field, read with the engine's CLI.
func inspect(t *testing.T, e *container.Engine, name, format string) string {
	t.Helper()
	cmd := exec.Command(e.Bin, "inspect", "--format", format, name)
	cmd.Env = append(os.Environ(), e.Env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("inspect %s: %v: %s", name, err, out)
	}
	return strings.TrimSpace(string(out))
}

func TestStartExec(t *testing.T) {
	t.Parallel()
	ctx, e, image := setup(t)
	mounted := t.TempDir()
	if err := os.WriteFile(filepath.Join(mounted, "f"), []byte("from the host\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := start(t, ctx, e, container.RunSpec{
		Image:    image,
		Workdir:  "/work/app",
		Network:  "none",
		CPUs:     1.5,
		MemoryMB: 256,
		Env:      []string{"FOO=bar", "API_KEY=s3cret", "PATH=/bin:/usr/bin"},
		Mounts:   []container.Mount{{Host: mounted, Container: "/mnt/in", ReadOnly: true}},
		OpenDirs: []string{"/logs/open"},
	})
	if got := inspect(t, e, c.Name, "{{.HostConfig.Memory}} {{.HostConfig.NanoCpus}} {{index .Config.Labels \"lane.test\"}}"); got != "268435456 1500000000 TestStartExec" {
		t.Errorf("memory, cpus and label = %q", got)
	}

	code, out := sh(t, ctx, c, `pwd; echo "$FOO $API_KEY $PATH"; cat /mnt/in/f; ls /sys/class/net; exit 7`)
	if want := "/work/app\nbar s3cret /bin:/usr/bin\nfrom the host\nlo\n"; code != 7 || out != want {
		t.Errorf("exec = %d, %q; want 7, %q", code, out, want)
	}
	// The open folder is made, writable by every user.
	if code, err := c.Exec(ctx, container.ExecSpec{Argv: []string{"sh", "-c", "echo kept > /logs/open/f"}, User: "agent"}); err != nil || code != 0 {
		t.Errorf("writing in the open folder as agent: %d, %v", code, err)
	}
	if code, out := sh(t, ctx, c, "echo x > /mnt/in/g"); code == 0 {
		t.Errorf("writing a read-only mount succeeded: %s", out)
	}

	var stdout, stderr bytes.Buffer
	code, err := c.Exec(ctx, container.ExecSpec{
		Argv:    []string{"sh", "-c", `cat; echo "$FOO $EXTRA"; id -u; pwd; echo oops >&2`},
		Env:     []string{"FOO=override", "EXTRA=1"},
		User:    "agent",
		Workdir: "/tmp",
		Stdin:   strings.NewReader("from stdin\n"),
		Stdout:  &stdout, Stderr: &stderr,
	})
	if err != nil || code != 0 || stdout.String() != "from stdin\noverride 1\n1000\n/tmp\n" || stderr.String() != "oops\n" {
		t.Errorf("exec = %d, %v, stdout %q, stderr %q", code, err, stdout.String(), stderr.String())
	}
	if code, err := c.Exec(ctx, container.ExecSpec{Argv: []string{"no-such-program"}}); err != nil || code != 127 {
		t.Errorf("exec of a missing program = %d, %v; want 127", code, err)
	}
	if _, err := c.Exec(ctx, container.ExecSpec{}); err == nil {
		t.Error("exec without a command succeeded")
	}
}

func TestCopyAndRead(t *testing.T) {
	t.Parallel()
	ctx, e, image := setup(t)
	c := start(t, ctx, e, container.RunSpec{Image: image, Network: "none"})
	src := t.TempDir()
	os.MkdirAll(filepath.Join(src, "sub"), 0o755)
	os.WriteFile(filepath.Join(src, "run.sh"), []byte("#!/bin/sh\necho ran\n"), 0o755)
	os.WriteFile(filepath.Join(src, "sub", "data"), []byte("data\n"), 0o600)

	if err := c.CopyTo(ctx, src, "/dst/tests"); err != nil {
		t.Fatal(err)
	}
	// A second copy merges into the folder rather than nesting in it.
	if err := c.CopyTo(ctx, src, "/dst/tests"); err != nil {
		t.Fatal(err)
	}
	if err := c.CopyTo(ctx, filepath.Join(src, "run.sh"), "/a/b/copy.sh"); err != nil {
		t.Fatal(err)
	}
	code, out := sh(t, ctx, c, "/dst/tests/run.sh && /a/b/copy.sh && ls /dst/tests && cat /dst/tests/sub/data")
	if want := "ran\nran\nrun.sh\nsub\ndata\n"; code != 0 || out != want {
		t.Errorf("after CopyTo: %d, %q; want %q", code, out, want)
	}

	got, err := c.ReadFile(ctx, "/dst/tests/sub/data")
	if err != nil || string(got) != "data\n" {
		t.Errorf("ReadFile = %q, %v", got, err)
	}
	if _, err := c.ReadFile(ctx, "/no/such/file"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadFile of a missing file: %v, want fs.ErrNotExist", err)
	}
	if _, err := c.ReadFile(ctx, "/dst/tests"); err == nil || errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadFile of a folder: %v, want another error", err)
	}

	dst := filepath.Join(t.TempDir(), "out")
	if err := c.CopyFrom(ctx, "/dst/tests", dst); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dst, "sub", "data")); err != nil || string(b) != "data\n" {
		t.Errorf("copied out %q, %v", b, err)
	}
	if fi, err := os.Stat(filepath.Join(dst, "run.sh")); err != nil || fi.Mode().Perm()&0o100 == 0 {
		t.Errorf("run.sh copied out: %v, %v", fi, err)
	}
	if err := c.CopyFrom(ctx, "/no/such", dst+"2"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("CopyFrom of a missing path: %v, want fs.ErrNotExist", err)
	}
}

func TestRemove(t *testing.T) {
	t.Parallel()
	ctx, e, image := setup(t)
	c, err := e.Start(ctx, container.RunSpec{Image: image, Network: "none"})
	if err != nil {
		t.Fatal(err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := c.Remove(cancelled); err != nil {
		t.Fatalf("Remove with a cancelled context: %v", err)
	}
	if err := c.Remove(ctx); err != nil {
		t.Errorf("second Remove: %v", err)
	}
	var ee *container.ExecError
	if _, err := c.Exec(ctx, container.ExecSpec{Argv: []string{"true"}}); !errors.As(err, &ee) {
		t.Errorf("exec in a removed container: %v, want an ExecError", err)
	}
}

// processes lists the command lines in c that match substr.
func processes(t *testing.T, ctx context.Context, c *container.Container, substr string) []string {
	t.Helper()
	var found []string
	_, out := sh(t, ctx, c, `for f in /proc/[0-9]*/cmdline; do tr '\0' ' ' < "$f"; echo; done`)
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, substr) && !strings.Contains(l, "/proc/") {
			found = append(found, l)
		}
	}
	return found
}

func TestExecCancelKillsInside(t *testing.T) {
	t.Parallel()
	ctx, e, image := setup(t)
	c := start(t, ctx, e, container.RunSpec{Image: image, Network: "none"})
	short, cancel := context.WithTimeout(ctx, 1500*time.Millisecond)
	defer cancel()
	begin := time.Now()
	_, err := c.Exec(short, container.ExecSpec{Argv: []string{"sh", "-c", "sleep 301 & sleep 302; echo never"}, User: "agent"})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Exec error %v, want a deadline", err)
	}
	if d := time.Since(begin); d > 20*time.Second {
		t.Errorf("Exec took %s to return", d)
	}
	if left := processes(t, ctx, c, "sleep 30"); len(left) > 0 {
		t.Errorf("still running after the cancel: %q", left)
	}
}

// A command's Cancel kills in the container what the command started,
// even a process that left its process group (an agent's detached tool):
// also when the caller started a process of its own from the command's
// path and arguments, as an agent's runner does, and killed only that.
func TestCommandCancelKillsWhatLeftTheGroup(t *testing.T) {
	t.Parallel()
	ctx, e, image := setup(t)
	c := start(t, ctx, e, container.RunSpec{Image: image, Network: "none"})
	cmd := c.Command(ctx, container.ExecSpec{Argv: []string{"sh", "-c", "setsid sh -c 'echo ready; exec sleep 306' & sleep 307"}})
	own := exec.Command(cmd.Path, cmd.Args[1:]...)
	own.Env = cmd.Env
	stdout, err := own.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := own.Start(); err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(stdout).ReadString('\n'); line != "ready\n" {
		t.Fatalf("read %q, %v", line, err)
	}
	own.Process.Kill()
	own.Wait()
	if err := cmd.Cancel(); err != nil {
		t.Fatal(err)
	}
	if left := processes(t, ctx, c, "sleep 30"); len(left) > 0 {
		t.Errorf("still running after the cancel: %q", left)
	}
}

// A detached process that keeps starting others while the cancel looks
// for what the command left (an agent's tool mid-way through a script):
// those it started during the search are killed too.
func TestCommandCancelKillsWhatStartsDuringTheKill(t *testing.T) {
	t.Parallel()
	ctx, e, image := setup(t)
	c := start(t, ctx, e, container.RunSpec{Image: image, Network: "none"})
	// Others' processes, which the search reads before the loop's (their
	// pids are lower): the loop starts more meanwhile.
	if code, out := sh(t, ctx, c, `i=0; while [ $i -lt 60 ]; do sleep 310 </dev/null >/dev/null 2>&1 & i=$((i+1)); done`); code != 0 {
		t.Fatalf("exit %d: %s", code, out)
	}
	loop := `i=0; while [ $i -lt 2000 ]; do sleep 308 & [ $i = 3 ] && echo ready; sleep 0.01; i=$((i+1)); done`
	cmd := c.Command(ctx, container.ExecSpec{Argv: []string{"sh", "-c", "setsid sh -c '" + loop + "' & sleep 309"}})
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(stdout).ReadString('\n'); line != "ready\n" {
		t.Fatalf("read %q, %v", line, err)
	}
	if err := cmd.Cancel(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	if left := processes(t, ctx, c, "sleep 30"); len(left) > 0 {
		t.Errorf("still running after the cancel: %q", left)
	}
}

func TestCommandStreams(t *testing.T) {
	t.Parallel()
	ctx, e, image := setup(t)
	c := start(t, ctx, e, container.RunSpec{Image: image, Network: "none", Workdir: "/tmp"})
	cmd := c.Command(ctx, container.ExecSpec{Argv: []string{"sh", "-c", `while read -r l; do echo "got $l in $PWD"; done`}})
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(stdout)
	for _, word := range []string{"one", "two"} {
		// Each answer must come before stdin is closed: the exec streams.
		io.WriteString(stdin, word+"\n")
		line, err := r.ReadString('\n')
		if err != nil || line != "got "+word+" in /tmp\n" {
			t.Fatalf("read %q, %v", line, err)
		}
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("Wait: %v", err)
	}

	cctx, cancel := context.WithCancel(ctx)
	cmd = c.Command(cctx, container.ExecSpec{Argv: []string{"sleep", "303"}})
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := cmd.Wait(); err == nil {
		t.Error("Wait of a cancelled command succeeded")
	}
	if left := processes(t, ctx, c, "sleep 303"); len(left) > 0 {
		t.Errorf("still running after the cancel: %q", left)
	}
}

// buildContext writes a build context whose Dockerfile is FROM the build
// argument BASE, and returns it with a tag made of its digest and base.
func buildContext(t *testing.T, base, dockerfile string) (string, string) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte("ARG BASE\nFROM ${BASE}\n"+dockerfile), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "payload"), []byte("payload\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := container.ContextDigest(dir)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(d + "\x00" + base))
	return dir, "lane-container-test:" + hex.EncodeToString(sum[:8])
}

func TestBuild(t *testing.T) {
	t.Parallel()
	ctx, e, image := setup(t)
	dir, tag := buildContext(t, image, "COPY payload /payload\nRUN test -f /payload\n")
	if !e.ImageExists(ctx, tag) {
		var out bytes.Buffer
		if err := e.Build(ctx, container.BuildSpec{ContextDir: dir, Tag: tag, BuildArgs: map[string]string{"BASE": image}, Output: &out}); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out.String(), "COPY payload") {
			t.Errorf("build output lacks its steps:\n%s", out.String())
		}
	}
	if !e.ImageExists(ctx, tag) {
		t.Fatalf("no image %s after the build", tag)
	}
	c := start(t, ctx, e, container.RunSpec{Image: tag, Network: "none"})
	if b, err := c.ReadFile(ctx, "/payload"); err != nil || string(b) != "payload\n" {
		t.Errorf("ReadFile = %q, %v", b, err)
	}
	if e.ImageExists(ctx, "lane-container-test:no-such-tag") {
		t.Error("ImageExists of a missing tag")
	}
}

func TestBuildErrors(t *testing.T) {
	t.Parallel()
	ctx, e, image := setup(t)
	dir, tag := buildContext(t, image, "RUN echo lane-build-marker && exit 3\n")
	err := e.Build(ctx, container.BuildSpec{ContextDir: dir, Tag: tag, BuildArgs: map[string]string{"BASE": image}})
	var be *container.BuildError
	if !errors.As(err, &be) || !strings.Contains(be.Output, "lane-build-marker") || be.Tag != tag {
		t.Fatalf("Build error %#v, want a BuildError with the output", err)
	}
	if e.ImageExists(ctx, tag) {
		t.Error("a failed build made its image")
	}

	// Podman leaves a stopped build's working container, named after the
	// FROM image: build from a name of this test's own, to remove it.
	from := "lane-container-test-timeout:base"
	if err := e.Tag(ctx, image, from); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { removeWorkingContainers(t, e, "lane-container-test-timeout-working-container") })
	dir, tag = buildContext(t, from, "RUN sleep 20\n")
	begin := time.Now()
	err = e.Build(ctx, container.BuildSpec{ContextDir: dir, Tag: tag, BuildArgs: map[string]string{"BASE": from}, Timeout: 2 * time.Second})
	if !errors.As(err, &be) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Build error %v, want a BuildError matching context.DeadlineExceeded", err)
	}
	if d := time.Since(begin); d > 30*time.Second {
		t.Errorf("a build timed out after 2s returned after %s", d)
	}
	if _, err := e.PruneBuildContainers(ctx, 24*time.Hour); err != nil {
		t.Error(err)
	}
}

// removeWorkingContainers removes the build containers whose name starts
// with prefix.
func removeWorkingContainers(t *testing.T, e *container.Engine, prefix string) {
	if e.Kind() != container.Podman {
		return
	}
	cmd := exec.Command(e.Bin, "ps", "-a", "--external", "--format", "{{.ID}} {{.Names}}")
	cmd.Env = append(os.Environ(), e.Env...)
	out, err := cmd.Output()
	if err != nil {
		t.Errorf("list build containers: %v", err)
		return
	}
	for _, l := range strings.Split(string(out), "\n") {
		if id, name, ok := strings.Cut(l, " "); ok && strings.HasPrefix(name, prefix) {
			rm := exec.Command(e.Bin, "rm", "-f", id)
			rm.Env = cmd.Env
			if out, err := rm.CombinedOutput(); err != nil {
				t.Errorf("remove build container %s: %v: %s", name, err, out)
			}
		}
	}
}

func TestStartError(t *testing.T) {
	t.Parallel()
	ctx, e, _ := setup(t)
	name := "lane-test-start-error-" + strings.ReplaceAll(time.Now().Format("150405.000000"), ".", "")
	_, err := e.Start(ctx, container.RunSpec{Image: "localhost/lane-test/No_Such_Image:none", Name: name, Network: "none"})
	var se *container.StartError
	if !errors.As(err, &se) || se.Name != name {
		t.Fatalf("Start error %v, want a StartError", err)
	}
	cmd := exec.Command(e.Bin, "ps", "-a", "--filter", "name="+name, "--format", "{{.Names}}")
	cmd.Env = append(os.Environ(), e.Env...)
	if out, err := cmd.Output(); err != nil || strings.TrimSpace(string(out)) != "" {
		t.Errorf("after a failed start: %q, %v", out, err)
	}
	if _, err := e.Start(ctx, container.RunSpec{Image: "x", Workdir: "relative"}); !errors.As(err, &se) {
		t.Errorf("Start with a relative workdir: %v", err)
	}
}

// An image with names in two repositories (as a build of a Dockerfile that
// is only FROM gives its base) is listed under each by its own name only:
// pruning the tags of one repository must not remove the other's.
func TestImagesListsOneRepository(t *testing.T) {
	t.Parallel()
	ctx, e, image := setup(t)
	repo := "lane-container-test-alias"
	if e.Kind() == container.Podman {
		repo = "localhost/" + repo
	}
	alias := repo + ":" + strconv.FormatInt(time.Now().UnixNano(), 36)
	if err := e.Tag(ctx, image, alias); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.RemoveImage(ctx, alias); err != nil {
			t.Error(err)
		}
	})
	tags, err := e.Images(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(tags, alias) || slices.ContainsFunc(tags, func(tag string) bool { return !strings.HasPrefix(tag, repo+":") }) {
		t.Errorf("Images(%s) = %q, want %s and no name of another repository (the base is %s)", repo, tags, alias, image)
	}
	if !e.ImageExists(ctx, image) {
		t.Errorf("the base %s is gone", image)
	}
}
