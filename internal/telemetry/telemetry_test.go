package telemetry

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/lanehq/lane/internal/record"
)

// sample is a run with a tool call, its result and two model turns.
func sample() (*record.Run, []record.Event) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	run := &record.Run{ID: "r-1", Runtime: "claude", Model: "claude-sonnet-5-5", Dir: "/p", Prompt: "secret prompt",
		SessionID: "s-1", Status: record.StatusSucceeded, CostUSD: 0.5, Usage: record.Usage{InputTokens: 200, OutputTokens: 40},
		StartedAt: at(0), EndedAt: at(1000), Turns: 2, ToolCalls: 1, ResultText: "done"}
	u := &record.Usage{InputTokens: 100, OutputTokens: 20, CacheReadTokens: 5}
	evs := []record.Event{
		{Time: at(10), Kind: record.KindSession, SessionID: "s-1"},
		{Time: at(200), Kind: record.KindToolCall, MessageID: "m1", ToolUseID: "t1", ToolName: "Bash", Input: json.RawMessage(`{"command":"ls"}`)},
		{Time: at(210), Kind: record.KindUsage, MessageID: "m1", Model: "claude-sonnet-5-5", Usage: u},
		{Time: at(500), Kind: record.KindToolResult, ToolUseID: "t1", Output: "secret output", IsError: true},
		{Time: at(800), Kind: record.KindText, MessageID: "m2", Text: "done"},
		{Time: at(810), Kind: record.KindUsage, MessageID: "m2", Usage: u},
		{Time: at(900), Kind: record.KindResult},
	}
	return run, evs
}

func build(opts Options) RunSpans {
	run, evs := sample()
	b := NewBuilder(opts)
	for _, ev := range evs {
		b.Event(ev)
	}
	return b.Spans(run)
}

func TestBuilderTree(t *testing.T) {
	rs := build(Options{})
	if len(rs.Spans) != 4 {
		t.Fatalf("%d spans, want run, 2 chats, 1 tool", len(rs.Spans))
	}
	root, chat1, chat2, tool := rs.Spans[0], rs.Spans[1], rs.Spans[2], rs.Spans[3]
	if root.Op != OpInvokeAgent || root.ParentID.IsValid() || chat1.ParentID != root.ID || tool.ParentID != root.ID {
		t.Fatalf("tree: %+v", rs.Spans)
	}
	// A turn runs from the agent's previous event to its last one.
	if !chat1.Start.Equal(root.Start.Add(10*time.Millisecond)) || !chat1.End.Equal(root.Start.Add(210*time.Millisecond)) ||
		!chat2.Start.Equal(root.Start.Add(500*time.Millisecond)) {
		t.Errorf("chat times %v–%v, %v", chat1.Start, chat1.End, chat2.Start)
	}
	if tool.End.Sub(tool.Start) != 300*time.Millisecond || tool.ErrorType != "tool_error" || tool.ErrorMessage != "" {
		t.Errorf("tool span %+v", tool)
	}
	for _, s := range rs.Spans {
		for _, kv := range s.Attrs {
			if strings.Contains(kv.Value.String(), "secret") {
				t.Errorf("content without Content: %s=%s", kv.Key, kv.Value.String())
			}
		}
	}
	with := build(Options{Content: true})
	if !strings.Contains(attr(with.Spans[0], "gen_ai.input.messages"), "secret prompt") ||
		attr(with.Spans[3], "gen_ai.tool.call.result") != "secret output" {
		t.Errorf("content: %v", with.Spans[3].Attrs)
	}
}

func attr(s Span, key string) string {
	for _, kv := range s.Attrs {
		if string(kv.Key) == key {
			return kv.Value.String()
		}
	}
	return ""
}

// receiver is an OTLP/HTTP collector that keeps the spans it is sent.
type receiver struct {
	mu    sync.Mutex
	spans []*tracepb.Span
	got   chan struct{}
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req coltracepb.ExportTraceServiceRequest
	if r.URL.Path != "/v1/traces" || proto.Unmarshal(body, &req) != nil {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	rc.mu.Lock()
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			rc.spans = append(rc.spans, ss.Spans...)
		}
	}
	rc.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-protobuf")
	b, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Write(b)
	select {
	case rc.got <- struct{}{}:
	default:
	}
}

