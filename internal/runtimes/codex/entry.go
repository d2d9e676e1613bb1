package codex

import (
	"io"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/lanehq/lane/internal/record"
	"github.com/lanehq/lane/internal/runner"
	"github.com/lanehq/lane/internal/runtimes/descriptor"
)

// Runtime is OpenAI's Codex CLI: `codex exec --json … -- TASK`, or,
// in an interactive run, `codex app-server` driven by a dialog (see
// codex_dialog.go).
func Runtime() *runner.Runtime {
	return &runner.Runtime{
		Descriptor: descriptor.Descriptor{
			Name: "codex", Title: "Codex", Package: "@openai/codex",
			EndpointAPI: "openai-responses", KeyEnv: "OPENAI_API_KEY", EnforcesTurns: true,
			ModelProvider: "openai",
			AccountEnv:    "CODEX_HOME", AccountDir: ".codex",
		},
		Describe: Call,
		Edits:    Edits,
		Process: &runner.Process{
			Binary: runner.BinarySpec{VersionOK: func(out string) bool { return strings.HasPrefix(out, "codex-cli ") }, Want: `"codex-cli VERSION"`},
			Setup:  codexSetup,
			// Its stream leaves out the account's usage windows; its
			// rollout has them.
			SessionLimits: sessionLimits,
			// A hermetic run's CODEX_HOME holds the login alone.
			Hermetic:     codexHermetic,
			ContainerEnv: []string{"OPENAI_", "CODEX_", codexKeyEnv + "=", "RUST_LOG="},
			NativeBinary: codexNative,
			NewSource: func(r io.Reader) runner.EventSource {
				d := NewDecoder(r)
				d.MaxOutputSize = runner.MaxEventOutput
				return d
			},
			NewJudge: func(o runner.Options) runner.Judge {
				return &runner.CLIJudge{Options: o, Tally: &Tally{Model: o.PricedModel(), PriorUsage: o.PriorSessionUsage}}
			},
			// exec's turn ends it; an app-server run ends with the result
			// its dialog posts (a turn's end may be followed by another).
			Final: func(ev record.Event) bool {
				return ev.Kind == record.KindResult ||
					(ev.Kind == record.KindUsage || ev.Kind == record.KindError) && (ev.Subtype == "turn.completed" || ev.Subtype == "turn.failed")
			},
			// exec reports the usage at the turn's end only.
			UsageAtEnd: true,
			StopOn:     runner.AuthRefusal,
			AuthHint:   AuthHint,
			Capability: codexCapability,
			NewDialog:  codexDialogFor,
			TakesMCP:   runner.EveryRun, // -c mcp_servers.NAME…, in exec and app-server alike
		},
	}
}

// codexSetup: `codex exec --json …`, or `codex app-server` in an
// interactive run (its dialog gives it the folder, the model and the task);
// an endpoint is a provider given with -c overrides (Codex speaks only the
// Responses API to it).
func codexSetup(o runner.Options, conf string) (runner.Setup, error) {
	if o.TwoWay() {
		args, env := codexProvider(o)
		args = append(args, codexMCP(o.MCPServers)...)
		return runner.Setup{Args: append([]string{"app-server"}, args...), Env: env}, nil
	}
	args := []string{"exec", "--json", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox"}
	if o.ResumeSession == "" {
		args = append(args, "-C", o.Dir)
		for _, d := range o.AddDirs {
			args = append(args, "--add-dir", d)
		}
	}
	if o.Model != "" {
		args = append(args, "-m", o.Model)
	}
	provider, env := codexProvider(o)
	args = append(args, provider...)
	args = append(args, codexMCP(o.MCPServers)...)
	if o.AppendSystemPrompt != "" {
		args = append(args, "-c", "developer_instructions="+tomlString(o.AppendSystemPrompt))
	}
	if o.ResumeSession != "" {
		args = append(args, "resume", o.ResumeSession)
	}
	return runner.Setup{Args: append(args, "--", o.Prompt), Env: env}, nil
}

// codexMCP are the MCP servers a run is given as Codex's -c overrides of
// mcp_servers (a command, or an http address).
func codexMCP(servers []runner.MCPServer) []string {
	var args []string
	for _, m := range servers {
		key := "mcp_servers." + bareKey(m.Name)
		if m.Transport == "http" || m.Transport == "sse" {
			args = append(args, "-c", key+".url="+tomlString(m.URL))
			continue
		}
		quoted := make([]string, 0, len(m.Args))
		for _, a := range m.Args {
			quoted = append(quoted, tomlString(a))
		}
		args = append(args, "-c", key+".command="+tomlString(m.Command), "-c", key+".args=["+strings.Join(quoted, ",")+"]")
		if len(m.Env) > 0 {
			pairs := make([]string, 0, len(m.Env))
			for _, k := range slices.Sorted(maps.Keys(m.Env)) {
				pairs = append(pairs, tomlString(k)+"="+tomlString(m.Env[k]))
			}
			args = append(args, "-c", key+".env={"+strings.Join(pairs, ",")+"}")
		}
	}
	return args
}

// bareKey is name as a TOML bare key, which Codex's -c paths take (they
// split at dots): its letters, digits, '-' and '_', the rest as '_'.
func bareKey(name string) string {
	return strings.Map(func(r rune) rune {
		if r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
			return r
		}
		return '_'
	}, name)
}

