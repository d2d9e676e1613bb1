package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lanehq/lane/internal/record"
	"github.com/lanehq/lane/internal/testkit/clitest"
	"github.com/lanehq/lane/internal/testkit/geminitest"
	"github.com/lanehq/lane/internal/testkit/openaitest"
	"github.com/lanehq/lane/internal/testkit/responsestest"
)

// The tests below run `lane run --runtime R` on the real agent CLIs, each
// against a scripted server for the API it speaks. Every runtime goes
// through the same cases; a rig adapts the neutral script steps to its
// server.

// step is one scripted model turn, whatever the API.
type step struct {
	shell  string // a call of the runtime's shell tool with this command
	text   string
	status int  // an HTTP error status
	hang   bool // accept the request, never answer
}

func shell(cmd string) step  { return step{shell: cmd} }
func say(text string) step   { return step{text: text} }
func status(code int) step   { return step{status: code} }
func hangForever() step      { return step{hang: true} }
func (s step) isCall() bool  { return s.shell != "" }
func (s step) isError() bool { return s.status != 0 }

// scripted is a model server as the cases see it.
type scripted interface {
	baseURL() string
	// mainBodies are the bodies of the main agent's requests so far.
	mainBodies() [][]byte
}

// rig is what one runtime needs: its model name, its server and the
// environment lane runs it in.
type rig struct {
	runtime string
	model   string
	// costly: one run takes about 10 CPU-seconds (opencode, Qwen Code),
	// so make test drives it through fewer cases than the others and
	// leaves the rest to the Long tests.
	costly bool
	serve  func(t *testing.T, steps ...step) scripted
	// env adds what the runtime needs beyond the key (for example
	// opencode's npm registry look-up, pointed at the server).
	env func(s scripted) []string
}

var rigs = []rig{
	{
		runtime: "codex", model: "test-model",
		serve: func(t *testing.T, steps ...step) scripted {
			turns := turnsOf(steps, func(cmd string) responsestest.Turn { return responsestest.ToolCalls(responsestest.Exec("", cmd)) },
				responsestest.Text, responsestest.Status, responsestest.Hang)
			return codexServer{responsestest.NewServer(t, turns...)}
		},
	},
	{
		runtime: "gemini", model: geminitest.Model,
		serve: func(t *testing.T, steps ...step) scripted {
			turns := turnsOf(steps, func(cmd string) geminitest.Turn { return geminitest.FunctionCalls(geminitest.Shell(cmd)) },
				geminitest.Text, geminitest.Status, geminitest.Hang)
			return geminiServer{geminitest.NewServer(t, turns...)}
		},
	},
	{
		runtime: "opencode", model: openaitest.Model, costly: true,
		serve: func(t *testing.T, steps ...step) scripted {
			return openaiServer{openaitest.NewServer(t, openaiTurns("bash", steps)...)}
		},
		env: func(s scripted) []string {
			// opencode looks a plugin up on npm at start; the server says 404 at once.
			return []string{"npm_config_registry=" + strings.TrimSuffix(s.baseURL(), "/v1") + "/npm/"}
		},
	},
	{
		runtime: "qwen", model: openaitest.Model, costly: true,
		serve: func(t *testing.T, steps ...step) scripted {
			return openaiServer{openaitest.NewServer(t, openaiTurns("run_shell_command", steps)...)}
		},
	},
}

func openaiTurns(shellTool string, steps []step) []openaitest.Turn {
	return turnsOf(steps, func(cmd string) openaitest.Turn {
		return openaitest.ToolCalls(openaitest.Call("", shellTool, map[string]string{"command": cmd}))
	}, openaitest.Text, openaitest.Status, openaitest.Hang)
}

// turnsOf turns the neutral steps into one server's turns.
func turnsOf[T any](steps []step, shellCall func(cmd string) T, text func(string) T, status func(int, string) T, hang func() T) []T {
	var turns []T
	for _, s := range steps {
		switch {
		case s.isCall():
			turns = append(turns, shellCall(s.shell))
		case s.isError():
			turns = append(turns, status(s.status, ""))
		case s.hang:
			turns = append(turns, hang())
		default:
			turns = append(turns, text(s.text))
		}
	}
	return turns
}

