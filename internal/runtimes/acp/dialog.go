package acp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/lanehq/lane/internal/approval"
	"github.com/lanehq/lane/internal/record"
	"github.com/lanehq/lane/internal/runner"
)

// Speaks says whether a run of Gemini CLI, Qwen Code or opencode speaks
// the Agent Client Protocol rather than printing its JSON stream: when its
// permission mode needs lane's gate (anything but bypassPermissions) and a
// desk is there to reach a person. ACP is what lets lane answer the
// agent's requests, send it follow-up messages and interrupt its turn; but
// it reports less than the streams do: opencode's tokens of each prompt's
// last model response only and no HTTP status of an API error, no shell
// output from Gemini CLI, and Qwen Code announces a tool call only once it
// has checked it (for the first shell command, some seconds in which the
// idle watchdog sees no tool running). So a run that the agents' own yolo
// modes serve keeps the stream and its accounting, even when a person
// watches it (lane run): it can be cancelled, not steered (see oneWay).
// A run given MCP servers (an editor's, through lane acp) speaks ACP in
// every mode: ACP's session/new is the one way all three take them (Gemini
// CLI reads MCP servers only from settings files in its home or, if root
// owns it, a system file).
func Speaks(o runner.Options) bool {
	return o.Interactive() && (o.Mode() != approval.ModeBypass || len(o.MCPServers) > 0)
}

// TakesMCP says whether a run of an ACP CLI is given its MCP servers: an
// interactive one (a desk set) speaks ACP when given some (Speaks); the
// CLIs' stream modes have no flag for them.
func TakesMCP(o runner.Options) bool { return o.Interactive() }

// JudgeOr is the judge of a CLI that speaks either ACP or a stream of its
// own: ACP's tally when the run speaks ACP, else the one own makes.
func JudgeOr(own func(o runner.Options) runner.CLITally) func(o runner.Options) runner.Judge {
	return func(o runner.Options) runner.Judge {
		if Speaks(o) {
			return &runner.CLIJudge{Options: o, Tally: &Tally{Model: o.PricedModel()}}
		}
		return &runner.CLIJudge{Options: o, Tally: own(o)}
	}
}

// Capability is what a run of an ACP-capable CLI is allowed: over ACP,
// its permission mode and rules, which lane applies to every call the
// agent asks about; else every tool (its own yolo mode).
func Capability(o runner.Options) record.Capability {
	if !Speaks(o) {
		return runner.Unattended(o)
	}
	return record.Capability{Dir: o.Dir, AddDirs: o.AddDirs, AllowedTools: o.AllowedTools, PermissionMode: string(o.Mode())}
}

// lingerAfterStdin is how long an agent may take to exit once its stdin
// closes before it is stopped: the CLIs exit within a second or two, but
// Gemini CLI runs on while the MCP servers it started do (and lane's idle
// watchdog would wait minutes).
const lingerAfterStdin = 10 * time.Second

// acpDialog is one ACP run's side of the conversation: it opens the
// session, prompts the task and then each follow-up message, relays
// interrupts as session/cancel, and decides the agent's requests for
// permission through the run's gate. The events of both directions reach
// supervise through the connection (a sourcer), in order.
type acpDialog struct {
	o    runner.Options
	run  *record.Run
	spec Spec

	capture io.Writer // the traffic, for tests; nil: none
	ready   chan struct{}
	conn    *Conn // set by source, before ready is closed

	turns runner.TurnCounter // observe's: opencode's turns are not counted from steps in ACP

	mu     sync.Mutex
	t      runner.Talk
	notes  []note            // denials to tell the agent with the next prompt
	asked  map[string]string // tool call id → the id of its request waiting for a person
	asking context.Context   // ends with the turn: requests for approval pending then are cancelled
}

// note is a denial, with the person's or the rule's message, that the
// agent is told about with its next prompt (ACP's rejection carries no
// message).
type note struct {
	summary, message string
	by               approval.Answerer
}

// Spec is what differs between the CLIs that speak ACP.
type Spec struct {
	// Prompt is the first Prompt: the task, with --append-system-Prompt
	// before it for the CLIs that have no flag of their own for it.
	Prompt func(o runner.Options) string
	// BeforeLoad, when set, runs before session/load resumes session.
	BeforeLoad func(ctx context.Context, o runner.Options, session string) error
	// BeforeEnd, when set, runs after the last turn, before the agent's
	// stdin is closed.
	BeforeEnd func(ctx context.Context, o runner.Options, session string)
	// ExitCode reads a shell call's exit code (see acp.Decoder.ExitCode).
	ExitCode func(rawOutput any, output string) (int, bool)
}

