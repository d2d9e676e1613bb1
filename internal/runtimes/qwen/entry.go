package qwen

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/lanehq/lane/internal/jsonl"
	"github.com/lanehq/lane/internal/record"
	"github.com/lanehq/lane/internal/runner"
	"github.com/lanehq/lane/internal/runtimes/acp"
	"github.com/lanehq/lane/internal/runtimes/descriptor"
	"github.com/lanehq/lane/internal/runtimes/gemini"
)

// Runtime is Qwen Code: `qwen --output-format stream-json --yolo`, the
// task on stdin, or `qwen --acp` for an interactive run that may ask (see
// useACP).
func Runtime() *runner.Runtime {
	return &runner.Runtime{
		Descriptor: descriptor.Descriptor{
			Name: "qwen", Title: "Qwen Code", Package: "@qwen-code/qwen-code",
			EndpointAPI: "openai", KeyEnv: "OPENAI_API_KEY", EnforcesTurns: true,
		},
		Describe: Call,
		Edits:    gemini.Edits, // Gemini CLI's file tools, kept by its fork
		Process: &runner.Process{
			Binary: runner.BinarySpec{VersionOK: runner.IsSemver, Want: "a version number"},
			Setup:  qwenSetup,
			NewSource: func(r io.Reader) runner.EventSource {
				d := NewDecoder(r)
				d.MaxOutputSize = runner.MaxEventOutput
				return d
			},
			NewJudge:   acp.JudgeOr(func(_ runner.Options) runner.CLITally { return &Tally{} }),
			Final:      func(ev record.Event) bool { return ev.Kind == record.KindResult },
			StopOn:     runner.AuthRefusal,
			ShellLog:   &runner.ShellLog{Files: qwenLogs, ExitCode: gemini.ShellExitCode},
			AuthHint:   AuthHint,
			Capability: acp.Capability,
			Hermetic:   qwenHermetic,
			// In a container: its endpoint, key, home, settings and folder.
			ContainerEnv: []string{"QWEN_", "OPENAI_", "PWD="},
			TakesMCP:     acp.TakesMCP,
			NewDialog: acp.DialogFor(acp.Spec{
				Prompt:    func(o runner.Options) string { return o.Prompt }, // it takes --append-system-prompt itself
				BeforeEnd: qwenRecorded,
				ExitCode:  gemini.ACPExitCode, // Qwen Code's output is Gemini CLI's, its fork's
			}),
		},
	}
}

// qwenSetup: `qwen --output-format stream-json --yolo` with the task on
// stdin, or `qwen --acp` in its default approval mode (it asks before
// shell commands and edits) with the task as the first prompt; an endpoint
// is Qwen Code's OpenAI auth with OPENAI_BASE_URL, and a system settings
// file of the run's own that turns off usage statistics and managed memory
// (which posts to Alibaba's servers and adds model requests of its own).
func qwenSetup(o runner.Options, conf string) (runner.Setup, error) {
	args := []string{"--output-format", "stream-json", "--yolo"}
	if acp.Speaks(o) {
		args = []string{"--acp"}
	}
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
	if o.ResumeSession != "" && !acp.Speaks(o) {
		args = append(args, "--resume", o.ResumeSession) // ACP loads it with session/load
	}
	if o.BaseURL != "" {
		settings := filepath.Join(conf, "settings.json")
		if err := runner.WriteJSON(settings, qwenSettings); err != nil {
			return runner.Setup{}, err
		}
		args = append(args, "--auth-type", "openai")
		env = append(env, "QWEN_CODE_SYSTEM_SETTINGS_PATH="+settings,
			"OPENAI_BASE_URL="+o.BaseURL, "OPENAI_API_KEY="+o.KeyFrom(o.Env))
		if o.Model != "" {
			env = append(env, "OPENAI_MODEL="+o.Model)
		}
	}
	env = append(env, "PWD="+o.Dir)
	if acp.Speaks(o) {
		return runner.Setup{Args: args, Env: env}, nil
	}
	// On stdin, so that a task starting with "-" stays a task (qwen takes
	// no "--" before its positional prompt, and -p is deprecated).
	return runner.Setup{Args: args, Env: env, Stdin: o.Prompt}, nil
}