type codexServer struct{ *responsestest.Server }

func (s codexServer) baseURL() string { return s.URL() }
func (s codexServer) mainBodies() [][]byte {
	var out [][]byte
	for _, r := range s.Requests() {
		out = append(out, r.Body)
	}
	return out
}

type geminiServer struct{ *geminitest.Server }

func (s geminiServer) baseURL() string { return s.URL() }
func (s geminiServer) mainBodies() [][]byte {
	var out [][]byte
	for _, r := range s.MainRequests() {
		out = append(out, r.Body)
	}
	return out
}

type openaiServer struct{ *openaitest.Server }

func (s openaiServer) baseURL() string { return s.URL() }
func (s openaiServer) mainBodies() [][]byte {
	var out [][]byte
	for _, r := range s.MainRequests() {
		out = append(out, r.Body)
	}
	return out
}

// cliEnv is one case's world for a runtime: a project folder, a HOME of
// its own, a database, the scripted server and lane's environment.
type cliEnv struct {
	*env
	rig rig
	srv scripted
}

func newCLIEnv(t *testing.T, r rig, steps ...step) *cliEnv {
	t.Helper()
	bin := clitest.Bin(t, r.runtime)
	srv := r.serve(t, steps...)
	root := t.TempDir()
	e := &env{t: t, proj: filepath.Join(root, "proj"), db: filepath.Join(root, "lane.db")}
	home := filepath.Join(root, "home")
	for _, d := range []string{e.proj, home} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	e.vars = append(clitest.Env(home),
		"LANE_DB="+e.db,
		"LANE_"+strings.ToUpper(r.runtime)+"_BIN="+bin,
		"OPENAI_API_KEY=sk-test", "GEMINI_API_KEY=test-key",
	)
	// Prices for the scripted models, so that the estimate is visible.
	cfgDir := filepath.Join(home, ".config", "lane")
	os.MkdirAll(cfgDir, 0o755)
	os.WriteFile(filepath.Join(cfgDir, "config.yaml"), []byte("prices:\n  "+openaitest.Model+": {input: 3, output: 15}\n  "+geminitest.Model+": {input: 1.25, output: 10}\n"), 0o600)
	if r.env != nil {
		e.vars = append(e.vars, r.env(srv)...)
	}
	return &cliEnv{env: e, rig: r, srv: srv}
}

// runCLI is `lane run` on the rig's runtime, pointed at the server.
func (e *cliEnv) runCLI(ctx context.Context, args ...string) result {
	e.t.Helper()
	base := []string{"run", "--dir", e.proj, "--model", e.rig.runtime + ":" + e.rig.model, "--base-url", e.srv.baseURL(), "-o", "json"}
	return e.lane(ctx, append(base, args...)...)
}

func withTimeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func countKind(evs []record.Event, k record.Kind) int {
	n := 0
	for _, ev := range evs {
		if ev.Kind == k && ev.ParentToolUseID == "" {
			n++
		}
	}
	return n
}

// TestRuntimes drives every agent CLI through what a run of it must do
// (each start of a Node-based CLI costs seconds of CPU, so a case makes
// as few as it can); TestRuntimeFaultsLong (make test-long) through a
// refused key, ctrl-c, the watchdogs and a lane killed under it. Claude Code's own fault cases run in make test (e2e_test.go).
// TestRuntimes drives every runtime through a run and its resume, and
// the runtimes but the costly ones through a run that asks;
// TestRuntimesAskOnCostlyCLIsLong does the costly ones'.
func TestRuntimes(t *testing.T) {
	runRigScenarios(t, runtimeScenarios, func(r rig, scenario string) bool { return !r.costly || scenario != "asks" })
}

func TestRuntimesAskOnCostlyCLIsLong(t *testing.T) {
	runRigScenarios(t, runtimeScenarios, func(r rig, scenario string) bool { return r.costly && scenario == "asks" })
}

var runtimeScenarios = map[string]func(*testing.T, rig){
	"tools, text, resume": testToolsThenText,
	"asks":                testAsks,
}

