package acp_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lanehq/lane/internal/approval"
	"github.com/lanehq/lane/internal/record"
	"github.com/lanehq/lane/internal/runner"
	"github.com/lanehq/lane/internal/runtimes"
	"github.com/lanehq/lane/internal/runtimes/acp"
	"github.com/lanehq/lane/internal/testkit/clitest"
	"github.com/lanehq/lane/internal/testkit/geminitest"
	"github.com/lanehq/lane/internal/testkit/openaitest"
	"github.com/lanehq/lane/internal/testkit/runtest"
)

// The tests below drive the real Gemini CLI, Qwen Code and opencode over
// ACP (an interactive run in permission mode default), each against the
// scripted server of its API; only the model is scripted.

// acpWait bounds every wait of these tests: a run of one of them takes
// 3 to 10 s here.
const acpWait = 2 * time.Minute

// step is one scripted model turn, for any of the three CLIs.
type step struct {
	shell  string // a call of the CLI's shell tool with this command
	read   string // a call of its read tool with this path
	text   string
	hang   bool   // the request is never answered
	status int    // the request fails with this HTTP status
	usage  [2]int // prompt and completion tokens, when not the server's default
}

// acpCLI is one CLI pointed at its scripted server.
type acpCLI struct {
	name string
	// costly: one run takes about 10 CPU-seconds (opencode, Qwen Code).
	// make test drives a costly CLI through the cases that tell most;
	// their other cases are the Long tests, which make test-long runs.
	costly bool
	// start starts the server with steps and returns the run's options and
	// the bodies of the main requests the server received so far.
	start func(t *testing.T, steps ...step) (runner.Options, func() []string, func(ctx context.Context, n int) error)
}

var acpCLIs = []acpCLI{
	{"gemini", false, startGemini},
	{"qwen", true, func(t *testing.T, steps ...step) (runner.Options, func() []string, func(context.Context, int) error) {
		return startOpenAI(t, "qwen", "run_shell_command", steps...)
	}},
	{"opencode", true, func(t *testing.T, steps ...step) (runner.Options, func() []string, func(context.Context, int) error) {
		return startOpenAI(t, "opencode", "bash", steps...)
	}},
}

func acpOptions(t *testing.T, name string) runner.Options {
	bin := clitest.Bin(t, name)
	return runner.Options{
		Found: &runner.Binary{Path: bin, Version: "test"}, Dir: t.TempDir(), Prompt: "write hello.txt",
		PermissionMode: "default", AllowedTools: []string{"Read"},
		Desk: approval.NewMemory(), Watchdogs: runner.Watchdogs{Hard: acpWait}, TempDir: t.TempDir(),
	}
}

func startGemini(t *testing.T, steps ...step) (runner.Options, func() []string, func(context.Context, int) error) {
	var turns []geminitest.Turn
	for i, s := range steps {
		id := fmt.Sprintf("call_%d", i+1)
		var turn geminitest.Turn
		switch {
		case s.shell != "":
			turn = geminitest.FunctionCalls(geminitest.Shell(s.shell).WithID(id))
		case s.read != "":
			turn = geminitest.FunctionCalls(geminitest.Call("read_file", map[string]string{"file_path": s.read}).WithID(id))
		case s.hang:
			turn = geminitest.Hang()
		case s.status != 0:
			turn = geminitest.Status(s.status, "")
		default:
			turn = geminitest.Text(s.text)
		}
		if s.usage != [2]int{} {
			turn = turn.WithUsage(s.usage[0], s.usage[1])
		}
		turns = append(turns, turn)
	}
	srv := geminitest.NewServer(t, turns...)
	o := acpOptions(t, "gemini")
	o.Model, o.BaseURL, o.KeyEnv = geminitest.Model, srv.URL(), "GEMINI_API_KEY"
	o.Env = append(clitest.Env(t.TempDir()), "GEMINI_API_KEY=test")
	bodies := func() []string {
		var out []string
		for _, r := range srv.MainRequests() {
			out = append(out, string(r.Body))
		}
		return out
	}
	wait := func(ctx context.Context, n int) error { _, err := srv.WaitRequests(ctx, n); return err }
	return o, bodies, wait
}

