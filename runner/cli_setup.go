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

// setup is one run's command line, environment additions and input.
type setup struct {
	args  []string
	env   []string
	stdin string
}

// codexSetup: `codex exec --json …`; an endpoint is a provider given with
// -c overrides (Codex speaks only the Responses API to it).
func codexSetup(o CLIOptions, conf string) (setup, error) {
	var env []string
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
	if o.BaseURL != "" {
		args = append(args,
			"-c", `model_provider="lane"`,
			"-c", `model_providers.lane={name="lane",base_url=`+tomlString(o.BaseURL)+
				`,env_key=`+tomlString(codexKeyEnv)+`,wire_api="responses"}`)
		env = append(env, codexKeyEnv+"="+o.keyFrom(o.Env))
	}
	if o.AppendSystemPrompt != "" {
		args = append(args, "-c", "developer_instructions="+tomlString(o.AppendSystemPrompt))
	}
	if o.ResumeSession != "" {
		args = append(args, "resume", o.ResumeSession)
	}
	return setup{args: append(args, "--", o.Prompt), env: env}, nil
}

// promptWithAddition is the task with --append-system-prompt before it,
// for the CLIs that have no flag of their own for it.
func (o CLIOptions) promptWithAddition() string {
	if o.AppendSystemPrompt == "" {
		return o.Prompt
	}
	return o.AppendSystemPrompt + "\n\n" + o.Prompt
}

// codexKeyEnv is the variable lane gives Codex the endpoint's key in.
const codexKeyEnv = "LANE_CODEX_API_KEY"

// tomlString quotes s as a TOML basic string (JSON's escapes are valid TOML).
func tomlString(s string) string { return strconv.Quote(s) }

// geminiSetup: `gemini --prompt=TASK --output-format stream-json --yolo`.
// An endpoint needs API-key auth selected in settings.json, and Gemini CLI
// reads settings only from its home (a system settings path is honoured
// only for root-owned files), so lane gives it a home of lane's own,
// GEMINI_CLI_HOME under StateDir, where its sessions also stay for resume.
func geminiSetup(o CLIOptions, conf string) (setup, error) {
	args := []string{"--output-format", "stream-json", "--yolo", "--skip-trust"}
	if o.Model != "" {
		args = append(args, "-m", o.Model)
	}
	for _, d := range o.AddDirs {
		args = append(args, "--include-directories", d)
	}
	if o.ResumeSession != "" {
		args = append(args, "--resume", o.ResumeSession)
	}
	// Without this gemini relaunches itself as a child that ignores SIGINT.
	env := []string{"GEMINI_CLI_NO_RELAUNCH=true"}
	if o.BaseURL != "" {
		home := conf
		if o.StateDir != "" {
			home = filepath.Join(o.StateDir, "gemini")
		}
		if err := writeJSON(filepath.Join(home, ".gemini", "settings.json"), geminiSettings); err != nil {
			return setup{}, err
		}
		env = append(env,
			"GEMINI_CLI_HOME="+home,
			"GOOGLE_GEMINI_BASE_URL="+o.BaseURL,
			"GEMINI_API_KEY="+o.keyFrom(o.Env))
	}
	// One argument, so that a task starting with "-" stays a task.
	return setup{args: append(args, "--prompt="+o.promptWithAddition()), env: env}, nil
}

// geminiSettings is the settings.json of lane's Gemini CLI home: API-key
// auth (a custom base URL otherwise selects an auth mode that headless runs
// reject, exit 41), and no usage statistics, telemetry, update checks or
// IDE link (the statistics alone probe the GPU and wait on Google's servers
// at exit, about 10 s where they cannot be reached).
var geminiSettings = map[string]any{
	"security":  map[string]any{"auth": map[string]any{"selectedType": "gemini-api-key"}},
	"privacy":   map[string]any{"usageStatisticsEnabled": false},
	"telemetry": map[string]any{"enabled": false},
	"general":   map[string]any{"enableAutoUpdate": false, "enableAutoUpdateNotification": false},
	"ide":       map[string]any{"enabled": false},
}

// opencodeSetup: `opencode run --format json`, the task on stdin (as an
// argument opencode quotes a task holding spaces). An endpoint is an
// openai-compatible provider "lane" in a config file named by
// OPENCODE_CONFIG, which opencode merges over the user's own.
func opencodeSetup(o CLIOptions, conf string) (setup, error) {
	var env []string
	// --title spares a model request that would only name the session.
	args := []string{"run", "--format", "json", "--auto", "--title", title(o.Prompt)}
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
			return setup{}, err
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
	return setup{args: args, env: env, stdin: o.promptWithAddition()}, nil
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

// qwenSetup: `qwen --output-format stream-json --yolo` with the task on
// stdin; an endpoint
// is Qwen Code's OpenAI auth with OPENAI_BASE_URL, and a system settings
// file of the run's own that turns off usage statistics and managed memory
// (which posts to Alibaba's servers and adds model requests of its own).
func qwenSetup(o CLIOptions, conf string) (setup, error) {
	args := []string{"--output-format", "stream-json", "--yolo"}
	// Without this qwen relaunches itself in a child node process.
	env := []string{"QWEN_CODE_NO_RELAUNCH=1"}
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
		settings := filepath.Join(conf, "settings.json")
		if err := writeJSON(settings, qwenSettings); err != nil {
			return setup{}, err
		}
		args = append(args, "--auth-type", "openai")
		env = append(env, "QWEN_CODE_SYSTEM_SETTINGS_PATH="+settings,
			"OPENAI_BASE_URL="+o.BaseURL, "OPENAI_API_KEY="+o.keyFrom(o.Env))
		if o.Model != "" {
			env = append(env, "OPENAI_MODEL="+o.Model)
		}
	}
	env = append(env, "PWD="+o.Dir)
	// On stdin, so that a task starting with "-" stays a task (qwen takes
	// no "--" before its positional prompt, and -p is deprecated).
	return setup{args: args, env: env, stdin: o.Prompt}, nil
}

// qwenSettings is the system settings of a Qwen Code run lane points at an
// endpoint.
var qwenSettings = map[string]any{
	"$version":  4,
	"privacy":   map[string]any{"usageStatisticsEnabled": false},
	"telemetry": map[string]any{"enabled": false},
	"memory":    map[string]any{"enableManagedAutoMemory": false, "enableManagedAutoDream": false},
}
