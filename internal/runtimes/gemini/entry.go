package gemini

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/lanehq/lane/internal/record"
	"github.com/lanehq/lane/internal/runner"
	"github.com/lanehq/lane/internal/runtimes/acp"
	"github.com/lanehq/lane/internal/runtimes/descriptor"
)

// Runtime is Google's Gemini CLI:
// `gemini --output-format stream-json --yolo --prompt=TASK`, or `gemini
// --acp` for an interactive run that may ask (see useACP).
func Runtime() *runner.Runtime {
	return &runner.Runtime{
		Descriptor: descriptor.Descriptor{
			Name: "gemini", Title: "Gemini CLI", Package: "@google/gemini-cli",
			EndpointAPI: "gemini", KeyEnv: "GEMINI_API_KEY", EnforcesTurns: true,
			ModelProvider: "gcp.gemini",
		},
		Describe: Call,
		Edits:    Edits,
		Process: &runner.Process{
			Binary: runner.BinarySpec{VersionOK: runner.IsSemver, Want: "a version number"},
			Setup:  geminiSetup,
			NewSource: func(r io.Reader) runner.EventSource {
				d := NewDecoder(r)
				d.MaxOutputSize = runner.MaxEventOutput
				return d
			},
			NewJudge: acp.JudgeOr(func(_ runner.Options) runner.CLITally { return &Tally{} }),
			Final:    func(ev record.Event) bool { return ev.Kind == record.KindResult },
			// Its stream reports the usage in the result only.
			UsageAtEnd: true,
			StopOn:     runner.AuthRefusal,
			ShellLog:   &runner.ShellLog{Files: geminiLogs, ExitCode: ShellExitCode},
			AuthHint:   AuthHint,
			Capability: acp.Capability,
			Hermetic:   geminiHermetic,
			// In a container: its key, endpoint, home and switches.
			ContainerEnv: []string{"GEMINI_", "GOOGLE_"},
			TakesMCP:     acp.TakesMCP,
			NewDialog:    acp.DialogFor(acp.Spec{Prompt: runner.Options.PromptWithAddition, BeforeLoad: geminiLoadMoveAside, ExitCode: ACPExitCode}),
		},
	}
}

