package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/lanehq/lane/internal/record"
	"github.com/lanehq/lane/internal/testkit/anthropictest"
	"github.com/lanehq/lane/internal/testkit/mcptest"
)

// mcpTask writes a Harbor task whose task.toml gives the agent three MCP
// servers: two served by a compose sidecar, tools (sse, Harbor's default,
// and streamable-http), and one the agent starts inside its own container
// (stdio). Its verifier passes when /app/words.txt holds what each
// server's lookup tool answers, which only those servers know.
func mcpTask(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "mcp-lookup")
	bin := mcptest.Build(t, t.TempDir())
	files := map[string]string{
		"task.toml": `schema_version = "1.4"

[agent]
timeout_sec = 600

[verifier]
timeout_sec = 300

[environment]
allow_internet = false
workdir = "/app"

[[environment.mcp_servers]]
name = "ledger"
url = "http://tools:8000/sse"

[[environment.mcp_servers]]
name = "notes"
transport = "http"
url = "http://tools:8000/mcp"

[[environment.mcp_servers]]
name = "local"
transport = "stdio"
command = "/usr/local/bin/mcpserver"
args = ["-stdio", "-word", "thistle"]
`,
		"instruction.md":               "Ask each of your MCP servers' lookup tools for its word, and write the answers into /app/words.txt.\n",
		"environment/Dockerfile":       "ARG BASE=lane-test-base\nFROM ${BASE}\nRUN mkdir -p /app\nCOPY mcpserver /usr/local/bin/mcpserver\n",
		"environment/tools/Dockerfile": "ARG BASE=lane-test-base\nFROM ${BASE}\nCOPY mcpserver /mcpserver\n",
		"environment/docker-compose.yaml": `services:
  main:
    depends_on:
      tools:
        condition: service_healthy
  tools:
    build:
      context: tools
    command: ["/mcpserver", "-addr", ":8000", "-word", "marigold"]
    healthcheck:
      test: ["CMD", "/mcpserver", "-check", "http://127.0.0.1:8000/health"]
      interval: 1s
      retries: 60
`,
		"tests/test.sh": `#!/bin/bash
mkdir -p /logs/verifier
want=$(printf '%s\n' 'marigold (sse)' 'marigold (streamable-http)' 'thistle (stdio)')
if [ "$(cat /app/words.txt 2>/dev/null)" = "$want" ]; then
  echo 1 > /logs/verifier/reward.txt
else
  echo "words.txt: $(cat /app/words.txt 2>&1)"
  echo 0 > /logs/verifier/reward.txt
fi
`,
	}
	for name, content := range files {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	for _, to := range []string{"environment/mcpserver", "environment/tools/mcpserver"} {
		if err := os.WriteFile(filepath.Join(dir, to), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// toolResultTexts are the texts of the tool results in a request's last
// message, by tool_use id.
func toolResultTexts(q anthropictest.Request) map[string]string {
	out := map[string]string{}
	for _, b := range q.Messages[len(q.Messages)-1].Blocks() {
		if b.Type != "tool_result" {
			continue
		}
		var s string
		if json.Unmarshal(b.Content, &s) != nil {
			var blocks []anthropictest.ContentBlock
			_ = json.Unmarshal(b.Content, &blocks)
			for _, c := range blocks {
				s += c.Text
			}
		}
		out[b.ToolUseID] = s
	}
	return out
}

// A Harbor task's [[environment.mcp_servers]] reach Claude Code inside the
// task's container, which has no network: the model is offered each
// server's tool (mcp__NAME__lookup), calls all three, and the servers'
// answers (from the sidecar, over sse and streamable-http, and from the
// stdio server Claude Code starts in the container) come back to the
// model in its next request; it writes them down, and the verifier gives 1.
// lane's own loop, which has no MCP client, is refused the task's attempt,
// saying why, rather than run without the servers.
//
// Long: benchrun's TestTaskMCPServersReachTheRuntimes checks what each
// runtime is given in make test.
func TestHarborMCPServersReachClaudeCodeLong(t *testing.T) {
	t.Parallel()
	vars, base := containerVars(t)
	e := newLocalEnv(t)
	claude := anthropictest.ClaudeBin(t)
	cs := anthropictest.NewServer(t)
	home := filepath.Join(t.TempDir(), "home")
	os.Mkdir(home, 0o755)
	e.vars = append(e.vars, vars...)
	e.vars = append(e.vars, anthropictest.ClaudeEnv(cs.URL(), home)...)
	e.vars = append(e.vars, "LANE_CLAUDE_BIN="+claude, "HOME="+home, "LANE_DB="+e.db)

	tools := []string{"mcp__ledger__lookup", "mcp__notes__lookup", "mcp__local__lookup"}
	var mu sync.Mutex
	var offered []string           // the MCP tools of the first request
	answers := map[string]string{} // what each tool's result said, by tool
	cs.SetResponder(func(q anthropictest.Request) (anthropictest.Turn, bool) {
		mu.Lock()
		defer mu.Unlock()
		results := toolResultTexts(q)
		switch {
		case len(results) == 0:
			for _, name := range q.Tools {
				if strings.HasPrefix(name, "mcp__") {
					offered = append(offered, name)
				}
			}
			var calls []anthropictest.ToolCall
			for i, name := range tools {
				calls = append(calls, anthropictest.Call(fmt.Sprintf("toolu_mcp%d", i), name, map[string]any{}))
			}
			return anthropictest.Tools(calls...), true
		case results["toolu_write"] != "" || len(answers) > 0:
			return anthropictest.Text("done"), true
		}
		var words []string
		for i, name := range tools {
			answers[name] = results[fmt.Sprintf("toolu_mcp%d", i)]
			words = append(words, "'"+answers[name]+"'")
		}
		slices.Sort(words)
		return anthropictest.Tools(anthropictest.Bash("toolu_write", "printf '%s\\n' "+strings.Join(words, " ")+" > /app/words.txt")), true
	})

	task := mcpTask(t)
	r := e.lane(context.Background(), "bench", task, "--models", "sonnet", "--build-arg", "BASE="+base, "-o", "json")
	wantExit(t, r, 0)
	st := e.openStore()
	defer st.Close()
	a := latestBenchAttempts(t, st, 1)[0]
	mu.Lock()
	slices.Sort(offered)
	if want := slices.Sorted(slices.Values(tools)); !slices.Equal(offered, want) {
		t.Errorf("the model was offered the MCP tools %q, want %q", offered, want)
	}
	for name, want := range map[string]string{
		"mcp__ledger__lookup": "marigold (sse)", "mcp__notes__lookup": "marigold (streamable-http)", "mcp__local__lookup": "thistle (stdio)",
	} {
		if answers[name] != want {
			t.Errorf("%s's result reached the model as %q, want %q", name, answers[name], want)
		}
	}
	if a.Status != record.AttemptPassed || a.Reward == nil || *a.Reward != 1 {
		run, _ := st.GetRun(context.Background(), a.RunID)
		var evs []string
		st.Events(context.Background(), a.RunID, 0, func(ev record.Event) error {
			evs = append(evs, string(ev.Kind)+": "+ev.Text)
			return nil
		})
		t.Fatalf("attempt %s %s reward %v: %q; run %+v; events %q", a.Status, a.FailureKind, a.Reward, a.CheckOutput, run, evs)
	}

	mu.Unlock()

	wantExit(t, e.lane(context.Background(), "bench", task, "--models", localModel, "--build-arg", "BASE="+base), 0)
	a = latestBenchAttempts(t, st, 1)[0]
	if want := "lane's own loop cannot be given MCP servers, and the task gives its agent some (ledger, notes, local)"; a.Status != record.AttemptFailed ||
		a.FailureKind != "lane_error" || !strings.Contains(a.CheckOutput, want) || a.RunID != "" {
		t.Errorf("lane's own loop: attempt %s %s, run %q: %q; want it refused: %q", a.Status, a.FailureKind, a.RunID, a.CheckOutput, want)
	}
	if n := len(e.model.Requests()); n != 0 {
		t.Errorf("lane's own loop asked its model %d times", n)
	}
}
