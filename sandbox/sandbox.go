// Package sandbox confines the commands of lane's bash tool: they may read
// and execute anything, but write only to the run's folder, the temp folder
// and a few devices. It uses Landlock where the kernel has it (applied by a
// launcher in the child, just before exec), else bubblewrap, else nothing,
// saying so.
package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
)

// Mode names a way of confining bash.
type Mode string

const (
	Auto     Mode = "auto"     // Landlock, else bubblewrap, else off
	Landlock Mode = "landlock" // the kernel's Landlock LSM
	Bwrap    Mode = "bwrap"    // bubblewrap: a read-only bind of / with writable binds
	Off      Mode = "off"      // no confinement of bash
)

// Sandbox is the confinement chosen for a run.
type Sandbox struct {
	Mode     Mode     // the effective mode: Landlock, Bwrap or Off
	Dir      string   // the working folder, absolute, symlinks resolved
	Writable []string // the folders bash may write to: Dir and the temp folder
	Note     string   // a sentence for lane's start-up output; empty when all is well
	ABI      int      // the kernel's Landlock ABI version (0: none)

	bwrap string // bwrap's path, for Mode Bwrap
}

// host is what New asks of the machine; tests pass a fake one.
type host struct {
	landlockABI func() int                                         // 0: no Landlock
	probeSelf   func(ctx context.Context, writable []string) error // the launcher in a child
	lookPath    func(file string) (string, error)
	probeBwrap  func(ctx context.Context, argv []string) error
}

func realHost() host {
	return host{landlockABI: landlockABI, probeSelf: probeLauncher, lookPath: exec.LookPath, probeBwrap: runProbe}
}

// New picks the confinement for mode ("" means Auto) around the folder dir.
// Auto falls back from Landlock to bubblewrap to off, the last with a Note;
// an explicit Landlock or Bwrap that does not work here is an error.
func New(mode Mode, dir string) (*Sandbox, error) {
	return newSandbox(mode, dir, realHost())
}

func newSandbox(mode Mode, dir string, h host) (*Sandbox, error) {
	if mode == "" {
		mode = Auto
	}
	switch mode {
	case Auto, Landlock, Bwrap, Off:
	default:
		return nil, fmt.Errorf("unknown sandbox mode %q (want auto, landlock, bwrap or off)", mode)
	}
	real, err := realDir(dir)
	if err != nil {
		return nil, err
	}
	s := &Sandbox{Dir: real, Writable: writableDirs(real), ABI: h.landlockABI()}
	if mode == Off {
		s.Mode = Off
		s.Note = "sandbox off by request: only lane's path checks confine the file tools; bash can write anywhere"
		return s, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	var llErr, bwErr error
	if mode == Auto || mode == Landlock {
		if llErr = s.tryLandlock(ctx, h); llErr == nil {
			return s, nil
		}
		if mode == Landlock {
			return nil, llErr
		}
	}
	if bwErr = s.tryBwrap(ctx, h); bwErr == nil {
		if s.ABI > 0 && llErr != nil {
			s.Note = fmt.Sprintf("sandbox: bubblewrap, as %s", llErr)
		}
		return s, nil
	}
	if mode == Bwrap {
		return nil, bwErr
	}
	s.Mode = Off
	s.Note = fmt.Sprintf("no sandbox available (%s, %s): only lane's path checks confine the file tools; bash can write anywhere", llErr, bwErr)
	return s, nil
}

func (s *Sandbox) tryLandlock(ctx context.Context, h host) error {
	if s.ABI < 1 {
		return errors.New("kernel without Landlock")
	}
	if err := h.probeSelf(ctx, s.Writable); err != nil {
		return fmt.Errorf("landlock (ABI v%d) cannot be enforced: %w", s.ABI, err)
	}
	s.Mode = Landlock
	return nil
}

func (s *Sandbox) tryBwrap(ctx context.Context, h host) error {
	path, err := h.lookPath("bwrap")
	if err != nil {
		return errors.New("no bubblewrap")
	}
	s.bwrap = path
	if err := h.probeBwrap(ctx, s.bwrapArgv([]string{"true"})); err != nil {
		s.bwrap = ""
		return fmt.Errorf("bubblewrap does not work here: %w", err)
	}
	s.Mode = Bwrap
	return nil
}

// Wrap returns the argv that runs cmd confined. With Landlock it starts
// lane itself (as /proc/self/exe, the running binary even if its file was
// replaced since), whose LauncherMain applies the rules and execs cmd; run it
// with the environment from Env. A nil Sandbox or Mode Off returns cmd.
func (s *Sandbox) Wrap(cmd []string) []string {
	if s == nil {
		return cmd
	}
	switch s.Mode {
	case Landlock:
		return append([]string{selfExe}, cmd...)
	case Bwrap:
		return s.bwrapArgv(cmd)
	}
	return cmd
}

// Env returns env as the command from Wrap needs it: with Landlock, plus the
// launcher's configuration in LANE_SANDBOX_EXEC (which the launcher removes
// before exec). Otherwise env less any stray LANE_SANDBOX_EXEC.
func (s *Sandbox) Env(env []string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if !strings.HasPrefix(kv, EnvExec+"=") {
			out = append(out, kv)
		}
	}
	if s != nil && s.Mode == Landlock {
		out = append(out, EnvExec+"="+launchConfig{Writable: s.Writable}.encode())
	}
	return out
}

