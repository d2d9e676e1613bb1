package opencode

import (
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/lanehq/lane/internal/record"
	"github.com/lanehq/lane/internal/runner"
	"github.com/lanehq/lane/internal/runtimes/acp"
	"github.com/lanehq/lane/internal/runtimes/descriptor"
)

// Runtime is opencode: `opencode run --format json`, the task on
// stdin, or `opencode acp` for an interactive run that may ask (see
// useACP).
func Runtime() *runner.Runtime {
	return &runner.Runtime{
		Descriptor: descriptor.Descriptor{
			Name: "opencode", Title: "opencode", Package: "opencode-ai",
			EndpointAPI: "openai", KeyEnv: "OPENAI_API_KEY", EnforcesTurns: true,
		},
		Describe: Call,
		Edits:    Edits,
		Process: &runner.Process{
			Binary: runner.BinarySpec{Extra: []string{filepath.Join(".opencode", "bin", "opencode")}, VersionOK: runner.IsSemver, Want: "a version number"},
			Setup:  opencodeSetup,
			NewSource: func(r io.Reader) runner.EventSource {
				d := NewDecoder(r)
				d.MaxOutputSize = runner.MaxEventOutput
				return d
			},
			NewJudge: acp.JudgeOr(func(o runner.Options) runner.CLITally { return &Tally{Model: o.PricedModel()} }),
			Final: func(ev record.Event) bool {
				return ev.Kind == record.KindResult || // ACP's, lane's own
					ev.Kind == record.KindTask && ev.Subtype == "step_finish" && ev.Result != nil && ev.Result.StopReason == "stop"
			},
			StopOn:     runner.AuthRefusal,
			StepTurns:  true,
			AuthHint:   AuthHint,
			Capability: acp.Capability,
			Hermetic:   opencodeHermetic,
			// opencode's own binary is native (the npm package's launcher
			// is replaced by it at install).
			ContainerEnv: []string{"OPENCODE_", opencodeKeyEnv + "=", "XDG_CONFIG_HOME=", "PWD="},
			TakesMCP:     acp.TakesMCP,
			NewDialog:    acp.DialogFor(acp.Spec{Prompt: runner.Options.PromptWithAddition, ExitCode: ACPExitCode}),
		},
	}
}

// opencodeSetup: `opencode run --format json`, the task on stdin (as an
// argument opencode quotes a task holding spaces), or `opencode acp` (see
// opencodeACPSetup). An endpoint is an openai-compatible provider "lane"
// in a config file named by OPENCODE_CONFIG, which opencode merges over
// the user's own.
func opencodeSetup(o runner.Options, conf string) (runner.Setup, error) {
	if acp.Speaks(o) {
		return opencodeACPSetup(o, conf)
	}
	// --title spares a model request that would only name the session.
	args := []string{"run", "--format", "json", "--auto", "--title", title(o.Prompt)}
	provider, model, env := opencodeProvider(o)
	if provider != nil {
		cfg, err := writeOpencodeConfig(conf, map[string]any{"provider": provider})
		if err != nil {
			return runner.Setup{}, err
		}
		env = append(env, cfg)
	}
	if model != "" {
		args = append(args, "-m", model)
	}
	if o.ResumeSession != "" {
		args = append(args, "--session", o.ResumeSession)
	}
	// opencode works in $PWD, not only in its working directory.
	env = append(env, "PWD="+o.Dir, "OPENCODE_DISABLE_AUTOUPDATE=1")
	return runner.Setup{Args: args, Env: env, Stdin: o.PromptWithAddition()}, nil
}

// opencodeACPSetup: `opencode acp`, whose model (ACP has no flag for it)
// and permissions are in the config file lane writes: every tool lane's
// rules may judge asks, and lane's gate answers.
func opencodeACPSetup(o runner.Options, conf string) (runner.Setup, error) {
	ask := map[string]any{}
	for _, tool := range []string{"bash", "edit", "read", "glob", "grep", "list", "webfetch"} {
		ask[tool] = "ask"
	}
	fields := map[string]any{"permission": ask}
	provider, model, env := opencodeProvider(o)
	if provider != nil {
		fields["provider"] = provider
	}
	if model != "" {
		fields["model"] = model
	}
	cfg, err := writeOpencodeConfig(conf, fields)
	if err != nil {
		return runner.Setup{}, err
	}
	env = append(env, cfg, "PWD="+o.Dir, "OPENCODE_DISABLE_AUTOUPDATE=1")
	return runner.Setup{Args: []string{"acp"}, Env: env}, nil
}

