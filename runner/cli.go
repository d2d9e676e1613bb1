package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"lane/runtimes/codex"
	"lane/runtimes/gemini"
	"lane/runtimes/opencode"
	"lane/runtimes/qwen"
	"lane/trace"
)

// CLIOptions describe one task for an agent CLI other than Claude Code:
// Codex, Gemini CLI, opencode or Qwen Code.
type CLIOptions struct {
	Runtime string // "codex", "gemini", "opencode" or "qwen"
	Bin     string // resolved binary (see FindRuntime)
	Version string // its --version line, recorded with the run
	Dir     string // absolute working folder
	AddDirs []string
	Prompt  string
	// Model is the model as the CLI names it; empty leaves the CLI's own
	// default. Label is how the run records it.
	Model string
	Label string
	// BaseURL, when set, points the CLI at this model server through a
	// per-run configuration (the user's files are never edited); KeyEnv
	// names the variable holding its key.
	BaseURL            string
	KeyEnv             string
	AppendSystemPrompt string
	ResumeSession      string
	// MaxTurns is enforced by lane: a run whose agent begins a model turn
	// beyond it is stopped (the CLIs' own limits are advisory or missing).
	MaxTurns  int
	Env       []string
	Watchdogs Watchdogs
	Retries   int
	// RetryBackoff is the wait before the first retry; it doubles after each.
	RetryBackoff time.Duration
	ParentRunID  string
	// PriorSessionUsage is the session's token total before this run: Codex
	// reports the thread's running total, from which this run's own usage
	// is told apart.
	PriorSessionUsage trace.Usage
	// Price prices usage the runtime reported without a cost.
	Price func(model string, u trace.Usage) (float64, bool)
	// TempDir is where per-run configuration folders are made ("" is the
	// system's temporary folder); each is removed when its run ends.
	TempDir string
	// StateDir is lane's own lasting folder for runtime homes that must
	// outlive a run (Gemini CLI keeps its sessions in the home lane gives it
	// when pointed at an endpoint); "" uses the per-run folder instead.
	StateDir string
}

// cliTally is what lane reads from a runtime's accounting of a run.
type cliTally interface {
	Observe(trace.Event)
	SessionID() string
	Usage() trace.Usage
	Turns() int
	ToolCalls() int
	ResultText() string
	Cost(price func(model string, u trace.Usage) (float64, bool)) (usd float64, estimate bool)
	Judge(exitCode int) trace.Verdict
}

// cliRuntime is what lane knows of one agent CLI.
type cliRuntime struct {
	title   string // "Codex"
	pkg     string // its npm package
	binary  binarySpec
	authEnv string // where its key goes, for the hint
	// setup returns the command line and the environment additions of a
	// run; conf is a fresh per-run folder it may write configuration into.
	setup     func(o CLIOptions, conf string) (setup, error)
	newSource func(r io.Reader) EventSource
	newTally  func(o CLIOptions) cliTally
	// final reports whether an event is the runtime's last word of a run.
	final func(ev trace.Event) bool
	// stepTurns: a turn is a step_start task event (opencode), not the
	// first model output after a tool result.
	stepTurns bool
	// shellLog, when set, finds the runtime's session logs in a run's
	// environment, for the exit codes its stream leaves out.
	shellLog func(env []string) func(session string) []string
}

var cliRuntimes = map[string]*cliRuntime{
	"codex": {
		title: "Codex", pkg: "@openai/codex", authEnv: "OPENAI_API_KEY (or `codex login`)",
		binary: binarySpec{versionOK: func(out string) bool { return strings.HasPrefix(out, "codex-cli ") }, want: `"codex-cli VERSION"`},
		setup:  codexSetup,
		newSource: func(r io.Reader) EventSource {
			d := codex.NewDecoder(r)
			d.MaxOutputSize = MaxEventOutput
			return d
		},
		newTally: func(o CLIOptions) cliTally {
			return &codex.Tally{Model: o.pricedModel(), PriorUsage: o.PriorSessionUsage}
		},
		final: func(ev trace.Event) bool {
			return (ev.Kind == trace.KindUsage || ev.Kind == trace.KindError) && (ev.Subtype == "turn.completed" || ev.Subtype == "turn.failed")
		},
	},
	"gemini": {
		title: "Gemini CLI", pkg: "@google/gemini-cli", authEnv: "GEMINI_API_KEY (or log in with `gemini`)",
		binary: binarySpec{versionOK: isSemver, want: "a version number"},
		setup:  geminiSetup,
		newSource: func(r io.Reader) EventSource {
			d := gemini.NewDecoder(r)
			d.MaxOutputSize = MaxEventOutput
			return d
		},
		newTally: func(CLIOptions) cliTally { return &gemini.Tally{} },
		final:    func(ev trace.Event) bool { return ev.Kind == trace.KindResult },
		shellLog: geminiLogs,
	},
	"opencode": {
		title: "opencode", pkg: "opencode-ai", authEnv: "the provider's key (see `opencode auth login`)",
		binary: binarySpec{extra: []string{filepath.Join(".opencode", "bin", "opencode")}, versionOK: isSemver, want: "a version number"},
		setup:  opencodeSetup,
		newSource: func(r io.Reader) EventSource {
			d := opencode.NewDecoder(r)
			d.MaxOutputSize = MaxEventOutput
			return d
		},
		newTally: func(o CLIOptions) cliTally { return &opencode.Tally{Model: o.pricedModel()} },
		final: func(ev trace.Event) bool {
			return ev.Kind == trace.KindTask && ev.Subtype == "step_finish" && ev.Result != nil && ev.Result.StopReason == "stop"
		},
		stepTurns: true,
	},
	"qwen": {
		title: "Qwen Code", pkg: "@qwen-code/qwen-code", authEnv: "OPENAI_API_KEY (or `qwen auth`)",
		binary: binarySpec{versionOK: isSemver, want: "a version number"},
		setup:  qwenSetup,
		newSource: func(r io.Reader) EventSource {
			d := qwen.NewDecoder(r)
			d.MaxOutputSize = MaxEventOutput
			return d
		},
		newTally: func(CLIOptions) cliTally { return &qwen.Tally{} },
		final:    func(ev trace.Event) bool { return ev.Kind == trace.KindResult },
		shellLog: qwenLogs,
	},
}

