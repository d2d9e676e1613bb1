package export

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/lanehq/lane/internal/record"
	"github.com/lanehq/lane/internal/store"
)

// FormatATIF is Harbor's Agent Trajectory Interchange Format: one
// trajectory per run.
const FormatATIF = "atif"

// ATIFVersion is the schema_version lane writes. ATIF-v1.7 added the
// embedded subagent_trajectories and trajectory_id that lane's subagents
// need; ATIF-v1.8 only added audio content parts, which lane has none of,
// and a reader that knows v1.8 reads v1.7 while one that stops at v1.7
// rejects a document labelled v1.8.
const ATIFVersion = "ATIF-v1.7"

// ATIFOptions are what an ATIF export takes beside the runs.
type ATIFOptions struct {
	// Indent writes a single run's trajectory as one indented object;
	// several runs are always JSON lines, one compact trajectory a line.
	Indent bool
	// Price, when set, estimates each model response's cost_usd from its
	// usage (model as the usage names it, else the run's).
	Price func(model string, u record.Usage) (float64, bool)
}

// WriteATIF writes runs as ATIF trajectories, reading their events from src
// a page at a time: one trajectory a line, or, with opts.Indent and one
// run, the trajectory as an indented object.
func WriteATIF(ctx context.Context, w io.Writer, src Source, runs []*record.Run, opts ATIFOptions) error {
	for _, run := range runs {
		a := NewATIF(opts)
		switch at, err := src.AttemptOfRun(ctx, run.ID); {
		case err == nil:
			a.InAttempt(at)
		case !errors.Is(err, store.ErrNotFound):
			return err
		}
		if err := src.Events(ctx, run.ID, 0, func(ev record.Event) error { a.Event(ev); return nil }); err != nil {
			return fmt.Errorf("events of run %s: %w", run.ID, err)
		}
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if opts.Indent && len(runs) == 1 {
			enc.SetIndent("", "  ")
		}
		if err := enc.Encode(a.Trajectory(run)); err != nil {
			return fmt.Errorf("encode trajectory of run %s: %w", run.ID, err)
		}
		if _, err := w.Write(b.Bytes()); err != nil {
			return err
		}
	}
	return nil
}

// The ATIF document, as Harbor's models name its fields
// (harbor.models.trajectories). Every object is closed there; what lane
// has beyond the schema goes into the extra objects.

// ATIFTrajectory is the root object, and each embedded subagent's.
type ATIFTrajectory struct {
	SchemaVersion        string            `json:"schema_version"`
	SessionID            string            `json:"session_id,omitempty"`
	TrajectoryID         string            `json:"trajectory_id,omitempty"`
	Agent                ATIFAgent         `json:"agent"`
	Steps                []ATIFStep        `json:"steps"`
	Notes                string            `json:"notes,omitempty"`
	FinalMetrics         *ATIFFinalMetrics `json:"final_metrics,omitempty"`
	Extra                map[string]any    `json:"extra,omitempty"`
	SubagentTrajectories []*ATIFTrajectory `json:"subagent_trajectories,omitempty"`
}

// ATIFAgent is the agent system that made a trajectory.
type ATIFAgent struct {
	Name      string         `json:"name"`
	Version   string         `json:"version"`
	ModelName string         `json:"model_name,omitempty"`
	Extra     map[string]any `json:"extra,omitempty"`
}

// ATIFStep is a user message, a system event or one model response with
// its tool calls and their results.
type ATIFStep struct {
	StepID           int              `json:"step_id"`
	Timestamp        string           `json:"timestamp,omitempty"`
	Source           string           `json:"source"` // user, agent or system
	ModelName        string           `json:"model_name,omitempty"`
	Message          string           `json:"message"`
	ReasoningContent string           `json:"reasoning_content,omitempty"`
	ToolCalls        []ATIFToolCall   `json:"tool_calls,omitempty"`
	Observation      *ATIFObservation `json:"observation,omitempty"`
	Metrics          *ATIFMetrics     `json:"metrics,omitempty"`
	Extra            map[string]any   `json:"extra,omitempty"`
}

// ATIFToolCall is one tool call of a model response.
type ATIFToolCall struct {
	ToolCallID   string          `json:"tool_call_id"`
	FunctionName string          `json:"function_name"`
	Arguments    json.RawMessage `json:"arguments"` // always a JSON object
	Extra        map[string]any  `json:"extra,omitempty"`
}

