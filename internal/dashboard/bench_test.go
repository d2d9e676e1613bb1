package dashboard

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lanehq/lane/internal/bench"
	"github.com/lanehq/lane/internal/record"
	"github.com/lanehq/lane/internal/store"
)

// att is an attempt of the bench the tests record; a passed or failed one
// has a run (see recordBench).
func att(task, model string, n int, status record.AttemptStatus) record.Attempt {
	a := record.Attempt{TaskID: task, Model: model, N: n, Status: status}
	if status != record.AttemptPending && status != record.AttemptSkipped {
		a.RunID = fmt.Sprintf("run-%s-%s-%d", model, task, n)
	}
	if status == record.AttemptFailed {
		a.FailureKind, a.CheckExitCode, a.CheckOutput = "check_failed", 1, "FAIL: expected 3, got 4"
	}
	return a
}

// recordBench records b, a run for every attempt with a run id (finished
// unless the attempt runs), then the attempts, as `lane bench` would.
func recordBench(t testing.TB, st *store.Store, b *record.Bench, attempts []record.Attempt) {
	t.Helper()
	ctx := context.Background()
	if err := st.CreateBench(ctx, b); err != nil {
		t.Fatal(err)
	}
	pid, start := selfOwner(t)
	for i := range attempts {
		a := &attempts[i]
		a.BenchID = b.ID
		if a.StartedAt.IsZero() && (a.RunID != "" || a.Status != record.AttemptPending && a.Status != record.AttemptSkipped) {
			a.StartedAt = b.StartedAt.Add(time.Duration(i) * time.Second)
		}
		if a.RunID == "" {
			continue
		}
		r := &record.Run{ID: a.RunID, Runtime: "claude", Model: a.Model, Dir: "/work/bench/" + a.TaskID,
			Prompt: "task " + a.TaskID, StartedAt: a.StartedAt, CostUSD: a.CostUSD, Usage: a.Usage,
			DurationMS: a.DurationMS, Turns: a.Turns, ToolCalls: a.ToolCalls, Worker: a.Worker}
		end := a.StartedAt.Add(time.Duration(a.DurationMS) * time.Millisecond)
		switch {
		case a.Status == record.AttemptRunning:
			r.Status, r.OwnerPID, r.OwnerStart = record.StatusRunning, pid, start
		case a.FailureKind == "cancelled":
			r.Status, r.EndedAt = record.StatusCancelled, end
		case a.Status == record.AttemptFailed:
			r.Status, r.EndedAt = record.StatusFailed, end
		default:
			r.Status, r.EndedAt = record.StatusSucceeded, end
		}
		if err := st.CreateRun(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	for i := range attempts {
		if err := st.SaveAttempt(ctx, &attempts[i]); err != nil {
			t.Fatal(err)
		}
	}
}

// demoAttempts are the attempts of the bench the tests look at:
//   - sonnet: 7 of 10 finished (t1 4/5, t2 3/5), $0.10 each, durations
//     1..10 s; one more (t3) cut short by the bench's end: pending again,
//     with its run and $0.05 of cost, as `lane bench` leaves it;
//   - opus: t1 2/2, t2 one failed, one running, one pending;
//   - haiku: skipped (the budget ran out);
//   - qwen, not among the bench's models: t1 1/1.
func demoAttempts() []record.Attempt {
	var as []record.Attempt
	u := record.Usage{InputTokens: 100, OutputTokens: 10, CacheReadTokens: 1000, CacheCreationTokens: 1}
	pass := map[string][]bool{"t1": {true, true, true, true, false}, "t2": {true, false, true, true, false}}
	d := int64(0)
	for _, task := range []string{"t1", "t2"} {
		if task == "t1" {
			as = append(as, att(task, "opus", 1, record.AttemptPassed))
		} else {
			as = append(as, att(task, "opus", 1, record.AttemptFailed))
		}
		for n, ok := range pass[task] {
			st := record.AttemptFailed
			if ok {
				st = record.AttemptPassed
			}
			a := att(task, "sonnet", n+1, st)
			d += 1000
			a.CostUSD, a.DurationMS, a.Usage, a.Turns, a.ToolCalls = 0.10, d, u, 3, 5
			as = append(as, a)
		}
	}
	as[0].CostUSD, as[0].DurationMS = 0.5, 40_000
	opus2 := att("t1", "opus", 2, record.AttemptPassed)
	opus2.DurationMS = 20_000
	as = append(as,
		opus2,
		att("t2", "opus", 2, record.AttemptRunning),
		att("t2", "opus", 3, record.AttemptPending),
		att("t1", "haiku", 1, record.AttemptSkipped),
		att("t2", "haiku", 1, record.AttemptSkipped),
		att("t1", "qwen", 1, record.AttemptPassed),
	)
	cancelled := att("t3", "sonnet", 1, record.AttemptPending)
	cancelled.RunID, cancelled.FailureKind = "run-sonnet-t3-1", "cancelled"
	cancelled.CostUSD, cancelled.DurationMS, cancelled.Usage = 0.05, 99_999, u
	as = append(as, cancelled)
	for i := range as {
		if as[i].Model == "qwen" {
			as[i].CostUSD, as[i].DurationMS, as[i].Usage = 0.02, 12_000, record.Usage{InputTokens: 900, OutputTokens: 300}
		}
		if as[i].Model == "opus" && as[i].Status == record.AttemptFailed {
			as[i].CostUSD, as[i].DurationMS = 0.7, 60_000
		}
	}
	return as
}

// poolBench is a bench run by the pool of workers, under way: of its 12
// attempts gpu-box-1 ran three (one still running), laptop-2 two (one
// failed), and seven wait in the queue.
func poolBench(id string, started time.Time) (*record.Bench, []record.Attempt) {
	b := &record.Bench{ID: id, Name: "pool suite", SuitePath: "/work/bench/pool.yaml", Models: []string{"sonnet", "haiku"},
		Repeat: 3, Parallel: 1, Status: record.StatusRunning, StartedAt: started, Workers: true,
		Suite: []byte(`{"name":"pool","tasks":[{"id":"t1"},{"id":"t2"}]}`)}
	var as []record.Attempt
	for _, task := range []string{"t1", "t2"} {
		for _, model := range b.Models {
			for n := 1; n <= 3; n++ {
				as = append(as, att(task, model, n, record.AttemptPending))
			}
		}
	}
	ran := func(i int, status record.AttemptStatus, worker string) {
		a := att(as[i].TaskID, as[i].Model, as[i].N, status)
		a.Worker = worker
		if status != record.AttemptRunning {
			a.CostUSD, a.DurationMS = 0.25, 30_000
		}
		as[i] = a
	}
	ran(0, record.AttemptPassed, "gpu-box-1")  // t1 sonnet 1
	ran(1, record.AttemptFailed, "laptop-2")   // t1 sonnet 2
	ran(2, record.AttemptRunning, "gpu-box-1") // t1 sonnet 3
	ran(3, record.AttemptPassed, "laptop-2")   // t1 haiku 1
	ran(6, record.AttemptPassed, "gpu-box-1")  // t2 sonnet 1
	return b, as
}

func demoBench(id string, started time.Time) *record.Bench {
	return &record.Bench{ID: id, Name: "demo suite", SuitePath: "/work/bench/suite.yaml",
		Models: []string{"opus", "sonnet", "haiku"}, Repeat: 5, Parallel: 4, MaxCostUSD: 20,
		Status: record.StatusSucceeded, StartedAt: started, EndedAt: started.Add(time.Hour),
		Suite: []byte(`{"name":"demo","tasks":[{"id":"t2","prompt":"fix it"},{"id":"gone"},{"id":"t1"},{"id":"t3"}]}`)}
}

type benchList struct {
	Benches []struct {
		record.Bench
		Progress benchProgress `json:"progress"`
		CostUSD  float64       `json:"cost_usd"`
	} `json:"benches"`
}

type benchDetail struct {
	Bench    record.Bench     `json:"bench"`
	Attempts []record.Attempt `json:"attempts"`
	Models   []ModelStats     `json:"models"`
	Tasks    []TaskStats      `json:"tasks"`
}

func near(a, b float64) bool { return math.Abs(a-b) < 5e-5 }

func ptrNear(p *float64, want float64) bool { return p != nil && near(*p, want) }

func TestBenchAPI(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpt{})
	t0 := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	recordBench(t, e.other, demoBench("b-0001-demo", t0), demoAttempts())

	pid, start := selfOwner(t)
	live := &record.Bench{ID: "b-0002-live", Name: "live", Models: []string{"sonnet"}, Repeat: 1, Parallel: 1,
		Status: record.StatusRunning, StartedAt: t0.Add(time.Hour), OwnerPID: pid, OwnerStart: start}
	liveRun := att("t1", "sonnet", 1, record.AttemptRunning)
	liveRun.RunID = "run-live"
	recordBench(t, e.other, live, []record.Attempt{liveRun, att("t2", "sonnet", 1, record.AttemptPending)})
	gonePID, goneStart := exitedOwner(t)
	orphan := &record.Bench{ID: "c-0003-orphan", Name: "orphan", Models: []string{"opus"}, Repeat: 1, Parallel: 1,
		Status: record.StatusRunning, StartedAt: t0.Add(2 * time.Hour), OwnerPID: gonePID, OwnerStart: goneStart}
	recordBench(t, e.other, orphan, nil)

	// The list: newest first, with each bench's progress, without suites.
	var list benchList
	e.getJSON("/api/benches", 200, &list)
	var got []string
	for _, b := range list.Benches {
		got = append(got, b.ID+":"+string(b.Status))
		if b.Suite != nil {
			t.Errorf("bench %s listed with its suite", b.ID)
		}
	}
	if want := []string{"c-0003-orphan:interrupted", "b-0002-live:running", "b-0001-demo:succeeded"}; !slices.Equal(got, want) {
		t.Fatalf("benches %v, want %v", got, want)
	}
	demo := list.Benches[2]
	if want := (benchProgress{Total: 19, Passed: 10, Failed: 4, Running: 1, Pending: 2, Skipped: 2}); demo.Progress != want {
		t.Errorf("progress %+v, want %+v", demo.Progress, want)
	}
	if !near(demo.CostUSD, 0.5+0.7+1.0+0.05+0.02) || demo.Name != "demo suite" || !slices.Equal(demo.Models, []string{"opus", "sonnet", "haiku"}) {
		t.Errorf("listed demo bench: %+v", demo)
	}
	if p := list.Benches[1].Progress; p != (benchProgress{Total: 2, Running: 1, Pending: 1}) {
		t.Errorf("live bench progress %+v", p)
	}
	e.getJSON("/api/benches?limit=1", 200, &list)
	if len(list.Benches) != 1 || list.Benches[0].ID != "c-0003-orphan" {
		t.Errorf("limit=1: %+v", list.Benches)
	}
	for _, q := range []string{"limit=0", "limit=x"} {
		e.getJSON("/api/benches?"+q, 400, nil)
	}

	// One bench, by a prefix of its id.
	var d benchDetail
	e.getJSON("/api/benches/b-0001", 200, &d)
	if d.Bench.ID != "b-0001-demo" || d.Bench.Repeat != 5 || string(d.Bench.Suite) == "" || len(d.Attempts) != 19 {
		t.Fatalf("bench %+v with %d attempts", d.Bench, len(d.Attempts))
	}
	var models []string
	for _, m := range d.Models {
		models = append(models, m.Model)
	}
	if !slices.Equal(models, []string{"opus", "sonnet", "haiku", "qwen"}) {
		t.Fatalf("models %v, want the bench's, then qwen", models)
	}
	opus, sonnet, haiku, qwen := d.Models[0], d.Models[1], d.Models[2], d.Models[3]

	// sonnet: 7/10 → Wilson [0.3968, 0.8922]; the attempt cut short counts
	// nowhere but as unfinished (as in lane bench's report).
	if sonnet.Attempts != 10 || sonnet.Passed != 7 || sonnet.Failed != 3 || sonnet.Unfinished != 1 || sonnet.Skipped != 0 {
		t.Errorf("sonnet counts %+v", sonnet)
	}
	if !ptrNear(sonnet.PassRate, 0.7) || !ptrNear(sonnet.WilsonLow, 0.3968) || !ptrNear(sonnet.WilsonHigh, 0.8922) {
		t.Errorf("sonnet pass rate %v [%v, %v], want 0.7 [0.3968, 0.8922]", fp(sonnet.PassRate), fp(sonnet.WilsonLow), fp(sonnet.WilsonHigh))
	}
	if !near(sonnet.CostUSD, 1.0) || !ptrNear(sonnet.CostPerPass, 1.0/7) {
		t.Errorf("sonnet cost %v, per pass %v; want 1.00, 0.1429", sonnet.CostUSD, fp(sonnet.CostPerPass))
	}
	if !ptrNear(sonnet.MedianDurationMS, 5500) {
		t.Errorf("sonnet median duration %v, want 5500", fp(sonnet.MedianDurationMS))
	}
	if sonnet.Tokens != 10*1111 || sonnet.Usage.CacheReadTokens != 10*1000 {
		t.Errorf("sonnet tokens %d, usage %+v", sonnet.Tokens, sonnet.Usage)
	}

	// opus: 2/3 finished, two unfinished; the median of 40, 20 and 60 s.
	if opus.Attempts != 3 || opus.Passed != 2 || opus.Unfinished != 2 || !ptrNear(opus.PassRate, 2.0/3) ||
		!ptrNear(opus.WilsonLow, 0.2077) || !ptrNear(opus.WilsonHigh, 0.9385) {
		t.Errorf("opus %+v", opus)
	}
	if !ptrNear(opus.MedianDurationMS, 40_000) || !near(opus.CostUSD, 1.2) || !ptrNear(opus.CostPerPass, 0.6) {
		t.Errorf("opus median %v cost %v per pass %v; want 40000, 1.2, 0.6", fp(opus.MedianDurationMS), opus.CostUSD, fp(opus.CostPerPass))
	}
	// haiku: nothing finished: no rate, no interval, no cost per pass.
	if haiku.Attempts != 0 || haiku.Skipped != 2 || haiku.PassRate != nil || haiku.WilsonLow != nil ||
		haiku.WilsonHigh != nil || haiku.CostPerPass != nil || haiku.MedianDurationMS != nil {
		t.Errorf("haiku %+v", haiku)
	}
	if qwen.Attempts != 1 || qwen.Passed != 1 || !ptrNear(qwen.WilsonLow, 0.2065) || !ptrNear(qwen.WilsonHigh, 1) ||
		!ptrNear(qwen.CostPerPass, 0.02) || !ptrNear(qwen.MedianDurationMS, 12_000) || qwen.Tokens != 1200 {
		t.Errorf("qwen %+v", qwen)
	}

	// The task × model grid: every task, one cell per model in the models'
	// order, run ids by repeat.
	type cell struct {
		attempts, passed int
		runs             string
	}
	want := map[string][]cell{
		"t1": {{2, 2, "run-opus-t1-1 run-opus-t1-2"}, {5, 4, "run-sonnet-t1-1 run-sonnet-t1-2 run-sonnet-t1-3 run-sonnet-t1-4 run-sonnet-t1-5"}, {0, 0, ""}, {1, 1, "run-qwen-t1-1"}},
		"t2": {{1, 0, "run-opus-t2-1 run-opus-t2-2"}, {5, 3, "run-sonnet-t2-1 run-sonnet-t2-2 run-sonnet-t2-3 run-sonnet-t2-4 run-sonnet-t2-5"}, {0, 0, ""}, {0, 0, ""}},
		"t3": {{0, 0, ""}, {0, 0, "run-sonnet-t3-1"}, {0, 0, ""}, {0, 0, ""}},
	}
	var tasks []string
	for _, ts := range d.Tasks {
		tasks = append(tasks, ts.TaskID)
		w := want[ts.TaskID]
		if len(ts.Models) != len(w) {
			t.Errorf("task %s: %d cells, want %d", ts.TaskID, len(ts.Models), len(w))
			continue
		}
		var sumA, sumP int
		for i, c := range ts.Models {
			g := cell{c.Attempts, c.Passed, strings.Join(c.RunIDs, " ")}
			if c.Model != models[i] || g != w[i] || c.RunIDs == nil {
				t.Errorf("task %s, cell %d: %s %+v, want %s %+v", ts.TaskID, i, c.Model, g, models[i], w[i])
			}
			sumA, sumP = sumA+w[i].attempts, sumP+w[i].passed
		}
		if ts.Attempts != sumA || ts.Passed != sumP {
			t.Errorf("task %s: %d/%d, want %d/%d", ts.TaskID, ts.Passed, ts.Attempts, sumP, sumA)
		}
	}
	if !slices.Equal(tasks, []string{"t2", "t1", "t3"}) {
		t.Errorf("tasks %v, want the suite's order of those with attempts", tasks)
	}

	// A bench without attempts; a running bench whose lane process is gone.
	e.getJSON("/api/benches/c-0003-orphan", 200, &d)
	if d.Bench.Status != record.StatusInterrupted || len(d.Attempts) != 0 || d.Tasks == nil || len(d.Models) != 1 ||
		d.Models[0].Model != "opus" || d.Models[0].PassRate != nil {
		t.Errorf("orphan bench: %+v", d)
	}
	e.getJSON("/api/benches/b-0002", 200, &d)
	if d.Bench.Status != record.StatusRunning {
		t.Errorf("live bench shown %s", d.Bench.Status)
	}

	// Unknown and ambiguous ids.
	e.getJSON("/api/benches/zzz", 404, nil)
	e.getJSON("/api/benches/b-000", 400, nil)
}

func TestBenchAPIEmpty(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpt{})
	resp := e.request("GET", "/api/benches", nil, nil)
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || strings.TrimSpace(string(b)) != `{"benches":[]}` {
		t.Errorf("no benches: %d %s", resp.StatusCode, b)
	}
}

