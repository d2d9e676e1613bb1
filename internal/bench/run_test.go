package bench

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lanehq/lane/internal/bench/stats"
	"github.com/lanehq/lane/internal/proc"
	"github.com/lanehq/lane/internal/record"
	"github.com/lanehq/lane/internal/store"
)

// makeSuite writes a suite file with the given fixtures (folder → file →
// content) and loads it.
func makeSuite(t testing.TB, yaml string, fixtures map[string]map[string]string) *Suite {
	t.Helper()
	dir := t.TempDir()
	for fx, files := range fixtures {
		for name, content := range files {
			p := filepath.Join(dir, fx, name)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	path := filepath.Join(dir, "suite.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func openStore(t testing.TB) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "lane.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// outcome is what a fake agent run does and reports.
type outcome struct {
	edit       func(dir string) error // nil: touches nothing
	status     record.Status          // "": succeeded
	kind       record.ErrorKind
	cost       float64
	durationMS int64
	turns      int
	toolCalls  int
	usage      record.Usage
	changes    *record.Changes // what the run records it changed
}

// fakeAgent is a RunFunc that acts as told per attempt and records its run
// in the store, as lane's own runs are.
type fakeAgent struct {
	st    *store.Store
	act   func(ctx context.Context, spec RunSpec) outcome
	calls atomic.Int64

	mu    sync.Mutex
	specs []RunSpec
}

func (f *fakeAgent) run(ctx context.Context, spec RunSpec) (*record.Run, error) {
	f.calls.Add(1)
	f.mu.Lock()
	f.specs = append(f.specs, spec)
	f.mu.Unlock()
	o := f.act(ctx, spec)
	if o.edit != nil {
		if err := o.edit(spec.Dir); err != nil {
			return nil, err
		}
	}
	now := time.Now()
	r := &record.Run{
		ID: record.NewRunID(), SessionID: "session-" + spec.TaskID, Status: cmp.Or(o.status, record.StatusSucceeded), ErrorKind: o.kind,
		Runtime: "fake", Model: spec.Model, Dir: spec.Dir, Prompt: spec.Prompt,
		CostUSD: o.cost, Usage: o.usage, Turns: o.turns, ToolCalls: o.toolCalls,
		StartedAt: now, EndedAt: now, DurationMS: o.durationMS, Changes: o.changes,
	}
	if err := f.st.CreateRun(context.WithoutCancel(ctx), r); err != nil {
		return nil, err
	}
	return r, nil
}

func (f *fakeAgent) ran() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var keys []string
	for _, s := range f.specs {
		keys = append(keys, fmt.Sprintf("%s/%s/%d", s.TaskID, s.Model, s.N))
	}
	slices.Sort(keys)
	return keys
}

func writeFile(name, content string) func(string) error {
	return func(dir string) error { return os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644) }
}

func attemptKey(a record.Attempt) string { return fmt.Sprintf("%s/%s/%d", a.TaskID, a.Model, a.N) }

func attemptsOf(t testing.TB, st *store.Store, id string) map[string]record.Attempt {
	t.Helper()
	as, err := st.Attempts(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]record.Attempt{}
	for _, a := range as {
		m[attemptKey(a)] = a
	}
	return m
}

const threeTasks = `
name: three
models: [good, bad]
repeat: 2
tasks:
  - id: fix
    prompt: make value.txt say good
    fixture: fixtures/fix
    check: grep -qx good value.txt
  - id: create
    prompt: write hello to out.txt
    check:
      files:
        - path: out.txt
          contains: hello
  - id: flaky
    prompt: touch done
    fixture: fixtures/flaky
    check: test -f done && test -x run.sh
`

var threeFixtures = map[string]map[string]string{
	"fixtures/fix":   {"value.txt": "bad\n"},
	"fixtures/flaky": {"run.sh": "#!/bin/sh\n", "sub/deep.txt": "x"},
}

// threeActs is the known outcome of every attempt of threeTasks: good
// passes 5 of 6 (its second flaky attempt hits the turn limit), bad passes
// 2 of 6 (nothing on fix, a timeout and a wrong file on create).
func threeActs(_ context.Context, spec RunSpec) outcome {
	good := spec.Model == "good"
	o := outcome{cost: 0.01, durationMS: int64(100 * spec.N), turns: 2, toolCalls: 3,
		usage: record.Usage{InputTokens: 100, OutputTokens: 10}}
	if good {
		o.cost, o.durationMS, o.turns, o.toolCalls = 0.10, int64(1000*spec.N), 4, 6
	}
	switch spec.TaskID {
	case "fix":
		if good {
			o.edit = writeFile("value.txt", "good\n")
		}
	case "create":
		switch {
		case good:
			o.edit = writeFile("out.txt", "hello world\n")
		case spec.N == 1:
			o.status, o.kind = record.StatusTimedOut, record.ErrorTimeout
		default:
			o.edit = writeFile("out.txt", "bye\n")
		}
	case "flaky":
		o.edit = writeFile("done", "")
		if good && spec.N == 2 {
			o.status, o.kind, o.edit = record.StatusFailed, record.ErrorTurnLimit, nil
		}
	}
	return o
}

func TestRunKnownOutcomes(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	suite := makeSuite(t, threeTasks, threeFixtures)
	// The fixture's modes are kept: run.sh must stay executable.
	if err := os.Chmod(filepath.Join(suite.Dir, "fixtures/flaky/run.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	agent := &fakeAgent{st: st, act: threeActs}
	work := t.TempDir()
	var prog bytes.Buffer
	b, err := Run(ctx, Config{Suite: suite, Parallel: 3, Run: agent.run, Store: st, WorkDir: work, Progress: &prog})
	if err != nil {
		t.Fatal(err)
	}
	if b.Status != record.StatusSucceeded || b.Name != "three" || b.Repeat != 2 || !slices.Equal(b.Models, []string{"good", "bad"}) ||
		b.Parallel != 3 || b.EndedAt.IsZero() || b.SuitePath != suite.Path {
		t.Errorf("bench = %+v", b)
	}
	if n := agent.calls.Load(); n != 12 {
		t.Errorf("RunFunc called %d times, want 12", n)
	}
	for _, s := range agent.specs {
		if s.BenchID != b.ID || s.Prompt == "" || !strings.HasPrefix(filepath.Base(s.Dir), "lane-bench-") {
			t.Errorf("spec %+v", s)
		}
	}
	// The folders are gone.
	if left, _ := os.ReadDir(work); len(left) != 0 {
		t.Errorf("%d attempt folders left behind", len(left))
	}

	got := attemptsOf(t, st, b.ID)
	want := map[string]struct {
		status record.AttemptStatus
		kind   string
	}{
		"fix/good/1": {record.AttemptPassed, ""}, "fix/good/2": {record.AttemptPassed, ""},
		"fix/bad/1": {record.AttemptFailed, FailCheck}, "fix/bad/2": {record.AttemptFailed, FailCheck},
		"create/good/1": {record.AttemptPassed, ""}, "create/good/2": {record.AttemptPassed, ""},
		"create/bad/1": {record.AttemptFailed, "timeout"}, "create/bad/2": {record.AttemptFailed, FailCheck},
		"flaky/good/1": {record.AttemptPassed, ""}, "flaky/good/2": {record.AttemptFailed, "turn_limit"},
		"flaky/bad/1": {record.AttemptPassed, ""}, "flaky/bad/2": {record.AttemptPassed, ""},
	}
	if len(got) != len(want) {
		t.Errorf("%d attempts, want %d", len(got), len(want))
	}
	for k, w := range want {
		a := got[k]
		if a.Status != w.status || a.FailureKind != w.kind {
			t.Errorf("%s: %s %q, want %s %q (check output %q)", k, a.Status, a.FailureKind, w.status, w.kind, a.CheckOutput)
		}
		if a.RunID == "" || a.StartedAt.IsZero() || a.EndedAt.Before(a.StartedAt) {
			t.Errorf("%s: %+v", k, a)
		}
		// The run is linked to the attempt.
		if back, err := st.AttemptOfRun(ctx, a.RunID); err != nil || attemptKey(*back) != k {
			t.Errorf("%s: AttemptOfRun = %+v, %v", k, back, err)
		}
	}
	if a := got["fix/bad/1"]; a.CheckExitCode != 1 {
		t.Errorf("fix/bad/1 check exit %d, want 1", a.CheckExitCode)
	}
	if a := got["create/bad/2"]; a.CheckOutput != "files: out.txt: does not contain \"hello\"\n" {
		t.Errorf("create/bad/2 check output %q", a.CheckOutput)
	}
	if a := got["fix/good/2"]; a.CostUSD != 0.10 || a.DurationMS != 2000 || a.Turns != 4 || a.ToolCalls != 6 || a.Usage.InputTokens != 100 {
		t.Errorf("fix/good/2 figures: %+v", a)
	}

	// The comparison.
	as, _ := st.Attempts(ctx, b.ID)
	r := Compare(*b, as, nil)
	if len(r.Models) != 2 || r.Models[0].Model != "good" || r.Models[1].Model != "bad" {
		t.Fatalf("models %+v", r.Models)
	}
	checkStats(t, "good", r.Models[0].Stats, 6, 5, 5.0/6, 0.4365, 0.9699, []stats.PassAtK{{K: 1, Value: 2.5 / 3}, {K: 2, Value: 1}},
		1500, 1500, 0.10, 0.12, map[string]int{"turn_limit": 1})
	checkStats(t, "bad", r.Models[1].Stats, 6, 2, 2.0/6, 0.0968, 0.7000, []stats.PassAtK{{K: 1, Value: 1.0 / 3}, {K: 2, Value: 1.0 / 3}},
		150, 150, 0.01, 0.03, map[string]int{"check_failed": 3, "timeout": 1})
	var order []string
	for _, ts := range r.Tasks {
		order = append(order, ts.Task+"/"+ts.Model)
	}
	if got := strings.Join(order, " "); got != "fix/good fix/bad create/good create/bad flaky/good flaky/bad" {
		t.Errorf("task rows %s", got)
	}
	flaky := r.Tasks[4].Stats
	checkStats(t, "flaky/good", flaky, 2, 1, 0.5, 0.0945, 0.9055, []stats.PassAtK{{K: 1, Value: 0.5}, {K: 2, Value: 1}},
		1500, 1500, 0.10, 0.20, map[string]int{"turn_limit": 1})

	// The progress went to a writer that is no terminal: a line per
	// finished attempt, the last one complete.
	lines := strings.Split(strings.TrimSpace(prog.String()), "\n")
	if len(lines) != 13 || lines[0] != "[--------------------] 0/12 done · 0 failed · 0 running · $0.00" ||
		lines[12] != "[####################] 12/12 done · 5 failed · 0 running · $0.66" {
		t.Errorf("progress:\n%s", prog.String())
	}
}

func checkStats(t *testing.T, name string, s stats.Stats, finished, passed int, rate, lo, hi float64, pak []stats.PassAtK,
	median, mean, costPerAttempt, costPerPass float64, failures map[string]int) {
	t.Helper()
	near := func(what string, got *float64, want float64) {
		t.Helper()
		if got == nil || math.Abs(*got-want) > 5e-5 {
			t.Errorf("%s %s = %v, want %.4f", name, what, deref(got), want)
		}
	}
	if s.Finished != finished || s.Passed != passed || s.Runs != finished {
		t.Errorf("%s: finished %d passed %d runs %d, want %d %d", name, s.Finished, s.Passed, s.Runs, finished, passed)
	}
	near("pass rate", s.PassRate, rate)
	near("ci low", s.CILow, lo)
	near("ci high", s.CIHigh, hi)
	near("median", s.MedianDurationMS, median)
	near("mean", s.MeanDurationMS, mean)
	near("cost/attempt", s.CostPerAttemptUSD, costPerAttempt)
	near("cost/pass", s.CostPerPassUSD, costPerPass)
	if len(s.PassAtK) != len(pak) {
		t.Errorf("%s pass@k = %+v, want %+v", name, s.PassAtK, pak)
	}
	for i := range min(len(pak), len(s.PassAtK)) {
		if s.PassAtK[i].K != pak[i].K || math.Abs(s.PassAtK[i].Value-pak[i].Value) > 1e-9 {
			t.Errorf("%s pass@k = %+v, want %+v", name, s.PassAtK, pak)
		}
	}
	if fmt.Sprint(s.Failures) != fmt.Sprint(failures) {
		t.Errorf("%s failures = %v, want %v", name, s.Failures, failures)
	}
}

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

func TestRunKeep(t *testing.T) {
	st := openStore(t)
	suite := makeSuite(t, threeTasks, threeFixtures)
	agent := &fakeAgent{st: st, act: threeActs}
	work := t.TempDir()
	b, err := Run(context.Background(), Config{Suite: suite, Models: []string{"good"}, Repeat: 1, Keep: true,
		Run: agent.run, Store: st, WorkDir: work})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(b.Models, []string{"good"}) || b.Repeat != 1 {
		t.Errorf("flags did not override the suite: %+v", b)
	}
	left, _ := os.ReadDir(work)
	if len(left) != 3 {
		t.Fatalf("%d folders kept, want 3", len(left))
	}
	for _, s := range agent.specs {
		if s.TaskID == "flaky" {
			// The copy: symlinks, modes and nested folders as in the fixture.
			if _, err := os.Stat(filepath.Join(s.Dir, "sub", "deep.txt")); err != nil {
				t.Error(err)
			}
			if b, err := os.ReadFile(filepath.Join(s.Dir, "done")); err != nil || len(b) != 0 {
				t.Errorf("the agent's file: %q, %v", b, err)
			}
		}
	}
}

// Attempts that run at once each see their own folder only.
func TestParallelAttemptsAreIsolated(t *testing.T) {
	st := openStore(t)
	suite := makeSuite(t, `
models: [m1, m2]
repeat: 4
tasks:
  - {id: a, prompt: p, fixture: fx, check: 'test -f marker-$(cat whoami)'}
  - {id: b, prompt: p, fixture: fx, check: 'test -f marker-$(cat whoami)'}
`, map[string]map[string]string{"fx": {"seed.txt": "seed"}})
	var active, peak atomic.Int64
	var mu sync.Mutex
	var problems []string
	agent := &fakeAgent{st: st}
	agent.act = func(ctx context.Context, spec RunSpec) outcome {
		n := active.Add(1)
		defer active.Add(-1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		me := fmt.Sprintf("%s-%s-%d", spec.TaskID, spec.Model, spec.N)
		if err := os.WriteFile(filepath.Join(spec.Dir, "marker-"+me), nil, 0o644); err != nil {
			t.Error(err)
		}
		_ = os.WriteFile(filepath.Join(spec.Dir, "whoami"), []byte(me), 0o644)
		time.Sleep(30 * time.Millisecond) // the others write theirs meanwhile
		entries, _ := os.ReadDir(spec.Dir)
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		if want := []string{"marker-" + me, "seed.txt", "whoami"}; !slices.Equal(names, want) {
			mu.Lock()
			problems = append(problems, fmt.Sprintf("%s sees %v", me, names))
			mu.Unlock()
		}
		return outcome{}
	}
	b, err := Run(context.Background(), Config{Suite: suite, Parallel: 4, Run: agent.run, Store: st, WorkDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
	if p := peak.Load(); p < 2 || p > 4 {
		t.Errorf("at most %d attempts ran at once, want 2 to 4", p)
	}
	dirs := map[string]bool{}
	for _, s := range agent.specs {
		dirs[s.Dir] = true
	}
	if len(dirs) != 16 {
		t.Errorf("%d distinct folders for 16 attempts", len(dirs))
	}
	for k, a := range attemptsOf(t, st, b.ID) {
		if a.Status != record.AttemptPassed {
			t.Errorf("%s: %s %s %q", k, a.Status, a.FailureKind, a.CheckOutput)
		}
	}
}

// cancelAfter is a Store that cancels the bench once n attempts finished.
type cancelAfter struct {
	*store.Store
	n        int64
	finished atomic.Int64
	cancel   context.CancelFunc
}

func (c *cancelAfter) SaveAttempt(ctx context.Context, a *record.Attempt) error {
	err := c.Store.SaveAttempt(ctx, a)
	if a.Status == record.AttemptPassed || a.Status == record.AttemptFailed {
		if c.finished.Add(1) == c.n {
			c.cancel()
		}
	}
	return err
}

func TestResumeRunsOnlyUnfinished(t *testing.T) {
	st := openStore(t)
	suite := makeSuite(t, `
models: [m1, m2]
repeat: 3
tasks:
  - {id: a, prompt: p, check: 'test -f ok'}
  - {id: b, prompt: p, check: 'test -f ok'}
`, nil)
	act := func(ctx context.Context, spec RunSpec) outcome {
		if spec.Model == "m2" && spec.TaskID == "b" && spec.N == 3 {
			return outcome{edit: writeFile("nope", ""), cost: 0.5} // a real failure: not run again
		}
		return outcome{edit: writeFile("ok", ""), cost: 0.5}
	}
	// The first run is stopped after 5 attempts; an attempt that is running
	// then is cancelled.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	first := &fakeAgent{st: st}
	first.act = func(ctx context.Context, spec RunSpec) outcome {
		if first.calls.Load() > 5 {
			<-ctx.Done()
			return outcome{status: record.StatusCancelled, kind: record.ErrorCancelled, cost: 0.01}
		}
		return act(ctx, spec)
	}
	cs := &cancelAfter{Store: st, n: 5, cancel: cancel}
	b, err := Run(ctx, Config{Suite: suite, Parallel: 2, Run: first.run, Store: cs, WorkDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if b.Status != record.StatusCancelled {
		t.Fatalf("status %s, want cancelled", b.Status)
	}
	before := attemptsOf(t, st, b.ID)
	var unfinished []string
	finished := 0
	for k, a := range before {
		switch a.Status {
		case record.AttemptPassed, record.AttemptFailed:
			finished++
		case record.AttemptPending:
			unfinished = append(unfinished, k)
		default:
			t.Errorf("%s: %s after a cancel", k, a.Status)
		}
	}
	slices.Sort(unfinished)
	if finished != 5 || len(unfinished) != 7 {
		t.Fatalf("after the cancel: %d finished, %d unfinished; want 5 and 7", finished, len(unfinished))
	}
	stored, err := st.GetBench(context.Background(), b.ID[:6])
	if err != nil || stored.Status != record.StatusCancelled {
		t.Fatalf("GetBench = %+v, %v", stored, err)
	}

	// An attempt left running by a lane that died runs again too.
	running := before[unfinished[0]]
	running.Status = record.AttemptRunning
	if err := st.SaveAttempt(context.Background(), &running); err != nil {
		t.Fatal(err)
	}

	// Its folder, left behind, is removed; other folders stay.
	work := t.TempDir()
	leftover := filepath.Join(work, strings.TrimSuffix(folderName(&running), "*")+"12345")
	other := filepath.Join(work, strings.TrimSuffix(folderName(&running), "*")+"x")
	for _, d := range []string{leftover, filepath.Join(leftover, "sub"), other} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}

	second := &fakeAgent{st: st, act: act}
	var prog bytes.Buffer
	b2, err := Run(context.Background(), Config{Resume: stored, Run: second.run, Store: st, WorkDir: work, Progress: &prog})
	if err != nil {
		t.Fatal(err)
	}
	if b2.ID != b.ID || b2.Status != record.StatusSucceeded || b2.Parallel != 2 {
		t.Errorf("resumed bench %+v", b2)
	}
	if got := second.ran(); !slices.Equal(got, unfinished) {
		t.Errorf("resume ran %v, want the unfinished %v", got, unfinished)
	}
	after := attemptsOf(t, st, b.ID)
	for k, a := range after {
		want := record.AttemptPassed
		if k == "b/m2/3" {
			want = record.AttemptFailed
		}
		if a.Status != want {
			t.Errorf("%s: %s, want %s", k, a.Status, want)
		}
		if prev := before[k]; prev.Status == record.AttemptPassed && a.RunID != prev.RunID {
			t.Errorf("%s ran again", k)
		}
	}
	if _, err := os.Stat(leftover); !os.IsNotExist(err) {
		t.Errorf("the leftover folder of a running attempt is still there: %v", err)
	}
	if _, err := os.Stat(other); err != nil {
		t.Errorf("another folder was removed: %v", err)
	}
	if !strings.HasPrefix(prog.String(), "[########------------] 5/12 done") {
		t.Errorf("resumed progress starts %q", prog.String())
	}

	// Nothing is left to run: a second resume runs nothing.
	stored, _ = st.GetBench(context.Background(), b.ID)
	third := &fakeAgent{st: st, act: act}
	if b3, err := Run(context.Background(), Config{Resume: stored, Run: third.run, Store: st}); err != nil ||
		b3.Status != record.StatusSucceeded || third.calls.Load() != 0 {
		t.Errorf("resume of a finished bench: %+v, %v, %d runs", b3, err, third.calls.Load())
	}
}

func TestResumeRefusesALiveBench(t *testing.T) {
	st := openStore(t)
	pid := os.Getppid() // alive, and not this process
	start, err := proc.StartTime(pid)
	if err != nil {
		t.Skip("no parent process to own the bench:", err)
	}
	b := &record.Bench{ID: "live", Status: record.StatusRunning, OwnerPID: pid, OwnerStart: start,
		Models: []string{"m"}, Repeat: 1, Suite: []byte(`{"tasks":[{"id":"a"}]}`)}
	_, err = Run(context.Background(), Config{Resume: b, Run: (&fakeAgent{st: st}).run, Store: st})
	if err == nil || !strings.Contains(err.Error(), "is still running") {
		t.Errorf("Run = %v, want still running", err)
	}
}

func TestMaxCostSkips(t *testing.T) {
	st := openStore(t)
	suite := makeSuite(t, "models: [m]\nrepeat: 5\ntasks:\n  - {id: a, prompt: p, check: 'true'}\n", nil)
	agent := &fakeAgent{st: st, act: func(context.Context, RunSpec) outcome { return outcome{cost: 0.40} }}
	b, err := Run(context.Background(), Config{Suite: suite, MaxCostUSD: 1, Run: agent.run, Store: st, WorkDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	// 0.40, 0.80, 1.20: the budget is spent after the third.
	if n := agent.calls.Load(); n != 3 || b.Status != record.StatusSucceeded {
		t.Errorf("%d runs, status %s; want 3, succeeded", n, b.Status)
	}
	got := attemptsOf(t, st, b.ID)
	for n := 1; n <= 5; n++ {
		want := record.AttemptPassed
		if n > 3 {
			want = record.AttemptSkipped
		}
		if a := got["a/m/"+strconv.Itoa(n)]; a.Status != want || (want == record.AttemptSkipped && a.RunID != "") {
			t.Errorf("attempt %d: %+v, want %s", n, a, want)
		}
	}
	r := Compare(*b, slices.Collect(mapsValues(got)), nil)
	if s := r.Models[0]; s.Skipped != 2 || s.Finished != 3 || math.Abs(r.CostUSD-1.2) > 1e-9 {
		t.Errorf("report: %+v, cost %v", s, r.CostUSD)
	}

	// With more money, a resume runs what was skipped.
	stored, err := st.GetBench(context.Background(), b.ID)
	if err != nil {
		t.Fatal(err)
	}
	more := &fakeAgent{st: st, act: agent.act}
	if _, err := Run(context.Background(), Config{Resume: stored, MaxCostUSD: 2, Run: more.run, Store: st}); err != nil {
		t.Fatal(err)
	}
	if n := more.calls.Load(); n != 2 {
		t.Errorf("resume with a larger budget ran %d, want 2", n)
	}
}

func mapsValues(m map[string]record.Attempt) func(func(record.Attempt) bool) {
	return func(yield func(record.Attempt) bool) {
		for _, v := range m {
			if !yield(v) {
				return
			}
		}
	}
}

func TestSetupFailure(t *testing.T) {
	st := openStore(t)
	suite := makeSuite(t, `
models: [m]
tasks:
  - id: broken
    prompt: p
    fixture: fx
    setup:
      - echo preparing > prepared
      - test -f prepared && echo oops >&2 && exit 3
    check: 'true'
  - id: gone
    prompt: p
    fixture: fx2
    check: 'true'
  - id: ok
    prompt: p
    fixture: fx
    setup: echo ready > ready
    check: test -f ready
`, map[string]map[string]string{"fx": {"a": "a"}, "fx2": {"b": "b"}})
	// A fixture that went away after the suite was loaded.
	if err := os.RemoveAll(filepath.Join(suite.Dir, "fx2")); err != nil {
		t.Fatal(err)
	}
	agent := &fakeAgent{st: st, act: func(context.Context, RunSpec) outcome { return outcome{} }}
	b, err := Run(context.Background(), Config{Suite: suite, Run: agent.run, Store: st, WorkDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if got := agent.ran(); !slices.Equal(got, []string{"ok/m/1"}) {
		t.Errorf("agent ran %v, want only ok", got)
	}
	got := attemptsOf(t, st, b.ID)
	if a := got["broken/m/1"]; a.Status != record.AttemptFailed || a.FailureKind != FailSetup || a.CheckExitCode != 3 ||
		a.CheckOutput != `setup "test -f prepared && echo oops >&2 && exit 3": exit status 3: oops` || a.RunID != "" {
		t.Errorf("broken: %+v", a)
	}
	if a := got["gone/m/1"]; a.Status != record.AttemptFailed || a.FailureKind != FailSetup ||
		!strings.Contains(a.CheckOutput, "no such file or directory") {
		t.Errorf("gone: %+v", a)
	}
	if a := got["ok/m/1"]; a.Status != record.AttemptPassed {
		t.Errorf("ok: %+v", a)
	}
	r := Compare(*b, slices.Collect(mapsValues(got)), nil)
	if s := r.Models[0]; s.Runs != 1 || s.Finished != 3 || s.Failures[FailSetup] != 2 {
		t.Errorf("stats: %+v", s.Stats)
	}
}

// A check that outlives its timeout is killed with everything it started.
func TestCheckTimeoutKillsItsProcessGroup(t *testing.T) {
	st := openStore(t)
	pidFile := filepath.Join(t.TempDir(), "pid")
	suite := makeSuite(t, fmt.Sprintf(`
models: [m]
tasks:
  - id: slow
    prompt: p
    check:
      command: sh -c 'sleep 60 & echo $! > %s; wait'
      timeout: 300ms
`, pidFile), nil)
	agent := &fakeAgent{st: st, act: func(context.Context, RunSpec) outcome { return outcome{} }}
	start := time.Now()
	b, err := Run(context.Background(), Config{Suite: suite, Run: agent.run, Store: st, WorkDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the bench took %s", d)
	}
	a := attemptsOf(t, st, b.ID)["slow/m/1"]
	if a.Status != record.AttemptFailed || a.FailureKind != FailCheckTimeout || a.CheckExitCode != -1 ||
		!strings.Contains(a.CheckOutput, "the check timed out after 300ms") {
		t.Errorf("attempt %+v", a)
	}
	raw, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for proc.Alive(pid, 0) {
		if time.Now().After(deadline) {
			t.Fatalf("the check's grandchild %d still runs", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Setup and check run the agent's code; they get no provider keys.
func TestCommandsGetNoKeys(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "sk-secret")
	t.Setenv("OPENAI_API_KEY", "sk-secret")
	t.Setenv("LANE_BENCH_TEST_VAR", "kept")
	st := openStore(t)
	suite := makeSuite(t, `
models: [m]
tasks:
  - id: env
    prompt: p
    setup: env > setup-env
    check: "! grep -q sk-secret setup-env && env | grep -q LANE_BENCH_TEST_VAR=kept && ! env | grep -q sk-secret"
`, nil)
	agent := &fakeAgent{st: st, act: func(context.Context, RunSpec) outcome { return outcome{} }}
	b, err := Run(context.Background(), Config{Suite: suite, Run: agent.run, Store: st, WorkDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if a := attemptsOf(t, st, b.ID)["env/m/1"]; a.Status != record.AttemptPassed {
		t.Errorf("attempt %+v", a)
	}
}

func TestCheckOutputIsCapped(t *testing.T) {
	st := openStore(t)
	suite := makeSuite(t, `
models: [m]
tasks:
  - id: loud
    prompt: p
    check: "head -c 300000 /dev/zero | tr '\\0' x; echo; echo THE END; exit 1"
`, nil)
	agent := &fakeAgent{st: st, act: func(context.Context, RunSpec) outcome { return outcome{} }}
	b, err := Run(context.Background(), Config{Suite: suite, Run: agent.run, Store: st, WorkDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	a := attemptsOf(t, st, b.ID)["loud/m/1"]
	if len(a.CheckOutput) > OutputLimit+100 || !strings.HasSuffix(a.CheckOutput, "THE END\n") ||
		!strings.Contains(a.CheckOutput, "bytes cut]") || !strings.HasPrefix(a.CheckOutput, "xxxx") {
		t.Errorf("check output: %d bytes, ends %q", len(a.CheckOutput), a.CheckOutput[max(len(a.CheckOutput)-40, 0):])
	}
	if a.FailureKind != FailCheck || a.CheckExitCode != 1 {
		t.Errorf("attempt %s %d", a.FailureKind, a.CheckExitCode)
	}
}

// A git task clones its repository and checks out its revision for every
// attempt.
func TestGitSource(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	repo := filepath.Join(t.TempDir(), "repo")
	gitc := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", repo}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t",
			"GIT_COMMITTER_EMAIL=t@t", "GIT_CONFIG_GLOBAL=/dev/null")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	if err := os.MkdirAll(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	gitc("init", "--quiet")
	_ = os.WriteFile(filepath.Join(repo, "v.txt"), []byte("one\n"), 0o644)
	gitc("add", ".")
	gitc("commit", "--quiet", "-m", "one")
	first := gitc("rev-parse", "HEAD")
	_ = os.WriteFile(filepath.Join(repo, "v.txt"), []byte("two\n"), 0o644)
	gitc("commit", "--quiet", "-am", "two")

	st := openStore(t)
	suite := makeSuite(t, fmt.Sprintf(`
models: [m]
tasks:
  - {id: old, prompt: p, git: {repo: %s, rev: %s}, check: grep -qx one v.txt}
  - {id: head, prompt: p, git: {repo: %s}, check: grep -qx two v.txt}
  - {id: bad-rev, prompt: p, git: {repo: %s, rev: nosuchrev}, check: 'true'}
`, repo, first[:10], repo, repo), nil)
	agent := &fakeAgent{st: st, act: func(context.Context, RunSpec) outcome { return outcome{} }}
	b, err := Run(context.Background(), Config{Suite: suite, Run: agent.run, Store: st, WorkDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	got := attemptsOf(t, st, b.ID)
	for _, k := range []string{"old/m/1", "head/m/1"} {
		if a := got[k]; a.Status != record.AttemptPassed {
			t.Errorf("%s: %+v", k, a)
		}
	}
	if a := got["bad-rev/m/1"]; a.FailureKind != FailSetup || !strings.Contains(a.CheckOutput, "git checkout nosuchrev") {
		t.Errorf("bad-rev: %+v", a)
	}
}

// Ctrl-C while attempts run: they are cancelled through ctx, recorded
// pending, and no other attempt starts.
func TestCancelStopsRunningAttempts(t *testing.T) {
	st := openStore(t)
	suite := makeSuite(t, "models: [m]\nrepeat: 10\ntasks:\n  - {id: a, prompt: p, check: 'true'}\n", nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	started := make(chan struct{}, 10)
	agent := &fakeAgent{st: st}
	agent.act = func(ctx context.Context, spec RunSpec) outcome {
		started <- struct{}{}
		<-ctx.Done()
		return outcome{status: record.StatusCancelled, kind: record.ErrorCancelled}
	}
	go func() {
		<-started
		<-started
		cancel()
	}()
	b, err := Run(ctx, Config{Suite: suite, Parallel: 2, Run: agent.run, Store: st, WorkDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if b.Status != record.StatusCancelled || agent.calls.Load() != 2 {
		t.Errorf("status %s after %d runs; want cancelled after 2", b.Status, agent.calls.Load())
	}
	for k, a := range attemptsOf(t, st, b.ID) {
		if a.Status != record.AttemptPending {
			t.Errorf("%s: %s", k, a.Status)
		}
		if a.RunID != "" && a.FailureKind != FailCancelled {
			t.Errorf("%s: cut short but kind %q", k, a.FailureKind)
		}
	}
}

func TestRunConfigErrors(t *testing.T) {
	st := openStore(t)
	suite := makeSuite(t, "tasks:\n  - {id: a, prompt: p, check: 'true'}\n", nil)
	run := (&fakeAgent{st: st}).run
	for _, tt := range []struct {
		cfg  Config
		want string
	}{
		{Config{Suite: suite, Store: st}, "Config.Run and Config.Store are required"},
		{Config{Run: run, Store: st}, "no suite"},
		{Config{Suite: suite, Run: run, Store: st}, "no models"},
		{Config{Suite: suite, Models: []string{"a", "a"}, Run: run, Store: st}, `model "a" is empty or given twice`},
		{Config{Resume: &record.Bench{ID: "x", Suite: []byte("{")}, Run: run, Store: st}, "read its suite"},
	} {
		b, err := Run(context.Background(), tt.cfg)
		if err == nil || !strings.Contains(err.Error(), tt.want) || b != nil {
			t.Errorf("Run = %v, %v; want %q", b, err, tt.want)
		}
	}
	if bs, _ := st.ListBenches(context.Background(), 0); len(bs) != 0 {
		t.Errorf("%d benches recorded by wrong configs", len(bs))
	}
}

// failingStore fails every SaveAttempt after the first few.
type failingStore struct {
	*store.Store
	left atomic.Int64
}

func (f *failingStore) SaveAttempt(ctx context.Context, a *record.Attempt) error {
	if f.left.Add(-1) < 0 {
		return fmt.Errorf("disk full")
	}
	return f.Store.SaveAttempt(ctx, a)
}

func TestStoreFailureStopsTheBench(t *testing.T) {
	st := openStore(t)
	suite := makeSuite(t, "models: [m]\nrepeat: 10\ntasks:\n  - {id: a, prompt: p, check: 'true'}\n", nil)
	fs := &failingStore{Store: st}
	fs.left.Store(12) // the 10 pending ones, then the first attempt's start and end
	agent := &fakeAgent{st: st, act: func(context.Context, RunSpec) outcome { return outcome{} }}
	b, err := Run(context.Background(), Config{Suite: suite, Run: agent.run, Store: fs, WorkDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "disk full") || b == nil || b.Status != record.StatusFailed {
		t.Fatalf("Run = %+v, %v; want failed with disk full", b, err)
	}
	if n := agent.calls.Load(); n != 1 {
		t.Errorf("%d attempts ran, want 1 (none after the store failed)", n)
	}
	if stored, err := st.GetBench(context.Background(), b.ID); err != nil || stored.Status != record.StatusFailed {
		t.Errorf("stored bench %+v, %v", stored, err)
	}
}