// ATIFObservation holds the results a step's tool calls returned.
type ATIFObservation struct {
	Results []ATIFResult `json:"results"`
}

// ATIFResult is one tool call's result, or the link to the subagent it
// started.
type ATIFResult struct {
	SourceCallID          string            `json:"source_call_id,omitempty"`
	Content               *string           `json:"content,omitempty"`
	SubagentTrajectoryRef []ATIFSubagentRef `json:"subagent_trajectory_ref,omitempty"`
	Extra                 map[string]any    `json:"extra,omitempty"`
}

// ATIFSubagentRef names an embedded subagent trajectory by its
// trajectory_id.
type ATIFSubagentRef struct {
	TrajectoryID string `json:"trajectory_id"`
	SessionID    string `json:"session_id,omitempty"`
}

// ATIFMetrics are one model response's tokens: prompt_tokens counts every
// input token, cached_tokens the part of them read from the cache.
type ATIFMetrics struct {
	PromptTokens     int64          `json:"prompt_tokens"`
	CompletionTokens int64          `json:"completion_tokens"`
	CachedTokens     int64          `json:"cached_tokens"`
	CostUSD          *float64       `json:"cost_usd,omitempty"`
	Extra            map[string]any `json:"extra,omitempty"`
}

// ATIFFinalMetrics sum a trajectory's steps.
type ATIFFinalMetrics struct {
	TotalPromptTokens     *int64         `json:"total_prompt_tokens,omitempty"`
	TotalCompletionTokens *int64         `json:"total_completion_tokens,omitempty"`
	TotalCachedTokens     *int64         `json:"total_cached_tokens,omitempty"`
	TotalCostUSD          *float64       `json:"total_cost_usd,omitempty"`
	TotalSteps            int            `json:"total_steps"`
	Extra                 map[string]any `json:"extra,omitempty"`
}

// ATIF collects one run's events and makes its trajectory. The main
// agent's events make the root trajectory; a subagent's (the events whose
// ParentToolUseID names the tool call that started it) make a trajectory
// embedded in the one holding that call, linked from the call's result.
//
// Kinds with no place in ATIF: session fills in the agent; retry is
// counted; task, tool_output, delta, todo, stderr, raw and transcript are
// left out (the jsonl export has them all).
type ATIF struct {
	opts    ATIFOptions
	root    *atifTraj
	subs    map[string]*atifTraj // by the tool call that started each
	order   []*atifTraj          // subagents, first seen first
	calls   map[string]*atifCall // every tool call, by id
	perms   map[string]map[string]any
	permUse map[string]string // permission id → tool call id
	session record.Event
	result  *record.Result
	retries int
	anon    int // tool calls without an id
	// attempt is the bench attempt the run was, nil when none.
	attempt *record.Attempt
}

// InAttempt says the run is (a step of) bench attempt at: the trajectory
// names the bench, task, model and repeat, and for a step of a
// multi-step task the step and its rewards, as Harbor keeps a trial's
// steps apart.
func (a *ATIF) InAttempt(at *record.Attempt) { a.attempt = at }

// benchExtra is the attempt run was, for the trajectory's extra.
func (a *ATIF) benchExtra(run *record.Run) map[string]any {
	at := a.attempt
	m := map[string]any{"bench_id": at.BenchID, "task_id": at.TaskID, "model": at.Model, "n": at.N, "status": string(at.Status)}
	if i := at.StepOfRun(run.ID); i >= 0 {
		st := at.Steps[i]
		step := map[string]any{"name": st.Name, "index": i + 1, "of": len(at.Steps), "status": string(st.Status)}
		if st.Rewards != nil {
			step["rewards"] = st.Rewards
		}
		if st.FailureKind != "" {
			step["failure_kind"] = st.FailureKind
		}
		m["step"] = step
	}
	if at.Rewards != nil {
		m["rewards"] = at.Rewards
	}
	return m
}

type atifTraj struct {
	parent string // the tool call that started it, "" for the main agent
	steps  []*atifStep
	byMsg  map[string]*atifStep
	open   *atifStep // the step a next event without a message id joins
	model  string
}

