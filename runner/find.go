package runner

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// ClaudeInstallHint tells a person how to get the Claude Code CLI.
const ClaudeInstallHint = "install Claude Code with `npm install -g @anthropic-ai/claude-code`, " +
	"or point lane at it with --claude-bin or LANE_CLAUDE_BIN"

// FindClaude locates the Claude Code binary: the explicit path (flag or
// LANE_CLAUDE_BIN) when given, else PATH, else the usual install places
// (npm's global prefix, nvm's node versions, ~/.claude/local, ~/.local/bin).
// Each candidate must answer `--version` with "Claude Code". It returns the
// path and the version line.
func FindClaude(ctx context.Context, explicit string, env []string) (path, version string, err error) {
	var tried []string
	check := func(p string) bool {
		if p == "" {
			return false
		}
		tried = append(tried, p)
		v, ok := claudeVersion(ctx, p, env)
		if ok {
			path, version = p, v
		}
		return ok
	}
	if explicit != "" {
		if check(explicit) {
			return path, version, nil
		}
		return "", "", &MissingError{Runtime: "Claude Code", Tried: tried,
			Hint: explicit + " is not a working Claude Code binary (`" + explicit + " --version` must print \"Claude Code\"); " + ClaudeInstallHint}
	}
	if p, err := exec.LookPath("claude"); err == nil && check(p) {
		return path, version, nil
	}
	home, _ := os.UserHomeDir()
	var places []string
	if home != "" {
		places = append(places,
			filepath.Join(home, ".claude", "local", "claude"),
			filepath.Join(home, ".claude", "local", "node_modules", ".bin", "claude"),
			filepath.Join(home, ".local", "bin", "claude"))
		nvm, _ := filepath.Glob(filepath.Join(home, ".nvm", "versions", "node", "*", "bin", "claude"))
		places = append(places, nvm...)
	}
	for _, p := range places {
		if fileExists(p) && check(p) {
			return path, version, nil
		}
	}
	// npm's prefix costs a Node start-up, so it is asked last.
	if prefix := npmGlobalPrefix(ctx); prefix != "" {
		p := filepath.Join(prefix, "bin", "claude")
		if fileExists(p) && check(p) {
			return path, version, nil
		}
	}
	return "", "", &MissingError{Runtime: "Claude Code", Tried: tried, Hint: ClaudeInstallHint}
}

func claudeVersion(ctx context.Context, path string, env []string) (string, bool) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, "--version")
	cmd.Env = env
	out, err := cmd.Output()
	if err != nil || !bytes.Contains(out, []byte("Claude Code")) {
		return "", false
	}
	return strings.TrimSpace(string(out)), true
}

func npmGlobalPrefix(ctx context.Context) string {
	npm, err := exec.LookPath("npm")
	if err != nil {
		return ""
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, npm, "prefix", "-g").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}
