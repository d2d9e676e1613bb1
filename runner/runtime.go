package runner

import (
	"context"
	"encoding/json"
	"io"
	"lane/runtimes/descriptor"
	"strings"

	"lane/trace"
)

// A Runtime is everything lane knows about one agent runtime: what it is
// called, where it comes from, how it is found, started, read and judged.
// Each runtime is one entry, in a file of its own (runtime_NAME.go); the
// commands, config validation, lane doctor and the README's table all read
// the same entries (see Runtimes).
//
// Adding an agent CLI means: an entry file here, a decoder package under
// runtimes/, a scripted model server under internal/ for its API, and its
// pin in testdata/runtimes/package.json.
type Runtime struct {
	descriptor.Descriptor

	process *process // how to start and read it; nil for the in-process loop
	// describe is what a call of one of its tools does, as its decoder
	// describes it (trace.Call): for events stored before decoders did.
	describe func(tool string, input json.RawMessage) *trace.Call
	// inProcess builds an attempt of lane's own loop.
	inProcess func(o Options, n int) (*attempt, error)
}

// process is what lane needs to run a runtime as a supervised process.
type process struct {
	binary binarySpec
	// setup returns one run's command line, environment additions and
	// input; conf is a fresh per-run folder it may write configuration into.
	setup func(o Options, conf string) (setup, error)
	// cleanEnv, when set, removes what must not pass through to the runtime.
	cleanEnv func(env []string) []string
	// containerEnv are the prefixes of the variables the runtime needs when
	// it runs elsewhere (Options.Within): its key, endpoint and switches.
	containerEnv []string
	// nativeBinary, when set, is the native program a wrapper script at
	// real (a resolved path) starts, "" when real is no such wrapper: a
	// launcher that needs Node.js only to start a native binary (see
	// ContainerProgram).
	nativeBinary func(real string) string
	// hermetic, when set, keeps the user's own setup out of a run: given
	// the run (Options.HermeticHome is the folder; Options.Env has the
	// user's own variables) and the run's environment, it makes
	// the runtime's configuration there (its login copied over) and returns
	// the environment that points the runtime at it, and what it kept out.
	hermetic  func(o Options, env []string) (add, excluded []string, err error)
	newSource func(r io.Reader) EventSource
	// newJudge makes the tally of one attempt: it sees every event and
	// decides, at the end, how the run went and what it cost.
	newJudge func(o Options) judge
	// final reports whether an event is the runtime's last word of a run.
	final func(ev trace.Event) bool
	// stopOn, when set, names the cause to stop a run on at once (a refused key).
	stopOn func(ev trace.Event) error
	// stepTurns: a turn is a step_start task event (opencode), not the
	// first model output after a tool result; an open step is work in
	// flight for the idle watchdog.
	stepTurns bool
	// shellLog, when set, finds the runtime's session logs in a run's
	// environment, for the exit codes its stream leaves out.
	shellLog func(env []string) func(session string) []string
	// authHint is what to check when the model API refuses the key.
	authHint string
	// capability is what a run is allowed, as recorded with it.
	capability func(o Options) trace.Capability
	// newDialog, when set, makes an interactive run (Options.Desk set)
	// two-way: the dialog owns the runtime's stdin (see dialog). run is the
	// attempt's record; its ID is set once the run is recorded. It may
	// return nil: that run is driven one way, and a person can only cancel
	// it (see oneWay).
	newDialog func(o Options, run *trace.Run) dialog
}

// RunsElsewhere says whether lane can start the runtime somewhere else
// than on this machine (Options.Within: a container): an agent CLI whose
// variables it knows, or lane's own loop, whose tools a tool host runs
// there.
func (rt *Runtime) RunsElsewhere() bool {
	return rt.Local || rt.process != nil && len(rt.process.containerEnv) > 0
}

// DefaultRuntime runs a model named without a runtime or provider prefix.
const DefaultRuntime = descriptor.Default

// Runtimes lists every runtime lane drives, in the order lane documents
// them. Each call returns fresh entries: nobody can change another's.
func Runtimes() []*Runtime {
	return []*Runtime{claudeRuntime(), codexRuntime(), geminiRuntime(), opencodeRuntime(), qwenRuntime(), localRuntime()}
}

// Lookup returns the runtime called name.
func Lookup(name string) (*Runtime, bool) {
	for _, rt := range Runtimes() {
		if rt.Name == name {
			return rt, true
		}
	}
	return nil, false
}

// Table is what the runtimes are (their descriptors), in the order of
// Runtimes: what config resolves model names against.
func Table() descriptor.Table {
	var t descriptor.Table
	for _, rt := range Runtimes() {
		t = append(t, rt.Descriptor)
	}
	return t
}

// Names lists the runtimes' names, in the order of Runtimes.
func Names() []string {
	var names []string
	for _, rt := range Runtimes() {
		names = append(names, rt.Name)
	}
	return names
}

// BinEnv is the variable naming a runtime's binary: LANE_CODEX_BIN.
func BinEnv(runtime string) string { return "LANE_" + strings.ToUpper(runtime) + "_BIN" }

// InProcess reports whether the runtime runs inside lane (no binary).
func (rt *Runtime) InProcess() bool { return rt.process == nil }

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
	if rt.process == nil {
		return Binary{}, nil
	}
	spec := rt.process.binary
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
func DescribeCalls(runtime string, evs []trace.Event) {
	describe := Describer(runtime)
	for i := range evs {
		describe(&evs[i])
	}
}

// Describer describes one event as DescribeCalls does.
func Describer(runtime string) func(ev *trace.Event) {
	rt, ok := Lookup(runtime)
	if !ok || rt.describe == nil {
		return func(*trace.Event) {}
	}
	return func(ev *trace.Event) {
		if ev.Kind == trace.KindToolCall && ev.Call == nil {
			ev.Call = rt.describe(ev.ToolName, ev.Input)
		}
	}
}
