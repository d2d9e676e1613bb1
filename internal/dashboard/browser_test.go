package dashboard

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/lanehq/lane/internal/approval"
	"github.com/lanehq/lane/internal/approval/dbdesk"
	"github.com/lanehq/lane/internal/proc"
	"github.com/lanehq/lane/internal/record"
	"github.com/lanehq/lane/internal/runtimes"
	"github.com/lanehq/lane/internal/store"
	"github.com/lanehq/lane/internal/testkit/needs"
)

// chromium is Debian's browser (apt-get install chromium), which CI installs.
const chromium = "/usr/bin/chromium"

var updateScreenshot = flag.Bool("screenshot", false,
	"write the screenshots: TestBrowser the run page's to testdata/screenshot.png, TestBrowserBench the bench page's to testdata/bench.png, "+
		"TestBrowserWorkers the workers page's to testdata/workers.png, TestBrowserPoolBench a pool bench's to testdata/bench-pool.png, "+
		"TestBrowserApprovals a run's page with requests waiting to testdata/approvals.png, "+
		"TestBrowserBenchMatrix the comparison matrix's to testdata/bench-matrix.png")

// hostile is a tool output that must reach the page as text only.
const hostile = `<img src=x onerror="window.__pwned=1"><script>window.__pwned=1</script>`

// browserEnv is a dashboard on a real database, a second store handle
// writing to it as a `lane run` process would, and a headless browser.
type browserEnv struct {
	t      *testing.T
	url    string
	writer *store.Store
	ctx    context.Context // the browser tab
	// laneBin, when seed sets it, is the lane the dashboard starts (to
	// apply a run).
	laneBin string

	mu       sync.Mutex
	problems []string // exceptions, console errors, CSP violations
	// cancelTry, while open loads a page, ends that try when Chromium
	// fails one of the tab's requests with net::ERR_NETWORK_CHANGED.
	cancelTry context.CancelFunc
	// netChanged counts those failures.
	netChanged atomic.Int64
}

// sharedChromium is this test binary's browser, started by the first
// browser test and stopped by TestMain.
var sharedChromium chromiumOnce

type chromiumOnce struct {
	once    sync.Once
	browser context.Context
	stop    []context.CancelFunc
	err     error
}

// start starts the browser on first use and returns its context, from
// which chromedp.NewContext opens tabs. chromedp gives the browser a fresh
// --user-data-dir of its own and removes it when it stops.
func (c *chromiumOnce) start() (context.Context, error) {
	c.once.Do(func() {
		opts := append(chromedp.DefaultExecAllocatorOptions[:],
			chromedp.ExecPath(chromium),
			chromedp.Headless,
			chromedp.NoSandbox,
			chromedp.DisableGPU,
			chromedp.NoFirstRun,
			chromedp.Flag("disable-quic", true),
			chromedp.Flag("disable-background-networking", true),
			chromedp.Flag("disable-component-update", true),
			chromedp.Flag("disable-sync", true),
			chromedp.WindowSize(1280, 900),
		)
		allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
		browser, cancelBrowser := chromedp.NewContext(allocCtx)
		c.browser, c.stop = browser, []context.CancelFunc{cancelBrowser, cancelAlloc}
		c.err = chromedp.Do(browser) // start the browser
	})
	return c.browser, c.err
}

// close stops the browser, if one was started, and waits for it.
func (c *chromiumOnce) close() {
	for _, stop := range c.stop {
		stop()
	}
}

// startBrowserEnv starts it all; seed, when set, writes to the database
// before the dashboard starts (what it finds there is not streamed live).
func startBrowserEnv(t *testing.T, seed func(*browserEnv)) *browserEnv {
	t.Helper()
	if _, err := os.Stat(chromium); err != nil {
		needs.Missing(t, needs.Chromium(), chromium+" is missing")
	}

	// Cleanups run last registered first: the browser, then the dashboard,
	// then the stores.
	ctx := context.Background()
	dbPath := filepath.Join(t.TempDir(), "lane.db")
	st, err := store.Open(ctx, dbPath, store.WithOwnerCheck(proc.Alive))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	writer, err := store.Open(ctx, dbPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { writer.Close() })
	e := &browserEnv{t: t, writer: writer}
	if seed != nil {
		seed(e)
	}

	hs := httptest.NewUnstartedServer(nil)
	srv, err := New(Config{Store: st, Addr: hs.Listener.Addr().String(), Poll: 25 * time.Millisecond, DescribeCalls: runtimes.Entries().DescribeCalls,
		LaneBin: e.laneBin, DBPath: dbPath})
	if err != nil {
		hs.Close()
		t.Fatal(err)
	}
	hs.Config.Handler = srv.Handler()
	hs.Start()
	runCtx, stopRun := context.WithCancel(ctx)
	runDone := make(chan error, 1)
	go func() { runDone <- srv.Run(runCtx) }()
	t.Cleanup(func() {
		stopRun()
		if err := <-runDone; err != nil {
			t.Errorf("Run: %v", err)
		}
		hs.Close()
	})
	e.url = hs.URL

	// One browser for the whole test binary, a tab of its own per test
	// (each test's dashboard has an origin, and so a storage, of its own).
	browser, err := sharedChromium.start()
	if err != nil {
		t.Fatalf("start %s: %v", chromium, err)
	}
	tab, cancelTab := chromedp.NewContext(browser)
	t.Cleanup(cancelTab)                     // closes the tab
	if err := chromedp.Do(tab); err != nil { // open the tab
		t.Fatalf("open a tab in %s: %v", chromium, err)
	}
	e.ctx = tab
	if err := chromedp.Listen(tab, e.watchNetworkChanges); err != nil {
		t.Fatalf("listen to the tab in %s: %v", chromium, err)
	}

	// Uncaught exceptions, console.error calls and CSP violations fail the
	// test; other browser log errors (an expected 4xx) are only logged.
	consoleDone := make(chan struct{})
	go func() {
		defer close(consoleDone)
		for m, err := range chromedp.Console(tab) {
			if err != nil {
				return
			}
			switch {
			case m.IsException():
				e.problem("exception: %s", m.Text)
			case m.Type != chromedp.ConsoleError:
			case strings.Contains(m.Text, "Content Security Policy"):
				e.problem("CSP: %s", m.Text)
			case m.Source == "":
				e.problem("console.error: %s", m.Text)
			default:
				t.Logf("browser log (%s): %s %s", m.Source, m.Text, m.URL)
			}
		}
	}()
	t.Cleanup(func() {
		cancelTab()
		<-consoleDone
		e.mu.Lock()
		defer e.mu.Unlock()
		for _, p := range e.problems {
			t.Errorf("page: %s", p)
		}
	})
	return e
}

func (e *browserEnv) problem(format string, args ...any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.problems = append(e.problems, fmt.Sprintf(format, args...))
}

// maxLoads bounds open's loads of one page. A container engine changes the
// network at each container's start and stop, several a second when tests
// start containers side by side, and a page load of some thirty modules can
// meet one change after another: ten loads ride that out, and the caller's
// timeout still bounds them all.
const maxLoads = 10

// open loads url in the tab and runs steps on the page, failing the test
// after timeout.
//
// When a network interface comes or goes on the machine (Podman adds one
// for each container network it starts, and container tests run beside
// these), Chromium fails every request still waiting for a connection with
// net::ERR_NETWORK_CHANGED, loopback ones included, and retries none of
// them; no command-line switch turns that off (the network session's
// ignore_ip_address_changes is set by no switch). So a try during which
// the tab saw such a failure is ended and the page loaded again, a few
// times at most: a load and waits for what the page shows can be repeated.
// The problems the page reported in a try that ends so are logged, not
// failed: a problem of the page's own comes again in the next load.
func (e *browserEnv) open(what string, timeout time.Duration, url string, steps ...chromedp.Action[chromedp.Void]) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(e.ctx, timeout)
	defer cancel()
	steps = append([]chromedp.Action[chromedp.Void]{chromedp.Navigate(url)}, steps...)
	for load := 1; ; load++ {
		kept := e.problemCount()
		try, endTry := context.WithCancel(ctx)
		seen := e.setCancelTry(endTry)
		if load == 2 {
			// From the page at url#fragment, url#fragment is the same
			// document: it would scroll, not load.
			steps = append([]chromedp.Action[chromedp.Void]{chromedp.Navigate("about:blank")}, steps...)
		}
		err := chromedp.Do(try, steps...)
		e.setCancelTry(nil)
		endTry()
		switch {
		case err == nil:
			return
		case e.netChanged.Load() == seen || load == maxLoads || ctx.Err() != nil:
			e.fatal(what, err)
			return
		}
		e.t.Logf("%s: Chromium failed a request with net::ERR_NETWORK_CHANGED (a network interface came or went): loading %s again (%v)",
			what, url, err)
		e.forgiveProblems(kept)
	}
}

// watchNetworkChanges is the tab's listener (see open). It runs on the
// goroutine that reads the tab's messages, so it only counts and cancels.
func (e *browserEnv) watchNetworkChanges(ev any) {
	failed, ok := ev.(*network.EventLoadingFailed)
	if !ok || !strings.Contains(failed.ErrorText, "ERR_NETWORK_CHANGED") {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.netChanged.Add(1)
	if e.cancelTry != nil {
		e.cancelTry()
	}
}

// setCancelTry makes cancel the try that a network change ends, and says
// how many changes came before it, both under the lock the listener counts
// and cancels under: a change counted after is one that can end this try.
func (e *browserEnv) setCancelTry(cancel context.CancelFunc) int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.cancelTry = cancel
	return e.netChanged.Load()
}

