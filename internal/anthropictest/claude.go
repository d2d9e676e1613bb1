package anthropictest

import (
	"os"
	"strings"
	"testing"

	"lane/internal/clitest"
)

// ClaudeBin returns the real Claude Code binary: $LANE_TEST_CLAUDE_BIN if
// set, else the one installed under testdata/runtimes (see clitest.Bin).
func ClaudeBin(t testing.TB) string {
	t.Helper()
	return clitest.Bin(t, "claude")
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
