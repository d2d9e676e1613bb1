package runner

import (
	"io"
	"path/filepath"

	"lane/runtimes/qwen"
	"lane/trace"
)

// qwenRuntime is Qwen Code: `qwen --output-format stream-json --yolo`, the
// task on stdin.
func qwenRuntime() *Runtime {
	return &Runtime{
		Name: "qwen", Title: "Qwen Code", Package: "@qwen-code/qwen-code",
		EndpointAPI: "openai", KeyEnv: "OPENAI_API_KEY", EnforcesTurns: true,
		process: &process{
			binary: binarySpec{versionOK: isSemver, want: "a version number"},
			setup:  qwenSetup,
			newSource: func(r io.Reader) EventSource {
				d := qwen.NewDecoder(r)
				d.MaxOutputSize = MaxEventOutput
				return d
			},
			newJudge:   func(o Options) judge { return &cliJudge{o: o, tally: &qwen.Tally{}} },
			final:      func(ev trace.Event) bool { return ev.Kind == trace.KindResult },
			stopOn:     authRefusal,
			shellLog:   qwenLogs,
			authHint:   "the model API refused the key: check OPENAI_API_KEY (or `qwen auth`)",
			capability: unattended,
		},
	}
}

// qwenSetup: `qwen --output-format stream-json --yolo` with the task on
// stdin; an endpoint
// is Qwen Code's OpenAI auth with OPENAI_BASE_URL, and a system settings
// file of the run's own that turns off usage statistics and managed memory
// (which posts to Alibaba's servers and adds model requests of its own).
func qwenSetup(o Options, conf string) (setup, error) {
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