// opencodeProvider is the openai-compatible provider "lane" of a run lane
// points at an endpoint (nil without one), the model as opencode names it
// ("lane/MODEL", else the model given), and the environment its key is in.
func opencodeProvider(o runner.Options) (provider map[string]any, model string, env []string) {
	if o.BaseURL == "" {
		return nil, o.Model, nil
	}
	provider = map[string]any{
		"lane": map[string]any{
			"npm":     "@ai-sdk/openai-compatible",
			"name":    "lane",
			"options": map[string]any{"baseURL": o.BaseURL, "apiKey": "{env:" + opencodeKeyEnv + "}"},
			"models":  map[string]any{o.Model: map[string]any{"name": o.Model}},
		},
	}
	return provider, "lane/" + o.Model, []string{"OPENCODE_DISABLE_MODELS_FETCH=1", opencodeKeyEnv + "=" + o.KeyFrom(o.Env)}
}

// writeOpencodeConfig writes the run's config file, which opencode merges
// over the user's own, and returns the variable that names it.
func writeOpencodeConfig(conf string, fields map[string]any) (string, error) {
	file := filepath.Join(conf, "opencode.json")
	cfg := map[string]any{"$schema": "https://opencode.ai/config.json"}
	for k, v := range fields {
		cfg[k] = v
	}
	if err := runner.WriteJSON(file, cfg); err != nil {
		return "", err
	}
	return "OPENCODE_CONFIG=" + file, nil
}

// opencodeKeyEnv is the variable lane gives opencode the endpoint's key in.
const opencodeKeyEnv = "LANE_OPENCODE_API_KEY"

// title is a session title from the task, so that opencode does not spend
// a model request on naming the session.
func title(prompt string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(prompt), "\n")
	if r := []rune(line); len(r) > 60 {
		line = string(r[:60]) + "…"
	}
	if line == "" {
		line = "lane run"
	}
	return line
}

// opencodeUserSetup are what opencode reads from the user's
// ~/.config/opencode that a hermetic run leaves out: the global config
// (providers, MCP servers, permissions), instructions, agents, commands,
// plugins, modes, tools and skills.
var opencodeUserSetup = []string{"opencode.json", "opencode.jsonc", "config.json", "AGENTS.md",
	"agent", "agents", "command", "commands", "plugin", "plugins", "mode", "modes", "tool", "tools", "skill", "skills"}

// opencodeHermetic gives a hermetic run a config home of its own
// (XDG_CONFIG_HOME, as opencode has no variable for its global config
// folder alone) in Options.HermeticHome, and turns off what opencode takes
// from Claude Code's setup (~/.claude/CLAUDE.md, its skills) and from other
// tools' skill folders. The login (auth.json) and the sessions stay where
// they are, in opencode's data folder. The run's own config (OPENCODE_CONFIG)
// is a file of lane's and unaffected.
func opencodeHermetic(o runner.Options, env []string) (add, excluded []string, err error) {
	user := ""
	if base := runner.UserDir(o.Env, "XDG_CONFIG_HOME", ".config"); base != "" {
		user = filepath.Join(base, "opencode")
	}
	home := filepath.Join(o.HermeticHome, "opencode-config")
	if _, excluded, err = runner.HermeticConfig(home, "opencode", user, nil, opencodeUserSetup); err != nil {
		return nil, nil, err
	}
	if h := runner.LookupEnv(o.Env, "HOME"); h != "" {
		if _, err := os.Lstat(filepath.Join(h, ".claude", "CLAUDE.md")); err == nil {
			excluded = append(excluded, "~/.claude/CLAUDE.md")
		}
	}
	return []string{"XDG_CONFIG_HOME=" + home, "OPENCODE_DISABLE_CLAUDE_CODE=1", "OPENCODE_DISABLE_EXTERNAL_SKILLS=1"}, excluded, nil
}