func startOpenAI(t *testing.T, name, shellTool string, steps ...step) (runner.Options, func() []string, func(context.Context, int) error) {
	readTool := map[string]string{"bash": "read", "run_shell_command": "read_file"}[shellTool]
	var turns []openaitest.Turn
	for i, s := range steps {
		id := fmt.Sprintf("call_%d", i+1)
		var turn openaitest.Turn
		switch {
		case s.shell != "":
			turn = openaitest.ToolCalls(openaitest.Call(id, shellTool, map[string]string{"command": s.shell, "description": "run it"}))
		case s.read != "":
			// Each CLI's name for the path: opencode's filePath, Qwen Code's absolute_path.
			turn = openaitest.ToolCalls(openaitest.Call(id, readTool, map[string]string{"filePath": s.read, "absolute_path": s.read}))
		case s.hang:
			turn = openaitest.Hang()
		case s.status != 0:
			turn = openaitest.Status(s.status, "")
		default:
			turn = openaitest.Text(s.text)
		}
		if s.usage != [2]int{} {
			turn = turn.WithUsage(s.usage[0], s.usage[1])
		}
		turns = append(turns, turn)
	}
	srv := openaitest.NewServer(t, turns...)
	o := acpOptions(t, name)
	o.Model, o.BaseURL, o.KeyEnv = openaitest.Model, srv.URL(), "OPENAI_API_KEY"
	o.Env = append(clitest.Env(t.TempDir()), "OPENAI_API_KEY="+openaitest.APIKey, "QWEN_DEBUG_LOG_FILE=0",
		"npm_config_registry="+srv.Root()+"/npm/") // opencode's plugin install gets a 404 at once
	bodies := func() []string {
		var out []string
		for _, r := range srv.MainRequests() {
			out = append(out, string(r.Body))
		}
		return out
	}
	wait := func(ctx context.Context, n int) error { _, err := srv.WaitRequests(ctx, n); return err }
	return o, bodies, wait
}

// acpRun is one run in progress.
type acpRun struct {
	t    *testing.T
	desk *approval.Memory
	rec  *runtest.MemRecorder
	done chan struct{}
	run  *record.Run
	err  error
}

