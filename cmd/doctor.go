package cmd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"lane/config"
	"lane/runner"
	"lane/sandbox"
)

// NewCmdDoctor builds `lane doctor`.
func NewCmdDoctor(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "doctor",
		Short: "Say what lane finds on this machine: runtimes, credentials, database, sandbox",
		Args:  noArgs,
		RunE: func(c *cobra.Command, args []string) error {
			return runDoctor(c.Context(), f)
		},
	}
}

// otherRuntimes are agent CLIs lane knows of but does not drive yet.
var otherRuntimes = []struct{ bin, pkg string }{
	{"codex", "@openai/codex"},
	{"gemini", "@google/gemini-cli"},
	{"opencode", "opencode-ai"},
	{"qwen", "@qwen-code/qwen-code"},
}

// credentialVars are the variables whose presence doctor reports; their
// values are never printed.
var credentialVars = []string{
	"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL",
	"OPENAI_API_KEY", "OPENAI_BASE_URL", "OLLAMA_HOST", "GEMINI_API_KEY", "GOOGLE_API_KEY",
}

func runDoctor(ctx context.Context, f *Factory) error {
	w := tabwriter.NewWriter(f.IO.Out, 0, 4, 2, ' ', 0)
	row := func(cols ...string) { fmt.Fprintln(w, strings.Join(cols, "\t")) }

	row("RUNTIMES", "", "")
	bin := f.Getenv("LANE_CLAUDE_BIN")
	if path, version, err := runner.FindClaude(ctx, bin, f.Environ()); err == nil {
		row("  claude", "ok", version+" at "+path)
	} else {
		var me *runner.MissingError
		hint := err.Error()
		if errors.As(err, &me) {
			hint = me.Hint
		}
		row("  claude", "missing", hint)
	}
	for _, rt := range otherRuntimes {
		path, err := exec.LookPath(rt.bin)
		if err != nil {
			row("  "+rt.bin, "missing", "npm install -g "+rt.pkg+" (lane does not drive it yet)")
			continue
		}
		row("  "+rt.bin, "found", firstLine(versionOf(ctx, path))+" at "+path+" (lane does not drive it yet)")
	}

	row("CREDENTIALS", "", "(values are never shown)")
	for _, v := range credentialVars {
		state := "not set"
		if f.Getenv(v) != "" {
			state = "set"
		}
		row("  "+v, state, "")
	}

	row("FILES", "", "")
	if db, err := f.DBPath(); err == nil {
		state := "will be created"
		if _, err := os.Stat(db); err == nil {
			state = "exists"
		}
		row("  database", state, db)
	}
	cfgPath := config.Path(f.Getenv)
	if _, err := config.Load(cfgPath); err != nil {
		row("  config", "invalid", err.Error())
	} else if _, err := os.Stat(cfgPath); err == nil {
		row("  config", "ok", cfgPath)
	} else {
		row("  config", "none", cfgPath+" (optional)")
	}

	row("SANDBOX", "", "(bash of the local loop)")
	dir, _ := os.Getwd()
	if sb, err := sandbox.New(sandbox.Auto, dir); err != nil {
		row("  auto", "error", err.Error())
	} else if sb.Note != "" {
		row("  "+string(sb.Mode), "weak", sb.Note)
	} else {
		row("  "+string(sb.Mode), "ok", "bash may write only in the run's folder, the temp dir and build caches")
	}
	return w.Flush()
}

func versionOf(ctx context.Context, path string) string {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "--version").Output()
	if err != nil {
		return "version unknown"
	}
	return string(bytes.TrimSpace(out))
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
