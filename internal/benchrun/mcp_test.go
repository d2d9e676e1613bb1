package benchrun

import (
	"slices"
	"strings"
	"testing"

	"github.com/lanehq/lane/internal/approval"
	"github.com/lanehq/lane/internal/bench/harbor"
	"github.com/lanehq/lane/internal/runner"
	"github.com/lanehq/lane/internal/runtimes"
)

// desk stands for a bench's: its runs are interactive.
type desk struct{ approval.Desk }

// A Harbor task's MCP servers as each agent CLI is handed them: Claude
// Code's --mcp-config under --strict-mcp-config (streamable-http is its
// "http"), Codex's -c mcp_servers overrides; lane's own loop takes none.
func TestTaskMCPServersReachTheRuntimes(t *testing.T) {
	t.Parallel()
	servers := mcpServers([]harbor.MCPServer{
		{Name: "docs", Transport: harbor.MCPSSE, URL: "http://docs:8000/sse"},
		{Name: "search", Transport: harbor.MCPStreamableHTTP, URL: "http://search:9000/mcp"},
		{Name: "files", Transport: harbor.MCPStdio, Command: "/usr/local/bin/files-mcp", Args: []string{"--root", "/app"}},
	})
	o := runner.Options{Prompt: "p", Dir: "/app", Desk: desk{}, PermissionMode: "bypassPermissions", MCPServers: servers}
	argv := func(name string) []string {
		t.Helper()
		rt, ok := runtimes.Entries().Lookup(name)
		if !ok || !rt.TakesMCP(o) {
			t.Fatalf("%s takes no MCP servers", name)
		}
		s, err := rt.Process.Setup(o, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return s.Args
	}

	claude := argv("claude")
	i := slices.Index(claude, "--mcp-config")
	want := `{"mcpServers":{"docs":{"type":"sse","url":"http://docs:8000/sse"},` +
		`"files":{"command":"/usr/local/bin/files-mcp","args":["--root","/app"]},` +
		`"search":{"type":"http","url":"http://search:9000/mcp"}}}`
	if i < 0 || claude[i+1] != want || !slices.Contains(claude, "--strict-mcp-config") {
		t.Errorf("Claude Code's argv %q\nwant --strict-mcp-config and --mcp-config %s", claude, want)
	}

	codex := strings.Join(argv("codex"), " ")
	for _, w := range []string{
		`-c mcp_servers.docs.url="http://docs:8000/sse"`,
		`-c mcp_servers.search.url="http://search:9000/mcp"`,
		`-c mcp_servers.files.command="/usr/local/bin/files-mcp" -c mcp_servers.files.args=["--root","/app"]`,
	} {
		if !strings.Contains(codex, w) {
			t.Errorf("Codex's argv %s\nlacks %s", codex, w)
		}
	}

	for _, name := range []string{"gemini", "qwen", "opencode"} {
		if rt, _ := runtimes.Entries().Lookup(name); !rt.TakesMCP(o) {
			t.Errorf("%s takes no MCP servers in a bench's run", name)
		}
	}
	if local, _ := runtimes.Entries().Lookup("local"); local.TakesMCP(o) {
		t.Error("lane's own loop takes MCP servers")
	}
}