func init() {
	for name, rt := range cliRuntimes {
		rt.binary.name = name
		rt.binary.title = rt.title
		rt.binary.hint = "install " + rt.title + " with `npm install -g " + rt.pkg + "`, or point lane at it with --runtime-bin or " + BinEnv(name)
	}
}

// CLIRuntimes lists the agent CLIs lane drives besides Claude Code.
var CLIRuntimes = []string{"codex", "gemini", "opencode", "qwen"}

// BinEnv is the variable naming a runtime's binary: LANE_CODEX_BIN.
func BinEnv(runtime string) string { return "LANE_" + strings.ToUpper(runtime) + "_BIN" }

// RuntimePackage is the npm package a runtime installs from.
func RuntimePackage(runtime string) string {
	if runtime == "claude" {
		return "@anthropic-ai/claude-code"
	}
	if rt := cliRuntimes[runtime]; rt != nil {
		return rt.pkg
	}
	return ""
}

func isSemver(out string) bool {
	line, _, _ := strings.Cut(strings.TrimSpace(out), "\n")
	parts := strings.SplitN(strings.TrimPrefix(line, "v"), ".", 3)
	if len(parts) != 3 {
		return false
	}
	for _, p := range parts[:2] {
		if _, err := strconv.Atoi(p); err != nil {
			return false
		}
	}
	return true
}

// FindRuntime locates the binary of an agent CLI (codex, gemini, opencode,
// qwen) as FindClaude does Claude Code's: explicit, PATH, the usual install
// places, npm's global prefix, each verified by --version.
func FindRuntime(ctx context.Context, runtime, explicit string, env []string) (path, version string, err error) {
	if runtime == "claude" {
		return FindClaude(ctx, explicit, env)
	}
	rt := cliRuntimes[runtime]
	if rt == nil {
		return "", "", fmt.Errorf("unknown runtime %q", runtime)
	}
	return findBinary(ctx, rt.binary, explicit, env)
}

// pricedModel is the model a run's usage is priced as.
func (o CLIOptions) pricedModel() string {
	if o.Model != "" {
		return o.Model
	}
	return o.Label
}

// RunCLI runs the task on an agent CLI, retrying as o.Retries allows, and
// returns the record of the last attempt. The error is non-nil only when
// lane itself failed; the run's own failure is in its Status.
func RunCLI(ctx context.Context, o CLIOptions, rec Recorder) (*trace.Run, error) {
	rt := cliRuntimes[o.Runtime]
	if rt == nil {
		return nil, fmt.Errorf("unknown runtime %q", o.Runtime)
	}
	return retrying(ctx, o.Retries, o.RetryBackoff, o.ParentRunID,
		func(parent string, n int) (*trace.Run, error) {
			conf, err := os.MkdirTemp(o.TempDir, "lane-"+o.Runtime+"-")
			if err != nil {
				return nil, fmt.Errorf("per-run configuration folder: %w", err)
			}
			defer os.RemoveAll(conf)
			a, err := cliAttempt(rt, o, conf, parent, n)
			if err != nil {
				return nil, err
			}
			return runAttempt(ctx, a, rec)
		},
		func(failed *trace.Run) {
			if failed.SessionID != "" {
				o.PriorSessionUsage = o.PriorSessionUsage.Add(failed.Usage)
				o.ResumeSession = failed.SessionID
			}
		})
}

