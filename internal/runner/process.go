package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/lanehq/lane/internal/record"
)

// Setup is one run's command line, environment additions and input.
type Setup struct {
	Args  []string
	Env   []string
	Stdin string
}

// Judge is one attempt's reading of a runtime's own account: it sees every
// event, then decides how a run the runtime ended itself went, and fills in
// what it cost.
type Judge interface {
	Observe(ev record.Event)
	// Judge sets the status of a run that ended without lane stopping it.
	Judge(run *record.Run, ex Exit)
	// Account fills in the run's session, usage, turns (laneTurns are the
	// model turns lane counted itself), tool calls, cost and result.
	Account(run *record.Run, laneTurns int)
}

// onlyVars is env's variables whose names start with one of prefixes.
func onlyVars(env, prefixes []string) []string {
	var out []string
	for _, kv := range env {
		for _, p := range prefixes {
			if strings.HasPrefix(kv, p) {
				out = append(out, kv)
				break
			}
		}
	}
	return out
}

// processAttempt builds attempt number n of a runtime that lane runs as a
// supervised process: its command line and per-run configuration, how its
// events are read and what stops it, and how it is judged.
func processAttempt(rt *Runtime, o Options, n int) (*attempt, error) {
	p := rt.Process
	conf, err := os.MkdirTemp(o.TempDir, "lane-"+rt.Name+"-")
	if err != nil {
		return nil, fmt.Errorf("per-run configuration folder: %w", err)
	}
	inv, su, capability, err := processInvocation(p, o, conf)
	if err != nil {
		os.RemoveAll(conf)
		return nil, err
	}
	env := inv.Env
	if o.Within != nil {
		// Elsewhere the runtime gets only what it needs of lane's
		// environment, not the machine's.
		inv.Env = onlyVars(inv.Env, p.ContainerEnv)
		inv = o.Within(inv)
	}
	tally := p.NewJudge(o)
	turns := TurnCounter{Limit: o.MaxTurns, Steps: p.StepTurns}
	if !rt.EnforcesTurns {
		turns.Limit = 0
	}
	meter := NewMeter(o, func(run *record.Run) { tally.Account(run, turns.turns) }, p.UsageAtEnd)
	// finished: the runtime's last word so far is its final one, so a
	// watchdog that fires now only ends its lingering (a result printed
	// after lane's interrupt does not count: see Exit.Settled).
	var finished bool
	var dlg Dialog
	a := &attempt{
		run: processRun(rt, o, n, capability),
		execute: func(ctx context.Context, emit func(record.Event) error) (Exit, error) {
			return supervise(ctx, supervision{
				inv: inv, watchdogs: o.Watchdogs, shim: o.Shim, newSource: p.NewSource, emit: emit,
				settled: func() bool { return finished },
				work:    dialogWork(dlg, processWork(p.StepTurns, o.Interactive())),
				dialog:  dlg,
			})
		},
		observe: func(ev record.Event) error {
			if dlg != nil {
				dlg.Observe(ev)
			}
			tally.Observe(ev)
			if as, ok := dlg.(Asider); ev.Kind != record.KindStderr && !(ok && as.Aside(ev)) {
				finished = p.Final(ev)
			}
			if p.StopOn != nil {
				if err := p.StopOn(ev); err != nil {
					return err
				}
			}
			return pastLimits(ev, &turns, meter)
		},
		finish: func(run *record.Run, ex Exit) {
			if !judgeStop(run, ex, authHintFor(p, o)) {
				tally.Judge(run, ex)
			}
			tally.Account(run, turns.turns)
		},
		startHint: "check that " + o.Found.Path + " is executable",
		next:      continueSession,
		cleanup:   func() { os.RemoveAll(conf) },
	}
	dlg = attachDialog(a, p, o, su.Stdin)
	if p.ShellLog != nil {
		a.amend = newShellLog(p.ShellLog.Files(env), p.ShellLog.ExitCode).amend
	}
	if p.SessionLimits != nil {
		a.afterExit = func(run *record.Run) []record.Event {
			if rl := p.SessionLimits(env, run.SessionID); rl != nil {
				return []record.Event{{Kind: record.KindRateLimit, Subtype: "session_log", RateLimit: rl}}
			}
			return nil
		}
	}
	return a, nil
}

// pastLimits is the cause to stop a run on when ev takes it past its turn,
// token or cost limit, nil otherwise.
func pastLimits(ev record.Event, turns *TurnCounter, meter *Meter) error {
	if err := turns.Observe(ev); err != nil {
		return err
	}
	return meter.Observe(ev)
}

