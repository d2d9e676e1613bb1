package e2e

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/lanehq/lane/internal/notify"
	"github.com/lanehq/lane/internal/record"
	"github.com/lanehq/lane/internal/store"
	"github.com/lanehq/lane/internal/testkit/anthropictest"
	"github.com/lanehq/lane/internal/testkit/clitest"
	"github.com/lanehq/lane/internal/testkit/geminitest"
	"github.com/lanehq/lane/internal/testkit/openaitest"
	"github.com/lanehq/lane/internal/testkit/responsestest"
)

// acpx runs acpx, the ACP client pinned in testdata/runtimes, with lane acp
// as its agent.
func (e *env) acpx(t *testing.T, agentArgs string, args ...string) result {
	t.Helper()
	bin := clitest.Bin(t, "acpx")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"--agent", laneBin + " acp " + agentArgs, "--cwd", e.proj}, args...)...)
	cmd.Env = e.vars
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errOut.String()}
	if cmd.ProcessState != nil {
		r.code = cmd.ProcessState.ExitCode()
	} else if err != nil {
		t.Fatalf("acpx: %v", err)
	}
	return r
}

// An editor's prompt through lane acp is a lane run in the session's
// folder: the agent's work reaches the client as session updates, the
// permission request as session/request_permission, and the run is
// recorded as having come through ACP.
func TestACPClientDrivesLane(t *testing.T) {
	t.Parallel()
	e := newEnv(t,
		anthropictest.Tools(anthropictest.Bash("toolu_1", "echo made > made.txt")),
		anthropictest.Text("Done: made.txt"))
	r := e.acpx(t, "--model sonnet --permission-mode default --allowed-tools Read", "--approve-all", "--format", "json", "exec", "make made.txt")
	wantExit(t, r, 0)
	for _, want := range []string{`"sessionUpdate":"tool_call"`, `"kind":"execute"`, `"method":"session/request_permission"`,
		`"sessionUpdate":"tool_call_update","status":"completed"`, `"text":"Done: made.txt"`, `"stopReason":"end_turn"`} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("the client saw no %s:\n%s", want, r.stdout)
		}
	}
	if b, err := os.ReadFile(filepath.Join(e.proj, "made.txt")); err != nil || string(b) != "made\n" {
		t.Fatalf("made.txt: %q %v", b, err)
	}
	st := e.openStore()
	runs, err := st.ListRuns(context.Background(), store.RunFilter{Limit: 10})
	if err != nil || len(runs) != 1 {
		t.Fatalf("runs %v %v", runs, err)
	}
	run := runs[0]
	if run.Via != "acp" || run.Status != record.StatusSucceeded || run.Dir != e.proj || run.Permissions.Allowed != 1 {
		t.Errorf("run %+v", run)
	}
}

// A permission the editor denies is the editor's answer: the command does
// not run, the model hears it was denied, and the run records who said no.
// The run notifies as any lane run: the request that waits, then its end.
func TestACPClientDenies(t *testing.T) {
	t.Parallel()
	e := newEnv(t,
		anthropictest.Tools(anthropictest.Bash("toolu_1", "echo made > made.txt")),
		anthropictest.Text("I was not allowed to."))
	h := newHook(t)
	e.vars = append(e.vars, "LANE_NOTIFY_URL="+h.srv.URL)
	r := e.acpx(t, "--model sonnet --permission-mode default --allowed-tools Read", "--deny-all", "--format", "json", "exec", "make made.txt")
	wantExit(t, r, 5) // acpx's own PERMISSION_DENIED: it denied a request
	if _, err := os.Stat(filepath.Join(e.proj, "made.txt")); err == nil {
		t.Fatal("a denied command ran")
	}
	if out, isErr := lastToolResult(e.srv); !isErr || out == "" {
		t.Errorf("the model's tool result %q (error %v)", out, isErr)
	}
	runs, err := e.openStore().ListRuns(context.Background(), store.RunFilter{Limit: 10})
	if err != nil || len(runs) != 1 {
		t.Fatalf("runs %v %v", runs, err)
	}
	_, decisions := permissionEvents(e.events(runs[0].ID))
	if len(decisions) != 1 || decisions[0].Permission.Allow || decisions[0].Permission.By != "editor" {
		t.Errorf("decisions %+v", decisions)
	}
	if m := h.next(t); m.Event != notify.EventApproval || m.RunID != runs[0].ID || m.Tool != "Bash" {
		t.Errorf("first notification %+v, want the request of run %s", m, runs[0].ID)
	}
	if m := h.next(t); m.Event != notify.EventRunEnd || m.RunID != runs[0].ID || m.Status != "succeeded" {
		t.Errorf("second notification %+v, want the end of run %s", m, runs[0].ID)
	}
}