func cliAttempt(rt *cliRuntime, o CLIOptions, conf, parentID string, n int) (*attempt, error) {
	su, err := rt.setup(o, conf)
	if err != nil {
		return nil, err
	}
	env := append(append([]string{}, o.Env...), su.env...)
	tally := rt.newTally(o)
	turns := turnCounter{limit: o.MaxTurns, steps: rt.stepTurns}
	var finished bool
	var amend func(*trace.Event)
	if rt.shellLog != nil {
		amend = newShellLog(rt.shellLog(env), "run_shell_command").amend
	}
	label := o.Label
	if label == "" {
		label = o.Model
	}
	return &attempt{
		run: &trace.Run{
			ParentRunID: parentID,
			Attempt:     n,
			Runtime:     o.Runtime,
			Model:       label,
			Dir:         o.Dir,
			Prompt:      o.Prompt,
			SessionID:   o.ResumeSession,
			RuntimeVer:  o.Version,
			Capability: trace.Capability{
				Dir:            o.Dir,
				AddDirs:        o.AddDirs,
				PermissionMode: "bypassPermissions",
			},
		},
		inv:       Invocation{Path: o.Bin, Args: su.args, Dir: o.Dir, Env: env, Stdin: su.stdin},
		watchdogs: o.Watchdogs,
		newSource: rt.newSource,
		amend:     amend,
		observe: func(ev trace.Event) error {
			tally.Observe(ev)
			if ev.Kind != trace.KindStderr {
				finished = rt.final(ev)
			}
			if err := authRefusal(ev); err != nil {
				return err
			}
			return turns.observe(ev)
		},
		hooks: watchHooks{
			settled: func() bool { return finished },
			work:    stepWork(rt.stepTurns),
		},
		finish: func(run *trace.Run, ex Exit) {
			authHint := "the model API refused the key: check " + rt.authEnv
			if o.BaseURL != "" && o.KeyEnv != "" {
				authHint = "the model API at " + o.BaseURL + " refused the key: check " + o.KeyEnv
			}
			if !judgeStop(run, ex, authHint) {
				applyVerdict(run, tally.Judge(ex.Code), ex)
			}
			if id := tally.SessionID(); id != "" {
				run.SessionID = id
			}
			// Turns are model turns for every runtime, for comparison (Codex
			// counts a whole exec as one turn).
			run.Usage, run.Turns, run.ToolCalls = tally.Usage(), max(tally.Turns(), turns.turns), tally.ToolCalls()
			price := o.Price
			if price == nil {
				price = func(string, trace.Usage) (float64, bool) { return 0, false }
			}
			run.CostUSD, run.CostEstimate = tally.Cost(price)
			run.ResultText = tally.ResultText()
		},
		startHint: "check that " + o.Bin + " is executable",
	}, nil
}

// stepWork makes opencode's open steps count as work in flight: opencode
// reports a tool only once it has finished, so a step is all lane sees of
// a long build.
func stepWork(steps bool) func(trace.Event) (string, bool, bool) {
	if !steps {
		return nil
	}
	return func(ev trace.Event) (string, bool, bool) {
		switch {
		case ev.Kind == trace.KindTask && ev.Subtype == "step_start":
			return ev.MessageID, true, false
		case ev.Kind == trace.KindTask && ev.Subtype == "step_finish":
			return ev.MessageID, false, true
		case ev.Kind == trace.KindError:
			return "", false, true // the step ended in an error
		}
		return "", false, false
	}
}

// turnCounter counts the main agent's model turns from its events and says
// when one begins past the limit (if it has one). A turn begins with the first model output
// (text, thinking or a tool call) after a tool result, or with a step_start
// for runtimes that mark their steps.
type turnCounter struct {
	limit       int
	steps       bool
	turns       int
	afterResult bool
}

func (c *turnCounter) observe(ev trace.Event) error {
	if ev.ParentToolUseID != "" {
		return nil
	}
	began := false
	switch {
	case c.steps:
		began = ev.Kind == trace.KindTask && ev.Subtype == "step_start"
	case ev.Kind == trace.KindToolResult:
		c.afterResult = true
	case ev.Kind == trace.KindText || ev.Kind == trace.KindThinking || ev.Kind == trace.KindToolCall:
		began = c.turns == 0 || c.afterResult
		c.afterResult = false
	}
	if !began {
		return nil
	}
	c.turns++
	if c.limit > 0 && c.turns > c.limit {
		return &MaxTurnsError{Limit: c.limit}
	}
	return nil
}

// keyFrom is the environment value for the API key of a CLI pointed at an
// endpoint: the variable o.KeyEnv names, or a placeholder for servers that
// want none (Ollama) but a CLI that insists on one.
func (o CLIOptions) keyFrom(env []string) string {
	if o.KeyEnv != "" {
		if v := lookupEnv(env, o.KeyEnv); v != "" {
			return v
		}
	}
	return "lane-no-key"
}

func lookupEnv(env []string, name string) string {
	v := ""
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == name {
			v = val // the last one wins, as in exec
		}
	}
	return v
}

// writeJSON writes v as a configuration file of lane's. It replaces the
// file at once (a rename), as runs in parallel may read lane's lasting
// runtime homes while another run writes them.
func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".lane-*.json")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name()) // after a successful rename, there is nothing to remove
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}
