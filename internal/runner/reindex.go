package runner

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lanehq/lane/internal/approval"
	"github.com/lanehq/lane/internal/record"
)

// ErrNotRedecodable matches a *NotRedecodableError.
var ErrNotRedecodable = errors.New("run cannot be decoded again")

// NotRedecodableError says why a stored run cannot be rebuilt from its raw
// lines.
type NotRedecodableError struct{ Reason string }

func (e *NotRedecodableError) Error() string { return e.Reason }

// Is reports whether target is ErrNotRedecodable.
func (e *NotRedecodableError) Is(target error) bool { return target == ErrNotRedecodable }

// RedecodeOptions are what a stored run does not say of itself.
type RedecodeOptions struct {
	// Model is the model as the runtime names it, for pricing ("" prices
	// the run's recorded model).
	Model string
	// Price prices usage the runtime reported without a cost.
	Price func(model string, u record.Usage) (float64, bool)
	// The session's totals before the run (a resumed run or a retry: the
	// runs before it in the same session), as lane resume passes them.
	PriorSessionCostUSD float64
	PriorSessionUsage   record.Usage
}

// Redecoded is a stored run rebuilt from its raw lines.
type Redecoded struct {
	Run    *record.Run    // the record, judged and accounted again
	Events []record.Event // the whole trace, numbered from 1
	// Added, Removed and Changed count the events that differ from the
	// stored ones, line by line.
	Added, Removed, Changed int
}

// Unchanged reports whether the rebuilt run is the stored one.
func (r *Redecoded) Unchanged(old *record.Run) bool {
	return r.Added == 0 && r.Removed == 0 && r.Changed == 0 && len(RunChanges(old, r.Run)) == 0
}

// Redecode rebuilds run from its stored events with the runtime's current
// decoder and judge, as a live run would have been read: each runtime line
// (an event with Raw, and the events that follow it from the same line) is
// decoded again, in order, through one decoder; the events lane made
// itself (stderr lines, requests for approval and their decisions,
// messages and interrupts people sent, lane's results and errors) stay
// where they were. A run's status is judged again only when the runtime
// ended it on its own (see keepsVerdict): a stop by lane is lane's
// judgement, not the runtime's lines'.
func (es Entries) Redecode(run *record.Run, stored []record.Event, ro RedecodeOptions) (*Redecoded, error) {
	rt, ok := es.Lookup(run.Runtime)
	switch {
	case !ok:
		return nil, &NotRedecodableError{"unknown runtime " + fmt.Sprintf("%q", run.Runtime)}
	case rt.Process == nil:
		return nil, &NotRedecodableError{"a run of lane's own loop: its events are lane's, there are no runtime lines to decode"}
	case run.Imported:
		return nil, &NotRedecodableError{"an imported session: its lines are the runtime's transcript, which lane import reads"}
	case !run.Status.Finished():
		return nil, &NotRedecodableError{"the run is " + string(run.Status)}
	}
	o := redecodeOptions(run, ro)
	newSource, replay, err := redecodeSource(rt, o, run)
	if err != nil {
		return nil, err
	}
	segs, laneErr := segment(stored, run)
	lines := 0
	for _, s := range segs {
		if s.IsLine() {
			lines++
		}
	}
	if lines == 0 {
		return nil, &NotRedecodableError{"no raw lines stored"}
	}
	var decoded map[int][]record.Event
	if replay != nil {
		decoded = replay.Replay(run, segs)
	} else if decoded, err = decodeLines(newSource, segs); err != nil {
		return nil, err
	}
	out := &Redecoded{Run: ptrCopy(run)}
	var evs []record.Event
	for i, s := range segs {
		fresh := s.Events
		if s.IsLine() && !s.laneKind() {
			fresh = decoded[i]
			retime(fresh, s.Events)
			if rt.Process.ShellLog != nil {
				keepExitCodes(fresh, s.Events)
			}
		}
		out.count(s.Events, fresh)
		evs = append(evs, fresh...)
	}
	p := rt.Process
	judgeAgain(out.Run, p, o, evs)
	if r := out.Run; r.Status != record.StatusSucceeded && r.ErrorMessage != "" {
		ev := record.Event{Kind: record.KindError, ErrorKind: r.ErrorKind, Text: r.ErrorMessage}
		if laneErr != nil {
			ev.Time = laneErr.Time
		} else if len(evs) > 0 {
			ev.Time = evs[len(evs)-1].Time
		}
		evs = append(evs, ev)
		out.count(optional(laneErr), []record.Event{ev})
	} else {
		out.count(optional(laneErr), nil)
	}
	for i := range evs {
		evs[i].RunID, evs[i].Seq = run.ID, int64(i+1)
	}
	out.Events = evs
	return out, nil
}

