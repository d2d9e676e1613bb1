package container

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// BuildSpec says what Build builds.
type BuildSpec struct {
	ContextDir string // the build context
	Dockerfile string // its path; "" is ContextDir/Dockerfile
	Tag        string // the image's name:tag
	// BuildArgs are --build-arg values (ARG in the Dockerfile).
	BuildArgs map[string]string
	// Timeout bounds the build; 0 is none but the context's.
	Timeout time.Duration
	// Output, if not nil, receives the build's output as it is printed.
	Output io.Writer
}

// BuildError is a failed build: the image, the end of the build's output,
// and the underlying error (which matches context.DeadlineExceeded when the
// build ran out of time).
type BuildError struct {
	Tag    string
	Output string // the last lines of the build's stdout and stderr
	Err    error
}

func (e *BuildError) Error() string {
	msg := fmt.Sprintf("build image %s: %v", e.Tag, e.Err)
	if out := lastLines(e.Output, 5); out != "" && !strings.Contains(e.Err.Error(), strings.TrimSpace(out)) {
		msg += "\n" + out
	}
	return msg
}

func (e *BuildError) Unwrap() error { return e.Err }

// Build builds an image: `build -t TAG -f DOCKERFILE CONTEXT`. A failure is
// a *BuildError with the end of the output.
//
// Podman 4 does not clean up after a build it is told to stop (its
// timeout, a cancelled context): the build's working container stays in
// its storage, and the RUN step under way goes on until it ends. See
// PruneBuildContainers.
func (e *Engine) Build(ctx context.Context, spec BuildSpec) error {
	if spec.Tag == "" || spec.ContextDir == "" {
		return &BuildError{Tag: spec.Tag, Err: errors.New("a build needs a tag and a context folder")}
	}
	dockerfile := spec.Dockerfile
	if dockerfile == "" {
		dockerfile = filepath.Join(spec.ContextDir, "Dockerfile")
	}
	args := []string{"build", "-t", spec.Tag, "-f", dockerfile}
	if e.Kind() == Podman {
		args = append(args, "--force-rm")
	}
	names := make([]string, 0, len(spec.BuildArgs))
	for k := range spec.BuildArgs {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		args = append(args, "--build-arg", k+"="+spec.BuildArgs[k])
	}
	args = append(args, spec.ContextDir)
	if spec.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, spec.Timeout)
		defer cancel()
	}
	out := newTail(outputTail)
	var w io.Writer = out
	if spec.Output != nil {
		w = io.MultiWriter(out, spec.Output)
	}
	start := time.Now()
	cmd := e.cmd(ctx, args...)
	cmd.Stdout, cmd.Stderr = w, w
	err := e.wait(ctx, cmd, args, out)
	e.log().Info("container image build", "tag", spec.Tag, "duration", time.Since(start).Round(time.Millisecond), "err", err)
	if err != nil {
		var ce *CommandError
		if errors.As(err, &ce) {
			err = ce.Err
			if ce.ExitCode >= 0 {
				err = fmt.Errorf("build exited with status %d", ce.ExitCode)
			}
		}
		return &BuildError{Tag: spec.Tag, Output: out.String(), Err: err}
	}
	return nil
}

// PruneBuildContainers removes the working containers of Podman builds
// created more than olderThan ago, which only a stopped build leaves
// behind: a caller passes the longest a build of its may take. It returns
// how many it removed. With Docker it does nothing.
func (e *Engine) PruneBuildContainers(ctx context.Context, olderThan time.Duration) (int, error) {
	if e.Kind() != Podman {
		return 0, nil
	}
	// Podman fails the whole listing when a container it is reading goes
	// away meanwhile (another run's, removed): list again, a few times.
	var out []byte
	var err error
	for range 3 {
		out, err = e.output(ctx, nil, "ps", "-a", "--external", "--format", "json")
		if err == nil || !strings.Contains(err.Error(), "container not known") {
			break
		}
	}
	if err != nil {
		return 0, fmt.Errorf("list build containers: %w", err)
	}
	var list []struct {
		ID      string `json:"Id"`
		State   string
		Created int64
	}
	if err := json.Unmarshal(out, &list); err != nil {
		return 0, fmt.Errorf("list build containers: %w", err)
	}
	n := 0
	for _, c := range list {
		if c.State != "storage" || time.Since(time.Unix(c.Created, 0)) < olderThan {
			continue
		}
		if err := e.run(ctx, nil, io.Discard, "rm", "-f", "--ignore", c.ID); err != nil {
			return n, fmt.Errorf("remove build container %s: %w", c.ID, err)
		}
		n++
	}
	return n, nil
}

