package container_test

import (
	"cmp"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lanehq/lane/internal/container"
)

// putSources writes two host folders for Put: the second replaces the
// first's run.sh and adds a file; the first holds a private file, a
// private folder and a symbolic link.
func putSources(t *testing.T) (string, string) {
	t.Helper()
	one, two := t.TempDir(), t.TempDir()
	for _, d := range []string{filepath.Join(one, "private"), filepath.Join(one, "sub")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]struct {
		data string
		mode os.FileMode
	}{
		filepath.Join(one, "run.sh"):         {"#!/bin/sh\necho one\n", 0o700},
		filepath.Join(one, "sub", "data"):    {"data\n", 0o600},
		filepath.Join(one, "private", "key"): {"key\n", 0o600},
		filepath.Join(two, "run.sh"):         {"#!/bin/sh\necho two\n", 0o755},
		filepath.Join(two, "more"):           {"more\n", 0o644},
	}
	for name, f := range files {
		if err := os.WriteFile(name, []byte(f.data), f.mode); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("sub/data", filepath.Join(one, "link")); err != nil {
		t.Fatal(err)
	}
	return one, two
}

// What a put leaves, seen by a user other than root: the layered files,
// readable and the container user's; the link; nothing of what the
// folder held before; the fresh folder empty and open to all.
const putCheck = `set -e
cd /dst; ls -A; ./run.sh; cat sub/data private/key more link; readlink link
stat -c '%a %U %n' run.sh sub/data private private/key /fresh
ls -A /fresh | wc -l`

func putWant(owner string) string {
	return "link\nmore\nprivate\nrun.sh\nsub\ntwo\ndata\nkey\nmore\ndata\nsub/data\n" +
		"755 " + owner + " run.sh\n644 " + owner + " sub/data\n755 " + owner + " private\n644 " + owner + " private/key\n" +
		"777 root /fresh\n0\n"
}

// testPut puts two folders in a container whose user is user ("" for
// the image's, root), in an image with or without tar.
func testPut(t *testing.T, user string, withoutTar bool) {
	t.Parallel()
	ctx, e, image := setup(t)
	c := start(t, ctx, e, container.RunSpec{Image: image, Network: "none", User: user})
	prep := "mkdir -p /dst /fresh && echo old > /dst/old && echo stale > /fresh/stale && echo hidden > /fresh/.hidden"
	if withoutTar {
		// No tar program, and a sh that knows no tar applet (bash, not
		// busybox's).
		prep += " && rm /bin/tar && ln -sf bash /bin/sh"
	}
	if code, out := run(t, c, "0", prep); code != 0 {
		t.Fatalf("prepare: %d %s", code, out)
	}
	one, two := putSources(t)
	if err := c.Put(ctx, container.Put{Sources: []string{one, two}, Dest: "/dst", Readable: true, Fresh: []string{"/fresh"}}); err != nil {
		t.Fatal(err)
	}
	owner := cmp.Or(user, "root")
	if code, out := run(t, c, "nobody", putCheck); code != 0 || out != putWant(owner) {
		t.Errorf("after Put: %d\n%s\nwant\n%s", code, out, putWant(owner))
	}
	// Without Readable the copies keep their modes.
	if err := c.Put(ctx, container.Put{Sources: []string{two}, Dest: "/dst/sub"}); err != nil {
		t.Fatal(err)
	}
	if code, out := run(t, c, "0", "ls /dst/sub && stat -c %a /dst/sub/run.sh"); code != 0 || out != "more\nrun.sh\n755\n" {
		t.Errorf("after a second Put: %d %q", code, out)
	}
}

// run runs script in c as user and returns its exit code and output.
func run(t *testing.T, c *container.Container, user, script string) (int, string) {
	t.Helper()
	var out strings.Builder
	code, err := c.Exec(t.Context(), container.ExecSpec{Argv: []string{"sh", "-c", script}, User: user, Stdout: &out, Stderr: &out})
	if err != nil {
		t.Fatal(err)
	}
	return code, out.String()
}

func TestPut(t *testing.T)                    { testPut(t, "", false) }
func TestPutAsTheContainersUser(t *testing.T) { testPut(t, "agent", false) }
func TestPutInAnImageWithoutTar(t *testing.T) { testPut(t, "agent", true) }

func TestPutErrors(t *testing.T) {
	t.Parallel()
	ctx, e, image := setup(t)
	c := start(t, ctx, e, container.RunSpec{Image: image, Network: "none"})
	if err := c.Put(ctx, container.Put{Sources: []string{filepath.Join(t.TempDir(), "missing")}, Dest: "/dst"}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Put of a missing folder: %v", err)
	}
	if err := c.Put(ctx, container.Put{Sources: []string{t.TempDir()}, Dest: "dst"}); err == nil {
		t.Error("Put to a relative path: no error")
	}
	if code, out := sh(t, ctx, c, "echo file > /file"); code != 0 {
		t.Fatal(out)
	}
	if err := c.Put(ctx, container.Put{Sources: []string{t.TempDir()}, Dest: "/file/dst"}); err == nil {
		t.Error("Put under a file: no error")
	}
}

func TestReadFirst(t *testing.T) {
	t.Parallel()
	ctx, e, image := setup(t)
	c := start(t, ctx, e, container.RunSpec{Image: image, Network: "none"})
	if code, out := sh(t, ctx, c, "mkdir -p /r && printf 'two\\n\\n' > /r/two && printf '' > /r/three"); code != 0 {
		t.Fatal(out)
	}
	name, data, err := c.ReadFirst(ctx, "/r/one", "/r/two", "/r/three")
	if name != "/r/two" || string(data) != "two\n\n" || err != nil {
		t.Errorf("ReadFirst = %q, %q, %v", name, data, err)
	}
	name, data, err = c.ReadFirst(ctx, "/r/three", "/r/two")
	if name != "/r/three" || len(data) != 0 || err != nil {
		t.Errorf("ReadFirst of an empty file = %q, %q, %v", name, data, err)
	}
	if _, _, err := c.ReadFirst(ctx, "/r/one", "/r/four"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadFirst of missing files: %v, want fs.ErrNotExist", err)
	}
}