func fp(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

// offSuiteAttempts are demoAttempts and attempts of tasks the demo suite
// does not list: "a0", whose id sorts before every suite task, and "zz";
// "a0" is also tried by mistral, a model the bench does not list either.
func offSuiteAttempts() []record.Attempt {
	as := demoAttempts()
	extra := []struct {
		task, model string
		n           int
		status      record.AttemptStatus
		cost        float64
		ms          int64
	}{
		{"zz", "sonnet", 1, record.AttemptPassed, 0.3, 7_001},
		{"zz", "sonnet", 2, record.AttemptFailed, 0.1, 2_500},
		{"zz", "opus", 1, record.AttemptSkipped, 0, 0},
		{"a0", "mistral", 1, record.AttemptFailed, 0.07, 3_333},
		{"a0", "mistral", 2, record.AttemptPassed, 0.11, 4_444},
		{"a0", "opus", 1, record.AttemptPassed, 0.9, 61_000},
	}
	for _, x := range extra {
		a := att(x.task, x.model, x.n, x.status)
		a.CostUSD, a.DurationMS = x.cost, x.ms
		a.Usage = record.Usage{InputTokens: 10 * x.ms, OutputTokens: x.ms, CacheReadTokens: 7}
		as = append(as, a)
	}
	return as
}

// A bench run by the pool says so, each attempt names the worker that ran
// it (as does its run), and the attempts in the queue are pending.
func TestBenchAPIPool(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpt{})
	b, as := poolBench("p-0001-pool", time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))
	recordBench(t, e.other, b, as)

	var list struct {
		Benches []map[string]json.RawMessage `json:"benches"`
	}
	e.getJSON("/api/benches", 200, &list)
	if len(list.Benches) != 1 || string(list.Benches[0]["workers"]) != "true" || string(list.Benches[0]["status"]) != `"running"` {
		t.Fatalf("listed: %v", list.Benches)
	}
	var p benchProgress
	if err := json.Unmarshal(list.Benches[0]["progress"], &p); err != nil || p != (benchProgress{Total: 12, Passed: 3, Failed: 1, Running: 1, Pending: 7}) {
		t.Errorf("progress %+v (%v)", p, err)
	}

	var d benchDetail
	e.getJSON("/api/benches/p-0001", 200, &d)
	if !d.Bench.Workers {
		t.Error("the bench does not say the pool runs it")
	}
	where := map[string]int{}
	for _, a := range d.Attempts {
		where[string(a.Status)+"@"+a.Worker]++
	}
	if want := map[string]int{"passed@gpu-box-1": 2, "running@gpu-box-1": 1, "passed@laptop-2": 1, "failed@laptop-2": 1, "pending@": 7}; !maps.Equal(where, want) {
		t.Errorf("attempts by status and worker %v, want %v", where, want)
	}
	var run struct{ Run record.Run }
	e.getJSON("/api/runs/run-sonnet-t1-2", 200, &run)
	if run.Run.Worker != "laptop-2" {
		t.Errorf("the run of t1 × sonnet #2 names worker %q, want laptop-2", run.Run.Worker)
	}
}