type atifStep struct {
	ATIFStep
	time     time.Time
	msgID    string
	text     []string
	thinking []string
	usage    *record.Usage
	model    string
	results  map[string]int // tool call id → index in Observation.Results
}

type atifCall struct {
	traj  *atifTraj
	step  *atifStep
	time  time.Time
	name  string
	input json.RawMessage
}

// NewATIF starts the trajectory of one run.
func NewATIF(opts ATIFOptions) *ATIF {
	a := &ATIF{opts: opts, subs: map[string]*atifTraj{}, calls: map[string]*atifCall{},
		perms: map[string]map[string]any{}, permUse: map[string]string{}}
	a.root = newTraj("")
	return a
}

func newTraj(parent string) *atifTraj {
	return &atifTraj{parent: parent, byMsg: map[string]*atifStep{}}
}

// traj is the trajectory of the agent an event of parent belongs to.
func (a *ATIF) traj(parent string) *atifTraj {
	if parent == "" {
		return a.root
	}
	t := a.subs[parent]
	if t == nil {
		t = newTraj(parent)
		a.subs[parent] = t
		a.order = append(a.order, t)
	}
	return t
}

// Event takes the run's next event.
func (a *ATIF) Event(ev record.Event) {
	// A trajectory is made by the first event that adds to it, never
	// empty.
	t := func() *atifTraj { return a.traj(ev.ParentToolUseID) }
	switch ev.Kind {
	case record.KindSession:
		if a.session.Kind == "" && ev.ParentToolUseID == "" {
			a.session = ev
		}
	case record.KindText, record.KindThinking, record.KindToolCall, record.KindUsage:
		a.agentEvent(t, ev)
	case record.KindToolResult:
		a.toolResult(t, ev)
	case record.KindUserMessage:
		st := t().add(ev, "user", ev.Text)
		if ev.By != "" {
			st.Extra = map[string]any{"by": ev.By}
		}
	case record.KindError:
		st := t().add(ev, "system", ev.Text)
		st.Extra = map[string]any{"kind": string(record.KindError)}
		if ev.ErrorKind != "" {
			st.Extra["error_kind"] = string(ev.ErrorKind)
		}
	case record.KindCompact:
		text := ev.Text
		if text == "" {
			text = "context compacted"
		}
		st := t().add(ev, "system", text)
		// ATIF's convention for a step that transforms the context window.
		st.Extra = map[string]any{"kind": string(record.KindCompact), "context_management": map[string]any{"type": "compaction"}}
		if ev.Subtype != "" {
			st.Extra["subtype"] = ev.Subtype
		}
	case record.KindInterrupt:
		text := "interrupted"
		if ev.By != "" {
			text += " from the " + ev.By
		}
		st := t().add(ev, "system", text)
		st.Extra = map[string]any{"kind": string(record.KindInterrupt)}
		if ev.By != "" {
			st.Extra["by"] = ev.By
		}
	case record.KindPermissionRequest, record.KindPermissionDecision:
		a.permission(ev)
	case record.KindRetry:
		a.retries++
	case record.KindResult:
		if ev.Result != nil {
			a.result = ev.Result
		}
	}
}

// add appends a user or system step; the agent's next event starts a new
// step.
func (t *atifTraj) add(ev record.Event, source, message string) *atifStep {
	st := &atifStep{ATIFStep: ATIFStep{Source: source, Message: message}, time: ev.Time}
	t.steps = append(t.steps, st)
	t.open = nil
	return st
}

// agentStep is the model response ev is part of: the step of its message
// id, or without one the open step until its usage or a tool result
// closes it.
func (t *atifTraj) agentStep(ev record.Event) *atifStep {
	if ev.MessageID != "" {
		if st := t.byMsg[ev.MessageID]; st != nil {
			return st
		}
	} else if st := t.open; st != nil && st.msgID == "" && st.usage == nil &&
		(ev.Kind == record.KindUsage || st.Observation == nil) {
		return st
	}
	st := &atifStep{ATIFStep: ATIFStep{Source: "agent"}, time: ev.Time, msgID: ev.MessageID}
	t.steps = append(t.steps, st)
	t.open = st
	if ev.MessageID != "" {
		t.byMsg[ev.MessageID] = st
	}
	return st
}