// startACP starts o on the runtime, capturing its ACP traffic (into
// $LANE_ACP_CAPTURE_DIR/NAME.acp when that is set, to refresh the
// captures of runtimes/acp).
func startACP(t *testing.T, runtime, capture string, o runner.Options) *acpRun {
	t.Helper()
	rt, _ := runtimes.Entries().Lookup(runtime)
	var mu sync.Mutex
	var traffic strings.Builder
	newDialog := rt.Process.NewDialog
	rt.Process.NewDialog = func(o runner.Options, run *record.Run) runner.Dialog {
		d := newDialog(o, run)
		if d == nil {
			t.Errorf("%s: no ACP dialog for mode %s with a desk", runtime, o.PermissionMode)
			return nil
		}
		acp.SetCapture(d, lockedWriter{&mu, &traffic})
		return d
	}
	ar := &acpRun{t: t, desk: o.Desk.(*approval.Memory), rec: runtest.NewMemRecorder(), done: make(chan struct{})}
	ctx, cancel := context.WithTimeout(context.Background(), acpWait)
	go func() {
		defer close(ar.done)
		defer cancel()
		ar.run, ar.err = runner.Run(ctx, runner.Job{Runtime: rt, Options: o}, ar.rec)
	}()
	t.Cleanup(func() {
		cancel()
		<-ar.done
		mu.Lock()
		defer mu.Unlock()
		if dir := os.Getenv("LANE_ACP_CAPTURE_DIR"); dir != "" && capture != "" && !t.Failed() {
			if err := os.WriteFile(filepath.Join(dir, capture+".acp"), []byte(traffic.String()), 0o644); err != nil {
				t.Error(err)
			}
		}
		if t.Failed() {
			t.Logf("ACP traffic:\n%s", traffic.String())
		}
	})
	return ar
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// asked waits for the run's next request for approval.
func (ar *acpRun) asked() approval.Request {
	ar.t.Helper()
	select {
	case req := <-ar.desk.Asked:
		return req
	case <-ar.done:
		ar.t.Fatalf("the run ended without asking: %+v", ar.run)
	case <-time.After(acpWait):
		ar.t.Fatal("no request for approval")
	}
	return approval.Request{}
}

// wait waits for the run's end.
func (ar *acpRun) wait() *record.Run {
	ar.t.Helper()
	select {
	case <-ar.done:
	case <-time.After(acpWait + 10*time.Second):
		ar.t.Fatal("the run did not end")
	}
	if ar.err != nil {
		ar.t.Fatal(ar.err)
	}
	return ar.run
}

func (ar *acpRun) events() []record.Event {
	return ar.rec.EventsOf(ar.run.ID)
}

// onACPCLIs runs test on each costly CLI, or on each other one, as a
// parallel subtest named after it.
func onACPCLIs(t *testing.T, costly bool, test func(*testing.T, acpCLI)) {
	t.Parallel()
	for _, cli := range acpCLIs {
		if cli.costly != costly {
			continue
		}
		t.Run(cli.name, func(t *testing.T) {
			t.Parallel()
			test(t, cli)
		})
	}
}

// index is the position of the first event that matches, or -1.
func index(evs []record.Event, match func(record.Event) bool) int {
	return slices.IndexFunc(evs, match)
}

func TestACPApproveRunsTheCommand(t *testing.T) {
	t.Parallel()
	for _, cli := range acpCLIs {
		t.Run(cli.name, func(t *testing.T) {
			t.Parallel()
			o, _, _ := cli.start(t, step{shell: "echo hi > hello.txt"}, step{text: "Done: wrote hello.txt"})
			ar := startACP(t, cli.name, "approve_"+cli.name, o)
			req := ar.asked()
			if !strings.Contains(req.Summary, "echo hi > hello.txt") || req.RunID == "" || req.Dir != o.Dir {
				t.Errorf("request %+v", req)
			}
			if err := ar.desk.Answer(req.ID, approval.Decision{Allow: true, By: approval.ByTerminal}); err != nil {
				t.Fatal(err)
			}
			run := ar.wait()
			if run.Status != record.StatusSucceeded || run.ResultText != "Done: wrote hello.txt" {
				t.Fatalf("status %s (%s: %s), result %q", run.Status, run.ErrorKind, run.ErrorMessage, run.ResultText)
			}
			if b, err := os.ReadFile(filepath.Join(o.Dir, "hello.txt")); string(b) != "hi\n" {
				t.Errorf("hello.txt = %q, %v", b, err)
			}
			if run.Permissions != (record.PermissionCounts{Requests: 1, Allowed: 1}) || run.ToolCalls != 1 || run.Usage.IsZero() {
				t.Errorf("permissions %+v, tool calls %d, usage %+v", run.Permissions, run.ToolCalls, run.Usage)
			}
			if run.Capability.PermissionMode != "default" {
				t.Errorf("capability %+v", run.Capability)
			}
			evs := ar.events()
			call := index(evs, func(ev record.Event) bool { return ev.Kind == record.KindToolCall })
			asked := index(evs, func(ev record.Event) bool { return ev.Kind == record.KindPermissionRequest })
			allowed := index(evs, func(ev record.Event) bool {
				return ev.Kind == record.KindPermissionDecision && ev.Permission.Allow && ev.Permission.By == "terminal"
			})
			result := index(evs, func(ev record.Event) bool { return ev.Kind == record.KindToolResult && !ev.IsError })
			final := index(evs, func(ev record.Event) bool { return ev.Kind == record.KindResult })
			if call < 0 || call > asked || asked > allowed || allowed > result || result > final {
				t.Errorf("events out of order: call %d, request %d, decision %d, result %d, final %d", call, asked, allowed, result, final)
			}
			if evs[call].ToolUseID != evs[asked].ToolUseID || evs[asked].ToolUseID != evs[result].ToolUseID {
				t.Errorf("tool use ids %q %q %q", evs[call].ToolUseID, evs[asked].ToolUseID, evs[result].ToolUseID)
			}
		})
	}
}

func TestACPDenyTellsTheAgent(t *testing.T) { onACPCLIs(t, false, testDeny) }

func TestACPDenyTellsTheAgentOnCostlyCLIsLong(t *testing.T) { onACPCLIs(t, true, testDeny) }

func testDeny(t *testing.T, cli acpCLI) {
	t.Helper()
	o, bodies, _ := cli.start(t, step{shell: "echo hi > hello.txt"}, step{text: "I will not."})
	ar := startACP(t, cli.name, "deny_"+cli.name, o)
	req := ar.asked()
	const why = "no files today, say why instead"
	if err := ar.desk.Answer(req.ID, approval.Decision{Message: why, By: approval.ByDashboard}); err != nil {
		t.Fatal(err)
	}
	run := ar.wait()
	if run.Status != record.StatusSucceeded || run.Permissions != (record.PermissionCounts{Requests: 1, Denied: 1}) {
		t.Fatalf("status %s (%s: %s), permissions %+v", run.Status, run.ErrorKind, run.ErrorMessage, run.Permissions)
	}
	if _, err := os.Stat(filepath.Join(o.Dir, "hello.txt")); !os.IsNotExist(err) {
		t.Errorf("hello.txt exists after a denial: %v", err)
	}
	main := bodies()
	if len(main) < 2 || !slices.ContainsFunc(main[1:], func(b string) bool { return strings.Contains(b, why) }) {
		t.Errorf("no request after the denial holds its message (%d requests)", len(main))
	}
	evs := ar.events()
	if i := index(evs, func(ev record.Event) bool { return ev.Kind == record.KindUserMessage && strings.Contains(ev.Text, why) }); i < 0 {
		t.Error("the message to the agent is not in the trace")
	}
}

func TestACPSendReachesTheAgent(t *testing.T) { onACPCLIs(t, false, testSend) }

func TestACPSendReachesTheAgentOnCostlyCLIsLong(t *testing.T) { onACPCLIs(t, true, testSend) }

func testSend(t *testing.T, cli acpCLI) {
	t.Helper()
	o, bodies, _ := cli.start(t, step{shell: "echo hi > hello.txt"}, step{text: "Done"}, step{text: "Also done"})
	ar := startACP(t, cli.name, "send_"+cli.name, o)
	req := ar.asked()
	// Sent while the turn is live: it is delivered when the turn ends.
	const more = "now also count to three"
	ar.desk.Send(approval.Steer{ID: "s1", RunID: req.RunID, Kind: approval.SteerMessage, Text: more, From: approval.ByCLI})
	if err := ar.desk.Answer(req.ID, approval.Decision{Allow: true, By: approval.ByCLI}); err != nil {
		t.Fatal(err)
	}
	run := ar.wait()
	if run.Status != record.StatusSucceeded || run.ResultText != "Also done" {
		t.Fatalf("status %s (%s: %s), result %q", run.Status, run.ErrorKind, run.ErrorMessage, run.ResultText)
	}
	main := bodies()
	if len(main) != 3 || strings.Contains(main[1], more) || !strings.Contains(main[2], more) {
		t.Errorf("%d main requests; want the message in the third only", len(main))
	}
	if got := ar.desk.DeliveredSteers(); len(got) != 1 || got[0].ID != "s1" {
		t.Errorf("delivered %+v", got)
	}
	evs := ar.events()
	msg := index(evs, func(ev record.Event) bool {
		return ev.Kind == record.KindUserMessage && ev.Text == more && ev.By == "cli"
	})
	first := index(evs, func(ev record.Event) bool { return ev.Kind == record.KindText && ev.Text == "Done" })
	if msg < 0 || first < 0 || msg < first {
		t.Errorf("user message at %d, first answer at %d", msg, first)
	}
}

func TestACPInterruptThenMessage(t *testing.T) { onACPCLIs(t, false, testInterrupt) }

func TestACPInterruptThenMessageOnCostlyCLIsLong(t *testing.T) { onACPCLIs(t, true, testInterrupt) }

func testInterrupt(t *testing.T, cli acpCLI) {
	t.Helper()
	o, bodies, waitRequests := cli.start(t, step{hang: true}, step{text: "Back"})
	ar := startACP(t, cli.name, "interrupt_"+cli.name, o)
	ctx, cancel := context.WithTimeout(context.Background(), acpWait)
	defer cancel()
	if err := waitRequests(ctx, 1); err != nil {
		t.Fatal(err)
	}
	ar.desk.Send(approval.Steer{ID: "i1", Kind: approval.SteerInterrupt, From: approval.ByTerminal})
	ar.desk.Send(approval.Steer{ID: "m1", Kind: approval.SteerMessage, Text: "carry on", From: approval.ByTerminal})
	run := ar.wait()
	if run.Status != record.StatusSucceeded || run.ResultText != "Back" {
		t.Fatalf("status %s (%s: %s), result %q", run.Status, run.ErrorKind, run.ErrorMessage, run.ResultText)
	}
	if main := bodies(); len(main) != 2 || !strings.Contains(main[1], "carry on") {
		t.Errorf("%d main requests; want the message in the second", len(main))
	}
	evs := ar.events()
	intr := index(evs, func(ev record.Event) bool { return ev.Kind == record.KindInterrupt && ev.By == "terminal" })
	msg := index(evs, func(ev record.Event) bool { return ev.Kind == record.KindUserMessage && ev.Text == "carry on" })
	if intr < 0 || msg < intr {
		t.Errorf("interrupt at %d, message at %d", intr, msg)
	}
	if got := ar.desk.DeliveredSteers(); len(got) != 2 {
		t.Errorf("delivered %+v", got)
	}
}

func TestACPResumeLoadsTheSession(t *testing.T) { onACPCLIs(t, false, testResume) }

func TestACPResumeLoadsTheSessionOnCostlyCLIsLong(t *testing.T) { onACPCLIs(t, true, testResume) }

func testResume(t *testing.T, cli acpCLI) {
	t.Helper()
	o, bodies, _ := cli.start(t, step{shell: "echo hi > hello.txt"}, step{text: "first answer"}, step{text: "second answer"})
	o.AllowedTools = []string{"Read", "Bash"}
	o.StateDir = t.TempDir() // Gemini CLI's sessions stay in lane's home for it
	first := startACP(t, cli.name, "resume1_"+cli.name, o).wait()
	if first.Status != record.StatusSucceeded || first.SessionID == "" {
		t.Fatalf("first run: %s (%s: %s), session %q", first.Status, first.ErrorKind, first.ErrorMessage, first.SessionID)
	}
	o.Prompt, o.ResumeSession = "and now?", first.SessionID
	o.Desk = approval.NewMemory()
	second := startACP(t, cli.name, "resume2_"+cli.name, o).wait()
	if second.Status != record.StatusSucceeded || second.SessionID != first.SessionID || second.ResultText != "second answer" {
		t.Fatalf("second run: %s (%s: %s), session %q, result %q", second.Status, second.ErrorKind, second.ErrorMessage, second.SessionID, second.ResultText)
	}
	main := bodies()
	if len(main) != 3 || !strings.Contains(main[2], "echo hi") || !strings.Contains(main[2], "first answer") || !strings.Contains(main[2], "and now?") {
		t.Errorf("%d main requests; want the history and the new prompt in the third: %s", len(main), main[len(main)-1])
	}
	if second.Turns != 1 {
		t.Errorf("second run: %d turns; the replayed history is not this run's", second.Turns)
	}
}

// acpScenario is a scripted run that both ACP and the JSON stream should
// judge alike.
type acpScenario struct {
	name  string
	steps func(dir string) []step
	check func(t *testing.T, run *record.Run, evs []record.Event)
}

var acpScenarios = []acpScenario{
	{"a_tool_then_text", func(string) []step {
		return []step{{shell: "echo hi > hello.txt", usage: [2]int{1000, 10}}, {text: "Done", usage: [2]int{2000, 20}}}
	}, func(t *testing.T, run *record.Run, evs []record.Event) {
		if run.Status != record.StatusSucceeded || run.ToolCalls != 1 || run.ResultText != "Done" {
			t.Errorf("status %s (%s: %s), %d tool calls, result %q", run.Status, run.ErrorKind, run.ErrorMessage, run.ToolCalls, run.ResultText)
		}
	}},
	{"c_tool_error", func(dir string) []step {
		return []step{{shell: "echo oops >&2; exit 3"}, {read: filepath.Join(dir, "missing.txt")}, {text: "It failed."}}
	}, func(t *testing.T, run *record.Run, evs []record.Event) {
		var failed []string
		for _, ev := range evs {
			if ev.Kind == record.KindToolResult && ev.IsError {
				failed = append(failed, ev.ToolName)
			}
		}
		if run.Status != record.StatusSucceeded || run.ToolCalls != 2 || len(failed) != 2 {
			t.Errorf("status %s (%s: %s), %d tool calls, failed tools %q; want both failed", run.Status, run.ErrorKind, run.ErrorMessage, run.ToolCalls, failed)
		}
	}},
	{"d_http401", func(string) []step { return []step{{status: 401}} }, func(t *testing.T, run *record.Run, evs []record.Event) {
		// opencode's ACP error names no status: "Internal error: Incorrect API key provided."
		if run.Status != record.StatusFailed || run.ErrorKind != record.ErrorAuth {
			t.Errorf("status %s (%s: %s), want failed with auth", run.Status, run.ErrorKind, run.ErrorMessage)
		}
	}},
}

// acpPrice prices every model alike, for comparing what the modes count.
func acpPrice(_ string, u record.Usage) (float64, bool) {
	return (float64(u.InputTokens)*1 + float64(u.OutputTokens)*2 + float64(u.CacheReadTokens)*0.1) / 1e6, true
}

// runScenario runs sc on cli over ACP (two-way: a desk, and rules that
// allow the shell and reads, so that nobody is asked) or with its JSON
// stream (no desk).
func runScenario(t *testing.T, cli acpCLI, sc acpScenario, acp bool) (*record.Run, []record.Event) {
	dir := t.TempDir()
	o, _, _ := cli.start(t, sc.steps(dir)...)
	o.Dir, o.Price, o.AllowedTools = dir, acpPrice, []string{"Bash", "Read"}
	capture := sc.name + "_" + cli.name
	if !acp {
		o.Desk, o.PermissionMode = nil, ""
		rec := runtest.NewMemRecorder()
		ctx, cancel := context.WithTimeout(context.Background(), acpWait)
		defer cancel()
		rt, _ := runtimes.Entries().Lookup(cli.name)
		run, err := runner.Run(ctx, runner.Job{Runtime: rt, Options: o}, rec)
		if err != nil {
			t.Fatal(err)
		}
		return run, rec.Events[run.ID]
	}
	ar := startACP(t, cli.name, capture, o)
	run := ar.wait()
	return run, ar.events()
}

// TestACPScenarios runs every scenario on Gemini CLI and the first on
// the costly CLIs; TestACPScenariosOnCostlyCLIsLong the others on them.
func TestACPScenarios(t *testing.T) {
	testScenarios(t, func(cli acpCLI, i int) bool { return !cli.costly || i == 0 })
}

func TestACPScenariosOnCostlyCLIsLong(t *testing.T) {
	testScenarios(t, func(cli acpCLI, i int) bool { return cli.costly && i > 0 })
}

func testScenarios(t *testing.T, include func(cli acpCLI, scenario int) bool) {
	t.Parallel()
	for _, cli := range acpCLIs {
		for i, sc := range acpScenarios {
			if !include(cli, i) {
				continue
			}
			t.Run(cli.name+"/"+sc.name, func(t *testing.T) {
				t.Parallel()
				run, evs := runScenario(t, cli, sc, true)
				sc.check(t, run, evs)
			})
		}
	}
}

// TestACPAgainstTheStream runs each scenario both ways and logs what each
// reports (the table in the report of this change); ACP must pass the
// scenario's checks and judge the run as the stream does. It takes
// minutes: LANE_ACP_COMPARE=1 runs it.
func TestACPAgainstTheStream(t *testing.T) {
	t.Parallel()
	if os.Getenv("LANE_ACP_COMPARE") != "1" {
		t.Skip("set LANE_ACP_COMPARE=1 to compare ACP with the JSON streams")
	}
	for _, cli := range acpCLIs {
		for _, sc := range acpScenarios {
			t.Run(cli.name+"/"+sc.name, func(t *testing.T) {
				t.Parallel()
				stream, sevs := runScenario(t, cli, sc, false)
				t.Logf("| %s | %s | stream | %s |", cli.name, sc.name, describeRun(stream, sevs))
				run, evs := runScenario(t, cli, sc, true)
				t.Logf("| %s | %s | ACP | %s |", cli.name, sc.name, describeRun(run, evs))
				sc.check(t, run, evs)
				if run.Status != stream.Status || run.ErrorKind != stream.ErrorKind {
					t.Errorf("ACP: %s (%s), the stream: %s (%s)", run.Status, run.ErrorKind, stream.Status, stream.ErrorKind)
				}
			})
		}
	}
}

// describeRun is one row of the comparison: the verdict, the exit code,
// the events by kind, tokens and cost.
func describeRun(run *record.Run, evs []record.Event) string {
	counts := map[record.Kind]int{}
	errs := 0
	for _, ev := range evs {
		counts[ev.Kind]++
		if ev.Kind == record.KindToolResult && ev.IsError {
			errs++
		}
	}
	exit := "-"
	if run.ExitCode != nil {
		exit = fmt.Sprint(*run.ExitCode)
	}
	msg := run.ErrorMessage
	if len(msg) > 60 {
		msg = msg[:60] + "…"
	}
	return fmt.Sprintf("%s %s %q | exit %s | calls %d, results %d (%d failed), text %d, usage events %d, errors %d | in %d, out %d, cache %d | $%.6f est=%v",
		run.Status, run.ErrorKind, msg, exit, counts[record.KindToolCall], counts[record.KindToolResult], errs, counts[record.KindText],
		counts[record.KindUsage], counts[record.KindError], run.Usage.InputTokens, run.Usage.OutputTokens, run.Usage.CacheReadTokens, run.CostUSD, run.CostEstimate)
}

func TestACPIsForTwoWayRuns(t *testing.T) {
	t.Parallel()
	desk := approval.NewMemory()
	tests := []struct {
		name string
		o    runner.Options
		acp  bool
	}{
		{"a bench's attempt: no desk", runner.Options{}, false},
		{"unattended with a desk, bypassPermissions", runner.Options{Desk: desk}, false},
		{"lane run, bypassPermissions: the stream's accounting", runner.Options{Desk: desk, Attended: true}, false},
		{"a mode that asks", runner.Options{Desk: desk, PermissionMode: "default"}, true},
		{"acceptEdits", runner.Options{Desk: desk, PermissionMode: "acceptEdits"}, true},
		{"plan mode: only lane's gate refuses edits", runner.Options{Desk: desk, PermissionMode: "plan"}, true},
		{"a mode that asks, nobody to ask", runner.Options{PermissionMode: "default"}, false},
		{"bypassPermissions with an editor's MCP servers", runner.Options{Desk: desk, Attended: true, MCPServers: []runner.MCPServer{{Name: "t", Transport: "stdio", Command: "t"}}}, true},
	}
	for _, tt := range tests {
		o := tt.o
		o.Dir, o.Prompt, o.Model, o.BaseURL, o.KeyEnv, o.Env = "/proj", "-fix it", "m1", "http://127.0.0.1:9/v1", "K", []string{"K=sk-1"}
		if got := acp.Speaks(o); got != tt.acp {
			t.Errorf("%s: useACP %v", tt.name, got)
			continue
		}
		for _, name := range []string{"gemini", "qwen", "opencode"} {
			rt, _ := runtimes.Entries().Lookup(name)
			su, err := rt.Process.Setup(o, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			args := strings.Join(su.Args, " ")
			speaks := strings.Contains(args, "--acp") || args == "acp"
			if speaks != tt.acp || tt.acp && (su.Stdin != "" || strings.Contains(args, "yolo") || strings.Contains(args, "fix it")) {
				t.Errorf("%s, %s: args %q, stdin %q", tt.name, name, args, su.Stdin)
			}
			if d := rt.Process.NewDialog(o, &record.Run{}); (d != nil) != (tt.acp && o.Interactive()) {
				t.Errorf("%s, %s: dialog %v", tt.name, name, d)
			}
			if c := rt.Process.Capability(o); tt.acp && c.PermissionMode != string(o.Mode()) || !tt.acp && c.PermissionMode != "bypassPermissions" {
				t.Errorf("%s, %s: capability %+v", tt.name, name, c)
			}
		}
	}
}

func TestACPPlanModeRefusesWithoutAsking(t *testing.T) {
	t.Parallel()
	cli := acpCLIs[0] // Gemini CLI: the quickest
	o, bodies, _ := cli.start(t, step{shell: "echo hi > hello.txt"}, step{text: "Here is the plan."})
	o.PermissionMode = "plan"
	ar := startACP(t, cli.name, "", o)
	run := ar.wait()
	if run.Status != record.StatusSucceeded || run.Permissions != (record.PermissionCounts{Denied: 1}) {
		t.Fatalf("status %s (%s: %s), permissions %+v", run.Status, run.ErrorKind, run.ErrorMessage, run.Permissions)
	}
	if _, err := os.Stat(filepath.Join(o.Dir, "hello.txt")); !os.IsNotExist(err) {
		t.Errorf("hello.txt exists in plan mode: %v", err)
	}
	select {
	case req := <-ar.desk.Asked:
		t.Errorf("plan mode asked %+v", req)
	default:
	}
	if n := len(bodies()); n != 2 {
		t.Errorf("%d main requests; a rule's refusal is not told again in a prompt of its own", n)
	}
}