// DialogFor makes the dialog of an interactive run that speaks ACP.
func DialogFor(spec Spec) func(o runner.Options, run *record.Run) runner.Dialog {
	return func(o runner.Options, run *record.Run) runner.Dialog {
		if !Speaks(o) {
			return nil
		}
		return &acpDialog{o: o, run: run, spec: spec, ready: make(chan struct{}),
			turns: runner.TurnCounter{Limit: o.MaxTurns}, asked: map[string]string{}}
	}
}

func (d *acpDialog) Source(stdout io.Reader) runner.EventSource {
	d.conn = NewConn(stdout, Options{MaxOutputSize: runner.MaxEventOutput, ExitCode: d.spec.ExitCode, Capture: d.capture,
		MCPServers: sdkServers(d.o.MCPServers)})
	close(d.ready)
	return d.conn
}

// Observe enforces --max-turns for the runtimes whose turns the runner
// counts from steps, which ACP does not show (opencode's).
func (d *acpDialog) Observe(ev record.Event) {
	if err := d.turns.Observe(ev); err != nil {
		d.mu.Lock()
		stop := d.t.Stop
		d.mu.Unlock()
		if stop != nil {
			stop(err)
		}
	}
}

func (d *acpDialog) Begin(ctx context.Context, stdin io.WriteCloser, t runner.Talk) {
	select {
	case <-d.ready:
	case <-ctx.Done():
		return
	}
	d.mu.Lock()
	d.t = t
	d.mu.Unlock()
	gate := d.o.NewGate(d.run, d.post)
	d.conn.Start(stdin, d.permit(gate))
	defer d.conn.Close()
	if err := d.open(ctx); err != nil {
		d.conn.Finish("", err)
	} else {
		d.converse(ctx, t)
		if d.spec.BeforeEnd != nil && ctx.Err() == nil {
			d.spec.BeforeEnd(ctx, d.o, d.conn.Decoder().SessionID())
		}
	}
	// The agent exits once its stdin ends, or is stopped when it lingers.
	stdin.Close()
	linger := time.NewTimer(lingerAfterStdin)
	defer linger.Stop()
	select {
	case <-d.conn.Done():
		return
	case <-ctx.Done():
		return
	case <-linger.C:
	}
	slog.Debug("agent lingers after its stdin closed", "run", d.run.ID)
	t.Stop(runner.ErrOutlivedDialog)
	select {
	case <-d.conn.Done():
	case <-ctx.Done():
	}
}

// open initializes the protocol and starts the session, or loads the one
// the run resumes.
func (d *acpDialog) open(ctx context.Context) error {
	init, err := d.conn.Initialize(ctx)
	if err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	if d.o.ResumeSession == "" {
		_, err := d.conn.NewSession(ctx, d.o.Dir)
		return err
	}
	if !init.AgentCapabilities.LoadSession {
		return errors.New("the agent cannot load a session over ACP, so it cannot resume " + d.o.ResumeSession)
	}
	if d.spec.BeforeLoad != nil {
		if err := d.spec.BeforeLoad(ctx, d.o, d.o.ResumeSession); err != nil {
			return err
		}
	}
	return d.conn.LoadSession(ctx, d.o.ResumeSession, d.o.Dir)
}

// steering is what people sent that is still to be acted on.
type steering struct {
	ch          <-chan approval.Steer // nil once closed
	queue       []approval.Steer      // messages for the next prompt
	interrupted bool                  // the current turn was cancelled by a person
	cancelled   bool                  // the run is being stopped
}

