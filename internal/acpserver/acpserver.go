// Package acpserver is lane as an Agent Client Protocol agent: the agent
// side of an editor's connection on stdio. Each session/prompt is a lane
// run in the session's folder, recorded like any other; the next prompt of
// the session continues it; requests for approval are asked in the editor.
package acpserver

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/lanehq/lane/internal/approval"
	"github.com/lanehq/lane/internal/approval/dbdesk"
	"github.com/lanehq/lane/internal/config"
	"github.com/lanehq/lane/internal/launch"
	"github.com/lanehq/lane/internal/record"
	"github.com/lanehq/lane/internal/recorder"
	"github.com/lanehq/lane/internal/runner"
	"github.com/lanehq/lane/internal/store"
)

// Via marks the runs of lane acp (record.Run.Via).
const Via = "acp"

// Config is what the agent serves with.
type Config struct {
	Env    *launch.Env
	Config *config.File
	Store  *store.Store
	// Base are the command's flags: every session's runs start from them.
	Base launch.Options
	// Notes tells of each prompt's run as of any lane run's: its requests
	// that wait, its end. nil: nobody is told.
	Notes *recorder.Notifications
	// In and Out are the protocol's (stdin and stdout): nothing else may
	// write to Out.
	In  io.Reader
	Out io.Writer
}

// Serve speaks ACP on cfg.In and cfg.Out until the editor closes the
// connection or ctx ends; the prompts still running are cancelled and
// waited for.
func Serve(ctx context.Context, cfg Config) error {
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	ag := &agent{env: cfg.Env, cfg: cfg.Config, st: cfg.Store, base: cfg.Base, ctx: ctx, notes: cfg.Notes, sessions: map[sdk.SessionId]*session{}}
	conn := sdk.NewAgentSideConnection(ag, cfg.Out, cfg.In)
	conn.SetLogger(slog.Default())
	ag.conn = conn
	select {
	case <-conn.Done():
	case <-ctx.Done():
	}
	stop() // cancels the prompts still running
	ag.wg.Wait()
	return nil
}

// agent is lane on the agent side of ACP.
type agent struct {
	env  *launch.Env
	cfg  *config.File
	st   *store.Store
	base launch.Options // the flags: every session's runs start from them
	// notes tells of each prompt's run as of any lane run's: its
	// requests that wait, its end. nil: nobody is told.
	notes *recorder.Notifications
	conn  *sdk.AgentSideConnection
	ctx   context.Context // lane acp's: ends every run

	wg       sync.WaitGroup
	mu       sync.Mutex
	sessions map[sdk.SessionId]*session
}

// session is one ACP session: its folder, mode and the lane run its
// next prompt continues.
type session struct {
	id     sdk.SessionId
	cwd    string
	mode   string
	mcp    []runner.MCPServer // the editor's MCP servers, for the runtimes that take them
	last   *record.Run
	cancel context.CancelFunc // the prompt under way, nil when none
}

// laneModes are the permission modes an editor can pick (session/set_mode).
var laneModes = []sdk.SessionMode{
	{Id: "default", Name: "Ask before edits and commands"},
	{Id: "acceptEdits", Name: "Accept edits in the folder, ask for the rest"},
	{Id: "plan", Name: "Plan: no changes"},
	{Id: "bypassPermissions", Name: "Approve every tool call"},
}

func (a *agent) modes(current string) *sdk.SessionModeState {
	return &sdk.SessionModeState{CurrentModeId: sdk.SessionModeId(current), AvailableModes: laneModes}
}

func (a *agent) Initialize(ctx context.Context, p sdk.InitializeRequest) (sdk.InitializeResponse, error) {
	return sdk.InitializeResponse{
		ProtocolVersion:   sdk.ProtocolVersionNumber,
		AgentCapabilities: sdk.AgentCapabilities{LoadSession: true, McpCapabilities: sdk.McpCapabilities{Http: true, Sse: true}},
		AgentInfo:         &sdk.Implementation{Name: "lane", Version: "dev"},
	}, nil
}

func (a *agent) Authenticate(ctx context.Context, _ sdk.AuthenticateRequest) (sdk.AuthenticateResponse, error) {
	return sdk.AuthenticateResponse{}, nil // the runtimes sign in on their own
}

