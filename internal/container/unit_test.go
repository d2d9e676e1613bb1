package container

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestPassEnv(t *testing.T) {
	t.Parallel()
	args, cliEnv := passEnv([]string{"API_KEY=s3cret", "PATH=/opt/bin:/bin", "EMPTY=", "XDG_CONFIG_HOME=/x", "bad", "=x", "A=b=c"})
	wantArgs := []string{"--env", "API_KEY", "--env", "PATH=/opt/bin:/bin", "--env", "EMPTY=", "--env", "XDG_CONFIG_HOME=/x", "--env", "A"}
	if !reflect.DeepEqual(args, wantArgs) {
		t.Errorf("args = %q, want %q", args, wantArgs)
	}
	if want := []string{"API_KEY=s3cret", "A=b=c"}; !reflect.DeepEqual(cliEnv, want) {
		t.Errorf("cliEnv = %q, want %q", cliEnv, want)
	}
}

func TestTail(t *testing.T) {
	t.Parallel()
	tl := newTail(10)
	tl.Write([]byte("line1\nline2\n"))
	tl.Write([]byte("line3\n"))
	if got := tl.String(); got != "…\nline3\n" {
		t.Errorf("tail = %q", got)
	}
	short := newTail(100)
	short.Write([]byte("a\nb"))
	if got := short.String(); got != "a\nb" {
		t.Errorf("tail = %q", got)
	}
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"a\nb\nc\n", 2, "b\nc"},
		{"a\nb\nc", 5, "a\nb\nc"},
		{"", 3, ""},
		{"only", 1, "only"},
	} {
		if got := lastLines(tc.in, tc.n); got != tc.want {
			t.Errorf("lastLines(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}

func TestContextDigest(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, content string, mode os.FileMode) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
	}
	digest := func() string {
		t.Helper()
		d, err := ContextDigest(dir)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	write("Dockerfile", "FROM x\n", 0o644)
	write("sub/run.sh", "echo hi\n", 0o755)
	d0 := digest()
	if len(d0) != 64 || strings.Trim(d0, "0123456789abcdef") != "" {
		t.Fatalf("digest %q is not hex SHA-256", d0)
	}
	if d := digest(); d != d0 {
		t.Fatal("digest of an unchanged folder changed")
	}
	// A new modification time is no change.
	if err := os.Chtimes(filepath.Join(dir, "Dockerfile"), time.Unix(1e9, 0), time.Unix(1e9, 0)); err != nil {
		t.Fatal(err)
	}
	if d := digest(); d != d0 {
		t.Fatal("touching a file changed the digest")
	}
	seen := map[string]string{d0: "start"}
	for _, step := range []struct {
		name   string
		change func()
	}{
		{"content", func() { write("sub/run.sh", "echo ho\n", 0o755) }},
		{"mode", func() { write("sub/run.sh", "echo ho\n", 0o644) }},
		{"new file", func() { write("sub/other", "", 0o644) }},
		{"rename", func() { os.Rename(filepath.Join(dir, "sub", "other"), filepath.Join(dir, "sub", "other2")) }},
		{"symlink", func() { os.Symlink("run.sh", filepath.Join(dir, "sub", "link")) }},
		{"symlink target", func() {
			os.Remove(filepath.Join(dir, "sub", "link"))
			os.Symlink("other2", filepath.Join(dir, "sub", "link"))
		}},
		{"empty folder", func() { os.Mkdir(filepath.Join(dir, "empty"), 0o755) }},
	} {
		step.change()
		d := digest()
		if prev, ok := seen[d]; ok {
			t.Errorf("after %s the digest is the one of %s", step.name, prev)
		}
		seen[d] = step.name
	}
	if _, err := ContextDigest(filepath.Join(dir, "missing")); err == nil {
		t.Error("ContextDigest of a missing folder succeeded")
	}
}

// A build container listing that Podman fails because a container went
// away while it read them (another run's, removed) is made again; the
// old build container it then lists is removed, missing or not.
func TestPruneBuildContainersListsAgain(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	script := `#!/bin/sh
d=$(dirname "$0")
case "$1" in
ps)
	if [ ! -e "$d/listed" ]; then
		: > "$d/listed"
		echo "Error: determining buildah container for container 33a1f780: container not known" >&2
		exit 125
	fi
	echo '[{"Id": "old-build", "State": "storage", "Created": 1000}, {"Id": "running", "State": "running", "Created": 1000}]' ;;
rm)
	echo "$@" >> "$d/removed" ;;
esac
`
	bin := filepath.Join(dir, "podman")
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	e := &Engine{Bin: bin}
	n, err := e.PruneBuildContainers(t.Context(), time.Hour)
	if err != nil || n != 1 {
		t.Fatalf("PruneBuildContainers = %d, %v; want 1 removed after listing again", n, err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "removed")); strings.TrimSpace(string(b)) != "rm -f --ignore old-build" {
		t.Errorf("removed %q, want the old build container, missing or not", b)
	}
}