func (a *ATIF) agentEvent(traj func() *atifTraj, ev record.Event) {
	switch {
	case ev.Kind == record.KindToolCall && ev.ToolUseID != "" && a.calls[ev.ToolUseID] != nil:
		return // a repeat of a call already taken
	case ev.Kind == record.KindUsage && ev.Usage == nil,
		(ev.Kind == record.KindText || ev.Kind == record.KindThinking) && ev.Text == "":
		return
	}
	t := traj()
	st := t.agentStep(ev)
	switch ev.Kind {
	case record.KindText:
		st.text = append(st.text, ev.Text)
	case record.KindThinking:
		st.thinking = append(st.thinking, ev.Text)
	case record.KindToolCall:
		id := ev.ToolUseID
		if id == "" {
			a.anon++
			id = fmt.Sprintf("lane-call-%d", a.anon)
		}
		st.ToolCalls = append(st.ToolCalls, ATIFToolCall{ToolCallID: id, FunctionName: ev.ToolName, Arguments: arguments(ev.Input)})
		a.calls[id] = &atifCall{traj: t, step: st, time: ev.Time, name: ev.ToolName, input: ev.Input}
	case record.KindUsage:
		u := *ev.Usage
		switch {
		case st.usage == nil:
			st.usage = &u
		case st.msgID != "":
			// Each line of a message repeats its usage: the largest is it.
			st.usage = &record.Usage{
				InputTokens:           max(st.usage.InputTokens, u.InputTokens),
				OutputTokens:          max(st.usage.OutputTokens, u.OutputTokens),
				CacheReadTokens:       max(st.usage.CacheReadTokens, u.CacheReadTokens),
				CacheCreationTokens:   max(st.usage.CacheCreationTokens, u.CacheCreationTokens),
				CacheCreation1hTokens: max(st.usage.CacheCreation1hTokens, u.CacheCreation1hTokens),
			}
		default:
			*st.usage = st.usage.Add(u)
		}
		if ev.Model != "" {
			st.model = ev.Model
			t.model = ev.Model
		}
	}
}

// toolResult puts a tool's result into the observation of the step that
// called it, the first result of a call only.
func (a *ATIF) toolResult(t func() *atifTraj, ev record.Event) {
	res := ATIFResult{Content: &ev.Output}
	if ev.IsError {
		res.Extra = map[string]any{"is_error": true}
	}
	if ev.OutputSize > int64(len(ev.Output)) {
		if res.Extra == nil {
			res.Extra = map[string]any{}
		}
		res.Extra["output_size"] = ev.OutputSize // cut; the jsonl export has it whole
	}
	c := a.calls[ev.ToolUseID]
	if c == nil {
		// A result of a call lane did not see: a system step of its own.
		if ev.ToolUseID != "" {
			if res.Extra == nil {
				res.Extra = map[string]any{}
			}
			res.Extra["tool_use_id"] = ev.ToolUseID
		}
		st := t().add(ev, "system", "")
		st.Observation = &ATIFObservation{Results: []ATIFResult{res}}
		st.Extra = map[string]any{"kind": string(record.KindToolResult)}
		return
	}
	if _, seen := c.step.results[ev.ToolUseID]; seen {
		return
	}
	res.SourceCallID = ev.ToolUseID
	c.step.result(ev.ToolUseID, res)
}

// result adds a result to the step's observation.
func (st *atifStep) result(id string, res ATIFResult) {
	if st.Observation == nil {
		st.Observation = &ATIFObservation{}
	}
	if st.results == nil {
		st.results = map[string]int{}
	}
	st.results[id] = len(st.Observation.Results)
	st.Observation.Results = append(st.Observation.Results, res)
}

// permission keeps a request for approval and its answer, for the tool
// call they are about.
func (a *ATIF) permission(ev record.Event) {
	p := ev.Permission
	if p == nil {
		return
	}
	id := ev.ToolUseID
	if id == "" {
		id = a.permUse[p.ID]
	}
	if id == "" {
		return
	}
	if p.ID != "" {
		a.permUse[p.ID] = id
	}
	m := a.perms[id]
	if m == nil {
		m = map[string]any{}
		a.perms[id] = m
	}
	if ev.Kind == record.KindPermissionRequest {
		if p.Summary != "" {
			m["summary"] = p.Summary
		}
		return
	}
	m["allow"] = p.Allow
	if p.Always {
		m["always"] = true
	}
	if p.By != "" {
		m["by"] = p.By
	}
	if p.Message != "" {
		m["message"] = p.Message
	}
	if p.WaitedMS > 0 {
		m["waited_ms"] = p.WaitedMS
	}
}