// TestBenchAPIStatsJSON pins the statistics of GET /api/benches/{id} byte
// for byte (API.md, Benches): field names, order, values to the last digit.
func TestBenchAPIStatsJSON(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpt{})
	b := demoBench("b-0001-demo", time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))
	recordBench(t, e.other, b, offSuiteAttempts())
	var got struct {
		Models []json.RawMessage `json:"models"`
		Tasks  []json.RawMessage `json:"tasks"`
	}
	e.getJSON("/api/benches/"+b.ID, 200, &got)
	var lines []string
	for _, m := range got.Models {
		lines = append(lines, string(m))
	}
	for _, ts := range got.Tasks {
		lines = append(lines, string(ts))
	}
	if got, want := strings.Join(lines, "\n"), strings.TrimSpace(pinnedBenchStats); got != want {
		t.Errorf("models and tasks, one a line:\n%s\nwant:\n%s", got, want)
	}
}

// pinnedBenchStats is what TestBenchAPIStatsJSON's bench gave at a7bbbb2,
// when the dashboard still computed them on its own: a change of the
// computation must leave them as they are. The paired comparisons added
// fields (a model's score, a cell's score, errors, cost and median time),
// every earlier one left as it was.
const pinnedBenchStats = `
{"model":"opus","attempts":4,"passed":3,"failed":1,"unfinished":2,"skipped":1,"pass_rate":0.75,"wilson_low":0.3006360524426366,"wilson_high":0.9544139373553637,"cost_usd":2.1,"cost_per_pass":0.7000000000000001,"median_duration_ms":50000,"tokens":671007,"usage":{"input_tokens":610000,"output_tokens":61000,"cache_read_tokens":7,"cache_creation_tokens":0},"score":{"tasks":3,"mean":0.6666666666666666,"se":0.33333333333333337}}
{"model":"sonnet","attempts":12,"passed":8,"failed":4,"unfinished":1,"skipped":0,"pass_rate":0.6666666666666666,"wilson_low":0.3906175873976138,"wilson_high":0.8618821601026385,"cost_usd":1.4,"cost_per_pass":0.175,"median_duration_ms":5500,"tokens":115635,"usage":{"input_tokens":96010,"output_tokens":9601,"cache_read_tokens":10014,"cache_creation_tokens":10},"score":{"tasks":3,"mean":0.6333333333333333,"se":0.0881917103688197}}
{"model":"haiku","attempts":0,"passed":0,"failed":0,"unfinished":0,"skipped":2,"pass_rate":null,"wilson_low":null,"wilson_high":null,"cost_usd":0,"cost_per_pass":null,"median_duration_ms":null,"tokens":0,"usage":{"input_tokens":0,"output_tokens":0,"cache_read_tokens":0,"cache_creation_tokens":0},"score":{"tasks":0,"mean":null,"se":null}}
{"model":"mistral","attempts":2,"passed":1,"failed":1,"unfinished":0,"skipped":0,"pass_rate":0.5,"wilson_low":0.09452865480086614,"wilson_high":0.9054713451991339,"cost_usd":0.18,"cost_per_pass":0.18,"median_duration_ms":3888.5,"tokens":85561,"usage":{"input_tokens":77770,"output_tokens":7777,"cache_read_tokens":14,"cache_creation_tokens":0},"score":{"tasks":1,"mean":0.5,"se":null}}
{"model":"qwen","attempts":1,"passed":1,"failed":0,"unfinished":0,"skipped":0,"pass_rate":1,"wilson_low":0.2065432914738929,"wilson_high":1,"cost_usd":0.02,"cost_per_pass":0.02,"median_duration_ms":12000,"tokens":1200,"usage":{"input_tokens":900,"output_tokens":300,"cache_read_tokens":0,"cache_creation_tokens":0},"score":{"tasks":1,"mean":1,"se":null}}
{"task_id":"t2","attempts":6,"passed":3,"models":[{"model":"opus","attempts":1,"passed":0,"score":0,"cost_usd":0.7,"median_duration_ms":60000,"run_ids":["run-opus-t2-1","run-opus-t2-2"]},{"model":"sonnet","attempts":5,"passed":3,"score":0.6,"cost_usd":0.5,"median_duration_ms":8000,"run_ids":["run-sonnet-t2-1","run-sonnet-t2-2","run-sonnet-t2-3","run-sonnet-t2-4","run-sonnet-t2-5"]},{"model":"haiku","attempts":0,"passed":0,"score":null,"cost_usd":0,"median_duration_ms":null,"run_ids":[]},{"model":"mistral","attempts":0,"passed":0,"score":null,"cost_usd":0,"median_duration_ms":null,"run_ids":[]},{"model":"qwen","attempts":0,"passed":0,"score":null,"cost_usd":0,"median_duration_ms":null,"run_ids":[]}]}
{"task_id":"t1","attempts":8,"passed":7,"models":[{"model":"opus","attempts":2,"passed":2,"score":1,"cost_usd":0.5,"median_duration_ms":30000,"run_ids":["run-opus-t1-1","run-opus-t1-2"]},{"model":"sonnet","attempts":5,"passed":4,"score":0.8,"cost_usd":0.5,"median_duration_ms":3000,"run_ids":["run-sonnet-t1-1","run-sonnet-t1-2","run-sonnet-t1-3","run-sonnet-t1-4","run-sonnet-t1-5"]},{"model":"haiku","attempts":0,"passed":0,"score":null,"cost_usd":0,"median_duration_ms":null,"run_ids":[]},{"model":"mistral","attempts":0,"passed":0,"score":null,"cost_usd":0,"median_duration_ms":null,"run_ids":[]},{"model":"qwen","attempts":1,"passed":1,"score":1,"cost_usd":0.02,"median_duration_ms":12000,"run_ids":["run-qwen-t1-1"]}]}
{"task_id":"t3","attempts":0,"passed":0,"models":[{"model":"opus","attempts":0,"passed":0,"score":null,"cost_usd":0,"median_duration_ms":null,"run_ids":[]},{"model":"sonnet","attempts":0,"passed":0,"score":null,"cost_usd":0,"median_duration_ms":null,"run_ids":["run-sonnet-t3-1"]},{"model":"haiku","attempts":0,"passed":0,"score":null,"cost_usd":0,"median_duration_ms":null,"run_ids":[]},{"model":"mistral","attempts":0,"passed":0,"score":null,"cost_usd":0,"median_duration_ms":null,"run_ids":[]},{"model":"qwen","attempts":0,"passed":0,"score":null,"cost_usd":0,"median_duration_ms":null,"run_ids":[]}]}
{"task_id":"a0","attempts":3,"passed":2,"models":[{"model":"opus","attempts":1,"passed":1,"score":1,"cost_usd":0.9,"median_duration_ms":61000,"run_ids":["run-opus-a0-1"]},{"model":"sonnet","attempts":0,"passed":0,"score":null,"cost_usd":0,"median_duration_ms":null,"run_ids":[]},{"model":"haiku","attempts":0,"passed":0,"score":null,"cost_usd":0,"median_duration_ms":null,"run_ids":[]},{"model":"mistral","attempts":2,"passed":1,"score":0.5,"cost_usd":0.18,"median_duration_ms":3888.5,"run_ids":["run-mistral-a0-1","run-mistral-a0-2"]},{"model":"qwen","attempts":0,"passed":0,"score":null,"cost_usd":0,"median_duration_ms":null,"run_ids":[]}]}
{"task_id":"zz","attempts":2,"passed":1,"models":[{"model":"opus","attempts":0,"passed":0,"score":null,"cost_usd":0,"median_duration_ms":null,"run_ids":[]},{"model":"sonnet","attempts":2,"passed":1,"score":0.5,"cost_usd":0.4,"median_duration_ms":4750.5,"run_ids":["run-sonnet-zz-1","run-sonnet-zz-2"]},{"model":"haiku","attempts":0,"passed":0,"score":null,"cost_usd":0,"median_duration_ms":null,"run_ids":[]},{"model":"mistral","attempts":0,"passed":0,"score":null,"cost_usd":0,"median_duration_ms":null,"run_ids":[]},{"model":"qwen","attempts":0,"passed":0,"score":null,"cost_usd":0,"median_duration_ms":null,"run_ids":[]}]}
`