func (s *Sandbox) bwrapArgv(cmd []string) []string {
	argv := []string{s.bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"}
	for _, d := range s.Writable {
		argv = append(argv, "--bind", d, d)
	}
	argv = append(argv, "--die-with-parent", "--")
	return append(argv, cmd...)
}

// realDir makes dir absolute with symlinks resolved, and checks it is a folder.
func realDir(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("sandbox folder: %w", err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", fmt.Errorf("sandbox folder: %w", err)
	}
	fi, err := os.Stat(real)
	if err != nil {
		return "", fmt.Errorf("sandbox folder: %w", err)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("sandbox folder %s is not a folder", dir)
	}
	return real, nil
}

// writableDirs is dir and the temp folder, parents before children (so a
// bwrap bind of a child is not hidden by its parent's), without "/".
func writableDirs(dir string) []string {
	dirs := []string{dir}
	if tmp, err := realDir(os.TempDir()); err == nil && tmp != "/" {
		dirs = append(dirs, tmp)
	}
	slices.SortFunc(dirs, func(a, b string) int { return len(a) - len(b) })
	return slices.Compact(dirs)
}

func landlockABI() int {
	v, err := ll.LandlockGetABIVersion()
	if err != nil || v < 0 {
		return 0
	}
	return v
}

// runProbe runs argv, which should exit 0 quickly, and reports how it failed.
func runProbe(ctx context.Context, argv []string) error {
	_, stderr, err := runChild(ctx, argv, nil)
	if err != nil && stderr != "" {
		return fmt.Errorf("%w: %s", err, stderr)
	}
	return err
}

// probeLauncher starts lane's launcher in a child with a probe
// configuration: it must apply the rules and answer, which proves both that
// the kernel enforces them and that LauncherMain is wired into main.
func probeLauncher(ctx context.Context, writable []string) error {
	return runLauncherProbe(ctx, selfExe, writable)
}

func runLauncherProbe(ctx context.Context, exe string, writable []string) error {
	if _, ok := os.LookupEnv(EnvExec); ok {
		// This process was started as a launcher and did not act as one:
		// a probe from here would start the same again, and so on.
		return errors.New(EnvExec + " is set but sandbox.LauncherMain() did not run: it must be called first thing in main (and in TestMain)")
	}
	env := append(os.Environ(), EnvExec+"="+launchConfig{Writable: writable, Probe: true}.encode())
	// The argument makes a binary without the launcher stop at once: lane's
	// command line rejects it, a test binary runs no test.
	stdout, stderr, err := runChild(ctx, []string{exe, "-test.run=^$"}, env)
	switch {
	case err == nil && stdout == probeReply:
		return nil
	case strings.HasPrefix(stderr, launcherPrefix):
		return errors.New(strings.TrimPrefix(stderr, launcherPrefix))
	}
	return errors.New("the launcher did not answer: sandbox.LauncherMain() must be called first thing in main (and in TestMain)")
}

func runChild(ctx context.Context, argv, env []string) (stdout, stderr string, err error) {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = env
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	cmd.WaitDelay = time.Second
	err = cmd.Run()
	return strings.TrimSpace(out.String()), strings.TrimSpace(errOut.String()), err
}
