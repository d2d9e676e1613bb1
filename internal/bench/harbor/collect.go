package harbor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/lanehq/lane/internal/container"
)

// MaxCollectBytes bounds the files one collection keeps: what comes after
// is left out (and said so in its entry), as the copy is stored in the
// database with the attempt.
const MaxCollectBytes = 64 << 20

// Statuses of a CollectedArtifact.
const (
	ArtifactOK      = "ok"      // copied
	ArtifactMissing = "missing" // not in the container
	ArtifactFailed  = "failed"  // could not be copied: Error says why
	ArtifactSkipped = "skipped" // its stored path is another artifact's
)

// CollectOptions say what one collection takes besides the task's own
// artifacts and hooks.
type CollectOptions struct {
	// Dir is the host folder the copies go into; it is created.
	Dir string
	// Artifacts and Hooks are added to the task's (a step's own).
	Artifacts []Artifact
	Hooks     []CollectHook
	// StopMain stops the task's container once its hooks have run and its
	// artifacts are copied, before the other services' hooks run: a
	// separate verifier's collection, the last use of the agent's
	// container, whose processes must not meddle with the services'.
	StopMain bool
	// Log gets a line for each hook that fails; nil: none.
	Log io.Writer
}

// Collection is what Collect copied out of an attempt's containers: the
// files under Dir, each artifact as it went, and every file kept.
type Collection struct {
	Dir       string
	Artifacts []CollectedArtifact
	Files     []CollectedFile
}

// CollectedArtifact is one artifact as Collect found it.
type CollectedArtifact struct {
	Source  string `json:"source"` // absolute, in its service's container
	Service string `json:"service"`
	// Path is where it is stored, relative to the collection's folder
	// (with / between parts); "" when it was skipped.
	Path   string `json:"path,omitempty"`
	Status string `json:"status"`
	Error  string `json:"error,omitempty"`
}

// CollectedFile is one file of a Collection.
type CollectedFile struct {
	Path    string `json:"path"`   // relative to the collection's folder
	Source  string `json:"source"` // its path in its service's container
	Service string `json:"service"`
	Size    int64  `json:"size"`
}

// Collect runs the collect hooks of t (and opts.Hooks) and copies out
// its artifacts (and opts.Artifacts), ArtifactsDir always among them, to
// opts.Dir, as Harbor does: main's hooks, then main's artifacts, then
// (main stopped if opts.StopMain) the other services' hooks and
// artifacts. It is best-effort: a hook that fails is logged, an artifact
// that is missing or cannot be copied is recorded so; only a host folder
// that cannot be written is an error.
//
// An artifact's copy is stored under its destination, else under its
// source without the leading slash; one whose place overlaps an earlier
// artifact's is skipped. Symbolic links and special files are left out,
// and so is what a folder's exclude patterns match.
func Collect(ctx context.Context, main *container.Container, t *Task, opts CollectOptions) (*Collection, error) {
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("harbor: task %s: artifacts' folder: %w", t.Name, err)
	}
	hooks := slices.Concat(t.Verifier.Collect, opts.Hooks)
	artifacts := withConvention(slices.Concat(t.Artifacts, opts.Artifacts))
	col := &collector{t: t, main: main, dir: opts.Dir, log: writerOr(opts.Log), out: &Collection{Dir: opts.Dir}}
	isMain := func(s string) bool { return s == MainService }
	col.hooks(ctx, hooks, isMain)
	if err := col.copy(ctx, artifacts, isMain); err != nil {
		return nil, err
	}
	others := func(s string) bool { return s != MainService }
	if !slices.ContainsFunc(hooks, func(h CollectHook) bool { return others(h.Service) }) &&
		!slices.ContainsFunc(artifacts, func(a Artifact) bool { return others(a.ServiceName()) }) {
		return col.out, nil
	}
	if opts.StopMain {
		if err := main.Stop(ctx); err != nil {
			fmt.Fprintf(col.log, "[lane: stop the task's container before collecting the services' artifacts: %v]\n", err)
		}
	}
	col.hooks(ctx, hooks, others)
	if err := col.copy(ctx, artifacts, others); err != nil {
		return nil, err
	}
	return col.out, nil
}

// withConvention is artifacts with ArtifactsDir of main first, unless an
// entry of theirs names it (with its own excludes, say).
func withConvention(artifacts []Artifact) []Artifact {
	for _, a := range artifacts {
		if a.ServiceName() == MainService && containerPath(a.Source) == ArtifactsDir {
			return artifacts
		}
	}
	return append([]Artifact{{Source: ArtifactsDir}}, artifacts...)
}

// containerPath is source as an absolute, clean path: relative sources are
// relative to the container's root, as `docker compose cp` reads them.
func containerPath(source string) string {
	return path.Clean("/" + source)
}

// storedPath is where a's copy goes, relative to the collection's folder.
func storedPath(a Artifact) string {
	if a.Destination != "" {
		return strings.TrimPrefix(path.Clean(a.Destination), "./")
	}
	return strings.TrimPrefix(containerPath(a.Source), "/")
}

type collector struct {
	t    *Task
	main *container.Container
	dir  string
	log  io.Writer
	out  *Collection
	size int64 // of the files kept so far
}

// service is the container of the task's service name, nil when it is
// not running beside main.
func (c *collector) service(name string) *container.Container {
	if name == MainService {
		return c.main
	}
	return c.main.Beside(serviceContainerName(c.main, name))
}

// hooks runs those of hooks whose service which picks, in order.
func (c *collector) hooks(ctx context.Context, hooks []CollectHook, which func(string) bool) {
	for _, h := range hooks {
		if !which(h.Service) {
			continue
		}
		if err := c.hook(ctx, h); err != nil {
			fmt.Fprintf(c.log, "[lane: collect hook %q in service %s: %v]\n", h.Command, h.Service, err)
		}
	}
}