// arguments is a tool's input as the JSON object ATIF wants: an object as
// it is, anything else under "input", none as {}.
func arguments(in json.RawMessage) json.RawMessage {
	in = bytes.TrimSpace(in)
	switch {
	case len(in) == 0 || string(in) == "null":
		return json.RawMessage("{}")
	case in[0] == '{' && json.Valid(in):
		return in
	case json.Valid(in):
		return json.RawMessage(`{"input":` + string(in) + `}`)
	}
	b, _ := json.Marshal(map[string]string{"input": string(in)})
	return b
}

// Trajectory is the run's trajectory with the events taken so far.
func (a *ATIF) Trajectory(run *record.Run) *ATIFTrajectory {
	session := run.SessionID
	if session == "" {
		session = run.ID
	}
	// The model as the runtime named it at start, else as lane asked for
	// it (an alias, at times).
	agent := ATIFAgent{Name: run.Runtime, Version: run.RuntimeVer, ModelName: a.session.Model}
	if agent.Name == "" {
		agent.Name = "unknown"
	}
	if agent.Version == "" {
		agent.Version = a.session.Version
	}
	if agent.Version == "" {
		agent.Version = "unknown"
	}
	if agent.ModelName == "" {
		agent.ModelName = run.Model
	}
	if len(a.session.Tools) > 0 {
		agent.Extra = map[string]any{"tools": a.session.Tools}
	}

	// Each subagent hangs under the trajectory holding the call that
	// started it, linked from that call's result; one whose call lane did
	// not see, under the root, from a system step of its own.
	b := &trajBuilder{a: a, session: session, agent: agent, children: map[*atifTraj][]*atifTraj{}, linked: map[*atifTraj]bool{}}
	for _, sub := range a.order {
		owner := a.root
		if c := a.calls[sub.parent]; c != nil && !a.within(c.traj, sub) {
			owner = c.traj
			b.linked[sub] = true
		}
		b.children[owner] = append(b.children[owner], sub)
	}

	steps := withPrompt(run.Prompt, run.StartedAt, a.root.steps)
	if len(steps) == 0 && len(b.children[a.root]) == 0 {
		// ATIF wants a step; say why there is none.
		msg := run.ErrorMessage
		if msg == "" {
			msg = "lane recorded no events of this run"
		}
		steps = append(steps, &atifStep{ATIFStep: ATIFStep{Source: "system", Message: msg,
			Extra: map[string]any{"kind": "status"}}, time: run.StartedAt})
	}
	t := b.build(a.root, steps)
	t.TrajectoryID = run.ID
	t.FinalMetrics = finalMetrics(t, run)
	t.Extra = map[string]any{"lane": a.runExtra(run)}
	t.Notes = "Written by lane from run " + run.ID + "."
	if b.priced {
		t.Notes += " Each step's cost_usd is an estimate from list prices; total_cost_usd is the run's cost as lane recorded it."
	}
	return t
}

// within says whether t is sub or one of its subagents: a call that
// would nest sub in itself (a malformed trace) leaves it under the root.
func (a *ATIF) within(t, sub *atifTraj) bool {
	for range len(a.order) + 1 {
		if t == sub {
			return true
		}
		c := a.calls[t.parent]
		if t == a.root || c == nil {
			return false
		}
		t = c.traj
	}
	return true
}

type trajBuilder struct {
	a        *ATIF
	session  string
	agent    ATIFAgent // of the trajectory being built
	children map[*atifTraj][]*atifTraj
	linked   map[*atifTraj]bool // linked from the call that started it
	priced   bool
}

