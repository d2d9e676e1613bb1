package harbor

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// [[environment.mcp_servers]] is read as Harbor reads it: sse by default,
// "http" as streamable-http, stdio with its command and args.
func TestLoadTaskMCPServers(t *testing.T) {
	t.Parallel()
	task, err := LoadTask(writeTask(t, map[string]string{"task.toml": `
[[environment.mcp_servers]]
name = "docs"
url = "http://docs:8000/sse"

[[environment.mcp_servers]]
name = "search"
transport = "http"
url = "https://search.example/mcp"

[[environment.mcp_servers]]
name = "files"
transport = "stdio"
command = "/usr/local/bin/files-mcp"
args = ["--root", "/app"]
`}))
	if err != nil {
		t.Fatal(err)
	}
	want := []MCPServer{
		{Name: "docs", Transport: MCPSSE, URL: "http://docs:8000/sse"},
		{Name: "search", Transport: MCPStreamableHTTP, URL: "https://search.example/mcp"},
		{Name: "files", Transport: MCPStdio, Command: "/usr/local/bin/files-mcp", Args: []string{"--root", "/app"}},
	}
	if got := task.Environment.MCPServers; !reflect.DeepEqual(got, want) {
		t.Errorf("MCPServers\n%+v\nwant\n%+v", got, want)
	}
}

// An entry Harbor would not run is an error of task.toml that says which
// entry and what it lacks.
func TestLoadTaskMCPServerErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, toml, want string }{
		{"no name", "[[environment.mcp_servers]]\nurl = \"http://docs:8000/sse\"\n", "entry 1 has no name"},
		{"sse without url", "[[environment.mcp_servers]]\nname = \"docs\"\n", "entry 1 (docs): transport sse needs a url"},
		{"http without url", "[[environment.mcp_servers]]\nname = \"docs\"\ntransport = \"http\"\ncommand = \"x\"\n",
			"entry 1 (docs): transport streamable-http needs a url"},
		{"stdio without command", "[[environment.mcp_servers]]\nname = \"files\"\ntransport = \"stdio\"\nurl = \"http://x/\"\n",
			"entry 1 (files): transport stdio needs a command"},
		{"duplicate names", "[[environment.mcp_servers]]\nname = \"docs\"\nurl = \"http://a:1/sse\"\n" +
			"[[environment.mcp_servers]]\nname = \"docs\"\ntransport = \"stdio\"\ncommand = \"docs-mcp\"\n",
			`entry 2: the name "docs" is another entry's too`},
		{"unknown transport", "[[environment.mcp_servers]]\nname = \"docs\"\ntransport = \"websocket\"\nurl = \"ws://a/\"\n",
			`entry 1 (docs): transport "websocket" is none of sse, streamable-http (or http), stdio`},
		{"no address", "[[environment.mcp_servers]]\nname = \"docs\"\nurl = \"docs:8000\"\n",
			`entry 1 (docs): url "docs:8000" is no http:// or https:// address`},
	} {
		_, err := LoadTask(writeTask(t, map[string]string{"task.toml": tc.toml}))
		var pe *ParseError
		if !errors.As(err, &pe) || !strings.Contains(err.Error(), "environment.mcp_servers: "+tc.want) {
			t.Errorf("%s: %v, want a ParseError saying %q", tc.name, err, tc.want)
		}
	}
}
