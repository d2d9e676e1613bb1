package harbor

import (
	"net/url"
	"strings"
)

// Transports of an [[environment.mcp_servers]] entry, as Harbor names them.
const (
	MCPSSE            = "sse" // Harbor's default
	MCPStreamableHTTP = "streamable-http"
	MCPStdio          = "stdio"
)

// MCPServer is one [[environment.mcp_servers]] entry: an MCP server the
// task gives its agent. A server at URL (sse, streamable-http) usually
// runs as a service of the task's compose file, reached by its name; a
// stdio server is a command the agent starts inside the task's container.
type MCPServer struct {
	Name string
	// Transport is MCPSSE, MCPStreamableHTTP ("http" in task.toml is
	// read as it) or MCPStdio.
	Transport string
	URL       string   // sse and streamable-http
	Command   string   // stdio
	Args      []string // stdio
}

// rawMCPServer is an [[environment.mcp_servers]] entry as decoded.
type rawMCPServer struct {
	Name      *string  `toml:"name"`
	Transport string   `toml:"transport"`
	URL       string   `toml:"url"`
	Command   string   `toml:"command"`
	Args      []string `toml:"args"`
}

// mcpServers are the entries of [[environment.mcp_servers]] as Harbor
// reads them, checked: each needs a name of its own, a url for sse and
// streamable-http, a command for stdio. fail makes the error of the key.
func mcpServers(raw []rawMCPServer, fail func(key, format string, args ...any) error) ([]MCPServer, error) {
	const key = "environment.mcp_servers"
	var out []MCPServer
	seen := map[string]bool{}
	for i, r := range raw {
		n := i + 1
		if r.Name == nil || strings.TrimSpace(*r.Name) == "" {
			return nil, fail(key, "entry %d has no name", n)
		}
		m := MCPServer{Name: *r.Name, Transport: r.Transport, URL: r.URL, Command: r.Command, Args: r.Args}
		if seen[m.Name] {
			return nil, fail(key, "entry %d: the name %q is another entry's too: each server needs a name of its own", n, m.Name)
		}
		seen[m.Name] = true
		switch m.Transport {
		case "":
			m.Transport = MCPSSE
		case "http":
			m.Transport = MCPStreamableHTTP
		case MCPSSE, MCPStreamableHTTP, MCPStdio:
		default:
			return nil, fail(key, "entry %d (%s): transport %q is none of sse, streamable-http (or http), stdio", n, m.Name, m.Transport)
		}
		switch {
		case m.Transport == MCPStdio && m.Command == "":
			return nil, fail(key, "entry %d (%s): transport stdio needs a command", n, m.Name)
		case m.Transport != MCPStdio && m.URL == "":
			return nil, fail(key, "entry %d (%s): transport %s needs a url", n, m.Name, m.Transport)
		case m.Transport != MCPStdio && !httpURL(m.URL):
			return nil, fail(key, "entry %d (%s): url %q is no http:// or https:// address", n, m.Name, m.URL)
		}
		out = append(out, m)
	}
	return out, nil
}

// httpURL says whether s is an http or https address with a host.
func httpURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}