// acpClient is a minimal ACP client of lane acp, for what acpx's exec does
// not do: cancel a prompt, load a session.
type acpClient struct {
	conn *sdk.ClientSideConnection
	cmd  *exec.Cmd
	in   io.WriteCloser
	mu   sync.Mutex
	text strings.Builder // the agent's message chunks
	user strings.Builder // the user's, replayed by session/load
}

func (e *env) startACP(t *testing.T, args ...string) *acpClient {
	t.Helper()
	cmd := exec.Command(laneBin, append([]string{"acp"}, args...)...)
	cmd.Env = e.vars
	cmd.Stderr = os.Stderr
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &acpClient{cmd: cmd, in: in}
	c.conn = sdk.NewClientSideConnection(c, in, out)
	t.Cleanup(func() { in.Close(); cmd.Process.Kill(); cmd.Wait() })
	if _, err := c.conn.Initialize(t.Context(), sdk.InitializeRequest{ProtocolVersion: sdk.ProtocolVersionNumber}); err != nil {
		t.Fatal(err)
	}
	return c
}

// quit ends lane acp as an editor does, closing its stdin, and waits for
// it to exit.
func (c *acpClient) quit(t *testing.T) {
	t.Helper()
	c.in.Close()
	if err := c.cmd.Wait(); err != nil {
		t.Errorf("lane acp, its stdin closed: %v", err)
	}
}

func (c *acpClient) agentText() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.text.String()
}

func (c *acpClient) userText() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.user.String()
}

func (c *acpClient) SessionUpdate(_ context.Context, n sdk.SessionNotification) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if m := n.Update.AgentMessageChunk; m != nil && m.Content.Text != nil {
		c.text.WriteString(m.Content.Text.Text)
	}
	if m := n.Update.UserMessageChunk; m != nil && m.Content.Text != nil {
		c.user.WriteString(m.Content.Text.Text)
	}
	return nil
}

func (c *acpClient) RequestPermission(context.Context, sdk.RequestPermissionRequest) (sdk.RequestPermissionResponse, error) {
	return sdk.RequestPermissionResponse{Outcome: sdk.RequestPermissionOutcome{Cancelled: &sdk.RequestPermissionOutcomeCancelled{}}}, nil
}
func (c *acpClient) ReadTextFile(context.Context, sdk.ReadTextFileRequest) (sdk.ReadTextFileResponse, error) {
	return sdk.ReadTextFileResponse{}, sdk.NewMethodNotFound("fs/read_text_file")
}
func (c *acpClient) WriteTextFile(context.Context, sdk.WriteTextFileRequest) (sdk.WriteTextFileResponse, error) {
	return sdk.WriteTextFileResponse{}, sdk.NewMethodNotFound("fs/write_text_file")
}
func (c *acpClient) CreateTerminal(context.Context, sdk.CreateTerminalRequest) (sdk.CreateTerminalResponse, error) {
	return sdk.CreateTerminalResponse{}, sdk.NewMethodNotFound("terminal/create")
}
func (c *acpClient) KillTerminal(context.Context, sdk.KillTerminalRequest) (sdk.KillTerminalResponse, error) {
	return sdk.KillTerminalResponse{}, sdk.NewMethodNotFound("terminal/kill")
}
func (c *acpClient) TerminalOutput(context.Context, sdk.TerminalOutputRequest) (sdk.TerminalOutputResponse, error) {
	return sdk.TerminalOutputResponse{}, sdk.NewMethodNotFound("terminal/output")
}
func (c *acpClient) ReleaseTerminal(context.Context, sdk.ReleaseTerminalRequest) (sdk.ReleaseTerminalResponse, error) {
	return sdk.ReleaseTerminalResponse{}, sdk.NewMethodNotFound("terminal/release")
}
func (c *acpClient) WaitForTerminalExit(context.Context, sdk.WaitForTerminalExitRequest) (sdk.WaitForTerminalExitResponse, error) {
	return sdk.WaitForTerminalExitResponse{}, sdk.NewMethodNotFound("terminal/wait_for_exit")
}

func textPrompt(s string) []sdk.ContentBlock { return []sdk.ContentBlock{sdk.TextBlock(s)} }

