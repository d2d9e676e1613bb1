// Package mcptest is a small MCP server for tests: one tool, lookup, that
// answers with a word the server was given and the transport it was asked
// over ("marigold (sse)"), over every transport a Harbor
// task names (streamable HTTP at /mcp, the older HTTP+SSE at /sse, and
// stdio). The program in mcpserver/ serves it; Build makes that program
// as a static binary, to copy into a test's container image.
package mcptest

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
)

// Tool is the name of the server's one tool.
const Tool = "lookup"

// message is a JSON-RPC message as the server reads it.
type message struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Params struct {
		ProtocolVersion string `json:"protocolVersion"`
		Name            string `json:"name"`
	} `json:"params"`
}

// answer is the reply to m, received over transport, nil for a
// notification or a reply of the client's.
func answer(m message, word, transport string) map[string]any {
	if len(m.ID) == 0 || m.Method == "" {
		return nil
	}
	out := map[string]any{"jsonrpc": "2.0", "id": m.ID}
	switch m.Method {
	case "initialize":
		v := m.Params.ProtocolVersion
		if v == "" {
			v = "2025-03-26"
		}
		out["result"] = map[string]any{"protocolVersion": v, "capabilities": map[string]any{"tools": map[string]any{}},
			"serverInfo": map[string]any{"name": "lane-mcptest", "version": "1"}}
	case "ping":
		out["result"] = map[string]any{}
	case "tools/list":
		out["result"] = map[string]any{"tools": []any{map[string]any{
			"name": Tool, "description": "Gives the word this server keeps.",
			"inputSchema": map[string]any{"type": "object", "properties": map[string]any{}},
		}}}
	case "tools/call":
		if m.Params.Name != Tool {
			out["error"] = map[string]any{"code": -32602, "message": "no tool " + m.Params.Name}
			break
		}
		out["result"] = map[string]any{"content": []any{map[string]any{"type": "text", "text": word + " (" + transport + ")"}}}
	default:
		out["error"] = map[string]any{"code": -32601, "message": "method not found: " + m.Method}
	}
	return out
}

// Server answers MCP over HTTP: streamable HTTP at /mcp, HTTP+SSE at /sse
// (its messages posted to /messages), and 200 at /health. Log, when set,
// receives the method of each message, a line each.
type Server struct {
	Word string
	Log  io.Writer

	mu       sync.Mutex
	sessions map[string]chan []byte // SSE sessions' streams
}

func (s *Server) logf(format string, args ...any) {
	if s.Log != nil {
		s.mu.Lock()
		fmt.Fprintf(s.Log, format+"\n", args...)
		s.mu.Unlock()
	}
}

// Handler is the server's HTTP side.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok\n") })
	mux.HandleFunc("POST /mcp", s.streamable)
	mux.HandleFunc("DELETE /mcp", func(w http.ResponseWriter, _ *http.Request) {})
	mux.HandleFunc("GET /sse", s.sse)
	mux.HandleFunc("POST /messages", s.sseMessage)
	return mux
}

// streamable answers one posted message with JSON (a server may, and
// this one does not, open a stream instead).
func (s *Server) streamable(w http.ResponseWriter, r *http.Request) {
	var m message
	if err := json.NewDecoder(r.Body).Decode(&m); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.logf("streamable-http %s", m.Method)
	reply := answer(m, s.Word, "streamable-http")
	if reply == nil {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	if m.Method == "initialize" {
		w.Header().Set("Mcp-Session-Id", newID())
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(reply)
}

// sse is an HTTP+SSE session's stream: first the endpoint its messages
// are posted to, then the replies to them.
func (s *Server) sse(w http.ResponseWriter, r *http.Request) {
	id, out := newID(), make(chan []byte, 16)
	s.mu.Lock()
	if s.sessions == nil {
		s.sessions = map[string]chan []byte{}
	}
	s.sessions[id] = out
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.sessions, id)
		s.mu.Unlock()
	}()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	fl, _ := w.(http.Flusher)
	fmt.Fprintf(w, "event: endpoint\ndata: /messages?sessionId=%s\n\n", id)
	fl.Flush()
	for {
		select {
		case <-r.Context().Done():
			return
		case b := <-out:
			fmt.Fprintf(w, "event: message\ndata: %s\n\n", b)
			fl.Flush()
		}
	}
}

func (s *Server) sseMessage(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	out, ok := s.sessions[r.URL.Query().Get("sessionId")]
	s.mu.Unlock()
	if !ok {
		http.Error(w, "no such session", http.StatusNotFound)
		return
	}
	var m message
	if err := json.NewDecoder(r.Body).Decode(&m); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.logf("sse %s", m.Method)
	if reply := answer(m, s.Word, "sse"); reply != nil {
		b, _ := json.Marshal(reply)
		select {
		case out <- b:
		case <-r.Context().Done():
			return
		}
	}
	w.WriteHeader(http.StatusAccepted)
}

// ServeStdio answers MCP over stdio (a JSON-RPC message a line) until in
// ends or ctx does.
func (s *Server) ServeStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() && ctx.Err() == nil {
		var m message
		if json.Unmarshal(sc.Bytes(), &m) != nil {
			continue
		}
		s.logf("stdio %s", m.Method)
		if reply := answer(m, s.Word, "stdio"); reply != nil {
			b, _ := json.Marshal(reply)
			if _, err := fmt.Fprintf(out, "%s\n", b); err != nil {
				return err
			}
		}
	}
	return sc.Err()
}

func newID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