func optional(ev *record.Event) []record.Event {
	if ev == nil {
		return nil
	}
	return []record.Event{*ev}
}

func ptrCopy(r *record.Run) *record.Run {
	c := *r
	return &c
}

// redecodeOptions are the options the run was judged with, as far as its
// record tells them: two-way when people could message it.
func redecodeOptions(run *record.Run, ro RedecodeOptions) Options {
	o := Options{
		Model: ro.Model, Label: run.Model, Dir: run.Dir, AddDirs: run.Capability.AddDirs, Prompt: run.Prompt,
		AllowedTools: run.Capability.AllowedTools, PermissionMode: run.Capability.PermissionMode,
		ResumeSession: "", Price: ro.Price,
		PriorSessionCostUSD: ro.PriorSessionCostUSD, PriorSessionUsage: ro.PriorSessionUsage,
	}
	if twoWayRun(run) {
		// Nobody is asked: the desk only makes the options say two-way.
		o.Desk, o.Attended = approval.NewMemory(), true
	}
	return o
}

func twoWayRun(run *record.Run) bool {
	return slices.Contains(run.Capability.Steer, string(approval.SteerMessage))
}

// A Replayer is a dialog whose stored lines cannot be decoded alone: an
// ACP connection's answers are read against lane's requests, which are not
// stored. Replay decodes the run's segments again, re-creating what it
// sent, and returns the fresh events of each line, by segment.
type Replayer interface {
	Replay(run *record.Run, segs []Segment) map[int][]record.Event
}

// redecodeSource is the decoder the run's stdout was read with: its
// dialog's when the dialog reads stdout itself (codex app-server), else
// the runtime's; or the dialog that replays the run (see Replayer).
func redecodeSource(rt *Runtime, o Options, run *record.Run) (func(io.Reader) EventSource, Replayer, error) {
	p := rt.Process
	if p.NewDialog == nil || !o.Interactive() {
		return p.NewSource, nil, nil
	}
	switch d := p.NewDialog(o, ptrCopy(run)).(type) {
	case Replayer:
		return nil, d, nil
	case Sourcer:
		return d.Source, nil, nil
	}
	return p.NewSource, nil, nil
}

// segment is a part of a stored trace: one runtime line and the events
// decoded from it, or one event lane made itself.
type Segment struct {
	Events []record.Event
	Raw    []byte // the runtime's line; nil for lane's events
	LineNo int64  // its line number in the runtime's output
}

func (s Segment) IsLine() bool { return s.Raw != nil }

// laneKind reports a line whose event lane rewrote as its own (a message's
// or an interrupt's acknowledgment, see claudeDialog.amend): lane's
// reading of it stands.
func (s Segment) laneKind() bool {
	for _, ev := range s.Events {
		if LaneMade(ev.Kind) {
			return true
		}
	}
	return false
}

func LaneMade(k record.Kind) bool {
	switch k {
	case record.KindStderr, record.KindPermissionRequest, record.KindPermissionDecision,
		record.KindUserMessage, record.KindInterrupt, record.KindTranscript:
		return true
	}
	return false
}

