package runner

import (
	"path/filepath"
	"strconv"
	"strings"
)

// The setup functions below build each CLI's command line and the
// environment additions of one run. When lane must point a CLI at a model
// server (CLIOptions.BaseURL) it does so with command-line overrides or a
// configuration file in the run's own folder conf; the user's own
// configuration, login and sessions stay where they are, untouched, so
// that resume works as it does by hand.

// codexSetup: `codex exec --json …`; an endpoint is a provider given with
// -c overrides (Codex speaks only the Responses API to it).
func codexSetup(o CLIOptions, conf string) (args, env []string, err error) {
	args = []string{"exec", "--json", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox"}
	if o.ResumeSession == "" {
		args = append(args, "-C", o.Dir)
		for _, d := range o.AddDirs {
			args = append(args, "--add-dir", d)
		}
	}
	if o.Model != "" {
		args = append(args, "-m", o.Model)
	}
	if o.BaseURL != "" {
		args = append(args,
			"-c", `model_provider="lane"`,
			"-c", "model_providers.lane.name="+tomlString("lane"),
			"-c", "model_providers.lane.base_url="+tomlString(o.BaseURL),
			"-c", "model_providers.lane.env_key="+tomlString(codexKeyEnv),
			"-c", `model_providers.lane.wire_api="responses"`)
		env = append(env, codexKeyEnv+"="+o.keyFrom(o.Env))
	}
	if o.AppendSystemPrompt != "" {
		args = append(args, "-c", "developer_instructions="+tomlString(o.AppendSystemPrompt))
	}
	if o.ResumeSession != "" {
		args = append(args, "resume", o.ResumeSession)
	}
	return append(args, "--", o.Prompt), env, nil
}

// codexKeyEnv is the variable lane gives Codex the endpoint's key in.
const codexKeyEnv = "LANE_CODEX_API_KEY"

// tomlString quotes s as a TOML basic string (JSON's escapes are valid TOML).
func tomlString(s string) string { return strconv.Quote(s) }

// geminiSetup: `gemini -p TASK --output-format stream-json --yolo`. An
// endpoint needs API-key auth selected in a settings file, which lane
// writes as the run's system settings.
func geminiSetup(o CLIOptions, conf string) (args, env []string, err error) {
	args = []string{"--output-format", "stream-json", "--yolo", "--skip-trust"}
	if o.Model != "" {
		args = append(args, "-m", o.Model)
	}
	for _, d := range o.AddDirs {
		args = append(args, "--include-directories", d)
	}
	if o.ResumeSession != "" {
		args = append(args, "--resume", o.ResumeSession)
	}
	if o.BaseURL != "" {
		settings := filepath.Join(conf, "settings.json")
		if err := writeJSON(settings, map[string]any{
			"security": map[string]any{"auth": map[string]any{"selectedType": "gemini-api-key"}},
		}); err != nil {
			return nil, nil, err
		}
		env = append(env,
			"GEMINI_CLI_SYSTEM_SETTINGS_PATH="+settings,
			"GOOGLE_GEMINI_BASE_URL="+o.BaseURL,
			"GEMINI_API_KEY="+o.keyFrom(o.Env))
	}
	prompt := o.Prompt
	if o.AppendSystemPrompt != "" {
		prompt = o.AppendSystemPrompt + "\n\n" + prompt
	}
	return append(args, "--prompt", prompt), env, nil
}

// opencodeSetup: `opencode run --format json`. An endpoint is an
// openai-compatible provider "lane" in a config file named by
// OPENCODE_CONFIG, merged over the user's own.
func opencodeSetup(o CLIOptions, conf string) (args, env []string, err error) {
	args = []string{"run", "--format", "json", "--auto", "--title", title(o.Prompt)}
	model := o.Model
	if o.BaseURL != "" {
		file := filepath.Join(conf, "opencode.json")
		cfg := map[string]any{
			"$schema": "https://opencode.ai/config.json",
			"provider": map[string]any{
				"lane": map[string]any{
					"npm":     "@ai-sdk/openai-compatible",
					"name":    "lane",
					"options": map[string]any{"baseURL": o.BaseURL, "apiKey": "{env:" + opencodeKeyEnv + "}"},
					"models":  map[string]any{o.Model: map[string]any{"name": o.Model}},
				},
			},
		}
		if err := writeJSON(file, cfg); err != nil {
			return nil, nil, err
		}
		model = "lane/" + o.Model
		env = append(env, "OPENCODE_CONFIG="+file, "OPENCODE_DISABLE_MODELS_FETCH=1", opencodeKeyEnv+"="+o.keyFrom(o.Env))
	}
	if model != "" {
		args = append(args, "-m", model)
	}
	if o.ResumeSession != "" {
		args = append(args, "--session", o.ResumeSession)
	}
	// opencode works in $PWD, not only in its working directory.
	env = append(env, "PWD="+o.Dir, "OPENCODE_DISABLE_AUTOUPDATE=1")
	prompt := o.Prompt
	if o.AppendSystemPrompt != "" {
		prompt = o.AppendSystemPrompt + "\n\n" + prompt
	}
	return append(args, "--", prompt), env, nil
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

// qwenSetup: `qwen --output-format stream-json --yolo TASK`; an endpoint is
// Qwen Code's OpenAI auth with OPENAI_BASE_URL.
func qwenSetup(o CLIOptions, conf string) (args, env []string, err error) {
	args = []string{"--output-format", "stream-json", "--yolo"}
	if o.Model != "" {
		args = append(args, "-m", o.Model)
	}
	for _, d := range o.AddDirs {
		args = append(args, "--include-directories", d)
	}
	if o.AppendSystemPrompt != "" {
		args = append(args, "--append-system-prompt", o.AppendSystemPrompt)
	}
	if o.ResumeSession != "" {
		args = append(args, "--resume", o.ResumeSession)
	}
	if o.BaseURL != "" {
		args = append(args, "--auth-type", "openai")
		env = append(env, "OPENAI_BASE_URL="+o.BaseURL, "OPENAI_API_KEY="+o.keyFrom(o.Env))
		if o.Model != "" {
			env = append(env, "OPENAI_MODEL="+o.Model)
		}
	}
	return append(args, "--prompt", o.Prompt), env, nil
}
