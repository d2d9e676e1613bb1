package openaitest

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

func post(t *testing.T, url, body string) *http.Response {
	t.Helper()
	resp, err := http.Post(url+"/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// chunks reads a stream's data lines, decoded; [DONE] is the string "[DONE]".
func chunks(t *testing.T, resp *http.Response) []any {
	t.Helper()
	var out []any
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if data == "[DONE]" {
			out = append(out, data)
			continue
		}
		var v any
		if err := json.Unmarshal([]byte(data), &v); err != nil {
			t.Fatalf("chunk %q: %v", data, err)
		}
		out = append(out, v)
	}
	return out
}

const streamBody = `{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"bash"}}]}`

func TestStreamShape(t *testing.T) {
	srv := NewServer(t, TextAndToolCalls("héllo wörld", Call("c1", "bash", map[string]string{"command": "ls -la"})).WithUsage(900, 7))
	resp := post(t, srv.URL(), streamBody)
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type = %q", ct)
	}
	got := chunks(t, resp)
	// role, 3 text pieces, call head + 2 argument pieces, finish, usage, [DONE]
	if len(got) != 10 || got[9] != "[DONE]" {
		t.Fatalf("%d chunks: %v", len(got), got)
	}
	var text, args strings.Builder
	for _, c := range got[:8] {
		delta := c.(map[string]any)["choices"].([]any)[0].(map[string]any)["delta"].(map[string]any)
		if s, ok := delta["content"].(string); ok {
			text.WriteString(s)
		}
		if calls, ok := delta["tool_calls"].([]any); ok {
			args.WriteString(calls[0].(map[string]any)["function"].(map[string]any)["arguments"].(string))
		}
	}
	if text.String() != "héllo wörld" || args.String() != `{"command":"ls -la"}` {
		t.Errorf("text %q, arguments %q", text.String(), args.String())
	}
	finish := got[7].(map[string]any)["choices"].([]any)[0].(map[string]any)["finish_reason"]
	usage := got[8].(map[string]any)["usage"].(map[string]any)
	if finish != "tool_calls" || usage["prompt_tokens"] != 900.0 || usage["completion_tokens"] != 7.0 {
		t.Errorf("finish %v, usage %v", finish, usage)
	}

	reqs := srv.Requests()
	if len(reqs) != 1 || reqs[0].Turn != 1 || !reqs[0].Stream || !reqs[0].IncludeUsage || !reqs[0].HasTool("bash") ||
		reqs[0].Messages[0].Content != "hi" {
		t.Errorf("requests = %+v", reqs)
	}
}

func TestDefaultDoneAndJSON(t *testing.T) {
	srv := NewServer(t)
	resp := post(t, srv.URL(), `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}]}`)
	var body struct {
		Choices []struct {
			Message struct{ Content string }
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || body.Choices[0].Message.Content != "done" {
		t.Errorf("body %+v: %v", body, err)
	}
	if r := srv.Requests()[0]; r.Turn != 0 || r.Stream || r.Messages[0].Content != "a\nb" {
		t.Errorf("request = %+v", r)
	}
}

func TestErrorsAndHeaders(t *testing.T) {
	srv := NewServer(t, ModelNotFound(), Status(429, "").WithHeader("Retry-After", "3"))
	resp := post(t, srv.URL(), streamBody)
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 404 || !strings.Contains(string(b), `model \"m\" not found, try pulling it first`) {
		t.Errorf("model not found: %d %s", resp.StatusCode, b)
	}
	resp = post(t, srv.URL(), streamBody)
	b, _ = io.ReadAll(resp.Body)
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "3" || !strings.Contains(string(b), "rate_limit_exceeded") {
		t.Errorf("rate limit: %d %v %s", resp.StatusCode, resp.Header, b)
	}
}

func TestBreakAfter(t *testing.T) {
	srv := NewServer(t, Text("one two three").BreakAfter(2))
	resp := post(t, srv.URL(), streamBody)
	b, err := io.ReadAll(resp.Body)
	if err == nil {
		t.Errorf("read the whole body without error: %s", b)
	}
	if n := strings.Count(string(b), "data: "); n != 2 || strings.Contains(string(b), "[DONE]") {
		t.Errorf("%d events before the break: %s", n, b)
	}
}

func TestHangReleasedOnClose(t *testing.T) {
	srv := NewServer(t, Hang())
	errc := make(chan error, 1)
	go func() {
		resp, err := http.Post(srv.URL()+"/chat/completions", "application/json", strings.NewReader(streamBody))
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := srv.WaitRequests(ctx, 1); err != nil {
		t.Fatal(err)
	}
	closed := make(chan struct{})
	go func() { srv.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("Close blocked on a hung request")
	}
	if err := <-errc; err == nil {
		t.Error("a hung request got an answer")
	}
}

func TestSplit(t *testing.T) {
	for _, tc := range []struct {
		s    string
		n    int
		want []string
	}{
		{"abcdefg", 3, []string{"abc", "def", "g"}},
		{"ab", 3, []string{"a", "b"}},
		{"", 3, []string{""}},
		{"héé", 2, []string{"hé", "é"}},
		{"abc", 1, []string{"abc"}},
	} {
		if got := split(tc.s, tc.n); strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("split(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
		}
	}
}
