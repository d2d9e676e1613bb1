package runner_test

import (
	"errors"
	"io"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/lanehq/lane/internal/record"
	"github.com/lanehq/lane/internal/runner"
	"github.com/lanehq/lane/internal/runtimes"
	"github.com/lanehq/lane/internal/testkit/runtest"
)

func TestRedecodeRestoresEvents(t *testing.T) {
	t.Parallel()
	claude, _ := runtimes.Entries().Lookup("claude")
	codex, _ := runtimes.Entries().Lookup("codex")
	zero := 0
	cases := []struct {
		name, file string
		run        record.Run
		source     func(io.Reader) runner.EventSource
	}{
		{"claude", "../runtimes/claude/streamjson/testdata/claude-code-2.1.328/a_tool_then_text.jsonl",
			record.Run{Runtime: "claude", Model: "sonnet"}, claude.Process.NewSource},
		{"claude two-way", "../runtimes/claude/streamjson/testdata/claude-code-2.1.328/dialog_approve.jsonl",
			record.Run{Runtime: "claude", Model: "sonnet", Capability: record.Capability{Steer: runner.TwoWaySteer()}}, claude.Process.NewSource},
		{"codex app-server", "../runtimes/codex/testdata/appserver/approve.jsonl",
			record.Run{Runtime: "codex", Model: "gpt-5", Capability: record.Capability{Steer: runner.TwoWaySteer()}}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			run := c.run
			run.ID, run.Status, run.ExitCode = "r", record.StatusSucceeded, &zero
			src := c.source
			if src == nil {
				var err error
				if src, _, err = runner.RedecodeSource(codex, runner.RedecodeOptionsFor(&run, runner.RedecodeOptions{}), &run); err != nil {
					t.Fatal(err)
				}
			}
			live := runtest.Recorded(t, src, c.file)
			if len(live) < 5 {
				t.Fatalf("only %d events in %s", len(live), c.file)
			}
			// What the run was judged as, from its events.
			first, err := runtimes.Entries().Redecode(&run, live, runner.RedecodeOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if first.Run.Status != record.StatusSucceeded {
				// runAttempt's closing error event: the live run had it too.
				live = append(live, first.Events[len(first.Events)-1])
			}
			if !reflect.DeepEqual(first.Events, live) {
				t.Fatalf("redecoding the events as recorded changed them: %d added, %d removed, %d changed",
					first.Added, first.Removed, first.Changed)
			}
			judged := first.Run
			again, err := runtimes.Entries().Redecode(judged, live, runner.RedecodeOptions{})
			if err != nil || !again.Unchanged(judged) {
				t.Fatalf("a second redecoding changed the run: %v %+v", err, runner.RunChanges(judged, again.Run))
			}

			// Damage: an event lost after the first of its line, payloads
			// rewritten, the judged figures wrong.
			var damaged []record.Event
			dropped := false
			for i, ev := range live {
				switch {
				case !dropped && len(ev.Raw) == 0 && ev.Line != 0 && i > 0 && live[i-1].Line == ev.Line:
					dropped = true
					continue
				case len(ev.Raw) > 0 && i%3 == 0:
					ev.Kind, ev.Text, ev.Usage = record.KindRaw, "garbled", nil
				}
				damaged = append(damaged, ev)
			}
			bad := *judged
			bad.Turns, bad.ToolCalls, bad.Usage = 99, 99, record.Usage{InputTokens: 1}
			fixed, err := runtimes.Entries().Redecode(&bad, damaged, runner.RedecodeOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(fixed.Events) != len(live) {
				t.Fatalf("restored %d events, want %d", len(fixed.Events), len(live))
			}
			for i := range live {
				if !runner.SameEvent(fixed.Events[i], live[i]) || fixed.Events[i].Seq != live[i].Seq {
					t.Errorf("event %d restored as %+v, want %+v", i+1, fixed.Events[i], live[i])
				}
			}
			if fixed.Changed == 0 || (dropped && fixed.Added != 1) || (!dropped && fixed.Added != 0) || fixed.Removed != 0 {
				t.Errorf("counted %d added, %d removed, %d changed", fixed.Added, fixed.Removed, fixed.Changed)
			}
			if ch := runner.RunChanges(judged, fixed.Run); len(ch) != 0 {
				t.Errorf("the restored run differs from the judged one: %+v", ch)
			}
			if ch := runner.RunChanges(&bad, fixed.Run); len(ch) < 3 {
				t.Errorf("changes reported against the damaged run = %+v, want turns, tool calls and tokens", ch)
			}
		})
	}
}

func TestRedecodeRefuses(t *testing.T) {
	t.Parallel()
	zero := 0
	for _, c := range []struct {
		name string
		run  record.Run
		evs  []record.Event
	}{
		{"lane's own loop", record.Run{Runtime: "local", Status: record.StatusSucceeded}, nil},
		{"no raw lines", record.Run{Runtime: "claude", Status: record.StatusFailed, ExitCode: &zero},
			[]record.Event{{RunID: "r", Seq: 1, Kind: record.KindStderr, Text: "boom"}}},
		{"imported", record.Run{Runtime: "claude", Status: record.StatusSucceeded, ExitCode: &zero, Imported: true},
			[]record.Event{{RunID: "r", Seq: 1, Kind: record.KindRaw, Raw: []byte(`{}`)}}},
		{"running", record.Run{Runtime: "claude", Status: record.StatusRunning}, nil},
	} {
		c.run.ID = "r"
		if _, err := runtimes.Entries().Redecode(&c.run, c.evs, runner.RedecodeOptions{}); !errors.Is(err, runner.ErrNotRedecodable) {
			t.Errorf("%s: %v, want ErrNotRedecodable", c.name, err)
		}
	}
}

// The exit code lane read from Gemini CLI's session log for a shell call
// is not in the stream's lines: reindexing keeps it.
func TestRedecodeKeepsExitCodesFromSessionLogs(t *testing.T) {
	t.Parallel()
	gemini, _ := runtimes.Entries().Lookup("gemini")
	live := runtest.Recorded(t, gemini.Process.NewSource, "../runtimes/gemini/testdata/captures/c_tool_error_bash.jsonl")
	amended := -1
	for i, ev := range live {
		if ev.Kind == record.KindToolResult && !ev.IsError {
			live[i].IsError, live[i].Output = true, strings.TrimRight(ev.Output, "\n")+"\n(exit code 3)"
			amended = i
			break
		}
	}
	if amended < 0 {
		t.Fatal("no successful tool result in the capture")
	}
	zero := 0
	run := record.Run{ID: "r", Runtime: "gemini", Model: "gemini-2.5-flash", Status: record.StatusSucceeded, ExitCode: &zero}
	rd, err := runtimes.Entries().Redecode(&run, live, runner.RedecodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := rd.Events[amended]
	if !got.IsError || !strings.HasSuffix(got.Output, "(exit code 3)") {
		t.Errorf("the amended result was redecoded as %+v", got)
	}
	if rd.Changed != 0 || rd.Removed != 0 {
		t.Errorf("%d events changed, %d removed", rd.Changed, rd.Removed)
	}
}

// lane's stops keep their verdict; a verdict the runtime's lines gave is
// judged again, and lane's closing error event follows it.
func TestRedecodeVerdicts(t *testing.T) {
	t.Parallel()
	claude, _ := runtimes.Entries().Lookup("claude")
	live := runtest.Recorded(t, claude.Process.NewSource, "../runtimes/claude/streamjson/testdata/claude-code-2.1.328/a_tool_then_text.jsonl")
	closing := func(evs []record.Event, kind record.ErrorKind, text string) []record.Event {
		ev := record.Event{RunID: "r", Seq: int64(len(evs) + 1), Time: evs[len(evs)-1].Time, Kind: record.KindError, ErrorKind: kind, Text: text}
		return append(slices.Clone(evs), ev)
	}
	zero := 0
	for _, c := range []struct {
		name       string
		run        record.Run
		want       record.Status
		wantClosed bool // lane's closing error event is there after
		removed    int
	}{
		{"timed out", record.Run{Status: record.StatusTimedOut, ErrorKind: record.ErrorTimeout, ErrorMessage: "idle for 3s"},
			record.StatusTimedOut, true, 0},
		{"cancelled", record.Run{Status: record.StatusCancelled, ErrorKind: record.ErrorCancelled, ErrorMessage: "cancelled"},
			record.StatusCancelled, true, 0},
		// A limit lane stopped the run at is lane's verdict, whatever the lines say.
		{"token limit", record.Run{Status: record.StatusFailed, ErrorKind: record.ErrorTokenLimit, ErrorMessage: "the run used 302 tokens, past its --token-limit of 200"},
			record.StatusFailed, true, 0},
		{"a misread failure", record.Run{Status: record.StatusFailed, ErrorKind: record.ErrorAgent, ErrorMessage: "the agent failed"},
			record.StatusSucceeded, false, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			run := c.run
			run.ID, run.Runtime, run.ExitCode = "r", "claude", &zero
			stored := closing(live, run.ErrorKind, run.ErrorMessage)
			rd, err := runtimes.Entries().Redecode(&run, stored, runner.RedecodeOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if rd.Run.Status != c.want {
				t.Errorf("status %s, want %s", rd.Run.Status, c.want)
			}
			last := rd.Events[len(rd.Events)-1]
			if closed := last.Kind == record.KindError && last.Text == run.ErrorMessage; closed != c.wantClosed {
				t.Errorf("last event %+v: lane's closing error there: %v, want %v", last, closed, c.wantClosed)
			}
			if rd.Removed != c.removed || rd.Added != 0 || rd.Changed != 0 {
				t.Errorf("%d added, %d removed, %d changed", rd.Added, rd.Removed, rd.Changed)
			}
			if rd.Run.Turns == 0 || rd.Run.CostUSD == 0 {
				t.Errorf("accounting not rebuilt: %+v", rd.Run)
			}
		})
	}
}