// codexProvider is the endpoint lane points Codex at, as -c overrides and
// the variable that holds its key; nothing without one.
func codexProvider(o runner.Options) (args, env []string) {
	if o.BaseURL == "" {
		return nil, nil
	}
	args = []string{
		"-c", `model_provider="lane"`,
		"-c", `model_providers.lane={name="lane",base_url=` + tomlString(o.BaseURL) +
			`,env_key=` + tomlString(codexKeyEnv) + `,wire_api="responses"}`,
	}
	return args, []string{codexKeyEnv + "=" + o.KeyFrom(o.Env)}
}

// codexCapability is what a Codex run may do: everything, unattended;
// what its permission mode and rules allow, in an interactive run, where
// Codex asks lane before its commands and patches.
func codexCapability(o runner.Options) record.Capability {
	if !o.TwoWay() {
		return runner.Unattended(o)
	}
	return record.Capability{Dir: o.Dir, AddDirs: o.AddDirs, AllowedTools: o.AllowedTools, PermissionMode: string(o.Mode())}
}

// codexDialogFor is the dialog of a two-way Codex run; other runs, a
// bench's unattended attempts, keep codex exec (see Options.twoWay).
func codexDialogFor(o runner.Options, run *record.Run) runner.Dialog {
	if !o.TwoWay() {
		return nil
	}
	return newCodexDialog(o, run)
}

// codexHermetic gives a hermetic run a CODEX_HOME of its own in home,
// holding only the user's login (auth.json): the user's AGENTS.md,
// config.toml (providers, MCP servers, profiles), prompts, skills and rules
// stay out. Its sessions stay there for the attempt's later tries.
func codexHermetic(o runner.Options, env []string) (add, excluded []string, err error) {
	user := runner.UserDir(env, "CODEX_HOME", ".codex")
	dir, excluded, err := runner.HermeticConfig(o.HermeticHome, "codex", user, []string{"auth.json"},
		[]string{"AGENTS.md", "AGENTS.override.md", "config.toml", "prompts", "skills", "rules"})
	if err != nil {
		return nil, nil, err
	}
	return []string{"CODEX_HOME=" + dir}, excluded, nil
}

// codexNative is the native Codex binary that the npm package's launcher
// (real is its resolved bin/codex.js) starts: the platform package's, a
// sibling in the @openai scope or nested in the package (0.171's layout),
// or the package's own vendor folder (earlier releases); "" for anything
// else.
func codexNative(real string) string {
	if filepath.Base(real) != "codex.js" {
		return ""
	}
	platform, ok := map[string]struct{ triple, pkg string }{
		"amd64": {"x86_64-unknown-linux-musl", "codex-linux-x64"},
		"arm64": {"aarch64-unknown-linux-musl", "codex-linux-arm64"},
	}[runtime.GOARCH]
	if !ok {
		return ""
	}
	triple, pkg := platform.triple, platform.pkg
	root := filepath.Dir(filepath.Dir(real)) // .../@openai/codex
	for _, p := range []string{
		filepath.Join(filepath.Dir(root), pkg, "vendor", triple, "bin", "codex"),
		filepath.Join(root, "node_modules", "@openai", pkg, "vendor", triple, "bin", "codex"),
		filepath.Join(root, "vendor", triple, "bin", "codex"),
		filepath.Join(root, "vendor", triple, "codex", "codex"),
	} {
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			return p
		}
	}
	return ""
}

// codexKeyEnv is the variable lane gives Codex the endpoint's key in.
const codexKeyEnv = "LANE_CODEX_API_KEY"

// tomlString quotes s as a TOML basic string (JSON's escapes are valid TOML).
func tomlString(s string) string { return strconv.Quote(s) }