// session/cancel stops the prompt's run (recorded cancelled, the turn's
// stop reason cancelled); the next prompt continues the session; a new lane
// acp loads it by the run's id and continues it again.
func TestACPCancelThenContinueThenLoad(t *testing.T) {
	t.Parallel()
	e := newEnv(t, anthropictest.Hang(), anthropictest.Text("second answer"), anthropictest.Text("third answer"))
	c := e.startACP(t, "--model", "sonnet")
	ctx := t.Context()
	sess, err := c.conn.NewSession(ctx, sdk.NewSessionRequest{Cwd: e.proj, McpServers: []sdk.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	first := make(chan sdk.PromptResponse, 1)
	go func() {
		resp, err := c.conn.Prompt(ctx, sdk.PromptRequest{SessionId: sess.SessionId, Prompt: textPrompt("wait forever")})
		if err != nil {
			t.Error(err)
		}
		first <- resp
	}()
	if _, err := e.srv.WaitRequests(ctx, 1); err != nil { // the model was asked, and hangs
		t.Fatal(err)
	}
	if err := c.conn.Cancel(ctx, sdk.CancelNotification{SessionId: sess.SessionId}); err != nil {
		t.Fatal(err)
	}
	if resp := <-first; resp.StopReason != sdk.StopReasonCancelled {
		t.Errorf("the cancelled prompt stopped with %q", resp.StopReason)
	}
	resp, err := c.conn.Prompt(ctx, sdk.PromptRequest{SessionId: sess.SessionId, Prompt: textPrompt("go on")})
	if err != nil || resp.StopReason != sdk.StopReasonEndTurn || !strings.Contains(c.agentText(), "second answer") {
		t.Fatalf("second prompt: %+v %v, text %q", resp, err, c.agentText())
	}
	st := e.openStore()
	runs, err := st.ListRuns(ctx, store.RunFilter{Limit: 10})
	if err != nil || len(runs) != 2 {
		t.Fatalf("runs %v %v", runs, err)
	}
	second, cancelled := runs[0], runs[1]
	if cancelled.Status != record.StatusCancelled || second.ParentRunID != cancelled.ID || second.Via != "acp" {
		t.Errorf("runs: %s %s; %s parent %s via %q", cancelled.ID, cancelled.Status, second.ID, second.ParentRunID, second.Via)
	}

	again := e.startACP(t, "--model", "sonnet")
	if _, err := again.conn.LoadSession(ctx, sdk.LoadSessionRequest{SessionId: sdk.SessionId(second.ID), Cwd: e.proj, McpServers: []sdk.McpServer{}}); err != nil {
		t.Fatal(err)
	}
	// The load replays the conversation so far: the answer of the second prompt.
	if !strings.Contains(again.agentText(), "second answer") || !strings.Contains(again.userText(), "go on") {
		t.Errorf("the load replayed %q (user %q)", again.agentText(), again.userText())
	}
	resp, err = again.conn.Prompt(ctx, sdk.PromptRequest{SessionId: sdk.SessionId(second.ID), Prompt: textPrompt("and once more")})
	if err != nil || resp.StopReason != sdk.StopReasonEndTurn || !strings.Contains(again.agentText(), "third answer") {
		t.Fatalf("loaded session's prompt: %+v %v, text %q", resp, err, again.agentText())
	}
	runs, _ = st.ListRuns(ctx, store.RunFilter{Limit: 10})
	if len(runs) != 3 || runs[0].ParentRunID != second.ID || runs[0].SessionID != second.SessionID {
		t.Errorf("the loaded session's run %+v", runs[0])
	}
}

// A file the agent writes reaches the editor as a diff in its tool call.
func TestACPEditsAreDiffs(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	path := filepath.Join(e.proj, "notes.txt")
	e.srv.SetTurns(
		anthropictest.Tools(anthropictest.Call("toolu_1", "Write", map[string]string{"file_path": path, "content": "first line\n"})),
		anthropictest.Text("Wrote notes.txt"))
	r := e.acpx(t, "--model sonnet", "--approve-all", "--format", "json", "exec", "write notes.txt")
	wantExit(t, r, 0)
	want := `{"newText":"first line\n","path":"` + path + `","type":"diff"}`
	if !strings.Contains(r.stdout, want) {
		t.Errorf("the client saw no diff %s:\n%s", want, r.stdout)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "first line\n" {
		t.Errorf("notes.txt: %q %v", b, err)
	}
}

// lane's own loop through lane acp: its todo list reaches the editor as a
// plan, and the end of the prompt as a usage update.
func TestACPPlanFromTheLocalLoop(t *testing.T) {
	t.Parallel()
	e := newLocalEnv(t,
		openaitest.ToolCalls(openaitest.Call("", "todo", map[string]any{"items": []map[string]string{
			{"text": "read the code", "status": "done"}, {"text": "fix the bug", "status": "in_progress"}, {"text": "run the tests", "status": "pending"},
		}})),
		openaitest.Text("working on it"))
	r := e.acpx(t, "--model "+localModel, "--approve-all", "--format", "json", "exec", "fix the bug")
	wantExit(t, r, 0)
	for _, want := range []string{
		`"sessionUpdate":"plan"`, `{"content":"read the code","priority":"medium","status":"completed"}`,
		`{"content":"fix the bug","priority":"medium","status":"in_progress"}`, `"sessionUpdate":"usage_update"`,
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("the client saw no %s:\n%s", want, r.stdout)
		}
	}
}

// lane acp's per-attempt limits: under --token-limit, the runaway of
// limits_attempt_test.go stops at the reply that passes the limit, and
// the prompt's turn ends as ACP says a turn that ran out of tokens does
// (max_tokens); under --cost-limit, with the end of the turn, after lane
// says why in the agent's words. Each run is recorded with its failure.
func TestACPAttemptLimits(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		flags []string
		kind  record.ErrorKind
		stop  sdk.StopReason
	}{
		{[]string{"--token-limit", "200"}, record.ErrorTokenLimit, sdk.StopReasonMaxTokens},
		{[]string{"--cost-limit", "0.001"}, record.ErrorCostLimit, sdk.StopReasonEndTurn},
	} {
		t.Run(string(c.kind), func(t *testing.T) {
			t.Parallel()
			loop := openaitest.ToolCalls(openaitest.Call("", "bash", map[string]string{"command": runaway}))
			e := newLocalEnv(t, loop, loop, loop, openaitest.Hang())
			pricesFor(t, filepath.Join(filepath.Dir(e.proj), "home"), "3", strings.TrimPrefix(localModel, "ollama:"))
			args := append([]string{"--model", localModel, "--permission-mode", "bypassPermissions"}, c.flags...)
			ac := e.startACP(t, args...)
			sess, err := ac.conn.NewSession(t.Context(), sdk.NewSessionRequest{Cwd: e.proj, McpServers: []sdk.McpServer{}})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
			defer cancel()
			resp, err := ac.conn.Prompt(ctx, sdk.PromptRequest{SessionId: sess.SessionId, Prompt: textPrompt("keep going")})
			if err != nil {
				t.Fatal(err)
			}
			if resp.StopReason != c.stop {
				t.Errorf("stop reason %q, want %q; the agent said %q", resp.StopReason, c.stop, ac.agentText())
			}
			if c.stop == sdk.StopReasonEndTurn && !strings.Contains(ac.agentText(), string(c.kind)) {
				t.Errorf("the agent's words do not say %s: %q", c.kind, ac.agentText())
			}
			if n := len(e.model.MainRequests()); n < 2 || n > 3 {
				t.Errorf("%d model requests: want the second turn's, and the third's at the most", n)
			}
			runs, err := e.openStore().ListRuns(t.Context(), store.RunFilter{Limit: 5})
			if err != nil || len(runs) != 1 || runs[0].ErrorKind != c.kind || runs[0].Budget == nil {
				t.Fatalf("runs %+v, %v; want one, failed of %s, with its budget", runs, err, c.kind)
			}
			ac.quit(t)
		})
	}
}

// The editor's MCP servers reach the runtime that takes them: Claude Code
// starts the one session/new names (and still none of the user's own).
func TestACPPassesTheEditorsMCPServers(t *testing.T) {
	t.Parallel()
	e := newEnv(t, anthropictest.Text("hi"))
	marker := filepath.Join(t.TempDir(), "started")
	c := e.startACP(t, "--model", "sonnet")
	sess, err := c.conn.NewSession(t.Context(), sdk.NewSessionRequest{Cwd: e.proj, McpServers: []sdk.McpServer{{Stdio: &sdk.McpServerStdio{
		Name: "editor-tools", Command: "/bin/sh", Args: []string{"-c", "echo up > " + marker + "; sleep 1"}, Env: []sdk.EnvVariable{},
	}}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.conn.Prompt(t.Context(), sdk.PromptRequest{SessionId: sess.SessionId, Prompt: textPrompt("say hi")}); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(marker); err != nil || string(b) != "up\n" {
		t.Errorf("the editor's MCP server was not started: %q %v", b, err)
	}
}

// Gemini CLI through lane acp: a file it writes reaches the editor as a
// diff too.
func TestACPGeminiWriteIsADiff(t *testing.T) {
	t.Parallel()
	e := newCLIEnv(t, rigOf(t, "gemini"))
	path := filepath.Join(e.proj, "notes.txt")
	var wrote atomic.Bool
	e.srv.(geminiServer).SetResponder(func(geminitest.Request) (geminitest.Turn, bool) {
		if wrote.Swap(true) {
			return geminitest.Text("Wrote notes.txt"), true
		}
		return geminitest.FunctionCalls(geminitest.Call("write_file", map[string]string{"file_path": path, "content": "first line\n"})), true
	})
	res := e.acpx(t, "--model gemini:"+geminitest.Model+" --base-url "+e.srv.baseURL(), "--approve-all", "--format", "json", "exec", "write notes.txt")
	wantExit(t, res, 0)
	if want := `{"newText":"first line\n","path":"` + path + `","type":"diff"}`; !strings.Contains(res.stdout, want) {
		t.Errorf("the client saw no diff %s:\n%s", want, res.stdout)
	}
}

// mcpProbe is a real MCP server over stdio (testdata/mcp/server.py) as
// an editor names it, and the file it logs the methods it receives in.
func mcpProbe(t *testing.T) (sdk.McpServer, string) {
	t.Helper()
	log := filepath.Join(t.TempDir(), "mcp.log")
	script, err := filepath.Abs(filepath.Join("testdata", "mcp", "server.py"))
	if err != nil {
		t.Fatal(err)
	}
	return sdk.McpServer{Stdio: &sdk.McpServerStdio{Name: "editor-tools", Command: "/usr/bin/python3",
		Args: []string{script, log}, Env: []sdk.EnvVariable{}}}, log
}

// answerAlways makes the scripted model of an ACP CLI's rig answer text
// to every request.
func answerAlways(t *testing.T, e *cliEnv, text string) {
	t.Helper()
	switch srv := e.srv.(type) {
	case geminiServer:
		srv.SetResponder(func(geminitest.Request) (geminitest.Turn, bool) { return geminitest.Text(text), true })
	case openaiServer:
		srv.SetResponder(func(openaitest.Request) (openaitest.Turn, bool) { return openaitest.Text(text), true })
	default:
		t.Fatalf("no responder for %T", e.srv)
	}
}

// The agent CLIs that speak ACP to lane get the editor's MCP servers with
// their session, in a mode that asks and in bypassPermissions alike: each
// starts the server and lists its tools. lane passes them alike to every
// such CLI: make test runs Gemini CLI, the cheapest to start, and
// TestACPPassesMCPServersToMoreACPCLIsLong the rest.
func TestACPPassesMCPServersToACPCLIs(t *testing.T) {
	passesMCPServers(t, acpMode{"gemini", "default"})
}

func TestACPPassesMCPServersToMoreACPCLIsLong(t *testing.T) {
	passesMCPServers(t, acpMode{"opencode", "bypassPermissions"}, acpMode{"gemini", "bypassPermissions"}, acpMode{"qwen", "bypassPermissions"})
}

// acpMode is a runtime that speaks ACP to lane and a permission mode.
type acpMode struct{ runtime, mode string }

func passesMCPServers(t *testing.T, cases ...acpMode) {
	t.Parallel()
	for _, tc := range cases {
		t.Run(tc.runtime+" "+tc.mode, func(t *testing.T) {
			t.Parallel()
			r := rigOf(t, tc.runtime)
			e := newCLIEnv(t, r)
			answerAlways(t, e, "hi")
			server, log := mcpProbe(t)
			c := e.startACP(t, "--model", tc.runtime+":"+r.model, "--base-url", e.srv.baseURL(), "--permission-mode", tc.mode)
			sess, err := c.conn.NewSession(t.Context(), sdk.NewSessionRequest{Cwd: e.proj, McpServers: []sdk.McpServer{server}})
			if err != nil {
				t.Fatal(err)
			}
			resp, err := c.conn.Prompt(t.Context(), sdk.PromptRequest{SessionId: sess.SessionId, Prompt: textPrompt("say hi")})
			if err != nil || resp.StopReason != sdk.StopReasonEndTurn || !strings.Contains(c.agentText(), "hi") {
				t.Fatalf("prompt: %+v %v; agent said %q", resp, err, c.agentText())
			}
			if b, err := os.ReadFile(log); err != nil || !strings.Contains(string(b), "tools/list") {
				t.Errorf("the editor's MCP server was not asked for its tools: %q %v", b, err)
			}
			// The agent CLI runs on while the MCP server does (Gemini
			// CLI): lane stops it, and the run stands as it ended.
			c.quit(t)
			runs, err := e.openStore().ListRuns(context.Background(), store.RunFilter{Limit: 10})
			if err != nil || len(runs) != 1 || runs[0].Status != record.StatusSucceeded || runs[0].ErrorMessage != "" {
				t.Fatalf("runs %+v %v, want one that succeeded", runs, err)
			}
		})
	}
}

// rigOf is the rig of runtime.
func rigOf(t *testing.T, runtime string) rig {
	t.Helper()
	for _, r := range rigs {
		if r.runtime == runtime {
			return r
		}
	}
	t.Fatalf("no rig for %s", runtime)
	return rig{}
}

// Codex through lane acp gets the editor's MCP servers as its mcp_servers.
func TestACPPassesMCPServersToCodex(t *testing.T) {
	t.Parallel()
	e := newCLIEnv(t, rigOf(t, "codex"))
	marker := filepath.Join(t.TempDir(), "started")
	c := e.startACP(t, "--model", "codex:"+rigOf(t, "codex").model, "--base-url", e.srv.baseURL())
	sess, err := c.conn.NewSession(t.Context(), sdk.NewSessionRequest{Cwd: e.proj, McpServers: []sdk.McpServer{{Stdio: &sdk.McpServerStdio{
		Name: "editor-tools", Command: "/bin/sh", Args: []string{"-c", "echo up > " + marker + "; sleep 1"}, Env: []sdk.EnvVariable{{Name: "K", Value: "v"}},
	}}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.conn.Prompt(t.Context(), sdk.PromptRequest{SessionId: sess.SessionId, Prompt: textPrompt("say hi")}); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(marker); err != nil || string(b) != "up\n" {
		t.Errorf("the editor's MCP server was not started: %q %v", b, err)
	}
}

// opencode through lane acp: a file it writes reaches the editor as a diff.
func TestACPOpencodeWriteIsADiff(t *testing.T) {
	t.Parallel()
	r := rigOf(t, "opencode")
	e := newCLIEnv(t, r)
	path := filepath.Join(e.proj, "notes.txt")
	var wrote atomic.Bool
	e.srv.(openaiServer).SetResponder(func(openaitest.Request) (openaitest.Turn, bool) {
		if wrote.Swap(true) {
			return openaitest.Text("Wrote notes.txt"), true
		}
		return openaitest.ToolCalls(openaitest.Call("", "write", map[string]string{"filePath": path, "content": "first line\n"})), true
	})
	res := e.acpx(t, "--model opencode:"+r.model+" --base-url "+e.srv.baseURL(), "--approve-all", "--format", "json", "exec", "write notes.txt")
	wantExit(t, res, 0)
	if want := `{"newText":"first line\n","path":"` + path + `","type":"diff"}`; !strings.Contains(res.stdout, want) {
		t.Errorf("the client saw no diff %s:\n%s", want, res.stdout)
	}
}

// Codex through lane acp: a patch that updates a file reaches the editor
// as a diff of the lines it replaced (Codex offers apply_patch only to
// models it knows, gpt-5.5 here).
func TestACPCodexPatchIsADiff(t *testing.T) {
	t.Parallel()
	const patch = "*** Begin Patch\n*** Update File: notes.txt\n@@\n one\n-two\n+TWO\n*** End Patch\n"
	r := rig{runtime: "codex", model: "gpt-5.5", serve: func(t *testing.T, _ ...step) scripted {
		return codexServer{responsestest.NewServer(t, responsestest.ToolCalls(responsestest.Patch("p1", patch)), responsestest.Text("Changed"))}
	}}
	e := newCLIEnv(t, r)
	path := filepath.Join(e.proj, "notes.txt")
	if err := os.WriteFile(path, []byte("one\ntwo\nthree\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res := e.acpx(t, "--model codex:gpt-5.5 --base-url "+e.srv.baseURL(), "--approve-all", "--format", "json", "exec", "fix notes.txt")
	wantExit(t, res, 0)
	if want := `{"newText":"one\nTWO\nthree\n","oldText":"one\ntwo\nthree\n","path":"` + path + `","type":"diff"}`; !strings.Contains(res.stdout, want) {
		t.Errorf("the client saw no diff %s:\n%s", want, res.stdout)
	}
}