// processRun is the record of attempt n of a process runtime rt, before
// it starts.
func processRun(rt *Runtime, o Options, n int, capability record.Capability) *record.Run {
	return &record.Run{
		ParentRunID:   o.ParentRunID,
		Attempt:       n,
		Runtime:       rt.Name,
		Model:         o.Label,
		Dir:           o.Dir,
		Prompt:        o.Prompt,
		SessionID:     o.ResumeSession,
		RuntimeVer:    o.Found.Version,
		Capability:    capability,
		ContextWindow: o.ContextWindow,
		Account:       accountOf(rt, o.Env),
	}
}

// attachDialog is the dialog of attempt a, nil unless the run is
// interactive: the runtime's own where it has one, else a one-way dialog
// over its standard input (stdin, its first input). It sets the run's
// steering capability to match, and a's amend where the dialog amends
// events.
func attachDialog(a *attempt, p *Process, o Options, stdin string) Dialog {
	var dlg Dialog
	if p.NewDialog != nil && o.Interactive() {
		dlg = p.NewDialog(o, a.run)
		if am, ok := dlg.(Amender); ok {
			a.amend = am.Amend
		}
	}
	if o.Interactive() {
		a.run.Capability.Steer = TwoWaySteer()
		if dlg == nil {
			dlg = newOneWay(o, a.run, stdin)
			a.run.Capability.Steer = oneWaySteer()
		}
	}
	return dlg
}

// accountOf is the login folder a run of rt with the user's environment
// env uses (its ledger account), "" for a runtime lane keeps no accounts of.
func accountOf(rt *Runtime, env []string) string {
	if rt.AccountEnv == "" {
		return ""
	}
	if dir := UserDir(env, rt.AccountEnv, rt.AccountDir); dir != "" {
		return filepath.Clean(dir)
	}
	return ""
}

// processInvocation sets the runtime up in its per-run folder conf and
// says how to start it: the command line, the environment (lane's, the
// runtime's setup's and, for a hermetic run, what keeps it in its home)
// and what the run can do.
func processInvocation(p *Process, o Options, conf string) (Invocation, Setup, record.Capability, error) {
	su, err := p.Setup(o, conf)
	if err != nil {
		return Invocation{}, Setup{}, record.Capability{}, err
	}
	env := append([]string{}, o.Env...)
	if p.CleanEnv != nil {
		env = p.CleanEnv(env)
	}
	env = append(env, su.Env...)
	capability := p.Capability(o)
	if o.HermeticHome != "" && p.Hermetic != nil {
		add, excluded, err := p.Hermetic(o, env)
		if err != nil {
			return Invocation{}, Setup{}, record.Capability{}, fmt.Errorf("hermetic run: %w", err)
		}
		env = append(env, add...)
		capability.Hermetic = append([]string{}, excluded...)
	}
	inv := Invocation{Path: o.Found.Path, Args: su.Args, Dir: o.Dir, Env: env, Stdin: su.Stdin}
	return inv, su, capability, nil
}

// continueSession makes the attempt after a failed one resume the session
// it established, with the session's totals so far, rather than start the
// task over.
func continueSession(o *Options, failed *record.Run) {
	if failed.SessionID == "" {
		return
	}
	o.ResumeSession = failed.SessionID
	o.PriorSessionUsage = o.PriorSessionUsage.Add(failed.Usage)
	o.PriorSessionCostUSD = failed.SessionCostUSD
}

// authHintFor is what to check when the model API refuses the key: the
// runtime's own login, or the endpoint lane pointed it at.
func authHintFor(p *Process, o Options) string {
	if o.BaseURL != "" && o.KeyEnv != "" {
		return "the model API at " + o.BaseURL + " refused the key: check " + o.KeyEnv
	}
	return p.AuthHint
}

// Unattended is the capability of an agent CLI run headless with every tool
// approved (its own yolo or bypass mode): a headless run cannot answer
// prompts.
func Unattended(o Options) record.Capability {
	return record.Capability{Dir: o.Dir, AddDirs: o.AddDirs, PermissionMode: "bypassPermissions"}
}

// AuthRefusal is the cause to stop a run on: an API refusal of the
// credentials, which no retry of the runtime's will cure, reported as a
// retry or as an error of the main agent.
func AuthRefusal(ev record.Event) error {
	switch {
	case ev.Kind == record.KindRetry && ev.Retry != nil && (ev.Retry.ErrorStatus == 401 || ev.Retry.ErrorStatus == 403):
		return &AuthError{Status: ev.Retry.ErrorStatus, Message: ev.Retry.Error}
	case (ev.Kind == record.KindError || ev.Kind == record.KindRetry) && ev.ErrorKind == record.ErrorAuth && ev.ParentToolUseID == "":
		status := 0
		if ev.Result != nil {
			status = ev.Result.APIErrorStatus
		}
		return &AuthError{Status: status, Message: ev.Text}
	}
	return nil
}