// geminiSetup: `gemini --prompt=TASK --output-format stream-json --yolo`,
// or `gemini --acp` in its default approval mode (it asks before shell
// commands, edits and fetches; lane's gate answers) with the task as the
// first prompt. An endpoint needs API-key auth selected in settings.json,
// and Gemini CLI reads settings only from its home (a system settings path
// is honoured only for root-owned files), so lane gives it a home of
// lane's own, GEMINI_CLI_HOME under StateDir, where its sessions also stay
// for resume.
func geminiSetup(o runner.Options, conf string) (runner.Setup, error) {
	args := []string{"--output-format", "stream-json", "--yolo", "--skip-trust"}
	if acp.Speaks(o) {
		args = []string{"--acp", "--skip-trust"}
	}
	if o.Model != "" {
		args = append(args, "-m", o.Model)
	}
	for _, d := range o.AddDirs {
		args = append(args, "--include-directories", d)
	}
	if o.ResumeSession != "" && !acp.Speaks(o) {
		args = append(args, "--resume", o.ResumeSession) // ACP loads it with session/load
	}
	// Without this gemini relaunches itself as a child that ignores SIGINT.
	env := []string{"GEMINI_CLI_NO_RELAUNCH=true"}
	if o.BaseURL != "" {
		home := conf
		if o.StateDir != "" {
			home = geminiStateHome(o)
		}
		if err := runner.WriteJSON(filepath.Join(home, ".gemini", "settings.json"), geminiSettings); err != nil {
			return runner.Setup{}, err
		}
		env = append(env,
			"GEMINI_CLI_HOME="+home,
			"GOOGLE_GEMINI_BASE_URL="+o.BaseURL,
			"GEMINI_API_KEY="+o.KeyFrom(o.Env))
	}
	if acp.Speaks(o) {
		return runner.Setup{Args: args, Env: env}, nil
	}
	// One argument, so that a task starting with "-" stays a task.
	return runner.Setup{Args: append(args, "--prompt="+o.PromptWithAddition()), Env: env}, nil
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

// geminiStateHome is lane's lasting Gemini CLI home, for the runs it
// points at an endpoint.
func geminiStateHome(o runner.Options) string { return filepath.Join(o.StateDir, "gemini") }

// geminiLogMinute is the layout of the minute in a Gemini CLI session
// log's name: session-2006-01-02T15-04-ID8.jsonl.
const geminiLogMinute = "2006-01-02T15-04"

// geminiLoadMoveAside renames the session's log when its name carries the
// current minute (UTC) to one of an earlier minute. Gemini CLI 0.61 names
// a session's log by the minute its recording began and the session's id,
// and its session/load begins a recording before it reads the log: within
// the minute the session began, that appends a fresh beginning to the very
// log it then reads, and it finds no session ("No previous sessions found
// for this project."). It finds a session by the id inside any
// session-*.jsonl, so a log of an earlier minute loads at once, where
// waiting for the next minute would cost up to a minute. (Its --resume of
// the JSON stream has no such trouble.)
func geminiLoadMoveAside(ctx context.Context, o runner.Options, session string) error {
	env := o.Env
	if o.BaseURL != "" && o.StateDir != "" {
		env = append(slices.Clone(env), "GEMINI_CLI_HOME="+geminiStateHome(o))
	}
	now := time.Now().UTC()
	for _, p := range geminiLogs(env)(session) {
		if err := moveGeminiLogAside(p, now); err != nil {
			return err
		}
	}
	return nil
}

// moveGeminiLogAside renames log, if it is named for now's minute or a
// later one, to the latest earlier minute no other log of it holds.
func moveGeminiLogAside(log string, now time.Time) error {
	dir, name := filepath.Split(log)
	rest, ok := strings.CutPrefix(name, "session-")
	if !ok || len(rest) < len(geminiLogMinute) {
		return nil
	}
	began, err := time.Parse(geminiLogMinute, rest[:len(geminiLogMinute)])
	if err != nil || began.Before(now.Truncate(time.Minute)) {
		return nil
	}
	tail := rest[len(geminiLogMinute):]
	for back := 1; back <= 60; back++ {
		aside := filepath.Join(dir, "session-"+now.Add(-time.Duration(back)*time.Minute).Format(geminiLogMinute)+tail)
		if _, err := os.Lstat(aside); err == nil {
			continue
		}
		slog.Debug("moving the Gemini CLI session log to an earlier minute, so that it loads", "from", log, "to", aside)
		if err := os.Rename(log, aside); err != nil {
			return fmt.Errorf("setting the Gemini CLI session log aside for session/load: %w", err)
		}
		return nil
	}
	return fmt.Errorf("setting the Gemini CLI session log %s aside: every earlier minute of the last hour is taken", log)
}

// geminiUserSetup are what Gemini CLI reads from the user's ~/.gemini that
// a hermetic run leaves out: instructions, settings (MCP servers, tools,
// hooks), extensions, custom commands, subagents, skills and policies.
var geminiUserSetup = []string{"GEMINI.md", "settings.json", "extensions", "commands", "agents", "skills", "policies"}

// geminiHermetic gives a hermetic run a Gemini CLI home of its own
// (GEMINI_CLI_HOME) in Options.HermeticHome, whose .gemini holds the
// user's Google login (oauth_creds.json, google_accounts.json) and a
// settings.json with lane's defaults and the user's choice of sign-in
// alone; a run lane points at an endpoint keeps lane's (an API key). Its
// sessions stay there for the attempt's later tries.
func geminiHermetic(o runner.Options, env []string) (add, excluded []string, err error) {
	base := cmp.Or(runner.LookupEnv(o.Env, "GEMINI_CLI_HOME"), runner.LookupEnv(o.Env, "HOME"))
	user := ""
	if base != "" {
		user = filepath.Join(base, ".gemini")
	}
	home := filepath.Join(o.HermeticHome, "gemini")
	dir, excluded, err := runner.HermeticConfig(home, ".gemini", user, []string{"oauth_creds.json", "google_accounts.json"}, geminiUserSetup)
	if err != nil {
		return nil, nil, err
	}
	src, defaults := "", geminiSettings // lane's sign-in: the endpoint's key
	if o.BaseURL == "" && user != "" {
		src, defaults = filepath.Join(user, "settings.json"), maps.Clone(geminiSettings)
		delete(defaults, "security") // the user's sign-in, or what the environment says
	}
	if err := runner.WriteSignInSettings(src, filepath.Join(dir, "settings.json"), defaults); err != nil {
		return nil, nil, err
	}
	return []string{"GEMINI_CLI_HOME=" + home}, excluded, nil
}

// geminiLogs are Gemini CLI's session logs of a session:
// $GEMINI_CLI_HOME/.gemini/tmp/PROJECT/chats/session-DATE-ID8.jsonl
// ($HOME when GEMINI_CLI_HOME is not set).
func geminiLogs(env []string) func(string) []string {
	root := LogsRoot(runner.LookupEnv(env, "GEMINI_CLI_HOME"), runner.LookupEnv(env, "HOME"))
	return func(session string) []string { return SessionLogs(root, session) }
}