func (a *agent) NewSession(ctx context.Context, p sdk.NewSessionRequest) (sdk.NewSessionResponse, error) {
	dir, err := launch.ResolveDir(p.Cwd)
	if err != nil {
		return sdk.NewSessionResponse{}, sdk.NewInvalidParams(err.Error())
	}
	s := &session{id: sdk.SessionId(record.NewRunID()), cwd: dir, mode: a.base.PermissionMode, mcp: mcpServers(p.McpServers)}
	a.mu.Lock()
	a.sessions[s.id] = s
	a.mu.Unlock()
	return sdk.NewSessionResponse{SessionId: s.id, Modes: a.modes(s.mode)}, nil
}

// LoadSession continues an earlier lane run: the session's id is the run's
// (or a prefix of it).
func (a *agent) LoadSession(ctx context.Context, p sdk.LoadSessionRequest) (sdk.LoadSessionResponse, error) {
	run, err := launch.OpenRun(ctx, a.st, string(p.SessionId))
	if err != nil {
		return sdk.LoadSessionResponse{}, sdk.NewInvalidParams(err.Error())
	}
	s := &session{id: p.SessionId, cwd: run.Dir, mode: a.base.PermissionMode, last: run, mcp: mcpServers(p.McpServers)}
	if p.Cwd != "" {
		if dir, err := launch.ResolveDir(p.Cwd); err == nil {
			s.cwd = dir
		}
	}
	a.mu.Lock()
	a.sessions[s.id] = s
	a.mu.Unlock()
	if err := a.replay(ctx, s.id, run); err != nil {
		return sdk.LoadSessionResponse{}, sdk.NewInternalError(err.Error())
	}
	return sdk.LoadSessionResponse{Modes: a.modes(s.mode)}, nil
}

// replayDepth bounds how many runs of a session a load replays.
const replayDepth = 100

// replay sends the editor the conversation so far, as ACP's session/load
// asks: each run of the session, oldest first, as its prompt and its
// events' updates.
func (a *agent) replay(ctx context.Context, id sdk.SessionId, last *record.Run) error {
	chain := []*record.Run{last}
	for r := last; r.ParentRunID != "" && len(chain) < replayDepth; {
		parent, err := a.st.GetRun(ctx, r.ParentRunID)
		if err != nil {
			break // the rest of the chain is gone: replay what is left
		}
		chain, r = append(chain, parent), parent
	}
	up := &updates{conn: a.conn, session: id}
	for i := len(chain) - 1; i >= 0; i-- {
		run := chain[i]
		_ = a.conn.SessionUpdate(ctx, sdk.SessionNotification{SessionId: id, Update: sdk.UpdateUserMessageText(run.Prompt)})
		if err := a.st.Events(ctx, run.ID, 0, func(ev record.Event) error {
			up.send(ctx, ev)
			return nil
		}); err != nil {
			return fmt.Errorf("replay run %s: %w", run.ID, err)
		}
	}
	return nil
}

func (a *agent) SetSessionMode(ctx context.Context, p sdk.SetSessionModeRequest) (sdk.SetSessionModeResponse, error) {
	if _, err := approval.ParseMode(string(p.ModeId)); err != nil {
		return sdk.SetSessionModeResponse{}, sdk.NewInvalidParams(err.Error())
	}
	s, err := a.sessionOf(p.SessionId)
	if err != nil {
		return sdk.SetSessionModeResponse{}, err
	}
	a.mu.Lock()
	s.mode = string(p.ModeId)
	a.mu.Unlock()
	return sdk.SetSessionModeResponse{}, nil
}

func (a *agent) Cancel(ctx context.Context, p sdk.CancelNotification) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if s := a.sessions[p.SessionId]; s != nil && s.cancel != nil {
		s.cancel()
	}
	return nil
}

func (a *agent) sessionOf(id sdk.SessionId) (*session, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	s := a.sessions[id]
	if s == nil {
		return nil, sdk.NewInvalidParams("no session " + string(id))
	}
	return s, nil
}

