package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// EnvExec is the variable that turns lane into the sandbox launcher; it
// holds the launcher's JSON configuration.
const EnvExec = "LANE_SANDBOX_EXEC"

// selfExe is the running binary, whatever happened to its file since.
const selfExe = "/proc/self/exe"

const (
	probeReply     = "lane-sandbox-ok"
	launcherPrefix = "lane sandbox: "
	exitLaunch     = 126 // as a shell reports a command it cannot execute
)

// launchConfig is what Wrap's command tells the launcher.
type launchConfig struct {
	Writable []string `json:"writable"`
	Probe    bool     `json:"probe,omitempty"` // apply the rules, answer probeReply, exit
}

func (c launchConfig) encode() string {
	b, err := json.Marshal(c)
	if err != nil {
		panic(err) // strings and a bool always marshal
	}
	return string(b)
}

// LauncherMain must be called first thing in main (and in a test binary's
// TestMain). When LANE_SANDBOX_EXEC is set, this process was started by a
// Landlock sandbox's Wrap: it confines itself and execs the command in
// os.Args[1:], never returning; if the rules cannot be enforced it exits 126
// with the reason on stderr, rather than run the command unconfined.
// Otherwise it returns at once.
func LauncherMain() {
	raw, ok := os.LookupEnv(EnvExec)
	if !ok {
		return
	}
	err := launch(raw, os.Args[1:])
	fmt.Fprintf(os.Stderr, "%s%v\n", launcherPrefix, err)
	exit(exitLaunch)
}

// exit ends the launcher at once: os.Exit in a -race binary first sleeps
// a second (GORACE atexit_sleep_ms), for nothing here.
func exit(code int) {
	syscall.Exit(code)
}

// launch confines the calling thread and execs args; it returns only on failure.
func launch(raw string, args []string) error {
	var c launchConfig
	if err := json.Unmarshal([]byte(raw), &c); err != nil {
		return fmt.Errorf("read %s: %w", EnvExec, err)
	}
	// The command must not see the variable: a lane it starts would take
	// itself for a launcher.
	if err := os.Unsetenv(EnvExec); err != nil {
		return err
	}
	var path string
	if !c.Probe {
		if len(args) == 0 {
			return errors.New("no command to run")
		}
		var err error
		if path, err = exec.LookPath(args[0]); err != nil {
			return err
		}
	}
	// Landlock before ABI v8 confines only the calling thread: stay on it
	// through exec, which keeps this thread's domain and ends the others.
	// The thread is never unlocked.
	runtime.LockOSThread()
	if err := restrict(c.Writable); err != nil {
		return err
	}
	if c.Probe {
		fmt.Println(probeReply)
		exit(0)
	}
	return syscall.Exec(path, args, os.Environ())
}

// landlockConfigs is go-landlock's config for each ABI version, index 0 for v1.
var landlockConfigs = []landlock.Config{
	landlock.V1, landlock.V2, landlock.V3, landlock.V4, landlock.V5, landlock.V6,
	landlock.V7, landlock.V8, landlock.V9, landlock.V10, landlock.V11,
}

// usableABI is the kernel's Landlock ABI as go-landlock may use it: capped
// at the newest it knows, and v6+ without the signal-scoping fix counted as
// v5 (go-landlock's own rule; only scoping differs, not file access).
func usableABI() int {
	v := landlockABI()
	if v >= 6 {
		if errata, err := ll.LandlockGetErrata(); err != nil || errata&0x2 == 0 {
			v = 5
		}
	}
	return min(v, len(landlockConfigs))
}

// rules is the file policy: read and execute everywhere; write in writable,
// in the temp devices and the terminal; everything else denied.
func rules(abi int, writable []string) []landlock.Rule {
	rw := landlock.RWDirs(writable...)
	if abi >= 2 {
		rw = rw.WithRefer() // mv and git renames across folders of the run
	}
	return []landlock.Rule{
		// Read, execute, device ioctls (terminals), and connecting to unix
		// sockets as before Landlock v9: only writes are confined.
		landlock.RODirs("/").WithIoctlDev().WithResolveUnix(),
		rw,
		landlock.RWFiles("/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/ptmx").WithIoctlDev().IgnoreIfMissing(),
		landlock.RWDirs("/dev/pts", "/dev/shm").WithIoctlDev().IgnoreIfMissing(),
		// GPU device nodes, which CUDA and ROCm open read-write.
		landlock.RWFiles(gpuDevices()...).WithIoctlDev().IgnoreIfMissing(),
	}
}

func gpuDevices() []string {
	devs, _ := filepath.Glob("/dev/nvidia*")
	return append(devs, "/dev/kfd", "/dev/dri")
}

// restrict confines the calling thread (locked by the caller) to the file
// policy, with every file access right the kernel knows handled. No best
// effort: anything it cannot enforce is an error.
func restrict(writable []string) error {
	abi := usableABI()
	if abi < 1 {
		return errors.New("the kernel has no Landlock")
	}
	cfg := landlock.Config{HandledAccessFS: landlockConfigs[abi-1].HandledAccessFS}
	if abi >= 7 {
		cfg = cfg.EnableLoggingForSubprocesses() // denials reach the audit log
	}
	fd, flags, err := cfg.NewRulesetFD(rules(abi, writable)...)
	if err != nil {
		return fmt.Errorf("landlock ruleset: %w", err)
	}
	if fd < 0 {
		return errors.New("landlock ruleset: nothing to enforce")
	}
	defer unix.Close(fd)
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("set no_new_privs: %w", err)
	}
	if err := ll.LandlockRestrictSelf(fd, flags); err != nil {
		return fmt.Errorf("landlock_restrict_self: %w", err)
	}
	return nil
}