// qwenSettings is the system settings of a Qwen Code run lane points at an
// endpoint.
var qwenSettings = map[string]any{
	"$version":  4,
	"privacy":   map[string]any{"usageStatisticsEnabled": false},
	"telemetry": map[string]any{"enabled": false},
	"memory":    map[string]any{"enableManagedAutoMemory": false, "enableManagedAutoDream": false},
}

// How long qwenRecorded waits for Qwen Code's log, and how often it looks.
const (
	qwenRecordWait  = 2 * time.Second
	qwenRecordPause = 30 * time.Millisecond
)

// qwenRecorded waits, for a bounded time, until Qwen Code's session log
// holds the answer of the last turn. Qwen Code 0.15 writes its log
// asynchronously and, over ACP, exits at the end of its stdin without
// waiting for the writes: closed at once, the log of the session would
// lack its last answer, and a resume would not see it.
func qwenRecorded(ctx context.Context, o runner.Options, session string) {
	files := qwenLogs(o.Env)
	for deadline := time.Now().Add(qwenRecordWait); time.Now().Before(deadline); {
		if answered(files(session)) {
			return
		}
		select {
		case <-time.After(qwenRecordPause):
		case <-ctx.Done():
			return
		}
	}
	slog.Debug("Qwen Code's log lacks the last answer", "session", session)
}

// answered reports whether the last record of the conversation in a Qwen
// Code log is an answer of the assistant's: a record of its that calls no
// tool (one that does is followed by the tools' results and another).
func answered(files []string) bool {
	last := false
	for _, path := range files {
		f, err := os.Open(path)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, jsonl.DefaultMaxLineSize)
		for sc.Scan() {
			var rec struct {
				Type    string `json:"type"`
				Message struct {
					Parts []qwenPart `json:"parts"`
				} `json:"message"`
			}
			if json.Unmarshal(sc.Bytes(), &rec) != nil {
				continue
			}
			switch rec.Type {
			case "user", "tool_result":
				last = false
			case "assistant":
				last = !slices.ContainsFunc(rec.Message.Parts, func(p qwenPart) bool { return len(p.FunctionCall) > 0 })
			}
		}
		f.Close()
	}
	return last
}

// qwenPart is what answered reads of a part of a Qwen Code log's message.
type qwenPart struct {
	FunctionCall json.RawMessage `json:"functionCall"`
}

// qwenUserSetup are what Qwen Code reads from the user's ~/.qwen that a
// hermetic run leaves out: instructions, settings (MCP servers, tools,
// hooks), extensions, custom commands, subagents and skills.
var qwenUserSetup = []string{"QWEN.md", "settings.json", "extensions", "commands", "agents", "skills"}

// qwenHermetic gives a hermetic run a Qwen Code folder of its own
// (QWEN_HOME) in Options.HermeticHome, holding the user's Qwen login
// (oauth_creds.json) and a settings.json with the user's choice of sign-in
// alone; a run lane points at an endpoint signs in with its key (--auth-type
// openai) whatever the settings say. Its sessions stay there for the
// attempt's later tries.
func qwenHermetic(o runner.Options, env []string) (add, excluded []string, err error) {
	user := runner.UserDir(o.Env, "QWEN_HOME", ".qwen")
	dir, excluded, err := runner.HermeticConfig(o.HermeticHome, "qwen", user, []string{"oauth_creds.json"}, qwenUserSetup)
	if err != nil {
		return nil, nil, err
	}
	src := ""
	if user != "" && o.BaseURL == "" {
		src = filepath.Join(user, "settings.json")
	}
	if err := runner.WriteSignInSettings(src, filepath.Join(dir, "settings.json"), map[string]any{"$version": qwenSettings["$version"]}); err != nil {
		return nil, nil, err
	}
	return []string{"QWEN_HOME=" + dir}, excluded, nil
}

// qwenLogs are Qwen Code's session logs of a session:
// $QWEN_HOME/projects/PROJECT/chats/ID.jsonl ($HOME/.qwen by default).
func qwenLogs(env []string) func(string) []string {
	root := LogsRoot(runner.LookupEnv(env, "QWEN_HOME"), runner.LookupEnv(env, "HOME"))
	return func(session string) []string { return SessionLogs(root, session) }
}