// Prompt runs the prompt as a lane run in the session's folder, the
// continuation of the session's last one, and streams its events to the
// editor as session updates.
func (a *agent) Prompt(ctx context.Context, p sdk.PromptRequest) (sdk.PromptResponse, error) {
	s, err := a.sessionOf(p.SessionId)
	if err != nil {
		return sdk.PromptResponse{}, err
	}
	runCtx, cancel := context.WithCancel(a.ctx)
	a.mu.Lock()
	if s.cancel != nil {
		a.mu.Unlock()
		cancel()
		return sdk.PromptResponse{}, sdk.NewInvalidParams("a prompt of this session is under way")
	}
	s.cancel = cancel
	ro, last := a.base, s.last
	ro.PermissionMode, ro.MCPServers = s.mode, s.mcp
	a.mu.Unlock()
	a.wg.Add(1)
	defer func() {
		a.mu.Lock()
		s.cancel = nil
		a.mu.Unlock()
		cancel()
		a.wg.Done()
	}()
	stopOnCancel := context.AfterFunc(ctx, cancel) // the SDK ends ctx on session/cancel
	defer stopOnCancel()

	ro.Dir, ro.Task = s.cwd, promptText(p.Prompt)
	if last != nil {
		// The session's next prompt: the same runtime session, asked again.
		usage, err := launch.SessionUsage(runCtx, a.st, last)
		if err != nil {
			return sdk.PromptResponse{}, err
		}
		ro.Resume, ro.ParentRunID, ro.Runtime = last.SessionID, last.ID, last.Runtime
		ro.PriorSessionCostUSD, ro.PriorSessionUsage = last.SessionCostUSD, usage
	}
	ro.Desk = dbdesk.New(a.st, dbdesk.Options{Terminal: &editorAsker{conn: a.conn, session: s.id}})
	ro.Attended = true
	rec := recorder.New(a.st, io.Discard, false, recorder.FormatNone)
	rec.Via = Via
	rec.Notes = a.notes
	up := &updates{conn: a.conn, session: s.id, edits: a.editsOf(&ro)}
	rec.Tap = func(ev record.Event) { up.send(runCtx, ev) }
	run, err := launch.Execute(runCtx, a.env, a.st, rec, a.cfg, &ro, s.cwd, nil)
	if err != nil {
		return sdk.PromptResponse{}, sdk.NewInternalError(err.Error())
	}
	a.mu.Lock()
	s.last = run
	a.mu.Unlock()
	up.usage(ctx, run)
	return sdk.PromptResponse{StopReason: up.stopReason(ctx, run)}, nil
}

// editsOf is how the runtime of a prompt's run says what its edits do,
// nil when it does not.
func (a *agent) editsOf(ro *launch.Options) func(string, json.RawMessage) []record.TextEdit {
	t, err := a.cfg.Resolve(ro.Model, ro.Runtime, ro.BaseURL, a.env.Getenv)
	if err != nil {
		return nil
	}
	if rt, ok := a.env.Runtimes.Lookup(t.Runtime); ok {
		return rt.Edits
	}
	return nil
}

// mcpServers are an editor's MCP servers as lane hands them to a run.
func mcpServers(in []sdk.McpServer) []runner.MCPServer {
	var out []runner.MCPServer
	for _, m := range in {
		switch {
		case m.Stdio != nil:
			env := map[string]string{}
			for _, e := range m.Stdio.Env {
				env[e.Name] = e.Value
			}
			out = append(out, runner.MCPServer{Name: m.Stdio.Name, Transport: "stdio", Command: m.Stdio.Command, Args: m.Stdio.Args, Env: env})
		case m.Http != nil:
			out = append(out, runner.MCPServer{Name: m.Http.Name, Transport: "http", URL: m.Http.Url, Headers: headers(m.Http.Headers)})
		case m.Sse != nil:
			out = append(out, runner.MCPServer{Name: m.Sse.Name, Transport: "sse", URL: m.Sse.Url, Headers: headers(m.Sse.Headers)})
		}
	}
	return out
}

func headers(hs []sdk.HttpHeader) map[string]string {
	out := map[string]string{}
	for _, h := range hs {
		out[h.Name] = h.Value
	}
	return out
}

// promptText is the prompt's text blocks, with each resource it links
// named by its address, as one task.
func promptText(blocks []sdk.ContentBlock) string {
	var parts []string
	for _, b := range blocks {
		switch {
		case b.Text != nil:
			parts = append(parts, b.Text.Text)
		case b.ResourceLink != nil:
			parts = append(parts, "@"+strings.TrimPrefix(b.ResourceLink.Uri, "file://"))
		}
	}
	return strings.Join(parts, "\n")
}

// Methods lane does not offer.
func (a *agent) CloseSession(context.Context, sdk.CloseSessionRequest) (sdk.CloseSessionResponse, error) {
	return sdk.CloseSessionResponse{}, sdk.NewMethodNotFound(sdk.AgentMethodSessionClose)
}
func (a *agent) ListSessions(context.Context, sdk.ListSessionsRequest) (sdk.ListSessionsResponse, error) {
	return sdk.ListSessionsResponse{}, sdk.NewMethodNotFound(sdk.AgentMethodSessionList)
}
func (a *agent) ResumeSession(context.Context, sdk.ResumeSessionRequest) (sdk.ResumeSessionResponse, error) {
	return sdk.ResumeSessionResponse{}, sdk.NewMethodNotFound(sdk.AgentMethodSessionResume)
}
func (a *agent) SetSessionConfigOption(context.Context, sdk.SetSessionConfigOptionRequest) (sdk.SetSessionConfigOptionResponse, error) {
	return sdk.SetSessionConfigOptionResponse{}, sdk.NewMethodNotFound(sdk.AgentMethodSessionSetConfigOption)
}