// segment cuts stored into runtime lines and lane's events, and takes out
// lane's closing error event (runAttempt's, which repeats the run's error
// message), which is made again from the new verdict.
func segment(stored []record.Event, run *record.Run) ([]Segment, *record.Event) {
	var laneErr *record.Event
	if n := len(stored); n > 0 {
		last := stored[n-1]
		if last.Kind == record.KindError && len(last.Raw) == 0 && last.Line == 0 && last.Text == run.ErrorMessage && run.ErrorMessage != "" {
			laneErr = &last
			stored = stored[:n-1]
		}
	}
	var segs []Segment
	var prevLine int64
	for _, ev := range stored {
		cur := len(segs) - 1
		switch {
		case len(ev.Raw) > 0:
			n := ev.Line
			if n == 0 {
				n = prevLine + 1 // a payload that lost its line number
			}
			segs = append(segs, Segment{Events: []record.Event{ev}, Raw: ev.Raw, LineNo: n})
			prevLine = n
		case cur >= 0 && segs[cur].IsLine() && ev.Line != 0 && ev.Line == segs[cur].LineNo && !LaneMade(ev.Kind):
			segs[cur].Events = append(segs[cur].Events, ev)
		default:
			segs = append(segs, Segment{Events: []record.Event{ev}})
		}
	}
	return segs, laneErr
}

// decodeLines feeds the runtime lines of segs, in order, to one decoder
// and returns each line's events by segment, with the line numbers the
// runtime's output had.
func decodeLines(newSource func(io.Reader) EventSource, segs []Segment) (map[int][]record.Event, error) {
	var buf bytes.Buffer
	var bySeq []int // the segment of each line fed, from line 1
	for i, s := range segs {
		if !s.IsLine() {
			continue
		}
		buf.Write(s.Raw)
		buf.WriteByte('\n')
		bySeq = append(bySeq, i)
	}
	src := newSource(&buf)
	out := map[int][]record.Event{}
	last := -1
	for {
		evs, err := src.Next()
		for _, ev := range evs {
			i := last
			if ev.Line >= 1 && int(ev.Line) <= len(bySeq) {
				i = bySeq[ev.Line-1]
			}
			if i < 0 {
				i = bySeq[0]
			}
			ev.Line = segs[i].LineNo
			ev.CapOutput(MaxEventOutput)
			out[i] = append(out[i], ev)
			last = i
		}
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("decode the raw lines: %w", err)
		}
	}
}

// retime gives the events decoded from a line the times lane received the
// stored ones at (the last one's for any beyond).
func retime(fresh, stored []record.Event) {
	for j := range fresh {
		switch {
		case j < len(stored):
			fresh[j].Time = stored[j].Time
		case len(stored) > 0:
			fresh[j].Time = stored[len(stored)-1].Time
		}
	}
}

// keepExitCodes carries over what lane added to the shell results of a
// line from the runtime's session log (see shellLog), which the line does
// not hold: the run's exit code of a command.
func keepExitCodes(fresh, stored []record.Event) {
	for j := range min(len(fresh), len(stored)) {
		f, s := &fresh[j], stored[j]
		if f.Kind != record.KindToolResult || s.Kind != record.KindToolResult || f.ToolUseID != s.ToolUseID || f.IsError || !s.IsError {
			continue
		}
		rest, ok := strings.CutPrefix(s.Output, strings.TrimRight(f.Output, "\n")+"\n(exit code ")
		if code, found := strings.CutSuffix(rest, ")"); ok && found {
			if _, err := strconv.Atoi(code); err == nil {
				f.IsError, f.Output = true, s.Output
			}
		}
	}
}

// count adds the differences between one part's stored and fresh events.
func (r *Redecoded) count(stored, fresh []record.Event) {
	for j := 0; j < max(len(stored), len(fresh)); j++ {
		switch {
		case j >= len(stored):
			r.Added++
		case j >= len(fresh):
			r.Removed++
		case !SameEvent(stored[j], fresh[j]):
			r.Changed++
		}
	}
}

// SameEvent compares two events as stored, but for their numbering.
func SameEvent(a, b record.Event) bool {
	a.RunID, a.Seq, b.RunID, b.Seq = "", 0, "", 0
	a.Time, b.Time = time.Time{}, time.Time{}
	ja, erra := json.Marshal(a)
	jb, errb := json.Marshal(b)
	return erra == nil && errb == nil && bytes.Equal(ja, jb) && bytes.Equal(a.Raw, b.Raw)
}