// build turns a trajectory's steps into ATIF, its subagents embedded and
// linked.
func (b *trajBuilder) build(t *atifTraj, steps []*atifStep) *ATIFTrajectory {
	out := &ATIFTrajectory{SchemaVersion: ATIFVersion, SessionID: b.session, Agent: b.agent}
	links := map[string]ATIFSubagentRef{}
	var orphans []*atifTraj
	for _, sub := range b.children[t] {
		if b.linked[sub] {
			links[sub.parent] = ATIFSubagentRef{TrajectoryID: sub.parent, SessionID: b.session}
		} else {
			orphans = append(orphans, sub)
		}
	}
	for _, st := range steps {
		s := st.ATIFStep
		if !st.time.IsZero() {
			s.Timestamp = timestamp(st.time)
		}
		if s.Source == "agent" {
			b.agentStep(&s, st, links)
		}
		out.Steps = append(out.Steps, s)
	}
	for _, sub := range orphans {
		s := ATIFStep{Source: "system", Extra: map[string]any{"kind": "subagent", "tool_use_id": sub.parent},
			Observation: &ATIFObservation{Results: []ATIFResult{{SubagentTrajectoryRef: []ATIFSubagentRef{{TrajectoryID: sub.parent, SessionID: b.session}}}}}}
		if len(sub.steps) > 0 && !sub.steps[0].time.IsZero() {
			s.Timestamp = timestamp(sub.steps[0].time)
		}
		out.Steps = append(out.Steps, s)
	}
	for i := range out.Steps {
		out.Steps[i].StepID = i + 1
	}
	for _, sub := range b.children[t] {
		out.SubagentTrajectories = append(out.SubagentTrajectories, b.subagent(sub))
	}
	return out
}

// withPrompt is steps with the prompt the agent was given first, unless
// the first step is that message already (an imported session's).
func withPrompt(prompt string, at time.Time, steps []*atifStep) []*atifStep {
	if prompt == "" || len(steps) > 0 && steps[0].Source == "user" && steps[0].Message == prompt {
		return steps
	}
	return append([]*atifStep{{ATIFStep: ATIFStep{Source: "user", Message: prompt}, time: at}}, steps...)
}

// timestamp is ISO 8601 in UTC to the millisecond.
func timestamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

func (b *trajBuilder) agentStep(s *ATIFStep, st *atifStep, links map[string]ATIFSubagentRef) {
	s.Message = strings.Join(st.text, "\n\n")
	s.ReasoningContent = strings.Join(st.thinking, "\n\n")
	if st.model != "" && st.model != b.agent.ModelName {
		s.ModelName = st.model
	}
	s.ToolCalls = append([]ATIFToolCall(nil), s.ToolCalls...)
	var obs []ATIFResult
	if s.Observation != nil {
		obs = append(obs, s.Observation.Results...)
	}
	for i, tc := range s.ToolCalls {
		if p := b.a.perms[tc.ToolCallID]; p != nil {
			s.ToolCalls[i].Extra = map[string]any{"permission": p}
		}
		ref, ok := links[tc.ToolCallID]
		if !ok {
			continue
		}
		j, ok := st.results[tc.ToolCallID]
		if !ok {
			j = len(obs)
			obs = append(obs, ATIFResult{SourceCallID: tc.ToolCallID})
		}
		obs[j].SubagentTrajectoryRef = []ATIFSubagentRef{ref}
	}
	if obs != nil {
		s.Observation = &ATIFObservation{Results: obs}
	}
	if st.msgID != "" {
		s.Extra = map[string]any{"message_id": st.msgID}
	}
	if st.usage == nil {
		return
	}
	u := *st.usage
	m := &ATIFMetrics{
		PromptTokens:     u.InputTokens + u.CacheReadTokens + u.CacheCreationTokens,
		CompletionTokens: u.OutputTokens,
		CachedTokens:     u.CacheReadTokens,
	}
	if u.CacheCreationTokens > 0 {
		m.Extra = map[string]any{"cache_creation_input_tokens": u.CacheCreationTokens}
		if u.CacheCreation1hTokens > 0 {
			m.Extra["cache_creation_1h_input_tokens"] = u.CacheCreation1hTokens
		}
	}
	if b.a.opts.Price != nil {
		model := st.model
		if model == "" {
			model = b.agent.ModelName
		}
		if usd, ok := b.a.opts.Price(model, u); ok {
			m.CostUSD = &usd
			b.priced = true
		}
	}
	s.Metrics = m
}

