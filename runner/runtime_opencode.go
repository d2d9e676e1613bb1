package runner

import (
	"io"
	"path/filepath"
	"strings"

	"lane/runtimes/opencode"
	"lane/trace"
)

// opencodeRuntime is opencode: `opencode run --format json`, the task on stdin.
func opencodeRuntime() *Runtime {
	return &Runtime{
		Name: "opencode", Title: "opencode", Package: "opencode-ai",
		EndpointAPI: "openai", KeyEnv: "OPENAI_API_KEY", EnforcesTurns: true,
		process: &process{
			binary: binarySpec{extra: []string{filepath.Join(".opencode", "bin", "opencode")}, versionOK: isSemver, want: "a version number"},
			setup:  opencodeSetup,
			newSource: func(r io.Reader) EventSource {
				d := opencode.NewDecoder(r)
				d.MaxOutputSize = MaxEventOutput
				return d
			},
			newJudge: func(o Options) judge { return &cliJudge{o: o, tally: &opencode.Tally{Model: o.pricedModel()}} },
			final: func(ev trace.Event) bool {
				return ev.Kind == trace.KindTask && ev.Subtype == "step_finish" && ev.Result != nil && ev.Result.StopReason == "stop"
			},
			stopOn:     authRefusal,
			stepTurns:  true,
			authHint:   "the model API refused the key: check the provider's key (see `opencode auth login`)",
			capability: unattended,
		},
	}
}

// opencodeSetup: `opencode run --format json`, the task on stdin (as an
// argument opencode quotes a task holding spaces). An endpoint is an
// openai-compatible provider "lane" in a config file named by
// OPENCODE_CONFIG, which opencode merges over the user's own.
func opencodeSetup(o Options, conf string) (setup, error) {
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
