package benchrun

import (
	"github.com/lanehq/lane/internal/bench/harbor"
	"github.com/lanehq/lane/internal/runner"
)

// mcpServers are a task's MCP servers as a run is given them: Harbor's
// streamable-http is what the runtimes call http.
func mcpServers(in []harbor.MCPServer) []runner.MCPServer {
	out := make([]runner.MCPServer, len(in))
	for i, m := range in {
		transport := m.Transport
		if transport == harbor.MCPStreamableHTTP {
			transport = "http"
		}
		out[i] = runner.MCPServer{Name: m.Name, Transport: transport, URL: m.URL, Command: m.Command, Args: m.Args}
	}
	return out
}