func (e *browserEnv) problemCount() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.problems)
}

// forgiveProblems logs the problems after the first kept and drops them.
func (e *browserEnv) forgiveProblems(kept int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, p := range e.problems[kept:] {
		e.t.Logf("page, in the load given up: %s", p)
	}
	e.problems = e.problems[:kept]
}

// do runs browser actions, failing the test after timeout.
func (e *browserEnv) do(what string, timeout time.Duration, steps ...chromedp.Action[chromedp.Void]) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(e.ctx, timeout)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		e.fatal(what, err)
	}
}

func (e *browserEnv) fatal(what string, err error) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(e.ctx, 5*time.Second)
	defer cancel()
	body, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText.slice(0, 3000)`))
	e.t.Fatalf("%s: %v\npage text:\n%s", what, err, body)
}

// eval evaluates js in the page and decodes its value as T.
func eval[T any](e *browserEnv, js string, opts ...chromedp.EvaluateOption) T {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(e.ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js, opts...))
	if err != nil {
		e.fatal("evaluate "+js, err)
	}
	return v
}

// newRun records a run owned by the test process, so the dashboard does not
// sweep it as interrupted, and returns a writer for its events.
func (e *browserEnv) newRun(r *record.Run) *store.EventWriter {
	e.t.Helper()
	start, err := proc.StartTime(os.Getpid())
	if err != nil {
		e.t.Fatal(err)
	}
	if r.ID == "" {
		r.ID = record.NewRunID()
	}
	r.OwnerPID, r.OwnerStart = os.Getpid(), start
	if err := e.writer.CreateRun(context.Background(), r); err != nil {
		e.t.Fatal(err)
	}
	return e.writer.NewEventWriter(r.ID)
}

func write(t *testing.T, w *store.EventWriter, evs ...record.Event) {
	t.Helper()
	for _, ev := range evs {
		if err := w.Write(ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func seqSel(seq int64) string { return fmt.Sprintf(`.timeline [data-seq="%d"]`, seq) }

func TestBrowser(t *testing.T) {
	e := startBrowserEnv(t, nil)
	ctx := context.Background()

	// The runs table, live before any run exists.
	e.open("open /", 30*time.Second, e.url+"/",
		chromedp.WaitVisible(chromedp.CSS(`table.runs`)),
		chromedp.WaitVisible(chromedp.CSS(`#conn.on`)))
	eval[bool](e, `window.__noReload = true`)

	// A run appears in the list as a `lane run` process records it.
	now := time.Now()
	run := &record.Run{
		Status: record.StatusRunning, Runtime: "claude", Model: "sonnet", Dir: "/work/demo",
		Prompt: "List the files and <b>explain</b> them", SessionID: "sess-browser", StartedAt: now,
		Capability: record.Capability{Dir: "/work/demo"}, Budget: &record.Budget{Tokens: 400_000, CostUSD: 2, Turns: 30},
	}
	w := e.newRun(run)
	defer w.Close(ctx)
	toolInput, _ := json.Marshal(map[string]string{"command": "ls -la", "description": "list files"})
	at := func(d time.Duration) time.Time { return now.Add(d) }
	write(t, w,
		record.Event{Seq: 1, Time: at(100 * time.Millisecond), Kind: record.KindSession, SessionID: "sess-browser", Model: "claude-sonnet-4-5", Cwd: "/work/demo", Version: "2.1.0", Tools: []string{"Bash", "Read"}},
		record.Event{Seq: 2, Time: at(1 * time.Second), Kind: record.KindText, Text: "I'll look at the **files** with `ls`."},
		record.Event{Seq: 3, Time: at(1200 * time.Millisecond), Kind: record.KindToolCall, ToolUseID: "toolu_1", ToolName: "Bash", Input: toolInput},
		record.Event{Seq: 4, Time: at(3500 * time.Millisecond), Kind: record.KindToolResult, ToolUseID: "toolu_1", Output: hostile},
	)
	row := fmt.Sprintf(`table.runs tr[data-id=%q]`, run.ID)
	e.do("the new run appears live in the list", 20*time.Second,
		chromedp.WaitVisible(chromedp.CSS(row+` .st-running`)))
	if !eval[bool](e, `window.__noReload === true`) {
		t.Fatal("the page reloaded to show the new run")
	}

	// Its trace, reached by a click (client-side navigation).
	e.do("open the run", 20*time.Second,
		chromedp.Click(chromedp.CSS(row+` td.prompt a`)),
		chromedp.WaitVisible(chromedp.CSS(`.run-head dl.kv`)),
		chromedp.WaitVisible(chromedp.CSS(`.run-head button.danger`)), // Cancel, while it runs
		chromedp.WaitReady(chromedp.CSS(seqSel(4))))
	if path := eval[string](e, `location.pathname`); path != "/runs/"+run.ID {
		t.Fatalf("location %q, want /runs/%s", path, run.ID)
	}
	// The limits the run was given (lane run --token-limit, …).
	if got := eval[string](e, `document.querySelector('.run-head .budget')?.textContent ?? ''`); got != "400k tokens · $2.00 · 30 turns" {
		t.Errorf("the run's limits show as %q", got)
	}
	// The Export menu opens on the three formats of the run's export.
	e.do("open the Export menu", 10*time.Second,
		chromedp.Click(chromedp.CSS(`.run-head .export-menu > summary`)),
		chromedp.WaitVisible(chromedp.CSS(`.run-head .export-menu a[href$="format=otlp"]`)))
	if hrefs := eval[string](e, `[...document.querySelectorAll('.run-head .export-menu a')].map(a => a.getAttribute('href')).join(' ')`); hrefs !=
		"/api/runs/"+run.ID+"/export /api/runs/"+run.ID+"/export?format=markdown /api/runs/"+run.ID+"/export?format=otlp" {
		t.Errorf("export menu links %q", hrefs)
	}
	eval[bool](e, `(document.querySelector('.run-head .export-menu').open = false, true)`)
	// The hostile output is text: in the collapsed summary's preview and, once
	// opened, in full; nothing of it became an element or ran.
	e.do("open the tool result", 10*time.Second,
		chromedp.Click(chromedp.CSS(seqSel(4)+` > summary`)),
		chromedp.WaitVisible(chromedp.CSS(seqSel(4)+` pre.out`)))
	if out := eval[string](e, fmt.Sprintf(`document.querySelector(%q).textContent`, seqSel(4)+` pre.out`)); out != hostile {
		t.Errorf("tool output shown as %q, want the text %q", out, hostile)
	}
	timelineText := eval[string](e, `document.querySelector('.timeline').textContent`)
	for _, want := range []string{"<script>", `<img src=x onerror="window.__pwned=1">`, "ls -la", "I'll look at the files with ls."} {
		if !strings.Contains(timelineText, want) {
			t.Errorf("timeline text lacks %q:\n%s", want, timelineText)
		}
	}
	type safety struct {
		Pwned    bool `json:"pwned"`
		Scripts  int  `json:"scripts"`
		Imgs     int  `json:"imgs"`
		InTrace  int  `json:"inTrace"`
		BoldTags int  `json:"boldTags"`
	}
	safe := eval[safety](e, `({
		pwned: typeof window.__pwned !== 'undefined',
		scripts: document.scripts.length,
		imgs: document.images.length,
		inTrace: document.querySelectorAll('.timeline script, .timeline img, .run-head script, .run-head img, .run-head b').length,
		boldTags: document.querySelectorAll('b').length,
	})`)
	if safe.Pwned || safe.Scripts != 1 || safe.Imgs != 0 || safe.InTrace != 0 || safe.BoldTags != 0 {
		t.Errorf("hostile data became markup: %+v (want no __pwned, only the page's one script, no img, no b)", safe)
	}

	// More events appear live: text with markdown, a tool streaming output,
	// a subagent nested under its Task call, a retry, an error, the result.
	readInput, _ := json.Marshal(map[string]string{"file_path": "/work/demo/README.md"})
	taskInput, _ := json.Marshal(map[string]string{"description": "explore the repo", "subagent_type": "Explore", "prompt": "look around"})
	write(t, w,
		record.Event{Seq: 5, Time: at(4 * time.Second), Kind: record.KindText, Text: "Found **3 files**. See [the docs](https://example.com/docs) — not [this](javascript:alert(1)).\n\n```go\nfmt.Println(\"<b>hi</b>\")\n```"},
		record.Event{Seq: 6, Time: at(4100 * time.Millisecond), Kind: record.KindToolCall, ToolUseID: "toolu_2", ToolName: "Read", Input: readInput},
		record.Event{Seq: 7, Time: at(4200 * time.Millisecond), Kind: record.KindToolOutput, ToolUseID: "toolu_2", Output: "# demo\n"},
	)
	e.do("live events appear", 20*time.Second,
		chromedp.WaitVisible(chromedp.CSS(seqSel(5)+` .md strong`)),
		chromedp.WaitVisible(chromedp.CSS(seqSel(6)+` .live-out`)))
	write(t, w,
		record.Event{Seq: 8, Time: at(4700 * time.Millisecond), Kind: record.KindToolResult, ToolUseID: "toolu_2", Output: "# demo\nA demo project.\n"},
		record.Event{Seq: 9, Time: at(5 * time.Second), Kind: record.KindRetry, Retry: &record.Retry{Attempt: 1, MaxRetries: 10, DelayMS: 1200, ErrorStatus: 529, Error: "overloaded"}},
		record.Event{Seq: 10, Time: at(7 * time.Second), Kind: record.KindToolCall, ToolUseID: "toolu_task", ToolName: "Task", Input: taskInput},
		record.Event{Seq: 11, Time: at(8 * time.Second), Kind: record.KindText, ParentToolUseID: "toolu_task", Text: "Subagent: exploring."},
		record.Event{Seq: 12, Time: at(8500 * time.Millisecond), Kind: record.KindToolCall, ParentToolUseID: "toolu_task", ToolUseID: "toolu_sub1", ToolName: "Glob", Input: json.RawMessage(`{"pattern":"**/*.go"}`)},
		record.Event{Seq: 13, Time: at(9 * time.Second), Kind: record.KindToolResult, ParentToolUseID: "toolu_task", ToolUseID: "toolu_sub1", Output: "main.go\nmain_test.go"},
		record.Event{Seq: 14, Time: at(12 * time.Second), Kind: record.KindToolResult, ToolUseID: "toolu_task", Output: "The repo has two Go files."},
		record.Event{Seq: 15, Time: at(12500 * time.Millisecond), Kind: record.KindCompact, Subtype: "compact_boundary"},
		record.Event{Seq: 16, Time: at(13 * time.Second), Kind: record.KindError, ErrorKind: record.ErrorAPI, Text: "API error 529 (overloaded), recovered"},
		record.Event{Seq: 17, Time: at(14 * time.Second), Kind: record.KindText, Text: "Done: it is a **small Go project**."},
		record.Event{Seq: 18, Time: at(14100 * time.Millisecond), Kind: record.KindResult, Result: &record.Result{Subtype: "success", NumTurns: 4, DurationMS: 14000, Text: "Done: it is a **small Go project**."}},
	)
	e.do("the subagent nests under its Task call", 20*time.Second,
		chromedp.WaitReady(chromedp.CSS(`.ev.tool[data-tool="toolu_task"] .sub-body [data-seq="13"]`)),
		chromedp.WaitReady(chromedp.CSS(seqSel(18))))
	type linkCount struct {
		Ext int `json:"ext"`
		JS  int `json:"js"`
	}
	links := eval[linkCount](e, `({ext: document.querySelectorAll('.timeline a[href="https://example.com/docs"]').length,
		js: document.querySelectorAll('a[href^="javascript"]').length})`)
	if links.Ext != 1 || links.JS != 0 {
		t.Errorf("links: %+v, want the https link and no javascript: link", links)
	}

	// opencode's steps and Codex's turn marks are kept but not shown.
	write(t, w,
		record.Event{Seq: 19, Time: at(14200 * time.Millisecond), Kind: record.KindTask, Subtype: "step_start", Text: "step started"},
		record.Event{Seq: 20, Time: at(14300 * time.Millisecond), Kind: record.KindTask, Subtype: "turn.started", Text: "turn started"},
		record.Event{Seq: 21, Time: at(14400 * time.Millisecond), Kind: record.KindText, Text: "After the step."},
	)
	e.do("bookkeeping events", 20*time.Second, chromedp.WaitVisible(chromedp.CSS(seqSel(21))))
	if n := eval[int](e, `document.querySelectorAll('[data-seq="19"], [data-seq="20"]').length`); n != 0 {
		t.Errorf("%d bookkeeping events shown in the trace", n)
	}

	// The run ends; its header follows.
	run.Status, run.EndedAt, run.DurationMS = record.StatusSucceeded, at(15*time.Second), 15000
	run.CostUSD, run.CostEstimate, run.Turns, run.ToolCalls = 0.0421, true, 4, 4
	run.Usage = record.Usage{InputTokens: 1200, OutputTokens: 850, CacheReadTokens: 45000, CacheCreationTokens: 3000}
	run.ResultText = "Done: it is a small Go project."
	if err := e.writer.UpdateRun(ctx, run); err != nil {
		t.Fatal(err)
	}
	e.do("the header shows the end", 20*time.Second,
		chromedp.WaitVisible(chromedp.CSS(`.run-head h1 .st-succeeded`)),
		chromedp.WaitNotPresent(chromedp.CSS(`.run-head button.danger`)),
		chromedp.ScrollIntoView(chromedp.CSS(`.run-head`)))
	head := eval[string](e, `document.querySelector('.run-head').textContent`)
	for _, bad := range []string{"null", "undefined", "NaN", "[object"} {
		if strings.Contains(head, bad) {
			t.Errorf("run header shows %q: %s", bad, head)
		}
	}

	shotCtx, cancelShot := context.WithTimeout(e.ctx, 20*time.Second)
	png, err := chromedp.Run(shotCtx, chromedp.CaptureScreenshot())
	cancelShot()
	if err != nil {
		e.fatal("screenshot", err)
	}
	if len(png) == 0 {
		t.Error("empty screenshot")
	}
	if *updateScreenshot {
		if err := os.WriteFile(filepath.Join("testdata", "screenshot.png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote testdata/screenshot.png (%d bytes)", len(png))
	}

	// The other views render without a page error.
	e.do("sessions", 20*time.Second,
		chromedp.Click(chromedp.CSS(`#nav a[href="/sessions"]`)),
		chromedp.WaitVisible(chromedp.CSS(`table.sessions tbody tr`)))
	e.do("costs", 20*time.Second,
		chromedp.Click(chromedp.CSS(`#nav a[href="/costs"]`)),
		chromedp.WaitVisible(chromedp.CSS(`svg.chart rect.s-cost`)))
	e.do("bench", 20*time.Second,
		chromedp.Click(chromedp.CSS(`#nav a[href="/bench"]`)),
		chromedp.WaitVisible(chromedp.CSS(`p.empty`)))
	// A SQLite file has no pool: the Workers view says what it needs, in
	// one line and not as an error.
	e.do("workers", 20*time.Second,
		chromedp.Click(chromedp.CSS(`#nav a[href="/workers"]`)),
		chromedp.WaitVisible(chromedp.CSS(`p.empty`)))
	if got := eval[string](e, `document.querySelector('p.empty').textContent`); !strings.Contains(got, "Workers need a shared PostgreSQL database") {
		t.Errorf("workers on SQLite: %q", got)
	}
	if n := eval[int](e, `document.querySelectorAll('#app .errorbox').length +
		[...document.querySelectorAll('table.workers')].filter((t) => t.offsetParent).length`); n != 0 {
		t.Errorf("workers on SQLite: %d error boxes or tables shown, want none", n)
	}

	// The New run form posts with the CSRF header and a real Origin (the page
	// is served with Referrer-Policy: no-referrer): this dashboard has no lane
	// binary to start, so the answer must be that, not a refused request.
	e.do("new run form", 20*time.Second,
		chromedp.Click(chromedp.CSS(`#new-run`)),
		chromedp.SetValue(chromedp.CSS(`dialog form.newrun input[name="dir"]`), "/work/demo"),
		chromedp.SetValue(chromedp.CSS(`dialog form.newrun textarea[name="task"]`), "say hi"),
		chromedp.Click(chromedp.CSS(`dialog form.newrun button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`dialog .errorbox`)))
	postErr := eval[string](e, `document.querySelector('dialog .errorbox').textContent`)
	if strings.Contains(postErr, "Origin") || strings.Contains(postErr, "X-CSRF-Token") {
		t.Errorf("POST /api/runs was refused by the CSRF checks: %s", postErr)
	} else {
		t.Logf("POST /api/runs without a lane binary: %s", postErr)
	}
}

// TestBrowserBench opens the bench list and a bench: its comparison
// table, its chart, its task grid and a link from the grid to a run.
func TestBrowserBench(t *testing.T) {
	t0 := time.Now().Add(-2 * time.Hour).UTC().Truncate(time.Second)
	e := startBrowserEnv(t, func(e *browserEnv) {
		b := demoBench("b-0001-demo", t0)
		b.Name = `demo suite <img src=x onerror="window.__pwned=1">`
		recordBench(e.t, e.writer, b, demoAttempts())
		empty := &record.Bench{ID: "b-0002-empty", Name: "nothing yet", Models: []string{"sonnet"}, Repeat: 1, Parallel: 1,
			Status: record.StatusCancelled, StartedAt: t0.Add(time.Hour), EndedAt: t0.Add(time.Hour + time.Minute)}
		recordBench(e.t, e.writer, empty, nil)
	})

	row := `table.benches tr[data-id="b-0001-demo"]`
	e.open("open /bench", 30*time.Second, e.url+"/bench",
		chromedp.WaitVisible(chromedp.CSS(row)),
		chromedp.WaitVisible(chromedp.CSS(`table.benches tr[data-id="b-0002-empty"]`)))
	if got := eval[string](e, `document.querySelector('`+row+`').textContent`); !strings.Contains(got, "10 / 19") ||
		!strings.Contains(got, "opus, sonnet, haiku") || !strings.Contains(got, `<img src=x`) {
		t.Errorf("bench row %q lacks 10 / 19, its models or its name as text", got)
	}

	e.do("open the bench", 30*time.Second,
		chromedp.Click(chromedp.CSS(row+` td.name a`)),
		chromedp.WaitVisible(chromedp.CSS(`table.bench-models tbody tr`)),
		chromedp.WaitVisible(chromedp.CSS(`table.bench-grid tbody tr`)))
	if path := eval[string](e, `location.pathname`); path != "/bench/b-0001-demo" {
		t.Fatalf("location %q, want /bench/b-0001-demo", path)
	}
	type modelRow struct {
		Model    string `json:"model"`
		Rate     string `json:"rate"`
		Interval string `json:"interval"`
		Passed   string `json:"passed"`
		Whiskers int    `json:"whiskers"`
	}
	rows := eval[[]modelRow](e, `[...document.querySelectorAll('table.bench-models tbody tr')].map((tr) => ({
		model: tr.dataset.model,
		rate: tr.querySelector('td.rate .pct').textContent,
		interval: tr.children[2].textContent,
		passed: tr.children[3].textContent,
		whiskers: tr.querySelectorAll('svg.ratebar .whisker line').length,
	}))`)
	want := []modelRow{
		{"opus", "66.7%", "20.8%–93.9%", "2 / 3 (2 to go)", 3},
		{"sonnet", "70%", "39.7%–89.2%", "7 / 10 (1 to go)", 3},
		{"haiku", "–", "–", "0 / 0 (2 skipped)", 0},
		{"qwen", "100%", "20.7%–100.0%", "1 / 1", 3},
	}
	if fmt.Sprint(rows) != fmt.Sprint(want) {
		t.Errorf("comparison table\n got %+v\nwant %+v", rows, want)
	}
	if n := eval[int](e, `document.querySelectorAll('svg.scatter g.point').length`); n != 3 {
		t.Errorf("%d points in the scatter chart, want 3 (haiku has no finished attempt)", n)
	}
	cell := `table.bench-grid tr[data-task="t1"] td[data-model="sonnet"]`
	type gridCell struct {
		Score string   `json:"score"`
		Links []string `json:"links"`
	}
	got := eval[gridCell](e, `({score: document.querySelector('`+cell+` .score').textContent,
		links: [...document.querySelectorAll('`+cell+` a')].map((a) => a.getAttribute('href'))})`)
	if got.Score != "4/5" || len(got.Links) != 5 || got.Links[0] != "/runs/run-sonnet-t1-1" {
		t.Errorf("grid cell t1 × sonnet: %+v, want 4/5 and links to its 5 runs", got)
	}
	tasks := eval[[]string](e, `[...document.querySelectorAll('table.bench-grid tbody tr')].map((tr) => tr.dataset.task)`)
	if !slices.Equal(tasks, []string{"t2", "t1", "t3"}) {
		t.Errorf("grid rows %v, want the suite's order", tasks)
	}
	text := eval[string](e, `document.getElementById('app').innerText`)
	for _, bad := range []string{"null", "undefined", "NaN", "[object", "Infinity"} {
		if strings.Contains(text, bad) {
			t.Errorf("bench page shows %q:\n%s", bad, text)
		}
	}
	if eval[bool](e, `typeof window.__pwned !== 'undefined' || document.images.length > 0`) {
		t.Error("the bench name became markup")
	}

	shotCtx, cancelShot := context.WithTimeout(e.ctx, 20*time.Second)
	png, err := chromedp.Run(shotCtx, chromedp.FullScreenshot(100))
	cancelShot()
	if err != nil {
		e.fatal("screenshot", err)
	}
	if *updateScreenshot {
		if err := os.WriteFile(filepath.Join("testdata", "bench.png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote testdata/bench.png (%d bytes)", len(png))
	}

	// A run of the grid, reached by a click; back to the bench.
	e.do("open a run from the grid", 30*time.Second,
		chromedp.Click(chromedp.CSS(cell+` a[href="/runs/run-sonnet-t1-5"]`)),
		chromedp.WaitVisible(chromedp.CSS(`.run-head dl.kv`)))
	if path := eval[string](e, `location.pathname`); path != "/runs/run-sonnet-t1-5" {
		t.Fatalf("location %q, want /runs/run-sonnet-t1-5", path)
	}
	e.do("back to the bench", 30*time.Second,
		chromedp.NavigateBack(),
		chromedp.WaitVisible(chromedp.CSS(cell+` a[href="/runs/run-sonnet-t1-5"]`)))

	// A failed attempt's check output opens; an unknown bench is a message.
	e.do("open a check output", 20*time.Second,
		chromedp.Click(chromedp.CSS(`table.bench-failures details.check-out > summary`)),
		chromedp.WaitVisible(chromedp.CSS(`table.bench-failures details.check-out pre.out`)))
	e.open("unknown bench", 20*time.Second, e.url+"/bench/nope",
		chromedp.WaitVisible(chromedp.CSS(`#app .errorbox`)))

	// A running bench follows its attempts as `lane bench` records them.
	pid, start := selfOwner(t)
	live := &record.Bench{ID: "b-0003-live", Name: "live", Models: []string{"sonnet"}, Repeat: 1, Parallel: 1,
		Status: record.StatusRunning, StartedAt: time.Now().UTC(), OwnerPID: pid, OwnerStart: start}
	first := att("t1", "sonnet", 1, record.AttemptRunning)
	first.RunID = "run-live-1"
	recordBench(t, e.writer, live, []record.Attempt{first})
	liveCell := `table.bench-grid tr[data-task="t1"] td[data-model="sonnet"]`
	e.open("open the running bench", 20*time.Second, e.url+"/bench/b-0003-live",
		chromedp.WaitVisible(chromedp.CSS(liveCell+` a.a-running`)))
	first.BenchID, first.Status, first.CostUSD, first.DurationMS = live.ID, record.AttemptPassed, 0.2, 3000
	if err := e.writer.SaveAttempt(context.Background(), &first); err != nil {
		t.Fatal(err)
	}
	e.do("the attempt passes", 20*time.Second,
		chromedp.WaitVisible(chromedp.CSS(liveCell+` a.a-passed[href="/runs/run-live-1"]`)))
	if got := eval[string](e, `document.querySelector('`+liveCell+` .score').textContent`); got != "1/1" {
		t.Errorf("live cell %q, want 1/1", got)
	}
}

// secondsAgo is a heartbeat of a few seconds ago as the page says it.
var secondsAgo = regexp.MustCompile(`^(\d+ms|\d+(\.\d)?s) ago$`)

// TestBrowserWorkers opens the Workers view of a pool of two, one of them
// gone, and follows them as they heartbeat and leave. The workers are saved
// in a SQLite file: the page draws what the API lists, whichever database.
func TestBrowserWorkers(t *testing.T) {
	now := time.Now().UTC()
	poolRun := &record.Run{ID: "run-pool-0001", Status: record.StatusRunning, Runtime: "claude", Model: "sonnet",
		Dir: "/work/pool", Prompt: "fix the flaky test", StartedAt: now.Add(-time.Minute), Worker: "gpu-box-1"}
	localRun := &record.Run{ID: "run-here-0001", Status: record.StatusSucceeded, Runtime: "claude", Model: "haiku",
		Dir: "/work/here", Prompt: "say hi", StartedAt: now.Add(-2 * time.Minute), EndedAt: now.Add(-time.Minute)}
	// A lease of ten minutes, so that a slow test does not see gpu-box-1
	// go; laptop-2 has not been heard of for two of its leases.
	active := store.Worker{Name: "gpu-box-1", Host: "gpu-box-1.lan", PID: 4242, Runtimes: []string{"claude", "local"},
		Parallel: 4, LeaseMS: (10 * time.Minute).Milliseconds(), StartedAt: now.Add(-time.Hour), HeartbeatAt: now,
		Running: []string{poolRun.ID}, Done: 17, Failed: 2}
	gone := store.Worker{Name: "laptop-2", Host: "laptop-2", PID: 777,
		Runtimes: []string{"codex"}, Parallel: 2, LeaseMS: (5 * time.Minute).Milliseconds(), StartedAt: now.Add(-3 * time.Hour),
		HeartbeatAt: now.Add(-10 * time.Minute), Running: []string{"run-lost-0001"}, Done: 5}
	ctx := context.Background()
	e := startBrowserEnv(t, func(e *browserEnv) {
		for _, r := range []*record.Run{poolRun, localRun} {
			if err := e.newRun(r).Close(ctx); err != nil {
				e.t.Fatal(err)
			}
		}
		for _, w := range []store.Worker{active, gone} {
			if err := e.writer.SaveWorker(ctx, &w); err != nil {
				e.t.Fatal(err)
			}
		}
	})

	e.open("open /workers", 30*time.Second, e.url+"/workers",
		chromedp.WaitVisible(chromedp.CSS(`table.workers tr[data-name="laptop-2"]`)))
	type workerRow struct {
		Name     string   `json:"name"`
		State    string   `json:"state"`
		Runtimes string   `json:"runtimes"`
		Running  []string `json:"running"`
		Parallel string   `json:"parallel"`
		Done     string   `json:"done"`
		Failed   string   `json:"failed"`
		Beat     string   `json:"beat"`
		Host     string   `json:"host"`
	}
	rows := func() []workerRow {
		t.Helper()
		return eval[[]workerRow](e, `[...document.querySelectorAll('table.workers tbody tr')].map((tr) => ({
			name: tr.dataset.name,
			state: tr.querySelector('td.state').textContent,
			runtimes: tr.querySelector('td.runtimes').textContent,
			running: [...tr.querySelectorAll('td.running a')].map((a) => a.getAttribute('href')),
			parallel: tr.children[4].textContent,
			done: tr.querySelector('td.done').textContent,
			failed: tr.querySelector('td.failed').textContent,
			beat: tr.querySelector('td.beat').textContent,
			host: tr.querySelector('td.host').textContent,
		}))`)
	}
	got := rows()
	if len(got) != 2 {
		t.Fatalf("%d rows, want 2: %+v", len(got), got)
	}
	a, g := got[0], got[1]
	if a.Name != "gpu-box-1" || a.State != "active" || a.Runtimes != "claude, local" || !slices.Equal(a.Running, []string{"/runs/run-pool-0001"}) ||
		a.Parallel != "4" || a.Done != "17" || a.Failed != "2" || !secondsAgo.MatchString(a.Beat) ||
		a.Host != "gpu-box-1.lan · pid 4242" {
		t.Errorf("the active worker's row: %+v", a)
	}
	if g.Name != "laptop-2" || g.State != "gone" || g.Runtimes != "codex" || !slices.Equal(g.Running, []string{"/runs/run-lost-0001"}) ||
		g.Done != "5" || g.Failed != "0" || !strings.HasPrefix(g.Beat, "10m ") || !strings.HasSuffix(g.Beat, " ago") ||
		g.Host != "laptop-2 · pid 777" {
		t.Errorf("the gone worker's row: %+v", g)
	}
	if sum := eval[string](e, `document.querySelector('.workers-sum').textContent`); sum != "2 workers: 1 active, 1 gone · 1 of 4 slots busy" {
		t.Errorf("summary %q", sum)
	}
	if nav := eval[string](e, `document.querySelector('#nav a[aria-current="page"]').textContent`); nav != "Workers" {
		t.Errorf("the nav marks %q", nav)
	}
	text := eval[string](e, `document.getElementById('app').innerText`)
	for _, bad := range []string{"null", "undefined", "NaN", "[object", "Infinity"} {
		if strings.Contains(text, bad) {
			t.Errorf("workers page shows %q:\n%s", bad, text)
		}
	}
	shotCtx, cancelShot := context.WithTimeout(e.ctx, 20*time.Second)
	png, err := chromedp.Run(shotCtx, chromedp.FullScreenshot(100))
	cancelShot()
	if err != nil {
		e.fatal("screenshot", err)
	}
	if *updateScreenshot {
		if err := os.WriteFile(filepath.Join("testdata", "workers.png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote testdata/workers.png (%d bytes)", len(png))
	}

	// What a worker runs links to the run.
	e.do("open a worker's run", 20*time.Second,
		chromedp.Click(chromedp.CSS(`table.workers td.running a[href="/runs/run-pool-0001"]`)),
		chromedp.WaitVisible(chromedp.CSS(`.run-head dl.kv`)))
	if path := eval[string](e, `location.pathname`); path != "/runs/run-pool-0001" {
		t.Fatalf("location %q, want /runs/run-pool-0001", path)
	}
	if kv := eval[string](e, `document.querySelector('.run-head dl.kv').textContent`); !strings.Contains(kv, "Workergpu-box-1") {
		t.Errorf("the run's header does not name its worker: %s", kv)
	}
	e.do("back to the workers", 20*time.Second,
		chromedp.NavigateBack(),
		chromedp.WaitVisible(chromedp.CSS(`table.workers tr[data-name="laptop-2"]`)))

	// The view stays current: laptop-2 heartbeats again (started anew on
	// a machine whose name is markup), gpu-box-1 leaves.
	gone.HeartbeatAt, gone.Running = time.Now().UTC(), []string{}
	gone.Host, gone.PID = `laptop-2 <img src=x onerror="window.__pwned=1">`, 778
	active.StoppedAt, active.Running, active.Done = time.Now().UTC(), []string{}, 18
	for _, w := range []store.Worker{active, gone} {
		if err := e.writer.SaveWorker(ctx, &w); err != nil {
			t.Fatal(err)
		}
	}
	e.do("the workers change", 20*time.Second,
		chromedp.WaitVisible(chromedp.CSS(`table.workers tr[data-name="laptop-2"].w-active`)),
		chromedp.WaitVisible(chromedp.CSS(`table.workers tr[data-name="gpu-box-1"].w-left`)))
	got = rows()
	if got[0].State != "left" || got[0].Done != "18" || len(got[0].Running) != 0 || got[1].State != "active" || len(got[1].Running) != 0 ||
		got[1].Host != gone.Host+" · pid 778" {
		t.Errorf("after the changes: %+v", got)
	}
	if eval[bool](e, `typeof window.__pwned !== 'undefined' || document.images.length > 0`) {
		t.Error("a worker's host became markup")
	}

	// The runs list names the worker of a run, and none for a run started
	// here.
	e.do("the runs list", 20*time.Second,
		chromedp.Click(chromedp.CSS(`#nav a[href="/"]`)),
		chromedp.WaitVisible(chromedp.CSS(`table.runs tr[data-id="run-here-0001"]`)))
	type runRow struct {
		ID     string `json:"id"`
		Worker string `json:"worker"`
		Head   string `json:"head"`
	}
	runs := eval[[]runRow](e, `[...document.querySelectorAll('table.runs tbody tr')].map((tr) => ({
		id: tr.dataset.id,
		worker: tr.querySelector('td.worker').textContent,
		head: document.querySelector('table.runs thead th:nth-child(' + (tr.querySelector('td.worker').cellIndex + 1) + ')').textContent,
	}))`)
	if want := []runRow{{"run-pool-0001", "gpu-box-1", "Worker"}, {"run-here-0001", "", "Worker"}}; !slices.Equal(runs, want) {
		t.Errorf("runs list %+v, want %+v", runs, want)
	}
	e.do("from a run's worker to the workers", 20*time.Second,
		chromedp.Click(chromedp.CSS(`table.runs tr[data-id="run-pool-0001"] td.worker a`)),
		chromedp.WaitVisible(chromedp.CSS(`table.workers tr[data-name="gpu-box-1"]`)))
}

// TestBrowserPoolBench opens a bench run by the pool of workers: the list
// and the bench say how many attempts wait in the queue, the grid marks
// them queued and names the worker of each attempt, and a table counts
// what each worker ran.
func TestBrowserPoolBench(t *testing.T) {
	t0 := time.Now().Add(-time.Hour).UTC().Truncate(time.Second)
	b, as := poolBench("p-0001-pool", t0)
	e := startBrowserEnv(t, func(e *browserEnv) { recordBench(e.t, e.writer, b, as) })

	row := `table.benches tr[data-id="p-0001-pool"]`
	e.open("open /bench", 30*time.Second, e.url+"/bench",
		chromedp.WaitVisible(chromedp.CSS(row)))
	if got := eval[string](e, `document.querySelector('`+row+`').textContent`); !strings.Contains(got, "pool") ||
		!strings.Contains(got, "3 / 12 (1 running, 7 queued)") {
		t.Errorf("pool bench row %q lacks its pool badge or its queue", got)
	}

	e.do("open the bench", 30*time.Second,
		chromedp.Click(chromedp.CSS(row+` td.name a`)),
		chromedp.WaitVisible(chromedp.CSS(`table.bench-grid tbody tr`)),
		chromedp.WaitVisible(chromedp.CSS(`table.bench-workers tbody tr`)))
	if got := eval[string](e, `document.querySelector('.run-head .queue-count').textContent`); got != "7 attempts waiting in the queue" {
		t.Errorf("the head says %q of the queue", got)
	}
	type cell struct {
		Queued  string   `json:"queued"`
		Pills   []string `json:"pills"`   // the class a- of each attempt, by number
		Workers []string `json:"workers"` // the worker of each, "" for none
		Title   string   `json:"title"`   // the first one's
	}
	cellOf := func(task, model string) cell {
		t.Helper()
		sel := fmt.Sprintf(`table.bench-grid tr[data-task=%q] td[data-model=%q]`, task, model)
		return eval[cell](e, `(() => {
			const td = document.querySelector('`+sel+`');
			const pills = [...td.querySelectorAll('.att .pill')];
			return {
				queued: td.querySelector('.queued')?.textContent ?? '',
				pills: pills.map((p) => [...p.classList].filter((c) => c.startsWith('a-')).join(' ')),
				workers: pills.map((p) => p.dataset.worker ?? ''),
				title: pills[0].getAttribute('title'),
			};
		})()`)
	}
	if got := cellOf("t1", "sonnet"); got.Queued != "" || !slices.Equal(got.Pills, []string{"a-passed", "a-failed", "a-running"}) ||
		!slices.Equal(got.Workers, []string{"gpu-box-1", "laptop-2", "gpu-box-1"}) || !strings.Contains(got.Title, "#1 passed · on gpu-box-1") {
		t.Errorf("t1 × sonnet: %+v", got)
	}
	if got := cellOf("t2", "haiku"); got.Queued != "3 queued" || !slices.Equal(got.Pills, []string{"a-pending a-queued", "a-pending a-queued", "a-pending a-queued"}) ||
		!slices.Equal(got.Workers, []string{"", "", ""}) || !strings.Contains(got.Title, "#1 queued, waiting for a worker") {
		t.Errorf("t2 × haiku: %+v", got)
	}
	if got := cellOf("t1", "haiku"); got.Queued != "2 queued" || !slices.Equal(got.Workers, []string{"laptop-2", "", ""}) {
		t.Errorf("t1 × haiku: %+v", got)
	}
	workers := eval[[]string](e, `[...document.querySelectorAll('table.bench-workers tbody tr')].map((tr) =>
		[...tr.children].slice(0, 4).map((td) => td.textContent).join(' '))`)
	if want := []string{"gpu-box-1 2 0 1", "laptop-2 1 1 0"}; !slices.Equal(workers, want) {
		t.Errorf("where the attempts ran: %v, want %v", workers, want)
	}
	if got := eval[string](e, `document.querySelector('table.bench-failures td.worker').textContent`); got != "laptop-2" {
		t.Errorf("the failed attempt's worker: %q", got)
	}
	text := eval[string](e, `document.getElementById('app').innerText`)
	for _, bad := range []string{"null", "undefined", "NaN", "[object", "Infinity"} {
		if strings.Contains(text, bad) {
			t.Errorf("pool bench page shows %q:\n%s", bad, text)
		}
	}

	shotCtx, cancelShot := context.WithTimeout(e.ctx, 20*time.Second)
	png, err := chromedp.Run(shotCtx, chromedp.FullScreenshot(100))
	cancelShot()
	if err != nil {
		e.fatal("screenshot", err)
	}
	if *updateScreenshot {
		if err := os.WriteFile(filepath.Join("testdata", "bench-pool.png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote testdata/bench-pool.png (%d bytes)", len(png))
	}

	// A worker takes an attempt from the queue; the page follows.
	taken := att("t2", "haiku", 1, record.AttemptRunning)
	taken.BenchID, taken.Worker, taken.RunID = b.ID, "laptop-2", "run-haiku-t2-1"
	pid, start := selfOwner(t)
	if err := e.writer.CreateRun(context.Background(), &record.Run{ID: taken.RunID, Status: record.StatusRunning, Runtime: "claude",
		Model: "haiku", Dir: "/work/bench/t2", Prompt: "task t2", StartedAt: time.Now().UTC(), OwnerPID: pid, OwnerStart: start,
		Worker: "laptop-2"}); err != nil {
		t.Fatal(err)
	}
	if err := e.writer.SaveAttempt(context.Background(), &taken); err != nil {
		t.Fatal(err)
	}
	e.do("the attempt leaves the queue", 20*time.Second,
		chromedp.WaitVisible(chromedp.CSS(`table.bench-grid tr[data-task="t2"] td[data-model="haiku"] a.a-running[data-worker="laptop-2"]`)))
	if got := eval[string](e, `document.querySelector('.run-head .queue-count').textContent`); got != "6 attempts waiting in the queue" {
		t.Errorf("after one was taken the head says %q", got)
	}
	if got := cellOf("t2", "haiku"); got.Queued != "2 queued" {
		t.Errorf("t2 × haiku after one was taken: %+v", got)
	}
}

// TestBrowserLongTrace measures (logs, does not assert) how long the page
// takes to show a 20,000-event trace.
func TestBrowserLongTrace(t *testing.T) {
	if testing.Short() {
		t.Skip("long trace: skipped in -short")
	}
	const n int64 = 20000
	var run *record.Run
	e := startBrowserEnv(t, func(e *browserEnv) { run = writeLongTrace(e, n) })
	began := time.Now()
	e.open("show the first events", 60*time.Second, e.url+"/runs/"+run.ID,
		chromedp.WaitReady(chromedp.CSS(seqSel(1))))
	first := time.Since(began)
	e.do("show 20k events", 120*time.Second, chromedp.WaitReady(chromedp.CSS(seqSel(n))))
	shown := time.Since(began)
	nodes := eval[int](e, `document.getElementsByTagName('*').length`)
	scrolled := eval[float64](e, `(async () => {
		const t0 = performance.now();
		scrollTo(0, document.documentElement.scrollHeight);
		await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
		return performance.now() - t0;
	})()`, chromedp.EvalAwaitPromise)
	t.Logf("%d-event trace: first event shown %v after navigation, the last %v; %d DOM elements; jump to the end painted in %.0fms",
		n, first.Round(time.Millisecond), shown.Round(time.Millisecond), nodes, scrolled)
}

// writeLongTrace records a finished run of n events: text, a Bash call, its
// result and thinking, over and over; the last event is text.
func writeLongTrace(e *browserEnv, n int64) *record.Run {
	start := time.Now().Add(-time.Hour)
	run := &record.Run{
		Status: record.StatusSucceeded, Runtime: "claude", Model: "opus", Dir: "/work/big",
		Prompt: "a very long session", StartedAt: start, EndedAt: start.Add(time.Hour), DurationMS: 3600_000,
	}
	w := e.newRun(run)
	input := json.RawMessage(`{"command":"go test ./..."}`)
	for seq := int64(1); seq <= n; seq++ {
		ev := record.Event{Seq: seq, Time: start.Add(time.Duration(seq) * 150 * time.Millisecond)}
		id := fmt.Sprintf("toolu_%d", seq/4)
		switch seq % 4 {
		case 1:
			ev.Kind, ev.Text = record.KindText, fmt.Sprintf("Step %d: running the **tests** again with `go test`.", seq)
		case 2:
			ev.Kind, ev.ToolUseID, ev.ToolName, ev.Input = record.KindToolCall, id, "Bash", input
		case 3:
			ev.Kind, ev.ToolUseID, ev.Output = record.KindToolResult, id, strings.Repeat(fmt.Sprintf("ok  lane/pkg%d 0.%03ds\n", seq, seq%1000), 8)
		case 0:
			ev.Kind, ev.Text = record.KindThinking, "Thinking about what failed and why."
		}
		if seq == n {
			ev.Kind, ev.Text = record.KindText, "The last word."
		}
		if err := w.Write(ev); err != nil {
			e.t.Fatal(err)
		}
	}
	if err := w.Close(context.Background()); err != nil {
		e.t.Fatal(err)
	}
	return run
}

// TestBrowserApprovals follows a live run that asks for a person: its
// requests show at the top of its page, escaped, and leave it once
// answered here (the store records the answer) or elsewhere; the runs list
// marks the run, the tab's title counts the requests, a notification
// announces a new one; the message box and Interrupt queue steering in the
// store; the trace shows requests, decisions, messages and interrupts.
func TestBrowserApprovals(t *testing.T) {
	e := startBrowserEnv(t, nil)
	ctx := context.Background()
	now := time.Now()
	run := &record.Run{Status: record.StatusRunning, Runtime: "claude", Model: "sonnet", Dir: "/work/demo",
		Prompt: "clean the build", StartedAt: now, Capability: record.Capability{Dir: "/work/demo", Steer: steerAll}}
	w := e.newRun(run)
	defer w.Close(ctx)
	write(t, w, record.Event{Seq: 1, Time: now, Kind: record.KindText, Text: "I'll clean up."})

	e.open("open the run", 30*time.Second, e.url+"/runs/"+run.ID,
		chromedp.WaitVisible(chromedp.CSS(`.run-head dl.kv`)),
		chromedp.WaitVisible(chromedp.CSS(`section.steer textarea`)),
		chromedp.WaitReady(chromedp.CSS(seqSel(1))))
	if n := eval[int](e, `document.querySelectorAll('section.asks .ask').length`); n != 0 {
		t.Fatalf("%d requests shown before any was made", n)
	}
	// The browser's notifications, as a person who allows them when asked.
	eval[bool](e, `(() => {
		window.__notes = [];
		window.Notification = class {
			static permission = 'default';
			static async requestPermission() { this.permission = 'granted'; return 'granted'; }
			constructor(title, opts) { window.__notes.push({title, body: opts.body, tag: opts.tag}); }
		};
		return true;
	})()`)
	e.do("turn notifications on", 10*time.Second,
		chromedp.Click(chromedp.CSS(`#notify`)),
		chromedp.WaitVisible(chromedp.CSS(`#notify[aria-pressed="true"]`)))

	// A request whose every field is markup.
	input, _ := json.Marshal(map[string]string{"command": hostile, "description": "clean"})
	ask := func(tool, summary string, in json.RawMessage) store.Approval {
		t.Helper()
		a, err := e.writer.OpenApproval(ctx, store.Approval{RunID: run.ID, ToolUseID: "toolu_" + tool, Tool: tool, Summary: summary,
			Dir: `/work/<b>demo</b>`, Input: in, AskedAt: time.Now().UTC(), Deadline: time.Now().Add(10 * time.Minute).UTC()})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	a := ask("Bash", hostile, input)
	// The run's side: its desk waits for the answer, as lane run does.
	answered := make(chan approval.Decision, 1)
	go func() {
		d, err := dbdesk.New(e.writer, dbdesk.Options{}).Wait(ctx, approval.Request{ID: a.ID, AskedAt: a.AskedAt, Deadline: a.Deadline})
		if err != nil {
			t.Error(err)
		}
		answered <- d
	}()
	card := fmt.Sprintf(`section.asks .ask[data-id=%q]`, a.ID)
	e.do("the request appears", 20*time.Second, chromedp.WaitVisible(chromedp.CSS(card+` button.allow`)))
	type shown struct {
		Tool, Sum, Dir, Input, Meta, Title, Waiting string
		Notes                                       []struct{ Title, Body string }
	}
	got := eval[shown](e, `(() => {
		const c = document.querySelector('`+card+`');
		return {
			Tool: c.querySelector('.ask-tool').textContent, Sum: c.querySelector('.ask-sum').textContent,
			Dir: c.querySelector('.ask-dir').textContent, Input: c.querySelector('.ask-input').textContent,
			Meta: c.querySelector('.ask-meta').textContent, Title: document.title,
			Waiting: document.getElementById('waiting').textContent, Notes: window.__notes,
		};
	})()`)
	if got.Tool != "Bash" || got.Sum != hostile || got.Dir != `/work/<b>demo</b>` || !strings.Contains(got.Input, `"command": "<img src=x onerror=\"window.__pwned=1\"><script>`) {
		t.Errorf("the request shows as %+v", got)
	}
	if !strings.Contains(got.Meta, "waiting ") || !strings.Contains(got.Meta, "denied in 9m") {
		t.Errorf("its wait and deadline: %q", got.Meta)
	}
	if !strings.HasPrefix(got.Title, "(1) lane") || got.Waiting != "1 request waits for you" {
		t.Errorf("title %q, top bar %q", got.Title, got.Waiting)
	}
	if len(got.Notes) != 1 || got.Notes[0].Title != "lane: Bash waits for your approval" || !strings.Contains(got.Notes[0].Body, hostile) {
		t.Errorf("notifications %+v, want one for the request", got.Notes)
	}
	type safety struct {
		Pwned   bool `json:"pwned"`
		Scripts int  `json:"scripts"`
		Marks   int  `json:"marks"`
	}
	if s := eval[safety](e, `({pwned: typeof window.__pwned !== 'undefined', scripts: document.scripts.length,
		marks: document.querySelectorAll('img, b, #app script').length})`); s.Pwned || s.Scripts != 1 || s.Marks != 0 {
		t.Errorf("the request became markup: %+v", s)
	}

	// Allow: the store has the answer, the request leaves the top.
	e.do("allow", 20*time.Second,
		chromedp.Click(chromedp.CSS(card+` button.allow`)),
		chromedp.WaitNotPresent(chromedp.CSS(card)))
	if s, err := e.writer.GetApproval(ctx, a.ID); err != nil || !s.Allow || s.Always || s.By != "dashboard" || s.Pending() {
		t.Errorf("after Allow the store has %+v (%v)", s, err)
	}
	select {
	case d := <-answered:
		if !d.Allow || d.By != approval.ByDashboard {
			t.Errorf("the run was answered %+v", d)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the run never got the dashboard's answer")
	}
	if title := eval[string](e, `document.title`); strings.HasPrefix(title, "(") {
		t.Errorf("title %q after the answer", title)
	}

	// Deny with a message, and Always for the run.
	b := ask("Write", "/etc/hosts", json.RawMessage(`{"file_path":"/etc/hosts"}`))
	c := ask("Read", "go.mod", json.RawMessage(`{"file_path":"go.mod"}`))
	bCard, cCard := fmt.Sprintf(`section.asks .ask[data-id=%q]`, b.ID), fmt.Sprintf(`section.asks .ask[data-id=%q]`, c.ID)
	e.do("two requests", 20*time.Second,
		chromedp.WaitVisible(chromedp.CSS(bCard+` button.deny`)),
		chromedp.WaitVisible(chromedp.CSS(cCard+` button.always`)))
	if title := eval[string](e, `document.title`); !strings.HasPrefix(title, "(2) lane") {
		t.Errorf("title %q with two requests", title)
	}
	if *updateScreenshot {
		shotCtx, cancelShot := context.WithTimeout(e.ctx, 20*time.Second)
		png, err := chromedp.Run(shotCtx, chromedp.CaptureScreenshot())
		cancelShot()
		if err != nil {
			e.fatal("screenshot", err)
		}
		if err := os.WriteFile(filepath.Join("testdata", "approvals.png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote testdata/approvals.png (%d bytes)", len(png))
	}
	e.do("deny with a message", 20*time.Second,
		chromedp.SetValue(chromedp.CSS(bCard+` input.ask-msg`), "not outside the repo"),
		chromedp.Click(chromedp.CSS(bCard+` button.deny`)),
		chromedp.WaitNotPresent(chromedp.CSS(bCard)),
		chromedp.Click(chromedp.CSS(cCard+` button.always`)),
		chromedp.WaitNotPresent(chromedp.CSS(cCard)))
	if s, _ := e.writer.GetApproval(ctx, b.ID); s.Allow || s.Message != "not outside the repo" || s.By != "dashboard" {
		t.Errorf("after Deny the store has %+v", s)
	}
	if s, _ := e.writer.GetApproval(ctx, c.ID); !s.Allow || !s.Always || s.By != "dashboard" {
		t.Errorf("after Always the store has %+v", s)
	}

	// Answered in the run's terminal: it leaves the page too.
	d := ask("Bash", "git push", json.RawMessage(`{"command":"git push"}`))
	dCard := fmt.Sprintf(`section.asks .ask[data-id=%q]`, d.ID)
	e.do("another request", 20*time.Second, chromedp.WaitVisible(chromedp.CSS(dCard)))
	if _, err := e.writer.DecideApproval(ctx, d.ID, store.Answer{By: "terminal"}); err != nil {
		t.Fatal(err)
	}
	e.do("answered elsewhere", 20*time.Second, chromedp.WaitNotPresent(chromedp.CSS(dCard)))

	// The trace shows what the run's gate records.
	write(t, w,
		record.Event{Seq: 2, Time: now.Add(time.Second), Kind: record.KindPermissionRequest, ToolUseID: "toolu_Bash", ToolName: "Bash",
			Input: input, Permission: &record.Permission{ID: a.ID, Summary: hostile}},
		record.Event{Seq: 3, Time: now.Add(4 * time.Second), Kind: record.KindPermissionDecision, ToolUseID: "toolu_Bash",
			Permission: &record.Permission{ID: a.ID, Allow: true, By: "dashboard", WaitedMS: 3000}},
		record.Event{Seq: 4, Time: now.Add(5 * time.Second), Kind: record.KindPermissionDecision, ToolName: "Write",
			Permission: &record.Permission{ID: b.ID, By: "dashboard", Message: "not <i>outside</i> the repo", WaitedMS: 61000}},
		record.Event{Seq: 5, Time: now.Add(6 * time.Second), Kind: record.KindUserMessage, Text: "then run <b>the tests</b>", By: "dashboard"},
		record.Event{Seq: 6, Time: now.Add(7 * time.Second), Kind: record.KindInterrupt, By: "cli"},
	)
	e.do("the trace shows them", 20*time.Second, chromedp.WaitVisible(chromedp.CSS(seqSel(6))))
	texts := eval[[]string](e, `[2, 3, 4, 5, 6].map((n) => document.querySelector('.timeline [data-seq="' + n + '"] .body').textContent)`)
	want := []string{
		"asks approvalBash " + hostile,
		"allowedBash in the dashboard after 3.0s",
		"deniedWrite in the dashboard after 1m 01snot <i>outside</i> the repo",
		"messagefrom the dashboardthen run <b>the tests</b>",
		"interruptedthe turn was stopped from the command line",
	}
	for i := range want {
		if i >= len(texts) || !strings.HasPrefix(texts[i], want[i]) {
			t.Errorf("event %d shows %q, want %q", i+2, texts[i], want[i])
		}
	}
	if s := eval[safety](e, `({pwned: typeof window.__pwned !== 'undefined', scripts: document.scripts.length,
		marks: document.querySelectorAll('img, b, i, #app script').length})`); s.Pwned || s.Scripts != 1 || s.Marks != 0 {
		t.Errorf("the trace's requests became markup: %+v", s)
	}

	// The message box and Interrupt queue steering for the run's process.
	e.do("queue a message, send one now, interrupt", 20*time.Second,
		chromedp.SetValue(chromedp.CSS(`section.steer textarea`), "and update the changelog"),
		chromedp.Click(chromedp.CSS(`section.steer button.send-queued`)),
		chromedp.WaitVisible(chromedp.CSS(`section.steer .steer-note .sent[data-now="false"]`)),
		chromedp.SetValue(chromedp.CSS(`section.steer textarea`), "stop, use make clean"),
		chromedp.Click(chromedp.CSS(`section.steer button.send-now`)),
		chromedp.WaitVisible(chromedp.CSS(`section.steer .steer-note .sent[data-now="true"]`)),
		chromedp.Click(chromedp.CSS(`.run-head button.interrupt`)),
		chromedp.WaitVisible(chromedp.CSS(`.run-head .action-note`)))
	// Each note shows once the server has answered, after the store committed.
	steersOf := func() []string {
		t.Helper()
		st, err := e.writer.UndeliveredSteers(ctx, run.ID)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, s := range st {
			out = append(out, fmt.Sprintf("%s %q now=%v from %s", s.Kind, s.Text, s.Now, s.From))
		}
		return out
	}
	if got, want := steersOf(), []string{
		`message "and update the changelog" now=false from dashboard`,
		`message "stop, use make clean" now=true from dashboard`,
		`interrupt "" now=false from dashboard`,
	}; !slices.Equal(got, want) {
		t.Errorf("steering queued %v, want %v", got, want)
	}

	// The runs list marks a run that waits.
	f := ask("Bash", "rm -rf dist", json.RawMessage(`{"command":"rm -rf dist"}`))
	row := fmt.Sprintf(`table.runs tr[data-id=%q]`, run.ID)
	e.do("the runs list", 20*time.Second,
		chromedp.Click(chromedp.CSS(`#nav a[href="/"]`)),
		chromedp.WaitVisible(chromedp.CSS(row+`.waits td.status-cell a.waiting`)))
	if got := eval[string](e, `document.querySelector('`+row+` a.waiting').textContent`); got != "waits for you" {
		t.Errorf("the row says %q", got)
	}
	if n := eval[int](e, `window.__notes.length`); n != 5 {
		t.Errorf("%d notifications, want one for each of the 5 requests", n)
	}
	if _, err := e.writer.DecideApproval(ctx, f.ID, store.Answer{By: "cli", Allow: true}); err != nil {
		t.Fatal(err)
	}
	e.do("the mark goes", 20*time.Second, chromedp.WaitNotPresent(chromedp.CSS(row+` a.waiting`)))

	// A run lane drives one way takes a cancel, and says why it takes no
	// message.
	oneWay := &record.Run{Status: record.StatusRunning, Runtime: "gemini", Model: "gemini-2.5-pro", Dir: "/work/demo",
		Prompt: "one way", StartedAt: time.Now(), Capability: record.Capability{Steer: []string{"cancel"}}}
	if err := e.newRun(oneWay).Close(ctx); err != nil {
		t.Fatal(err)
	}
	e.open("a one-way run", 20*time.Second, e.url+"/runs/"+oneWay.ID,
		chromedp.WaitVisible(chromedp.CSS(`section.steer .steer-deaf`)))
	type oneWayPage struct {
		Deaf      string `json:"deaf"`
		Form      bool   `json:"form"`
		Interrupt int    `json:"interrupt"`
		Cancel    bool   `json:"cancel"`
	}
	if got := eval[oneWayPage](e, `({deaf: document.querySelector('.steer-deaf').textContent,
		form: !!document.querySelector('section.steer form').offsetParent,
		interrupt: document.querySelectorAll('.run-head button.interrupt').length,
		cancel: !document.querySelector('.run-head button.danger').disabled})`); !strings.Contains(got.Deaf, "takes no messages while it runs (lane drives gemini one way)") ||
		!strings.Contains(got.Deaf, "lane resume "+oneWay.ID) || got.Form || got.Interrupt != 0 || !got.Cancel {
		t.Errorf("a one-way run's page: %+v", got)
	}
	e.do("back to the runs", 20*time.Second, chromedp.Click(chromedp.CSS(`#nav a[href="/"]`)), chromedp.WaitVisible(chromedp.CSS(`table.runs`)))

	// The run ends: no message box, no requests.
	run.Status, run.EndedAt = record.StatusSucceeded, time.Now()
	if err := e.writer.UpdateRun(ctx, run); err != nil {
		t.Fatal(err)
	}
	// The list redraws the row as the run ends: click the row as it is
	// then, not the one it replaces.
	e.do("back to the ended run", 20*time.Second,
		chromedp.WaitVisible(chromedp.CSS(row+` .st-succeeded`)),
		chromedp.Click(chromedp.CSS(row+` td.prompt a`)),
		chromedp.WaitVisible(chromedp.CSS(`.run-head h1 .st-succeeded`)),
		chromedp.WaitNotVisible(chromedp.CSS(`section.steer`)))
	if n := eval[int](e, `document.querySelectorAll('.run-head button.interrupt, .run-head button.danger').length`); n != 0 {
		t.Errorf("%d run buttons on an ended run", n)
	}
}

// A bench of Harbor tasks shows each model's mean reward, one of several
// tries (the polyglot benchmark's) the pass rate after each try; the
// errors of a task are counted apart and shown as what they are.
func TestBrowserBenchRewardsAndTries(t *testing.T) {
	t0 := time.Now().Add(-time.Hour).UTC().Truncate(time.Second)
	reward := func(v float64) *float64 { return &v }
	e := startBrowserEnv(t, func(e *browserEnv) {
		harbor := &record.Bench{ID: "b-0010-harbor", Name: "terminal-bench", Models: []string{"oracle", "sonnet"},
			Repeat: 1, Parallel: 1, Status: record.StatusSucceeded, StartedAt: t0, EndedAt: t0.Add(time.Minute)}
		var as []record.Attempt
		for _, c := range []struct {
			task, model string
			status      record.AttemptStatus
			reward      *float64
			kind        string
		}{
			{"h1", "oracle", record.AttemptPassed, reward(1), ""},
			{"h2", "oracle", record.AttemptPassed, reward(1), ""},
			{"h3", "oracle", record.AttemptErrored, nil, "no_reward"},
			{"h1", "sonnet", record.AttemptPassed, reward(1), ""},
			{"h2", "sonnet", record.AttemptFailed, reward(0.5), "reward_below_pass"},
			{"h3", "sonnet", record.AttemptErrored, nil, "no_reward"},
		} {
			a := att(c.task, c.model, 1, c.status)
			a.Reward, a.FailureKind = c.reward, c.kind
			if c.model == "sonnet" && c.reward != nil {
				a.Rewards = map[string]float64{"reward": *c.reward, "style": 1 - *c.reward}
			}
			as = append(as, a)
		}
		recordBench(e.t, e.writer, harbor, as)

		poly := &record.Bench{ID: "b-0011-polyglot", Name: "polyglot", Models: []string{"sonnet"},
			Repeat: 1, Parallel: 1, Status: record.StatusSucceeded, StartedAt: t0, EndedAt: t0.Add(time.Minute)}
		as = nil
		for i, c := range []struct {
			status record.AttemptStatus
			tries  int
		}{{record.AttemptPassed, 1}, {record.AttemptPassed, 2}, {record.AttemptFailed, 2}, {record.AttemptFailed, 2}} {
			a := att(fmt.Sprintf("p%d", i+1), "sonnet", 1, c.status)
			a.Tries = c.tries
			as = append(as, a)
		}
		recordBench(e.t, e.writer, poly, as)
	})

	type column struct {
		Heads []string            `json:"heads"`
		Rows  map[string][]string `json:"rows"`
	}
	table := func() column {
		return eval[column](e, `(() => {
			const heads = [...document.querySelectorAll('table.bench-models thead th')].map((th) => th.textContent);
			const rows = {};
			for (const tr of document.querySelectorAll('table.bench-models tbody tr'))
				rows[tr.dataset.model] = [...tr.children].map((td) => td.textContent);
			return { heads, rows };
		})()`)
	}
	cellOf := func(c column, model, head string) string {
		i := slices.Index(c.Heads, head)
		if i < 0 || i >= len(c.Rows[model]) {
			return fmt.Sprintf("(no column %q in %v)", head, c.Heads)
		}
		return c.Rows[model][i]
	}

	e.open("open the Harbor bench", 30*time.Second, e.url+"/bench/b-0010-harbor",
		chromedp.WaitVisible(chromedp.CSS(`table.bench-models tbody tr[data-model="sonnet"]`)))
	got := table()
	for _, want := range []struct{ model, head, text string }{
		{"oracle", "Mean reward", "1"},
		{"sonnet", "Mean reward", "0.75 (reward 0.75, style 0.25)"},
		{"oracle", "Passed", "2 / 2 (1 errors of the task)"},
		{"sonnet", "Passed", "1 / 2 (1 errors of the task)"},
	} {
		if c := cellOf(got, want.model, want.head); c != want.text {
			t.Errorf("%s, %s: %q, want %q", want.model, want.head, c, want.text)
		}
	}
	if slices.ContainsFunc(got.Heads, func(h string) bool { return strings.HasPrefix(h, "After try") }) {
		t.Errorf("columns %v: tries shown for a bench of one try each", got.Heads)
	}
	errored := `table.bench-grid tr[data-task="h3"] td[data-model="sonnet"] a.a-errored`
	if title := eval[string](e, `document.querySelector('`+errored+`')?.title ?? 'none'`); !strings.Contains(title, "an error of the task or its environment") || !strings.Contains(title, "no_reward") {
		t.Errorf("errored attempt's title %q, want it named an error of the task, no_reward", title)
	}

	failed := `table.bench-grid tr[data-task="h2"] td[data-model="sonnet"] a.a-failed`
	if title := eval[string](e, `document.querySelector('`+failed+`')?.title ?? 'none'`); !strings.Contains(title, "reward 0.5 · reward 0.5, style 0.5") {
		t.Errorf("failed attempt's title %q, want its reward 0.5 and its keys", title)
	}

	e.open("open the polyglot bench", 30*time.Second, e.url+"/bench/b-0011-polyglot",
		chromedp.WaitVisible(chromedp.CSS(`table.bench-models tbody tr[data-model="sonnet"]`)))
	got = table()
	if a, b := cellOf(got, "sonnet", "After try 1"), cellOf(got, "sonnet", "After try 2"); a != "25%" || b != "50%" {
		t.Errorf("after try 1 %q, after try 2 %q, want 25%% and 50%%", a, b)
	}
	if slices.Contains(got.Heads, "Mean reward") {
		t.Errorf("columns %v: a mean reward for a bench without rewards", got.Heads)
	}
}
