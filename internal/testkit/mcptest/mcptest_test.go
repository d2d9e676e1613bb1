package mcptest

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// The lookup tool answers with the server's word over each transport,
// naming it.
func TestLookupOverEachTransport(t *testing.T) {
	t.Parallel()
	s := &Server{Word: "marigold"}
	const call = `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"lookup","arguments":{}}}`
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()

	resp, err := http.Post(srv.URL+"/mcp", "application/json", strings.NewReader(call))
	if err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(resp.Body).ReadString('\n')
	resp.Body.Close()
	if !strings.Contains(line, `"text":"marigold (streamable-http)"`) {
		t.Errorf("streamable HTTP: %s", line)
	}

	stream, err := http.Get(srv.URL + "/sse")
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Body.Close()
	events := bufio.NewReader(stream.Body)
	var endpoint string
	for endpoint == "" {
		l, err := events.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if data, ok := strings.CutPrefix(strings.TrimSpace(l), "data: "); ok {
			endpoint = data
		}
	}
	if resp, err = http.Post(srv.URL+endpoint, "application/json", strings.NewReader(call)); err != nil || resp.StatusCode != http.StatusAccepted {
		t.Fatalf("post to %s: %v %v", endpoint, resp, err)
	}
	resp.Body.Close()
	for {
		l, err := events.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if data, ok := strings.CutPrefix(l, "data: "); ok {
			if !strings.Contains(data, `"text":"marigold (sse)"`) {
				t.Errorf("sse: %s", data)
			}
			break
		}
	}

	var out strings.Builder
	if err := s.ServeStdio(context.Background(), strings.NewReader(call+"\n"), &out); err != nil || !strings.Contains(out.String(), `"text":"marigold (stdio)"`) {
		t.Errorf("stdio: %q %v", out.String(), err)
	}
}