// converse prompts the task, then whatever is queued each time a turn
// ends; it ends at a turn's end with nothing queued (after an interrupt,
// once the linger has passed without a message), and posts the result.
func (d *acpDialog) converse(ctx context.Context, t runner.Talk) {
	st := &steering{ch: d.o.Desk.Steering(ctx, d.run.ID)}
	text := d.spec.Prompt(d.o)
	for {
		resp, err := d.turn(ctx, text, st, t)
		if st.cancelled || ctx.Err() != nil {
			return
		}
		stop := resp.StopReason
		if st.interrupted {
			// Qwen Code answers a cancelled prompt with an error.
			stop, err = sdk.StopReasonCancelled, nil
		}
		if err != nil {
			d.conn.Finish("", err)
			return
		}
		next, ok := d.next(ctx, st)
		if !ok && st.interrupted && d.linger(ctx, st, t) {
			next, ok = d.next(ctx, st)
		}
		if st.cancelled || ctx.Err() != nil {
			return
		}
		if !ok {
			d.conn.Finish(stop, nil)
			return
		}
		text, st.interrupted = next, false
	}
}

// turn sends one prompt and relays steering until its turn ends.
func (d *acpDialog) turn(ctx context.Context, text string, st *steering, t runner.Talk) (sdk.PromptResponse, error) {
	asking, endAsks := context.WithCancel(ctx)
	defer endAsks()
	d.mu.Lock()
	d.asking = asking
	d.mu.Unlock()
	type result struct {
		resp sdk.PromptResponse
		err  error
	}
	done := make(chan result, 1)
	go func() {
		resp, err := d.conn.Prompt(ctx, text)
		done <- result{resp, err}
	}()
	for {
		select {
		case r := <-done:
			return r.resp, r.err
		case s, ok := <-st.ch:
			if !ok {
				st.ch = nil
				continue
			}
			d.steer(ctx, s, st, t, endAsks)
		}
	}
}

// steer acts on s during a turn (interrupt is the turn's cancel) or
// between turns (nil).
func (d *acpDialog) steer(ctx context.Context, s approval.Steer, st *steering, t runner.Talk, interrupt context.CancelFunc) {
	switch s.Kind {
	case approval.SteerCancel:
		d.delivered(ctx, s)
		st.cancelled = true
		t.Stop(runner.ErrCancelled)
	case approval.SteerInterrupt:
		d.interrupt(ctx, s, st, interrupt)
		d.delivered(ctx, s)
	case approval.SteerMessage:
		st.queue = append(st.queue, s)
		if s.Now && !st.interrupted && interrupt != nil {
			d.interrupt(ctx, s, st, interrupt)
		}
	}
}

// interrupt cancels the current turn the protocol's way, if there is one;
// the requests for approval it left pending are answered cancelled.
func (d *acpDialog) interrupt(ctx context.Context, s approval.Steer, st *steering, endAsks context.CancelFunc) {
	d.post(record.Event{Kind: record.KindInterrupt, By: string(s.From)})
	if endAsks == nil || st.interrupted {
		return
	}
	st.interrupted = true
	endAsks()
	if err := d.conn.Cancel(ctx); err != nil {
		d.post(record.Event{Kind: record.KindError, Text: "interrupt: " + err.Error()})
	}
}

// next is the next prompt: the denials to tell the agent and the queued
// messages, each recorded as delivered. ok is false when there is none.
func (d *acpDialog) next(ctx context.Context, st *steering) (text string, ok bool) {
	d.mu.Lock()
	notes := d.notes
	d.notes = nil
	d.mu.Unlock()
	var parts []string
	for _, n := range notes {
		msg := fmt.Sprintf("(lane) Permission to run %q was denied: %s", n.summary, n.message)
		parts = append(parts, msg)
		d.post(record.Event{Kind: record.KindUserMessage, Text: msg, By: string(n.by)})
	}
	for _, s := range st.queue {
		parts = append(parts, s.Text)
		d.post(record.Event{Kind: record.KindUserMessage, Text: s.Text, By: string(s.From)})
		d.delivered(ctx, s)
	}
	st.queue = nil
	return strings.Join(parts, "\n\n"), len(parts) > 0
}

// linger keeps an interrupted run open for a message, up to --linger; it
// reports whether one came.
func (d *acpDialog) linger(ctx context.Context, st *steering, t runner.Talk) bool {
	timer := time.NewTimer(d.o.LingerWait())
	defer timer.Stop()
	for {
		select {
		case <-timer.C:
			return false
		case <-ctx.Done():
			return false
		case s, ok := <-st.ch:
			if !ok {
				st.ch = nil
				continue
			}
			d.steer(ctx, s, st, t, nil)
			if st.cancelled {
				return false
			}
			if len(st.queue) > 0 {
				return true
			}
		}
	}
}

