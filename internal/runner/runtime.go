package runner

import (
	"context"
	"encoding/json"
	"io"
	"strings"

	"github.com/lanehq/lane/internal/record"
	"github.com/lanehq/lane/internal/runtimes/descriptor"
)

// A Runtime is everything lane knows about one agent runtime: what it is
// called, where it comes from, how it is found, started, read and judged.
// Each runtime is one entry, in a file of its own (runtime_NAME.go); the
// commands, config validation, lane doctor and the table in docs/running.md all read
// the same entries (see Runtimes).
//
// Adding an agent CLI means: an entry file here, a decoder package under
// runtimes/, a scripted model server under internal/ for its API, and its
// pin in testdata/runtimes/package.json.
type Runtime struct {
	descriptor.Descriptor

	Process *Process // how to start and read it; nil for the in-process loop
	// Describe is what a call of one of its tools does, as its decoder
	// describes it (record.Call): for events stored before decoders did.
	Describe func(tool string, input json.RawMessage) *record.Call
	// Edits, when set, is what a call of one of its tools that edits or
	// writes a file puts in place of what (for lane acp's diffs).
	Edits func(tool string, input json.RawMessage) []record.TextEdit
	// Loop, for a runtime that runs inside lane (Process nil), builds its
	// attempt number n of the task o describes.
	Loop func(o Options, n int) (*LoopAttempt, error)
}

// Process is what lane needs to run a runtime as a supervised Process.
type Process struct {
	Binary BinarySpec
	// Setup returns one run's command line, environment additions and
	// input; conf is a fresh per-run folder it may write configuration into.
	Setup func(o Options, conf string) (Setup, error)
	// CleanEnv, when set, removes what must not pass through to the runtime.
	CleanEnv func(env []string) []string
	// ContainerEnv are the prefixes of the variables the runtime needs when
	// it runs elsewhere (Options.Within): its key, endpoint and switches.
	ContainerEnv []string
	// NativeBinary, when set, is the native program a wrapper script at
	// real (a resolved path) starts, "" when real is no such wrapper: a
	// launcher that needs Node.js only to start a native binary (see
	// ContainerProgram).
	NativeBinary func(real string) string
	// Hermetic, when set, keeps the user's own setup out of a run: given
	// the run (Options.HermeticHome is the folder; Options.Env has the
	// user's own variables) and the run's environment, it makes
	// the runtime's configuration there (its login copied over) and returns
	// the environment that points the runtime at it, and what it kept out.
	Hermetic  func(o Options, env []string) (add, excluded []string, err error)
	NewSource func(r io.Reader) EventSource
	// NewJudge makes the tally of one attempt: it sees every event and
	// decides, at the end, how the run went and what it cost.
	NewJudge func(o Options) Judge
	// Final reports whether an event is the runtime's last word of a run.
	Final func(ev record.Event) bool
	// StopOn, when set, names the cause to stop a run on at once (a refused key).
	StopOn func(ev record.Event) error
	// UsageAtEnd: the runtime's stream reports its usage only at its end
	// (Codex's exec, Gemini CLI), so a token or cost limit goes by lane's
	// estimate from the stream meanwhile (see StreamEstimate).
	UsageAtEnd bool
	// StepTurns: a turn is a step_start task event (opencode), not the
	// first model output after a tool result; an open step is work in
	// flight for the idle watchdog.
	StepTurns bool
	// ShellLog, when set, reads the runtime's session logs for the exit
	// codes of shell calls its stream leaves out.
	ShellLog *ShellLog
	// AuthHint is what to check when the model API refuses the key.
	AuthHint string
	// Capability is what a run is allowed, as recorded with it.
	Capability func(o Options) record.Capability
	// TakesMCP, when set, says whether a run with o is given
	// o.MCPServers; nil: never.
	TakesMCP func(o Options) bool
	// NewDialog, when set, makes an interactive run (Options.Desk set)
	// two-way: the dialog owns the runtime's stdin (see dialog). run is the
	// attempt's record; its ID is set once the run is recorded. It may
	// return nil: that run is driven one way, and a person can only cancel
	// it (see oneWay).
	NewDialog func(o Options, run *record.Run) Dialog
	// SessionLimits, when set, reads the last report of the account's usage
	// windows from the runtime's session log, for a runtime whose stream
	// leaves them out (Codex): env is the run's environment. nil: none.
	SessionLimits func(env []string, session string) *record.RateLimit
}