// subagent is the trajectory of the subagent the tool call sub.parent
// started, the call's prompt its first step.
func (b *trajBuilder) subagent(sub *atifTraj) *ATIFTrajectory {
	steps := sub.steps
	parent := b.agent
	agent := ATIFAgent{Name: parent.Name, Version: parent.Version, ModelName: parent.ModelName}
	if sub.model != "" {
		agent.ModelName = sub.model
	}
	if c := b.a.calls[sub.parent]; c != nil {
		agent.Extra = map[string]any{"tool_name": c.name}
		var in map[string]any
		if json.Unmarshal(c.input, &in) == nil {
			if p, ok := in["prompt"].(string); ok {
				steps = withPrompt(p, c.time, steps)
			}
			for _, k := range []string{"subagent_type", "description"} {
				if v, ok := in[k].(string); ok && v != "" {
					agent.Extra[k] = v
				}
			}
		}
	}
	b.agent = agent
	t := b.build(sub, steps)
	b.agent = parent
	t.TrajectoryID = sub.parent
	t.FinalMetrics = finalMetrics(t, nil)
	return t
}

// finalMetrics sums the steps' tokens; the root's cost is the run's.
// When no step says what it used the run's usage stands for them.
func finalMetrics(t *ATIFTrajectory, run *record.Run) *ATIFFinalMetrics {
	fm := &ATIFFinalMetrics{TotalSteps: len(t.Steps)}
	var prompt, completion, cached, creation int64
	seen := false
	for _, s := range t.Steps {
		if m := s.Metrics; m != nil {
			seen = true
			prompt += m.PromptTokens
			completion += m.CompletionTokens
			cached += m.CachedTokens
			if n, ok := m.Extra["cache_creation_input_tokens"].(int64); ok {
				creation += n
			}
		}
	}
	if !seen && run != nil && !run.Usage.IsZero() {
		u := run.Usage
		seen = true
		prompt, completion, cached, creation = u.InputTokens+u.CacheReadTokens+u.CacheCreationTokens, u.OutputTokens, u.CacheReadTokens, u.CacheCreationTokens
	}
	if seen {
		fm.TotalPromptTokens, fm.TotalCompletionTokens, fm.TotalCachedTokens = &prompt, &completion, &cached
	}
	if creation > 0 {
		fm.Extra = map[string]any{"cache_creation_input_tokens": creation}
	}
	if run != nil {
		if run.CostUSD > 0 {
			cost := run.CostUSD
			fm.TotalCostUSD = &cost
		}
		if run.CostEstimate {
			if fm.Extra == nil {
				fm.Extra = map[string]any{}
			}
			fm.Extra["cost_estimate"] = true
		}
	}
	return fm
}

// runExtra is what lane knows of the run beyond ATIF's fields.
func (a *ATIF) runExtra(run *record.Run) map[string]any {
	m := map[string]any{"run_id": run.ID, "status": string(run.Status), "dir": run.Dir,
		"turns": run.Turns, "tool_calls": run.ToolCalls, "duration_ms": run.DurationMS}
	put := func(k string, v any, ok bool) {
		if ok {
			m[k] = v
		}
	}
	put("model", run.Model, run.Model != "")
	put("runtime_session_id", run.SessionID, run.SessionID != "")
	put("parent_run_id", run.ParentRunID, run.ParentRunID != "")
	put("attempt", run.Attempt, run.Attempt > 0)
	put("started_at", timestamp(run.StartedAt), !run.StartedAt.IsZero())
	put("ended_at", timestamp(run.EndedAt), !run.EndedAt.IsZero())
	put("exit_code", run.ExitCode, run.ExitCode != nil)
	put("error_kind", string(run.ErrorKind), run.ErrorKind != "")
	put("error_message", run.ErrorMessage, run.ErrorMessage != "")
	put("retries", a.retries, a.retries > 0)
	put("imported", true, run.Imported)
	put("worker", run.Worker, run.Worker != "")
	if a.attempt != nil {
		m["bench"] = a.benchExtra(run)
	}
	if c := run.Changes; c.Changed() {
		m["changes"] = map[string]int{"files": c.Files, "insertions": c.Insertions, "deletions": c.Deletions}
	}
	if r := a.result; r != nil {
		res := map[string]any{"is_error": r.IsError}
		for k, v := range map[string]string{"subtype": r.Subtype, "stop_reason": r.StopReason, "terminal_reason": r.TerminalReason} {
			if v != "" {
				res[k] = v
			}
		}
		m["result"] = res
	}
	return m
}
