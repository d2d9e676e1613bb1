package anthropictest

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// ClaudeBinEnv names a claude binary to use instead of the one installed under testdata/runtimes.
const ClaudeBinEnv = "LANE_TEST_CLAUDE_BIN"

// RequireClaudeEnv, set to 1 (CI does), turns a missing claude into a test failure instead of a skip.
const RequireClaudeEnv = "LANE_REQUIRE_CLAUDE"

// claudeRel is where `npm ci --prefix testdata/runtimes` puts the native binary, from the module root.
var claudeRel = filepath.Join("testdata", "runtimes", "node_modules", "@anthropic-ai", "claude-code-linux-x64", "claude")

// ClaudeBin returns the real Claude Code binary: $LANE_TEST_CLAUDE_BIN if set, else the one installed under
// testdata/runtimes. If there is none it skips the test, or fails it when $LANE_REQUIRE_CLAUDE=1.
func ClaudeBin(t testing.TB) string {
	t.Helper()
	root, err := moduleRoot()
	if err != nil {
		root = ""
	}
	return findClaude(t, os.Getenv, root)
}

// findClaude is ClaudeBin with the environment and the module root (or "" if none) given.
func findClaude(t testing.TB, getenv func(string) string, root string) string {
	t.Helper()
	if bin := getenv(ClaudeBinEnv); bin != "" {
		if err := checkExecutable(bin); err != nil {
			t.Fatalf("%s: %v", ClaudeBinEnv, err)
			return ""
		}
		return bin
	}
	why := "no go.mod above the working directory"
	if root != "" {
		bin := filepath.Join(root, claudeRel)
		err := checkExecutable(bin)
		if err == nil {
			return bin
		}
		why = err.Error()
	}
	msg := "real Claude Code not installed: run `npm ci --prefix testdata/runtimes` (make test does it) or set " +
		ClaudeBinEnv + " (" + why + ")"
	if getenv(RequireClaudeEnv) == "1" {
		t.Fatal(msg)
		return ""
	}
	t.Skip(msg)
	return ""
}

func checkExecutable(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return errors.New(path + " is not an executable file")
	}
	return nil
}

// moduleRoot walks up from the working directory (a test's package directory) to the folder with go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above " + dir)
		}
		dir = parent
	}
}

// ClaudeEnv is the environment for running claude against a scripted server at baseURL with home as HOME:
// the host's environment minus what could point claude elsewhere (ANTHROPIC_*, CLAUDE_CODE_*, CLAUDECODE,
// CLAUDE_CONFIG_DIR, XDG_* folders, proxies), plus the variables that keep it offline. It sets
// CLAUDE_CODE_MAX_RETRIES=0; a test overrides any of them by appending, as exec.Cmd uses the last value.
func ClaudeEnv(baseURL, home string) []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if !leaks(name) {
			env = append(env, kv)
		}
	}
	return append(env,
		"HOME="+home,
		"ANTHROPIC_BASE_URL="+baseURL,
		"ANTHROPIC_API_KEY=sk-ant-test",
		"DISABLE_TELEMETRY=1",
		"DISABLE_AUTOUPDATER=1",
		"DISABLE_ERROR_REPORTING=1",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"CLAUDE_CODE_MAX_RETRIES=0",
		"IS_SANDBOX=1", // lets --permission-mode bypassPermissions run as root
		"NO_PROXY=127.0.0.1,localhost",
	)
}

// leaks reports whether a host variable must not reach a test run of claude.
func leaks(name string) bool {
	upper := strings.ToUpper(name)
	for _, p := range []string{"ANTHROPIC_", "CLAUDE_CODE_", "CLAUDECODE", "CLAUDE_CONFIG_DIR", "XDG_"} {
		if strings.HasPrefix(upper, p) {
			return true
		}
	}
	switch upper {
	case "HOME", "IS_SANDBOX", "DISABLE_TELEMETRY", "DISABLE_AUTOUPDATER", "DISABLE_ERROR_REPORTING",
		"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY":
		return true
	}
	return false
}