// ImageExists reports whether the engine has an image called tag.
func (e *Engine) ImageExists(ctx context.Context, tag string) bool {
	_, err := e.output(ctx, nil, "image", "inspect", "--format", "{{.Id}}", tag)
	return err == nil
}

// ImportSpec says what Import imports.
type ImportSpec struct {
	Tar string // a tar of the image's root file system
	Tag string
	// Changes are Dockerfile instructions applied to the image
	// (`--change`): "ENV PATH=/bin", "WORKDIR /".
	Changes []string
}

// Import makes an image from a root file system tar (`import`).
func (e *Engine) Import(ctx context.Context, spec ImportSpec) error {
	args := []string{"import"}
	for _, c := range spec.Changes {
		args = append(args, "--change", c)
	}
	args = append(args, spec.Tar, spec.Tag)
	if err := e.run(ctx, nil, io.Discard, args...); err != nil {
		return fmt.Errorf("import %s: %w", spec.Tag, err)
	}
	return nil
}

// Tag gives the image src the name dst as well.
func (e *Engine) Tag(ctx context.Context, src, dst string) error {
	if err := e.run(ctx, nil, io.Discard, "tag", src, dst); err != nil {
		return fmt.Errorf("tag %s as %s: %w", src, dst, err)
	}
	return nil
}

// RemoveImage removes the name tag (and the image, when no other name or
// container uses it).
func (e *Engine) RemoveImage(ctx context.Context, tag string) error {
	if err := e.run(ctx, nil, io.Discard, "rmi", tag); err != nil {
		return fmt.Errorf("remove image %s: %w", tag, err)
	}
	return nil
}

// Images lists the name:tag of every tag in the repository repo
// (Podman names local images localhost/REPO). The engine lists every
// name of an image that has a tag in repo, so the names of other
// repositories are left out here: a build whose Dockerfile is only FROM
// gives the FROM image a second name, and a caller pruning repo's tags
// must not remove the base with them.
func (e *Engine) Images(ctx context.Context, repo string) ([]string, error) {
	out, err := e.output(ctx, nil, "images", "--format", "{{.Repository}}:{{.Tag}}", repo)
	if err != nil {
		return nil, fmt.Errorf("list images %s: %w", repo, err)
	}
	var tags []string
	for _, l := range strings.Split(string(out), "\n") {
		l = strings.TrimSpace(l)
		i := strings.LastIndex(l, ":") // a tag has no colon; a registry's port may
		if i > 0 && l[i+1:] != "<none>" && l[:i] == repo {
			tags = append(tags, l)
		}
	}
	return tags, nil
}

// ContextDigest is a hash of a folder's content: every file's and folder's
// path, type and permission bits, each file's content and each symbolic
// link's target, in a fixed order. Modification times and owners are not
// in it, so a fresh checkout of unchanged files has the same digest. It is
// a hex SHA-256, meant for a tag that makes an unchanged build context
// build once.
func ContextDigest(dir string) (string, error) {
	h := sha256.New()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		mode := info.Mode()
		fmt.Fprintf(h, "%q %s\n", filepath.ToSlash(rel), mode.Type().String()+mode.Perm().String())
		switch {
		case mode.Type() == fs.ModeSymlink:
			target, err := os.Readlink(path)
			if err != nil {
				return err
			}
			fmt.Fprintf(h, "-> %q\n", target)
		case mode.IsRegular():
			f, err := os.Open(path)
			if err != nil {
				return err
			}
			fh := sha256.New()
			_, err = io.Copy(fh, f)
			f.Close()
			if err != nil {
				return err
			}
			fmt.Fprintf(h, "%d %x\n", info.Size(), fh.Sum(nil))
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("digest of %s: %w", dir, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