func TestLiveExportMatchesOTLPJSON(t *testing.T) {
	rc := &receiver{got: make(chan struct{}, 1)}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	ctx := context.Background()
	exp, err := NewExporter(ctx, Config{Endpoint: srv.URL, FlushTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	rs := build(Options{})
	exp.Export(ctx, rs)
	if err := exp.Shutdown(ctx); err != nil || exp.Dropped() != 0 {
		t.Fatalf("shutdown: %v, %d dropped", err, exp.Dropped())
	}
	var buf bytes.Buffer
	if err := WriteOTLPJSON(&buf, []RunSpans{rs}, "test"); err != nil {
		t.Fatal(err)
	}
	var file jsonRequest
	if err := json.Unmarshal(buf.Bytes(), &file); err != nil {
		t.Fatal(err)
	}
	fileSpans := file.ResourceSpans[0].ScopeSpans[0].Spans
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if len(rc.spans) != len(fileSpans) {
		t.Fatalf("live %d spans, file %d", len(rc.spans), len(fileSpans))
	}
	byID := map[string]jsonSpan{}
	for _, s := range fileSpans {
		byID[s.SpanID] = s
	}
	for _, s := range rc.spans {
		f, ok := byID[hexOf(s.SpanId)]
		if !ok || f.TraceID != hexOf(s.TraceId) || f.ParentSpanID != hexOf(s.ParentSpanId) || f.Name != s.Name ||
			f.StartTimeUnixNano != itoa64(s.StartTimeUnixNano) || len(f.Attributes) != len(s.Attributes) || f.Status.Code != int(s.Status.GetCode()) {
			t.Errorf("live span %s differs from the file's: %+v", s.Name, f)
		}
	}
}

func hexOf(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 2*len(b))
	for _, c := range b {
		out = append(out, digits[c>>4], digits[c&15])
	}
	return string(out)
}

func itoa64(n uint64) string { b, _ := json.Marshal(n); return string(b) }

// A collector that never answers costs Shutdown its flush timeout, not
// the exporter's own (longer) timeout and retries.
func TestHangingCollectorBoundedByFlushTimeout(t *testing.T) {
	hang := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-hang:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(hang)
	t.Setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "60000")
	ctx := context.Background()
	flush := 200 * time.Millisecond
	exp, err := NewExporter(ctx, Config{Endpoint: srv.URL, FlushTimeout: flush})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	exp.Export(ctx, build(Options{}))
	queued := time.Since(start)
	exp.Shutdown(ctx)
	// Bounds from the timeouts, not speed targets: Export queues (far
	// below the flush timeout), Shutdown gives up at the flush timeout
	// (far below the 60 s the exporter would wait).
	if queued >= flush || time.Since(start) >= 30*time.Second {
		t.Errorf("export took %v, shutdown %v (flush timeout %v)", queued, time.Since(start), flush)
	}
	// The batch given up on at the end is counted.
	if exp.Dropped() != 4 {
		t.Errorf("%d spans counted dropped, want the 4 sent", exp.Dropped())
	}
}

// A subagent's turns and tool calls hang under the tool call that
// started it.
func TestSubagentSpansNest(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	run := &record.Run{ID: "r-2", Runtime: "claude", Model: "sonnet", StartedAt: at(0), EndedAt: at(1000), Status: record.StatusFailed, ErrorKind: record.ErrorTurnLimit}
	b := NewBuilder(Options{Bench: &Bench{ID: "b-1", Task: "t", N: 2}})
	for _, ev := range []record.Event{
		{Time: at(100), Kind: record.KindToolCall, MessageID: "m1", ToolUseID: "task", ToolName: "Task"},
		{Time: at(300), Kind: record.KindToolCall, MessageID: "s1", ParentToolUseID: "task", ToolUseID: "sub", ToolName: "Read"},
		{Time: at(400), Kind: record.KindToolResult, ParentToolUseID: "task", ToolUseID: "sub"},
		{Time: at(600), Kind: record.KindToolResult, ToolUseID: "task"},
	} {
		b.Event(ev)
	}
	rs := b.Spans(run)
	byName := map[string]Span{}
	for _, s := range rs.Spans {
		byName[s.Name+"/"+attr(s, "gen_ai.response.id")] = s
	}
	task, sub, subChat := byName["execute_tool Task/"], byName["execute_tool Read/"], byName["chat sonnet/s1"]
	root := rs.Spans[0]
	if task.ParentID != root.ID || sub.ParentID != task.ID || subChat.ParentID != task.ID {
		t.Errorf("nesting: %+v", rs.Spans)
	}
	// The subagent's first turn began when the Task call did.
	if !subChat.Start.Equal(at(100)) {
		t.Errorf("subagent turn starts %v", subChat.Start)
	}
	if root.ErrorType != "turn_limit" || attr(root, "lane.bench.id") != "b-1" || attr(root, "lane.bench.repeat") != "2" {
		t.Errorf("run span %+v", root)
	}
}

// BenchmarkExportHangingCollector is what a run pays at its end to hand
// its spans to the exporter while the collector never answers: queueing
// only (spans past the bounded queue are dropped, never waited for).
func BenchmarkExportHangingCollector(b *testing.B) {
	hang := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-hang:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(hang)
	ctx := context.Background()
	exp, err := NewExporter(ctx, Config{Endpoint: srv.URL, FlushTimeout: 100 * time.Millisecond})
	if err != nil {
		b.Fatal(err)
	}
	rs := build(Options{})
	b.ResetTimer()
	for b.Loop() {
		exp.Export(ctx, rs)
	}
	b.StopTimer()
	exp.Shutdown(ctx)
}

// A model whose name does not say its provider gets the one the runtimes'
// table names for its runtime, else the runtime's own name.
func TestProviderOfARunsModel(t *testing.T) {
	t.Parallel()
	table := func(runtime string) string { return map[string]string{"codex": "openai"}[runtime] }
	for _, tc := range []struct {
		runtime, model string
		opts           Options
		want           string
	}{
		{"claude", "sonnet", Options{}, "anthropic"},     // the name says
		{"local", "ollama:qwen2.5", Options{}, "ollama"}, // PROVIDER:MODEL
		{"codex", "", Options{RuntimeProvider: table}, "openai"},
		{"codex", "", Options{}, "codex"},
		{"opencode", "big-pickle", Options{RuntimeProvider: table}, "opencode"},
	} {
		run := &record.Run{ID: "r", Runtime: tc.runtime, Model: tc.model}
		spans := NewBuilder(tc.opts).Spans(run)
		if got := attr(spans.Spans[0], "gen_ai.provider.name"); got != tc.want {
			t.Errorf("%s %q: provider %q, want %q", tc.runtime, tc.model, got, tc.want)
		}
	}
}