// TestBenchAPIAgreesWithReport computes benches both ways over one SQLite
// file: `lane bench report`'s comparison (bench.Compare over the store's
// attempts, as cmd does) and GET /api/benches/{id}. They must give the same
// figures, to the bit; the API lists besides the models without attempts.
func TestBenchAPIAgreesWithReport(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpt{})
	t0 := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	recordBench(t, e.other, demoBench("b-0001-demo", t0), offSuiteAttempts())
	sparse := &record.Bench{ID: "b-0002-sparse", Name: "sparse", Models: []string{"opus", "sonnet"}, Repeat: 1, Parallel: 1,
		Status: record.StatusSucceeded, StartedAt: t0, EndedAt: t0.Add(time.Minute)}
	passed := att("t1", "sonnet", 1, record.AttemptPassed)
	passed.RunID, passed.CostUSD, passed.DurationMS = "run-sparse", 0.25, 1_234
	recordBench(t, e.other, sparse, []record.Attempt{passed})

	for _, id := range []string{"b-0001-demo", "b-0002-sparse"} {
		b, err := e.other.GetBench(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		attempts, err := e.other.Attempts(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		report := bench.Compare(*b, attempts, nil)
		var api benchDetail
		e.getJSON("/api/benches/"+id, 200, &api)
		checkModelsAgree(t, id, report.Models, api.Models)
		checkCellsAgree(t, id, report.Tasks, api.Tasks)
	}
}

// checkModelsAgree compares the report's models with the API's, in order.
func checkModelsAgree(t *testing.T, id string, report []bench.ModelStats, api []ModelStats) {
	t.Helper()
	var inReport, inAPI []string
	for _, m := range report {
		inReport = append(inReport, m.Model)
	}
	byModel := map[string]ModelStats{}
	for _, m := range api {
		byModel[m.Model] = m
		if m.Attempts+m.Unfinished+m.Skipped > 0 {
			inAPI = append(inAPI, m.Model)
		}
	}
	if !slices.Equal(inReport, inAPI) {
		t.Errorf("%s: report's models %v, the API's with attempts %v", id, inReport, inAPI)
	}
	for _, r := range report {
		a := byModel[r.Model]
		counts := [5]int{r.Finished, r.Passed, r.Failed, r.Pending, r.Skipped}
		if want := [5]int{a.Attempts, a.Passed, a.Failed, a.Unfinished, a.Skipped}; counts != want {
			t.Errorf("%s %s: report counts %v, API %v", id, r.Model, counts, want)
		}
		for _, f := range []struct {
			what        string
			report, api *float64
		}{
			{"pass rate", r.PassRate, a.PassRate},
			{"interval low", r.CILow, a.WilsonLow},
			{"interval high", r.CIHigh, a.WilsonHigh},
			{"median duration", r.MedianDurationMS, a.MedianDurationMS},
			{"cost", &r.CostUSD, &a.CostUSD},
			{"cost per pass", r.CostPerPassUSD, a.CostPerPass},
		} {
			if fp(f.report) != fp(f.api) {
				t.Errorf("%s %s %s: report %v, API %v", id, r.Model, f.what, fp(f.report), fp(f.api))
			}
		}
		if r.Tokens != a.Tokens || r.Usage != a.Usage {
			t.Errorf("%s %s: report tokens %d %+v, API %d %+v", id, r.Model, r.Tokens, r.Usage, a.Tokens, a.Usage)
		}
	}
}

// checkCellsAgree compares the report's task × model rows with the API's
// cells with finished attempts, in order.
func checkCellsAgree(t *testing.T, id string, report []bench.TaskStats, api []TaskStats) {
	t.Helper()
	var inReport, inAPI []string
	for _, r := range report {
		if r.Finished > 0 {
			inReport = append(inReport, fmt.Sprintf("%s/%s %d/%d", r.Task, r.Model, r.Passed, r.Finished))
		}
	}
	for _, task := range api {
		for _, c := range task.Models {
			if c.Attempts > 0 {
				inAPI = append(inAPI, fmt.Sprintf("%s/%s %d/%d", task.TaskID, c.Model, c.Passed, c.Attempts))
			}
		}
	}
	if !slices.Equal(inReport, inAPI) {
		t.Errorf("%s: report's rows %v, the API's cells %v", id, inReport, inAPI)
	}
}