// ApplyVerdict sets the run's status from a runtime's verdict, saying how a
// crash ended.
func ApplyVerdict(run *record.Run, v record.Verdict, ex Exit) {
	run.Status, run.ErrorKind = v.Status, v.ErrorKind
	run.ErrorMessage, run.ErrorHint, run.Contradiction = v.Message, v.Hint, v.Contradiction
	if v.ErrorKind == record.ErrorCrash {
		if ex.Signal != "" {
			run.ErrorMessage = fmt.Sprintf("the runtime was killed by %s without a result", ex.Signal)
		}
		if len(ex.StderrTail) > 0 {
			run.ErrorMessage += "; last stderr:\n" + strings.Join(ex.StderrTail, "\n")
		}
	}
}

// processWork is the work in flight of a process runtime's run other
// than its tool calls: opencode's steps, and, in an interactive run, an
// interrupted turn waiting for a follow-up (for --linger, as lane's own
// loop does: see lingering).
func processWork(steps, interactive bool) func(record.Event) (string, bool, bool) {
	step := stepWork(steps)
	if !interactive {
		return step
	}
	return func(ev record.Event) (string, bool, bool) {
		if key, opens, closes := lingering(ev); opens || closes {
			return key, opens, closes
		}
		if step != nil {
			return step(ev)
		}
		return "", false, false
	}
}

// dialogWork is the dialog's account of the work in flight when it keeps
// one (see worker), else work.
func dialogWork(dlg Dialog, work func(record.Event) (string, bool, bool)) func(record.Event) (string, bool, bool) {
	if w, ok := dlg.(Worker); ok {
		return w.Work
	}
	return work
}

// stepWork makes opencode's open steps count as work in flight: opencode
// reports a tool only once it has finished, so a step is all lane sees of
// a long build.
func stepWork(steps bool) func(record.Event) (string, bool, bool) {
	if !steps {
		return nil
	}
	return func(ev record.Event) (string, bool, bool) {
		switch {
		case ev.Kind == record.KindTask && ev.Subtype == "step_start":
			return ev.MessageID, true, false
		case ev.Kind == record.KindTask && ev.Subtype == "step_finish":
			return ev.MessageID, false, true
		case ev.Kind == record.KindError:
			return "", false, true // the step ended in an error
		}
		return "", false, false
	}
}

// TurnCounter counts the main agent's model turns from its events and says
// when one begins past the limit (if it has one). A turn begins with the
// first model output (text, thinking or a tool call) after a tool result,
// or with a step_start for runtimes that mark their steps.
type TurnCounter struct {
	Limit       int
	Steps       bool
	turns       int
	afterResult bool
}

func (c *TurnCounter) Observe(ev record.Event) error {
	if ev.ParentToolUseID != "" {
		return nil
	}
	began := false
	switch {
	case c.Steps:
		began = ev.Kind == record.KindTask && ev.Subtype == "step_start"
	case ev.Kind == record.KindToolResult:
		c.afterResult = true
	case ev.Kind == record.KindText || ev.Kind == record.KindThinking || ev.Kind == record.KindToolCall:
		began = c.turns == 0 || c.afterResult
		c.afterResult = false
	}
	if !began {
		return nil
	}
	c.turns++
	if c.Limit > 0 && c.turns > c.Limit {
		return &MaxTurnsError{Limit: c.Limit}
	}
	return nil
}

// KeyFrom is the environment value for the API key of a CLI pointed at an
// endpoint: the variable o.KeyEnv names, or a placeholder for servers that
// want none (Ollama) but a CLI that insists on one.
func (o Options) KeyFrom(env []string) string {
	if o.KeyEnv != "" {
		if v := LookupEnv(env, o.KeyEnv); v != "" {
			return v
		}
	}
	return "lane-no-key"
}

// PromptWithAddition is the task with --append-system-prompt before it,
// for the CLIs that have no flag of their own for it.
func (o Options) PromptWithAddition() string {
	if o.AppendSystemPrompt == "" {
		return o.Prompt
	}
	return o.AppendSystemPrompt + "\n\n" + o.Prompt
}

// PricedModel is the model a run's usage is priced as.
func (o Options) PricedModel() string {
	if o.Model != "" {
		return o.Model
	}
	return o.Label
}

// Pricer is o.Price, or a Pricer list that knows no model.
func (o Options) Pricer() func(string, record.Usage) (float64, bool) {
	if o.Price != nil {
		return o.Price
	}
	return func(string, record.Usage) (float64, bool) { return 0, false }
}

func LookupEnv(env []string, name string) string {
	v := ""
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == name {
			v = val // the last one wins, as in exec
		}
	}
	return v
}

func IsSemver(out string) bool {
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

// WriteJSON writes v as a configuration file of lane's. It replaces the
// file at once (a rename), as runs in parallel may read lane's lasting
// runtime homes while another run writes them.
func WriteJSON(path string, v any) error {
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