func (d *acpDialog) delivered(ctx context.Context, s approval.Steer) {
	if err := d.o.Desk.Delivered(ctx, s); err != nil && ctx.Err() == nil {
		d.post(record.Event{Kind: record.KindError, Text: "record a delivered " + string(s.Kind) + ": " + err.Error()})
	}
}

// post records one of lane's events among the agent's, in order. It
// remembers which requests wait for a person, to close them when a turn
// is cancelled under them.
func (d *acpDialog) post(ev record.Event) {
	if ev.Permission != nil && ev.ToolUseID != "" {
		d.mu.Lock()
		switch ev.Kind {
		case record.KindPermissionRequest:
			d.asked[ev.ToolUseID] = ev.Permission.ID
		case record.KindPermissionDecision:
			delete(d.asked, ev.ToolUseID)
		}
		d.mu.Unlock()
	}
	d.conn.Post(ev)
}

// permit decides the agent's requests for permission: lane's mode and
// rules, then a person, through the gate. A person's denial's message is
// told to the agent with its next prompt.
func (d *acpDialog) permit(gate *approval.Gate) Permit {
	return func(ctx context.Context, p Permission) Verdict {
		d.mu.Lock()
		asking := d.asking
		d.mu.Unlock()
		if asking != nil {
			var cancel context.CancelFunc
			ctx, cancel = context.WithCancel(ctx)
			defer cancel()
			defer context.AfterFunc(asking, cancel)()
		}
		tc := p.ToolCall
		req := approval.Request{ToolUseID: tc.ID, Tool: tc.Name, Input: tc.Input, Dir: d.o.Dir}
		dec, err := gate.Check(ctx, tc.Call(), req)
		if err != nil {
			d.unanswered(tc)
			return Cancel
		}
		if dec.Allow {
			return Allow
		}
		// A person's words (or the timeout's) are worth a prompt of their
		// own; a rule's would only repeat the refusal, turn after turn.
		if dec.Message != "" && dec.By != approval.ByRule && dec.By != approval.ByLane {
			d.mu.Lock()
			d.notes = append(d.notes, note{summary: approval.Summarize(tc.Name, tc.Input), message: dec.Message, by: dec.By})
			d.mu.Unlock()
		}
		return Reject
	}
}

// unanswered closes the request of a call that the turn's end left
// waiting: nobody decided it, and the agent was told it was cancelled.
func (d *acpDialog) unanswered(tc ToolCall) {
	d.mu.Lock()
	id, ok := d.asked[tc.ID]
	d.mu.Unlock()
	if !ok {
		return
	}
	d.post(record.Event{Kind: record.KindPermissionDecision, ToolUseID: tc.ID, ToolName: tc.Name,
		Permission: &record.Permission{ID: id, By: string(approval.ByLane), Message: "the turn ended before anyone answered"}})
}

// The optional parts of a dialog that acpDialog has.
var (
	_ runner.Sourcer  = (*acpDialog)(nil)
	_ runner.Replayer = (*acpDialog)(nil)
)

// sdkServers are a run's MCP servers as ACP names them.
func sdkServers(in []runner.MCPServer) []sdk.McpServer {
	var out []sdk.McpServer
	for _, m := range in {
		switch m.Transport {
		case "http":
			out = append(out, sdk.McpServer{Http: &sdk.McpServerHttpInline{Name: m.Name, Type: "http", Url: m.URL, Headers: sdkHeaders(m.Headers)}})
		case "sse":
			out = append(out, sdk.McpServer{Sse: &sdk.McpServerSseInline{Name: m.Name, Type: "sse", Url: m.URL, Headers: sdkHeaders(m.Headers)}})
		default:
			env := []sdk.EnvVariable{}
			for k, v := range m.Env {
				env = append(env, sdk.EnvVariable{Name: k, Value: v})
			}
			args := m.Args
			if args == nil {
				args = []string{}
			}
			out = append(out, sdk.McpServer{Stdio: &sdk.McpServerStdio{Name: m.Name, Command: m.Command, Args: args, Env: env}})
		}
	}
	return out
}

func sdkHeaders(h map[string]string) []sdk.HttpHeader {
	out := []sdk.HttpHeader{}
	for k, v := range h {
		out = append(out, sdk.HttpHeader{Name: k, Value: v})
	}
	return out
}