// updates turns a run's events into session updates.
type updates struct {
	conn    *sdk.AgentSideConnection
	session sdk.SessionId
	edits   func(tool string, input json.RawMessage) []record.TextEdit // nil: no diffs
}

func (u *updates) send(ctx context.Context, ev record.Event) {
	if ev.ParentToolUseID != "" {
		return // a subagent's work shows as its task's tool call
	}
	var upd sdk.SessionUpdate
	switch ev.Kind {
	case record.KindText:
		upd = sdk.UpdateAgentMessageText(ev.Text)
	case record.KindThinking:
		upd = sdk.UpdateAgentThoughtText(ev.Text)
	case record.KindToolCall:
		upd = startToolCall(ev, u.edits)
	case record.KindTodo:
		entries := planEntries(ev.Text)
		if entries == nil {
			return
		}
		upd = sdk.UpdatePlan(entries...)
	case record.KindToolResult:
		status := sdk.ToolCallStatusCompleted
		if ev.IsError {
			status = sdk.ToolCallStatusFailed
		}
		upd = sdk.UpdateToolCall(sdk.ToolCallId(ev.ToolUseID), sdk.WithUpdateStatus(status),
			sdk.WithUpdateContent([]sdk.ToolCallContent{sdk.ToolContent(sdk.TextBlock(ev.Output))}))
	default:
		return
	}
	if err := u.conn.SessionUpdate(ctx, sdk.SessionNotification{SessionId: u.session, Update: upd}); err != nil {
		slog.Debug("acp: session update not sent", "err", err)
	}
}

// usage tells the editor how full the context is and what the session has
// cost, at the end of a prompt's run.
func (u *updates) usage(ctx context.Context, run *record.Run) {
	if run.ContextTokens == 0 && run.CostUSD == 0 {
		return
	}
	upd := sdk.SessionUpdate{UsageUpdate: &sdk.SessionUsageUpdate{
		SessionUpdate: "usage_update", Used: int(run.ContextTokens), Size: run.ContextWindow,
		Cost: &sdk.Cost{Amount: run.CostUSD, Currency: "USD"},
	}}
	_ = u.conn.SessionUpdate(ctx, sdk.SessionNotification{SessionId: u.session, Update: upd})
}

// planEntries reads a todo list as the runtimes' decoders render it
// (record.KindTodo: "[x] done", "[>] under way", "[ ] to do" a line); nil
// when no line is an item.
func planEntries(text string) []sdk.PlanEntry {
	var out []sdk.PlanEntry
	for _, line := range strings.Split(text, "\n") {
		status, ok := map[string]sdk.PlanEntryStatus{
			"[x] ": sdk.PlanEntryStatusCompleted, "[>] ": sdk.PlanEntryStatusInProgress, "[ ] ": sdk.PlanEntryStatusPending,
		}[line[:min(4, len(line))]]
		if ok {
			out = append(out, sdk.PlanEntry{Content: line[4:], Status: status, Priority: sdk.PlanEntryPriorityMedium})
		}
	}
	return out
}

// stopReason says why the prompt's turn ended; a failure is told in the
// agent's words first, as the editor shows no run record.
func (u *updates) stopReason(ctx context.Context, run *record.Run) sdk.StopReason {
	switch {
	case run.Status == record.StatusCancelled:
		return sdk.StopReasonCancelled
	case run.ErrorKind == record.ErrorTurnLimit:
		return sdk.StopReasonMaxTurnRequests
	case run.ErrorKind == record.ErrorTokenLimit:
		return sdk.StopReasonMaxTokens
	case run.Status != record.StatusSucceeded:
		msg := fmt.Sprintf("lane: run %s %s", run.ID, strings.ReplaceAll(string(run.Status), "_", " "))
		if run.ErrorKind != "" {
			msg += " (" + string(run.ErrorKind) + ")"
		}
		if run.ErrorMessage != "" {
			msg += ": " + run.ErrorMessage
		}
		_ = u.conn.SessionUpdate(ctx, sdk.SessionNotification{SessionId: u.session, Update: sdk.UpdateAgentMessageText(msg)})
	}
	return sdk.StopReasonEndTurn
}

