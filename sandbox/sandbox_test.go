package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestMain(m *testing.M) {
	// The test binary is its own Landlock launcher.
	LauncherMain()
	os.Exit(m.Run())
}

// fakeHost answers New's questions without asking the machine.
func fakeHost(abi int, landlockErr, bwrapErr error, bwrapOnPath bool) host {
	return host{
		landlockABI: func() int { return abi },
		probeSelf:   func(context.Context, []string) error { return landlockErr },
		lookPath: func(string) (string, error) {
			if !bwrapOnPath {
				return "", exec.ErrNotFound
			}
			return "/usr/bin/bwrap", nil
		},
		probeBwrap: func(context.Context, []string) error { return bwrapErr },
	}
}

func TestNewChoosesAMode(t *testing.T) {
	dir := t.TempDir()
	broken := errors.New("broken")
	const noSandbox = "no sandbox available (kernel without Landlock, no bubblewrap): only lane's path checks confine the file tools; bash can write anywhere"
	tests := []struct {
		name     string
		mode     Mode
		host     host
		want     Mode
		note     string // a prefix of the Note
		errorHas string // "" when New succeeds
	}{
		{"auto takes landlock", Auto, fakeHost(7, nil, nil, true), Landlock, "", ""},
		{"empty is auto", "", fakeHost(7, nil, nil, true), Landlock, "", ""},
		{"auto falls back to bwrap", Auto, fakeHost(0, nil, nil, true), Bwrap, "", ""},
		{"auto falls back to bwrap when landlock fails", Auto, fakeHost(7, broken, nil, true), Bwrap, "sandbox: bubblewrap, as landlock (ABI v7) cannot be enforced: broken", ""},
		{"auto without either", Auto, fakeHost(0, nil, nil, false), Off, noSandbox, ""},
		{"auto with both broken", Auto, fakeHost(3, broken, broken, true), Off,
			"no sandbox available (landlock (ABI v3) cannot be enforced: broken, bubblewrap does not work here: broken)", ""},
		{"off", Off, fakeHost(7, nil, nil, true), Off, "sandbox off by request", ""},
		{"landlock missing", Landlock, fakeHost(0, nil, nil, true), "", "", "kernel without Landlock"},
		{"landlock broken", Landlock, fakeHost(7, broken, nil, true), "", "", "cannot be enforced: broken"},
		{"bwrap missing", Bwrap, fakeHost(7, nil, nil, false), "", "", "no bubblewrap"},
		{"bwrap broken", Bwrap, fakeHost(7, nil, broken, true), "", "", "bubblewrap does not work here: broken"},
		{"unknown", "chroot", fakeHost(7, nil, nil, true), "", "", `unknown sandbox mode "chroot"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := newSandbox(tt.mode, dir, tt.host)
			if tt.errorHas != "" {
				if err == nil || !strings.Contains(err.Error(), tt.errorHas) {
					t.Fatalf("error %v, want one with %q", err, tt.errorHas)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.Mode != tt.want || !strings.HasPrefix(s.Note, tt.note) || (tt.note == "") != (s.Note == "") {
				t.Errorf("mode %s, note %q; want %s, %q", s.Mode, s.Note, tt.want, tt.note)
			}
		})
	}
	if _, err := newSandbox(Off, filepath.Join(dir, "missing"), fakeHost(0, nil, nil, false)); err == nil {
		t.Error("a missing folder")
	}
}

func TestWrap(t *testing.T) {
	dir := t.TempDir()
	real, _ := filepath.EvalSymlinks(dir)
	tmp, _ := filepath.EvalSymlinks(os.TempDir())
	cmd := []string{"bash", "-c", "echo hi"}

	var none *Sandbox
	if got := none.Wrap(cmd); !slices.Equal(got, cmd) {
		t.Errorf("nil sandbox wraps: %q", got)
	}
	env := []string{"A=1", EnvExec + "=stray"}
	if got := none.Env(env); !slices.Equal(got, []string{"A=1"}) {
		t.Errorf("nil sandbox env: %q", got)
	}

	off, _ := newSandbox(Off, dir, fakeHost(0, nil, nil, false))
	if got := off.Wrap(cmd); !slices.Equal(got, cmd) {
		t.Errorf("off wraps: %q", got)
	}
	if !slices.Contains(off.Writable, real) || (tmp != "/" && !slices.Contains(off.Writable, tmp)) {
		t.Errorf("writable %q, want %s and %s", off.Writable, real, tmp)
	}

	bw, _ := newSandbox(Bwrap, dir, fakeHost(0, nil, nil, true))
	want := []string{"/usr/bin/bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"}
	for _, d := range bw.Writable {
		want = append(want, "--bind", d, d)
	}
	want = append(want, "--die-with-parent", "--", "bash", "-c", "echo hi")
	if got := bw.Wrap(cmd); !slices.Equal(got, want) {
		t.Errorf("bwrap argv\n%q\nwant\n%q", got, want)
	}

	ll, _ := newSandbox(Landlock, dir, fakeHost(7, nil, nil, false))
	if got := ll.Wrap(cmd); !slices.Equal(got, append([]string{"/proc/self/exe"}, cmd...)) {
		t.Errorf("landlock argv %q", got)
	}
	got := ll.Env(env)
	if len(got) != 2 || got[0] != "A=1" || !strings.HasPrefix(got[1], EnvExec+"=") {
		t.Fatalf("landlock env %q", got)
	}
	var c launchConfig
	if err := json.Unmarshal([]byte(strings.TrimPrefix(got[1], EnvExec+"=")), &c); err != nil || !slices.Equal(c.Writable, ll.Writable) || c.Probe {
		t.Errorf("launcher config %+v, %v", c, err)
	}
}

// outsideDir makes a folder outside the working folder and the temp folder
// (which the sandbox lets bash write to), or skips the test.
func outsideDir(t *testing.T, writable []string) string {
	t.Helper()
	home, _ := os.UserHomeDir()
	for _, base := range []string{"/var/tmp", home, "/root"} {
		if base == "" {
			continue
		}
		d, err := os.MkdirTemp(base, "lane-sandbox-test-")
		if err != nil {
			continue
		}
		real, _ := filepath.EvalSymlinks(d)
		inside := false
		for _, w := range writable {
			if real == w || strings.HasPrefix(real, w+"/") {
				inside = true
			}
		}
		if inside {
			os.RemoveAll(d)
			continue
		}
		t.Cleanup(func() { os.RemoveAll(d) })
		return real
	}
	t.Skip("no folder outside the temp folder to test writes in")
	return ""
}

// sh runs a shell command line wrapped by s, returning its output and error.
func sh(s *Sandbox, dir, line string) (string, error) {
	argv := s.Wrap([]string{"sh", "-c", line})
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = s.Env(os.Environ())
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// checkConfines runs the checks a working sandbox must pass.
func checkConfines(t *testing.T, s *Sandbox) {
	outside := outsideDir(t, s.Writable)
	dir := s.Dir
	target := filepath.Join(outside, "lane-test-outside")

	out, err := sh(s, dir, "echo x > "+target)
	if err == nil {
		t.Errorf("writing %s outside worked: %s", target, out)
	}
	if _, err := os.Stat(target); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s exists after a refused write (%v)", target, err)
	}
	for _, line := range []string{
		"mkdir " + outside + "/sub",
		"touch " + outside + "/f",
		"ln -s /etc/passwd " + outside + "/link",
	} {
		if out, err := sh(s, dir, line); err == nil {
			t.Errorf("%s worked: %s", line, out)
		}
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Errorf("the outside folder holds %d entries", len(entries))
	}

	out, err = sh(s, dir, "echo inside > in.txt && mkdir -p a b && echo m > a/m && mv a/m b/m && cat b/m && head -c 4 /etc/passwd >/dev/null && echo tmp > "+filepath.Join(os.TempDir(), filepath.Base(dir)+"-tmp")+" && env")
	if err != nil {
		t.Fatalf("work inside failed: %v: %s", err, out)
	}
	os.Remove(filepath.Join(os.TempDir(), filepath.Base(dir)+"-tmp"))
	if got, _ := os.ReadFile(filepath.Join(dir, "in.txt")); string(got) != "inside\n" {
		t.Errorf("in.txt holds %q", got)
	}
	if strings.Contains(out, EnvExec) {
		t.Errorf("the command sees %s", EnvExec)
	}
}

func TestLandlockConfines(t *testing.T) {
	s, err := New(Landlock, t.TempDir())
	if err != nil {
		t.Skipf("Landlock does not work here: %v", err)
	}
	t.Logf("Landlock ABI v%d", s.ABI)
	checkConfines(t, s)
}

func TestBwrapConfines(t *testing.T) {
	s, err := New(Bwrap, t.TempDir())
	if err != nil {
		t.Skipf("bubblewrap does not work here: %v", err)
	}
	checkConfines(t, s)
}

func TestAutoHere(t *testing.T) {
	s, err := New(Auto, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("auto chose %s (Landlock ABI v%d); note %q", s.Mode, s.ABI, s.Note)
	if s.Mode == Off && s.Note == "" {
		t.Error("off without a note")
	}
}

// TestLauncherFailsLoudly: a launcher that cannot confine the command does
// not run it.
func TestLauncherFailsLoudly(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(t.TempDir(), "ran")
	tests := []struct {
		name, config string
		args         []string
		stderr       string
	}{
		{"unenforceable", `{"writable":["/no/such/folder"]}`, []string{"sh", "-c", "touch " + marker}, "/no/such/folder"},
		{"bad config", `{"writable":`, []string{"sh", "-c", "touch " + marker}, "read " + EnvExec},
		{"no command", `{"writable":["/tmp"]}`, nil, "no command to run"},
		{"unknown command", `{"writable":["/tmp"]}`, []string{"no-such-command-here"}, "executable file not found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.name == "unenforceable" && landlockABI() < 1 {
				tt.stderr = "no Landlock"
			}
			cmd := exec.Command(exe, tt.args...)
			cmd.Env = append(os.Environ(), EnvExec+"="+tt.config)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 126 {
				t.Errorf("exit %v, want 126", err)
			}
			if !strings.HasPrefix(stderr.String(), "lane sandbox: ") || !strings.Contains(stderr.String(), tt.stderr) {
				t.Errorf("stderr %q, want one with %q", stderr.String(), tt.stderr)
			}
			if _, err := os.Stat(marker); err == nil {
				t.Error("the command ran")
			}
		})
	}
}

// TestProbeNeedsTheLauncher: a binary that does not call LauncherMain is
// told so instead of being taken for a Landlock launcher.
func TestProbeNeedsTheLauncher(t *testing.T) {
	if landlockABI() < 1 {
		t.Skip("kernel without Landlock")
	}
	// sh stands in for a lane without LauncherMain: it ignores the variable.
	err := runLauncherProbe(t.Context(), "/bin/sh", []string{t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "sandbox.LauncherMain() must be called") {
		t.Errorf("probe of a binary without the launcher: %v", err)
	}
	if err := runLauncherProbe(t.Context(), selfExe, []string{t.TempDir()}); err != nil {
		t.Errorf("probe of this binary: %v", err)
	}
}
