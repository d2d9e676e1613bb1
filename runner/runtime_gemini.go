package runner

import (
	"io"
	"path/filepath"

	"lane/runtimes/gemini"
	"lane/trace"
)

// geminiRuntime is Google's Gemini CLI:
// `gemini --output-format stream-json --yolo --prompt=TASK`.
func geminiRuntime() *Runtime {
	return &Runtime{
		Name: "gemini", Title: "Gemini CLI", Package: "@google/gemini-cli",
		EndpointAPI: "gemini", KeyEnv: "GEMINI_API_KEY", EnforcesTurns: true,
		process: &process{
			binary: binarySpec{versionOK: isSemver, want: "a version number"},
			setup:  geminiSetup,
			newSource: func(r io.Reader) EventSource {
				d := gemini.NewDecoder(r)
				d.MaxOutputSize = MaxEventOutput
				return d
			},
			newJudge:   func(o Options) judge { return &cliJudge{o: o, tally: &gemini.Tally{}} },
			final:      func(ev trace.Event) bool { return ev.Kind == trace.KindResult },
			stopOn:     authRefusal,
			shellLog:   geminiLogs,
			authHint:   "the model API refused the key: check GEMINI_API_KEY (or log in with `gemini`)",
			capability: unattended,
		},
	}
}

// geminiSetup: `gemini --prompt=TASK --output-format stream-json --yolo`.
// An endpoint needs API-key auth selected in settings.json, and Gemini CLI
// reads settings only from its home (a system settings path is honoured
// only for root-owned files), so lane gives it a home of lane's own,
// GEMINI_CLI_HOME under StateDir, where its sessions also stay for resume.
func geminiSetup(o Options, conf string) (setup, error) {
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