// startToolCall is a tool call as ACP shows it: its kind, a title, the
// paths it touches, its input and, for an edit, its diff.
func startToolCall(ev record.Event, edits func(string, json.RawMessage) []record.TextEdit) sdk.SessionUpdate {
	kind, title := sdk.ToolKindOther, ev.ToolName
	var locations []sdk.ToolCallLocation
	if c := ev.Call; c != nil {
		kind = toolKind(c.Kind)
		what := c.Command
		for _, p := range c.Paths {
			locations = append(locations, sdk.ToolCallLocation{Path: p})
			if what == "" {
				what = p
			}
		}
		what = cmp.Or(what, c.URL, c.Target)
		title = strings.TrimSpace(cmp.Or(c.Tool, ev.ToolName) + " " + what)
	}
	var input any
	if len(ev.Input) > 0 {
		input = json.RawMessage(ev.Input)
	}
	opts := []sdk.ToolCallStartOpt{sdk.WithStartKind(kind), sdk.WithStartStatus(sdk.ToolCallStatusInProgress),
		sdk.WithStartLocations(locations), sdk.WithStartRawInput(input)}
	if edits != nil {
		var diffs []sdk.ToolCallContent
		for _, e := range edits(ev.ToolName, ev.Input) {
			if e.Old == "" {
				diffs = append(diffs, sdk.ToolDiffContent(e.Path, e.New))
			} else {
				diffs = append(diffs, sdk.ToolDiffContent(e.Path, e.New, e.Old))
			}
		}
		if len(diffs) > 0 {
			opts = append(opts, sdk.WithStartContent(diffs))
		}
	}
	return sdk.StartToolCall(sdk.ToolCallId(ev.ToolUseID), title, opts...)
}

func toolKind(k record.CallKind) sdk.ToolKind {
	switch k {
	case record.CallShell:
		return sdk.ToolKindExecute
	case record.CallRead:
		return sdk.ToolKindRead
	case record.CallWrite, record.CallEdit:
		return sdk.ToolKindEdit
	case record.CallSearch:
		return sdk.ToolKindSearch
	case record.CallFetch:
		return sdk.ToolKindFetch
	case record.CallTask:
		return sdk.ToolKindThink
	}
	return sdk.ToolKindOther
}

// editorAsker asks the editor (session/request_permission) for a decision
// on a request; its answer is recorded as the editor's.
type editorAsker struct {
	conn    *sdk.AgentSideConnection
	session sdk.SessionId
}

const (
	optAllow  = "allow"
	optAlways = "always"
	optReject = "reject"
)

func (e *editorAsker) Ask(ctx context.Context, req approval.Request) (store.Answer, bool) {
	title := strings.TrimSpace(req.Tool + " " + req.Summary)
	var input any
	if len(req.Input) > 0 {
		input = json.RawMessage(req.Input)
	}
	resp, err := e.conn.RequestPermission(ctx, sdk.RequestPermissionRequest{
		SessionId: e.session,
		ToolCall: sdk.ToolCallUpdate{ToolCallId: sdk.ToolCallId(req.ToolUseID), Title: sdk.Ptr(title),
			Status: sdk.Ptr(sdk.ToolCallStatusPending), RawInput: input},
		Options: []sdk.PermissionOption{
			{Kind: sdk.PermissionOptionKindAllowOnce, Name: "Allow", OptionId: optAllow},
			{Kind: sdk.PermissionOptionKindAllowAlways, Name: "Always allow in this run", OptionId: optAlways},
			{Kind: sdk.PermissionOptionKindRejectOnce, Name: "Deny", OptionId: optReject},
		},
	})
	if err != nil || resp.Outcome.Selected == nil {
		if err != nil && !errors.Is(err, context.Canceled) {
			slog.Warn("acp: the editor did not answer a request", "request", req.ID, "err", err)
		}
		return store.Answer{}, false // cancelled, or the run went on without it
	}
	switch resp.Outcome.Selected.OptionId {
	case optAllow:
		return store.Answer{Allow: true, By: string(approval.ByEditor)}, true
	case optAlways:
		return store.Answer{Allow: true, Always: true, By: string(approval.ByEditor)}, true
	}
	return store.Answer{By: string(approval.ByEditor), Message: "denied in the editor"}, true
}

func (e *editorAsker) Say(s string) { slog.Info("acp: " + s) }