func TestRuntimeFaultsLong(t *testing.T) {
	runRigScenarios(t, map[string]func(*testing.T, rig){
		"401":         testAuthRefused,
		"ctrl-c":      testInterrupted,
		"hang":        testHang,
		"long tool":   testLongTool,
		"lane killed": testLaneKilled,
		"max turns":   testMaxTurns,
	}, nil)
}

// runRigScenarios runs the scenarios on every runtime's rig (those that
// include, when not nil, accepts), each a parallel test of its own: go
// test's -parallel bounds how many run at once, so the Node-based CLIs,
// which take a core each to start, never outnumber the cores, and the
// last runtime's cases do not wait for one another at the end of the
// suite.
func runRigScenarios(t *testing.T, scenarios map[string]func(*testing.T, rig), include func(r rig, scenario string) bool) {
	t.Parallel()
	names := slices.Sorted(maps.Keys(scenarios))
	for _, r := range rigs {
		t.Run(r.runtime, func(t *testing.T) {
			for _, name := range names {
				if include != nil && !include(r, name) {
					continue
				}
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					scenarios[name](t, r)
				})
			}
		})
	}
}

// testToolsThenText: a command that fails, one that writes a file, then
// the answer, in one run; then `lane resume` of it.
func testToolsThenText(t *testing.T, r rig) {
	e := newCLIEnv(t, r, shell("echo oops >&2; exit 3"), shell("echo hi > hello.txt"), say("Done: wrote hello.txt"), say("I wrote hello.txt."))
	res := e.runCLI(withTimeout(t, 2*time.Minute), "write hello.txt")
	wantExit(t, res, 0)
	if b, err := os.ReadFile(filepath.Join(e.proj, "hello.txt")); err != nil || string(b) != "hi\n" {
		t.Errorf("hello.txt = %q, %v", b, err)
	}
	run := lastRun(t, res)
	if run.Status != record.StatusSucceeded || run.Runtime != r.runtime || run.Model != r.model || run.SessionID == "" {
		t.Errorf("run: status %s, runtime %q, model %q, session %q", run.Status, run.Runtime, run.Model, run.SessionID)
	}
	if run.ToolCalls != 2 || !strings.Contains(run.ResultText, "Done: wrote hello.txt") {
		t.Errorf("tool calls %d, result %q", run.ToolCalls, run.ResultText)
	}
	if run.Usage.InputTokens == 0 || run.Usage.OutputTokens == 0 || run.CostUSD <= 0 || !run.CostEstimate {
		t.Errorf("usage %+v, cost %v (estimate %v): want tokens priced as an estimate", run.Usage, run.CostUSD, run.CostEstimate)
	}
	if run.RuntimeVer == "" {
		t.Error("no runtime version recorded")
	}
	// What the run changed in its folder is recorded whatever the runtime.
	if c := run.Changes; c == nil || c.Files != 1 || c.List[0].Path != "hello.txt" || c.List[0].Status != "added" {
		t.Errorf("changes %+v", c)
	}
	evs := e.events(run.ID)
	var results []record.Event
	for _, ev := range evs {
		if ev.Kind == record.KindToolResult && ev.ParentToolUseID == "" {
			results = append(results, ev)
		}
	}
	if countKind(evs, record.KindSession) == 0 || countKind(evs, record.KindToolCall) != 2 || len(results) != 2 {
		t.Fatalf("events: %d session, %d tool calls, %d results", countKind(evs, record.KindSession), countKind(evs, record.KindToolCall), len(results))
	}
	if !results[0].IsError {
		t.Errorf("a command that exited 3 is recorded as a success: %q", results[0].Output)
	}
	if results[1].IsError {
		t.Errorf("the second command failed: %q", results[1].Output)
	}
	t.Logf("%s: %s", r.runtime, res.took)
	testResume(t, e, run)
}

func testAuthRefused(t *testing.T, r rig) {
	e := newCLIEnv(t, r, status(401))
	res := e.runCLI(withTimeout(t, 2*time.Minute), "anything")
	wantExit(t, res, 4)
	run := lastRun(t, res)
	if run.ErrorKind != record.ErrorAuth || !strings.Contains(run.ErrorHint, "OPENAI_API_KEY") && !strings.Contains(run.ErrorHint, "GEMINI_API_KEY") {
		t.Errorf("error %s: %s (hint %q)", run.ErrorKind, run.ErrorMessage, run.ErrorHint)
	}
	if n := len(e.srv.mainBodies()); n > 2 {
		t.Errorf("%d requests: a refused key is not worth retrying", n)
	}
	t.Logf("%s: 401 ended the run after %s", r.runtime, res.took)
}