// judgeAgain judges and accounts run from evs as runAttempt and
// processAttempt's finish do, from the exit code it recorded.
func judgeAgain(run *record.Run, p *Process, o Options, evs []record.Event) {
	tally := p.NewJudge(o)
	turns := TurnCounter{Steps: p.StepTurns}
	var stderr []string
	run.Permissions = record.PermissionCounts{}
	for _, ev := range evs {
		tally.Observe(ev)
		_ = turns.Observe(ev) // no limit: a turn limit's stop is kept as it was
		if ev.Kind == record.KindStderr {
			stderr = append(stderr, ev.Text)
		}
		noteRunEvent(run, ev)
	}
	if !keepsVerdict(run) {
		ex := Exit{Code: *run.ExitCode, StderrTail: stderr[max(0, len(stderr)-stderrTailLines):]}
		run.Status, run.ErrorKind, run.ErrorMessage, run.ErrorHint, run.Contradiction = "", "", "", "", ""
		tally.Judge(run, ex)
	}
	run.ResultText, run.PermissionDenials = "", nil
	tally.Account(run, turns.turns)
}

// keepsVerdict reports whether a run's status is lane's own judgement,
// which its lines cannot revise: lane stopped it (a watchdog, a person, a
// refused key, a turn, token or cost limit), its lane process died, it never started,
// or it died of a signal, whose name the record does not keep apart.
func keepsVerdict(run *record.Run) bool {
	switch run.Status {
	case record.StatusTimedOut, record.StatusCancelled, record.StatusInterrupted:
		return true
	}
	switch run.ErrorKind {
	case record.ErrorTimeout, record.ErrorCancelled, record.ErrorAuth, record.ErrorTurnLimit, record.ErrorTokenLimit,
		record.ErrorCostLimit, record.ErrorRuntimeMissing:
		return true
	}
	return run.ExitCode == nil || *run.ExitCode < 0
}

// A RunChange is one field of a run's record that reindexing moved.
type RunChange struct {
	Field    string
	From, To string
}

// RunChanges lists the fields of a run's record that differ between old
// and new, for a person: status, error, cost, tokens, turns, tool calls,
// session, result.
func RunChanges(old, new *record.Run) []RunChange {
	var out []RunChange
	add := func(field string, from, to any) {
		f, t := fmt.Sprint(from), fmt.Sprint(to)
		if f != t {
			out = append(out, RunChange{Field: field, From: f, To: t})
		}
	}
	add("status", old.Status, new.Status)
	add("error_kind", old.ErrorKind, new.ErrorKind)
	add("error_message", old.ErrorMessage, new.ErrorMessage)
	add("contradiction", old.Contradiction, new.Contradiction)
	add("cost_usd", fmt.Sprintf("%.6f", old.CostUSD), fmt.Sprintf("%.6f", new.CostUSD))
	add("cost_estimate", old.CostEstimate, new.CostEstimate)
	add("session_cost_usd", fmt.Sprintf("%.6f", old.SessionCostUSD), fmt.Sprintf("%.6f", new.SessionCostUSD))
	add("input_tokens", old.Usage.InputTokens, new.Usage.InputTokens)
	add("output_tokens", old.Usage.OutputTokens, new.Usage.OutputTokens)
	add("cache_read_tokens", old.Usage.CacheReadTokens, new.Usage.CacheReadTokens)
	add("cache_creation_tokens", old.Usage.CacheCreationTokens, new.Usage.CacheCreationTokens)
	add("turns", old.Turns, new.Turns)
	add("tool_calls", old.ToolCalls, new.ToolCalls)
	add("session_id", old.SessionID, new.SessionID)
	add("result_text", old.ResultText, new.ResultText)
	add("permission_denials", string(old.PermissionDenials), string(new.PermissionDenials))
	add("permissions", old.Permissions, new.Permissions)
	return out
}