// ShellLog is where a runtime's session logs are and how they say a
// shell call's exit code (Gemini CLI and Qwen Code report a command that
// exited non-zero as a success in their streams; their logs keep "Exit
// Code: N").
type ShellLog struct {
	// Files finds, in a run's environment, the log files of a session (a
	// glob: lane knows the session id, not the folder the runtime chose).
	Files func(env []string) func(session string) []string
	// ExitCode reads the exit code from a shell call's output in the log.
	ExitCode func(output string) (code int, ok bool)
}

// RunsElsewhere says whether lane can start the runtime somewhere else
// than on this machine (Options.Within: a container): an agent CLI whose
// variables it knows, or lane's own loop, whose tools a tool host runs
// there.
func (rt *Runtime) RunsElsewhere() bool {
	return rt.Local || rt.Process != nil && len(rt.Process.ContainerEnv) > 0
}

// DefaultRuntime runs a model named without a runtime or provider prefix.
const DefaultRuntime = descriptor.Default

// Entries is a table of runtimes: lane's own (runtimes.Entries), or one a caller
// makes, with a runtime of its own among them (see docs/architecture.md, "Adding a
// runtime"). The commands, config and lane doctor read whichever they are
// handed.
type Entries []*Runtime

// Lookup returns the runtime called name.
func (es Entries) Lookup(name string) (*Runtime, bool) {
	for _, rt := range es {
		if rt.Name == name {
			return rt, true
		}
	}
	return nil, false
}

// Table is what the runtimes are (their descriptors), in order: what
// config resolves model names against.
func (es Entries) Table() descriptor.Table {
	var t descriptor.Table
	for _, rt := range es {
		t = append(t, rt.Descriptor)
	}
	return t
}

// Names lists the runtimes' names, in order.
func (es Entries) Names() []string { return es.Table().Names() }

// ModelProvider is the gen_ai.provider.name of the runtime's models when
// their names do not say (see descriptor.Descriptor.ModelProvider).
func (es Entries) ModelProvider(runtime string) string {
	if rt, ok := es.Lookup(runtime); ok {
		return rt.ModelProvider
	}
	return ""
}

// BinEnv is the variable naming a runtime's binary: LANE_CODEX_BIN.
func BinEnv(runtime string) string { return "LANE_" + strings.ToUpper(runtime) + "_BIN" }

// InProcess reports whether the runtime runs inside lane (no binary).
func (rt *Runtime) InProcess() bool { return rt.Process == nil }

// EveryRun is the TakesMCP of a runtime that takes MCP servers by its
// flags, in every run.
func EveryRun(Options) bool { return true }

// TakesMCP says whether a run of the runtime with o is given
// o.MCPServers. lane's own loop has no MCP client.
func (rt *Runtime) TakesMCP(o Options) bool {
	return rt.Process != nil && rt.Process.TakesMCP != nil && rt.Process.TakesMCP(o)
}

// InstallHint tells a person how to get the runtime's binary.
func (rt *Runtime) InstallHint() string {
	if rt.Package == "" {
		return ""
	}
	return "install " + rt.Title + " with `npm install -g " + rt.Package + "`, or point lane at it with --runtime-bin or " + BinEnv(rt.Name)
}

// Find locates the runtime's binary: explicit when given, else PATH, the
// usual install places and npm's global prefix, each candidate verified by
// its --version answer (remembered in versionCache, when set, until the
// binary changes). A runtime that is not found is a *MissingError.
func (rt *Runtime) Find(ctx context.Context, explicit string, env []string, versionCache string) (Binary, error) {
	if rt.Process == nil {
		return Binary{}, nil
	}
	spec := rt.Process.Binary
	spec.name, spec.title, spec.hint = rt.Name, rt.Title, rt.InstallHint()
	return findBinary(ctx, spec, explicit, env, versionCache)
}

// Binary is a runtime's executable as found and verified.
type Binary struct {
	Path    string
	Version string // its --version line, recorded with each run
}

// DescribeCalls describes the tool calls among evs that are not yet (events
// a decoder stored before decoders described calls), as the decoder of the
// runtime named would now; a runtime lane does not know leaves them be.
func (es Entries) DescribeCalls(runtime string, evs []record.Event) {
	describe := es.Describer(runtime)
	for i := range evs {
		describe(&evs[i])
	}
}

// Describer describes one event as DescribeCalls does.
func (es Entries) Describer(runtime string) func(ev *record.Event) {
	rt, ok := es.Lookup(runtime)
	if !ok || rt.Describe == nil {
		return func(*record.Event) {}
	}
	return func(ev *record.Event) {
		if ev.Kind == record.KindToolCall && ev.Call == nil {
			ev.Call = rt.Describe(ev.ToolName, ev.Input)
		}
	}
}