func testHang(t *testing.T, r rig) {
	e := newCLIEnv(t, r, hangForever())
	res := e.runCLI(withTimeout(t, 2*time.Minute), "--first-byte-timeout", "3s", "--idle-timeout", "3s", "anything")
	wantExit(t, res, 3)
	run := lastRun(t, res)
	if run.Status != record.StatusTimedOut {
		t.Errorf("status %s: %s", run.Status, run.ErrorMessage)
	}
	assertNoProcessIn(t, e.proj)
}

func testLongTool(t *testing.T, r rig) {
	// A command silent for twice the idle timeout is a tool at work: the
	// idle watchdog waits while a call is pending (for opencode, while a
	// step is open).
	// (Not `sleep`: Qwen Code and Claude Code refuse a bare long sleep.)
	e := newCLIEnv(t, r, shell(`python3 -c "import time; time.sleep(4)" && echo slow-done > slow.txt`), say("Done."))
	res := e.runCLI(withTimeout(t, 2*time.Minute), "--idle-timeout", "2s", "run the slow command")
	wantExit(t, res, 0)
	if b, _ := os.ReadFile(filepath.Join(e.proj, "slow.txt")); string(b) != "slow-done\n" {
		t.Errorf("slow.txt = %q", b)
		for _, ev := range e.events(lastRun(t, res).ID) {
			t.Logf("%s %s %q %q", ev.Time.Format("05.000"), ev.Kind, ev.Output, ev.Input)
		}
	}
}

func testInterrupted(t *testing.T, r rig) {
	// Ctrl-C while the agent's tool runs: lane stops the runtime, kills
	// whatever it leaves, records the run as cancelled and exits 130.
	marker := fmt.Sprintf("lane-e2e-ctrlc-%s-%d", r.runtime, time.Now().UnixNano())
	e := newCLIEnv(t, r, shell(`python3 -c "import time; time.sleep(300)" `+marker), say("never"))
	cmd := exec.Command(laneBin, "run", "--dir", e.proj, "--model", r.runtime+":"+r.model, "--base-url", e.srv.baseURL(), "-o", "json", "run the slow command")
	cmd.Env = e.vars
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 60*time.Second, func() bool { return len(pidsWith(marker)) > 0 })
	cmd.Process.Signal(syscall.SIGINT)
	cmd.Wait()
	res := result{code: cmd.ProcessState.ExitCode(), stdout: out.String()}
	wantExit(t, res, 130)
	if run := lastRun(t, res); run.Status != record.StatusCancelled {
		t.Errorf("status %s, want cancelled", run.Status)
	}
	if left := pidsWith(marker); len(left) > 0 {
		t.Errorf("the tool outlived lane: %v", left)
	}
	assertNoProcessIn(t, e.proj)
}

func testLaneKilled(t *testing.T, r rig) {
	// lane dies (kill -9) while the agent's tool runs: the runtime gets
	// SIGINT from the kernel and must take its tool with it, and the run
	// shows as interrupted with what was received kept.
	marker := fmt.Sprintf("lane-e2e-kill9-%s-%d", r.runtime, time.Now().UnixNano())
	e := newCLIEnv(t, r, shell(`python3 -c "import time; time.sleep(300)" `+marker), say("never"))
	cmd := exec.Command(laneBin, "run", "--dir", e.proj, "--model", r.runtime+":"+r.model, "--base-url", e.srv.baseURL(), "-o", "json", "run the slow command")
	cmd.Env = e.vars
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 60*time.Second, func() bool { return len(pidsWith(marker)) > 0 })
	cmd.Process.Kill()
	cmd.Wait()
	waitFor(t, 20*time.Second, func() bool { return len(pidsWith(marker)) == 0 })

	res := e.lane(context.Background(), "runs", "-o", "json")
	var runs []record.Run
	if err := json.Unmarshal([]byte(res.stdout), &runs); err != nil || len(runs) != 1 {
		t.Fatalf("runs %s: %v", res.stdout, err)
	}
	if runs[0].Status != record.StatusInterrupted || runs[0].Runtime != r.runtime {
		t.Errorf("run %s on %s, want interrupted", runs[0].Status, runs[0].Runtime)
	}
	if countKind(e.events(runs[0].ID), record.KindSession) == 0 {
		t.Error("the session event received before the kill was lost")
	}
}