func (c *collector) hook(ctx context.Context, h CollectHook) error {
	ct := c.service(h.Service)
	if ct == nil {
		return errors.New("the service is not running")
	}
	// main's image has bash, as Harbor's tasks assume; a service's may
	// have only sh.
	argv := []string{"sh", "-c", h.Command}
	if h.Service == MainService {
		argv[0] = "bash"
	}
	hctx, cancel := context.WithTimeout(ctx, h.Timeout)
	defer cancel()
	out := &tailWriter{max: 2 << 10}
	code, err := ct.Exec(hctx, container.ExecSpec{Argv: argv, User: h.User, Stdout: out, Stderr: out})
	switch {
	case err != nil && hctx.Err() != nil && ctx.Err() == nil:
		return fmt.Errorf("ran past its timeout_sec (%s)", h.Timeout)
	case err != nil:
		return err
	case code != 0:
		return fmt.Errorf("exited %d: %s", code, strings.TrimSpace(out.String()))
	}
	return nil
}

// copy copies out those of artifacts whose service which picks.
func (c *collector) copy(ctx context.Context, artifacts []Artifact, which func(string) bool) error {
	for _, a := range artifacts {
		if !which(a.ServiceName()) {
			continue
		}
		got := CollectedArtifact{Source: containerPath(a.Source), Service: a.ServiceName(), Path: storedPath(a)}
		if other, ok := c.claimed(got); ok {
			got.Status, got.Error, got.Path = ArtifactSkipped, fmt.Sprintf("its place, %s, overlaps that of %s", got.Path, other), ""
		} else if err := c.copyOne(ctx, a, &got); err != nil {
			return err
		}
		c.out.Artifacts = append(c.out.Artifacts, got)
	}
	return nil
}

// claimed says whether got's stored path is, holds, or is in that of an
// artifact collected before, and names that artifact's source.
func (c *collector) claimed(got CollectedArtifact) (string, bool) {
	for _, prev := range c.out.Artifacts {
		if prev.Path == "" {
			continue
		}
		if prev.Path == got.Path || strings.HasPrefix(got.Path, prev.Path+"/") || strings.HasPrefix(prev.Path, got.Path+"/") {
			return prev.Source, true
		}
	}
	return "", false
}

// copyOne copies a out of its container into got.Path and records how it
// went in got; the error is the host's.
func (c *collector) copyOne(ctx context.Context, a Artifact, got *CollectedArtifact) error {
	ct := c.service(got.Service)
	if ct == nil {
		got.Status, got.Error = ArtifactFailed, "service "+got.Service+" is not running"
		return nil
	}
	dst := filepath.Join(c.dir, filepath.FromSlash(got.Path))
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return fmt.Errorf("harbor: task %s: artifacts' folder: %w", c.t.Name, err)
	}
	cctx, cancel := context.WithTimeout(ctx, setupTimeout)
	defer cancel()
	err := ct.CopyFrom(cctx, got.Source, dst)
	switch {
	case errors.Is(err, os.ErrNotExist):
		got.Status = ArtifactMissing
		return nil
	case err != nil:
		_ = os.RemoveAll(dst)
		got.Status, got.Error = ArtifactFailed, err.Error()
		return nil
	}
	got.Status = ArtifactOK
	return c.keep(dst, a, got)
}

// keep goes over what was copied to dst: it leaves out links, special
// files, what a's exclude patterns match and what goes past
// MaxCollectBytes, and lists the files kept.
func (c *collector) keep(dst string, a Artifact, got *CollectedArtifact) error {
	var over bool
	err := filepath.WalkDir(dst, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dst, p)
		rel = filepath.ToSlash(rel)
		if rel != "." && excluded(rel, a.Exclude) {
			if d.IsDir() {
				_ = os.RemoveAll(p)
				return fs.SkipDir
			}
			return os.Remove(p)
		}
		if d.IsDir() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if !info.Mode().IsRegular() || c.size+info.Size() > MaxCollectBytes {
			over = over || info.Mode().IsRegular()
			return os.Remove(p)
		}
		c.size += info.Size()
		file := CollectedFile{Path: got.Path, Source: got.Source, Service: got.Service, Size: info.Size()}
		if rel != "." {
			file.Path, file.Source = got.Path+"/"+rel, path.Join(got.Source, rel)
		}
		c.out.Files = append(c.out.Files, file)
		return nil
	})
	if err != nil {
		return fmt.Errorf("harbor: task %s: artifact %s: %w", c.t.Name, got.Source, err)
	}
	if fi, err := os.Lstat(dst); err == nil && !fi.IsDir() && !fi.Mode().IsRegular() {
		got.Status, got.Error = ArtifactFailed, "neither a file nor a folder (a symbolic link is not followed)"
	}
	if over {
		got.Error = fmt.Sprintf("files past lane's limit of %d MiB a collection were left out", MaxCollectBytes>>20)
	}
	sort.Slice(c.out.Files, func(i, j int) bool { return c.out.Files[i].Path < c.out.Files[j].Path })
	return nil
}

// excluded says whether the path rel (in a folder artifact) matches one of
// patterns as tar --exclude reads them: the whole path, or any of its
// tails that starts after a slash.
func excluded(rel string, patterns []string) bool {
	for _, p := range patterns {
		p = strings.TrimSuffix(strings.TrimPrefix(p, "./"), "/")
		if p == "" {
			continue
		}
		for tail := rel; ; {
			if ok, _ := path.Match(p, tail); ok {
				return true
			}
			i := strings.IndexByte(tail, '/')
			if i < 0 {
				break
			}
			tail = tail[i+1:]
		}
	}
	return false
}