// testResume: `lane resume` of run1 goes on in its session, with the
// earlier turns, and counts only its own tokens.
func testResume(t *testing.T, e *cliEnv, run1 *record.Run) {
	res := e.lane(withTimeout(t, 2*time.Minute), "resume", "--base-url", e.srv.baseURL(), "-o", "json", run1.ID, "what did you write?")
	wantExit(t, res, 0)
	run2 := lastRun(t, res)
	if run2.SessionID != run1.SessionID || run2.ParentRunID != run1.ID || run2.Runtime != e.rig.runtime {
		t.Errorf("resumed run: session %q (want %q), parent %q, runtime %q", run2.SessionID, run1.SessionID, run2.ParentRunID, run2.Runtime)
	}
	bodies := e.srv.mainBodies()
	last := bodies[len(bodies)-1]
	if !bytes.Contains(last, []byte("Done: wrote hello.txt")) || !bytes.Contains(last, []byte("what did you write?")) {
		t.Errorf("the resumed request does not carry the earlier turns:\n%.2000s", last)
	}
	// Each run keeps its own tokens: the resumed run made one request, the
	// first three, and every scripted reply reports the same usage.
	if run2.Usage.InputTokens == 0 || run2.Usage.InputTokens >= run1.Usage.InputTokens {
		t.Errorf("usage first %+v, resumed %+v: the resumed run counts tokens that are not its own", run1.Usage, run2.Usage)
	}
}

func testMaxTurns(t *testing.T, r rig) {
	// A runaway: a shell call every turn. The fourth request is never
	// answered, so how far the runtime gets in the moment before lane's
	// kill lands (two more turns, once, beside the pool's long tests) does
	// not depend on the machine's load; a lane that did not stop the run
	// at its third turn would wait on that request until the test's
	// deadline.
	loop := shell("echo again >> loop.txt")
	e := newCLIEnv(t, r, loop, loop, loop, hangForever())
	res := e.runCLI(withTimeout(t, 2*time.Minute), "--max-turns", "2", "keep going")
	wantExit(t, res, 1)
	run := lastRun(t, res)
	if run.ErrorKind != record.ErrorTurnLimit {
		t.Fatalf("error %s: %s", run.ErrorKind, run.ErrorMessage)
	}
	// Two turns, and the third that lane stopped.
	if n := len(e.srv.mainBodies()); n < 3 {
		t.Errorf("%d model requests for --max-turns 2: lane stopped the run before its third turn", n)
	}
	assertNoProcessIn(t, e.proj)
}

// assertNoProcessIn fails if a process still works in dir once lane has
// exited: lane kills the runtime's whole tree before it returns.
func assertNoProcessIn(t *testing.T, dir string) {
	t.Helper()
	for _, pid := range pidsIn(dir) {
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		t.Errorf("process %d still runs in the project: %q", pid, bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '}))
	}
}

func TestMissingRuntimeIsRecorded(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	e := &env{t: t, proj: root, db: filepath.Join(root, "lane.db")}
	e.vars = append(clitest.Env(filepath.Join(root, "home")), "LANE_DB="+e.db,
		"LANE_CODEX_BIN="+filepath.Join(root, "no-codex"), "PATH=/usr/bin:/bin")
	res := e.run("--model", "codex:gpt-5-codex", "-o", "json", "anything")
	wantExit(t, res, 5)
	run := lastRun(t, res)
	if run.Runtime != "codex" || run.Model != "gpt-5-codex" || run.ErrorKind != record.ErrorRuntimeMissing ||
		!strings.Contains(run.ErrorHint, "npm install -g @openai/codex") {
		t.Errorf("run %+v", run)
	}
}
