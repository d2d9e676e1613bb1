package dashboard

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/lanehq/lane/internal/record"
)

// The bench page's comparison matrix over pairedBench (bench_paired_test.go
// has its pass pattern and the hand computation of its figures): the
// paired panel of the chosen pair, sorting and filtering by A − B, a cell's
// attempts leading to their runs and diffs, and a live update that keeps
// the reader's choices.
func TestBrowserBenchMatrix(t *testing.T) {
	b, as := pairedBench("p-0030-paired", time.Now().Add(-time.Hour).UTC().Truncate(time.Second))
	pid, start := selfOwner(t)
	b.Status, b.EndedAt, b.OwnerPID, b.OwnerStart = record.StatusRunning, time.Time{}, pid, start
	e := startBrowserEnv(t, func(e *browserEnv) {
		recordBench(e.t, e.writer, b, as)
		ended, endedAs := pairedBench("p-0031-ended", b.StartedAt)
		for i := range endedAs {
			if endedAs[i].RunID != "" {
				endedAs[i].RunID = "ended-" + endedAs[i].RunID
			}
		}
		recordBench(e.t, e.writer, ended, endedAs)
	})

	panel := func(b string) string { return `.paired-panel[data-b="` + b + `"]` }
	e.open("open the bench", 30*time.Second, e.url+"/bench/"+b.ID,
		chromedp.WaitVisible(chromedp.CSS(panel("haiku")+` dd[data-field="diff"]`)))

	// The first two models are compared first: sonnet − haiku. From the
	// API test's figures, as the page writes them (points for passes):
	//   mean 0.25 → +25.0 pts; CI [−0.777126, 1.277126] → −77.7 to +127.7
	//   pts, t with 3 df; p 0.4950 → 0.495; a score of ½: no exact test;
	//   detectable 1.342946 → 134.3 pts, 4 × 4 = 16 tasks to halve it.
	checkPanel(e, "haiku", map[string]string{
		"diff":  "+25.0 pts",
		"ci":    "\u221277.7 pts to +127.7 pts (Student\u2019s t, 3 df)",
		"p":     "0.495",
		"exact": "\u2013 (not every task\u2019s score is 0 or 1)",
		"wlt":   "sonnet better on 2, haiku on 1, tied on 1",
		"mde":   "134.3 pts; 16 tasks would halve it",
		"apart": "only-a: Only sonnet finished: t5, t6 | errored: Left out for errors of the task or its environment: t5",
	})
	// Each model's own score beside Wilson's interval:
	//   sonnet: task mean 4/6 → 67%, SE 0.210819 → ± 21 pts; 8 of 12
	//   attempts passed → 66.7%, Wilson z = 1.96: center (8/12 + z²/24) /
	//   (1 + z²/12) = 0.62627, half 1.96/1.32013 · √(2/9/12 + z²/576) =
	//   0.23564 → 39.1%–86.2%.
	//   haiku: task mean 0.25 → 25%, SE 0.144338 → ± 14 pts; 2 of 8 → 25.0%,
	//   Wilson 7.1%–59.1%.
	type score struct{ Model, Mean, Wilson string }
	scores := eval[[]score](e, `[...document.querySelectorAll('.paired-panel table.paired-models tbody tr')].map((tr) =>
		({ model: tr.dataset.model, mean: tr.querySelector('.task-mean').textContent, wilson: tr.querySelector('.wilson').textContent }))`)
	if want := []score{{"sonnet", "67% \u00b1 21 pts", "66.7%, 39.1%\u201386.2%"}, {"haiku", "25% \u00b1 14 pts", "25.0%, 7.1%\u201359.1%"}}; !slices.Equal(scores, want) {
		t.Errorf("the models' scores %v, want %v", scores, want)
	}

	// The matrix: the suite's order; each cell its score coloured, its cost
	// and median time (two attempts of $0.10, 2 s and 4 s: $0.20 · 3.0s);
	// the A − B column per task.
	checkRows(e, "suite order", []string{"t1:+100 pts", "t2:+50 pts", "t3:\u221250 pts", "t4:0", "t5:\u2013", "t6:\u2013"})
	type cellView struct{ Score, Meta, Class string }
	cell := func(task, model string) cellView {
		return eval[cellView](e, `(() => { const td = document.querySelector('table.bench-grid tr[data-task="`+task+`"] td[data-model="`+model+`"]');
			return { score: td.querySelector('.score').textContent, meta: td.querySelector('.cell-meta')?.textContent ?? '', class: td.className }; })()`)
	}
	if c := cell("t2", "haiku"); c.Score != "1/2" || c.Meta != "$0.20 \u00b7 3.0s" || !strings.Contains(c.Class, "c-mixed") {
		t.Errorf("t2 × haiku %+v, want 1/2, $0.20 · 3.0s, half passed", c)
	}
	if c := cell("t1", "sonnet"); c.Score != "2/2" || !strings.Contains(c.Class, "c-good") {
		t.Errorf("t1 × sonnet %+v, want 2/2, all passed", c)
	}
	if c := cell("t5", "haiku"); c.Score != "error" || !strings.Contains(c.Class, "c-error") {
		t.Errorf("t5 × haiku %+v, want an error of the task", c)
	}

	// Sorted by sonnet − haiku, largest first (the tasks without one last);
	// then only the tasks where they differ.
	choose(e, "select.sort-tasks", "diff")
	checkRows(e, "sorted by A − B", []string{"t1:+100 pts", "t2:+50 pts", "t4:0", "t3:\u221250 pts", "t5:\u2013", "t6:\u2013"})
	e.do("filter to the tasks that differ", 10*time.Second, chromedp.Click(chromedp.CSS(`input.differ`)))
	checkRows(e, "only those that differ", []string{"t1:+100 pts", "t2:+50 pts", "t3:\u221250 pts"})

	// B = opus: sonnet − opus over t1…t5 (opus's t6 runs):
	//   mean 0.4 → +40.0 pts; CI [−0.280087, 1.080087] → −28.0 to +108.0,
	//   t with 4 df; p 0.1778 → 0.178; every score 0 or 1: the sign test
	//   over the 2 tasks that differ, both sonnet's: 2·(½)² = 0.500;
	//   detectable 0.910590 → 91.1 pts, 20 tasks to halve it.
	choose(e, "select.pick-b", "opus")
	e.do("the pair sonnet − opus", 20*time.Second, chromedp.WaitVisible(chromedp.CSS(panel("opus")+` dd[data-field="diff"]`)))
	checkPanel(e, "opus", map[string]string{
		"diff":  "+40.0 pts",
		"ci":    "\u221228.0 pts to +108.0 pts (Student\u2019s t, 4 df)",
		"p":     "0.178",
		"exact": "0.500",
		"wlt":   "sonnet better on 2, opus on 0, tied on 3",
		"mde":   "91.1 pts; 20 tasks would halve it",
		"apart": "only-a: Only sonnet finished: t6",
	})
	checkRows(e, "sonnet − opus, those that differ", []string{"t1:+100 pts", "t2:+100 pts"})

	// qwen − opus share t1 alone: said so, with no figures.
	choose(e, "select.pick-a", "qwen")
	e.do("the pair qwen − opus", 20*time.Second, chromedp.WaitVisible(chromedp.CSS(`.paired-panel[data-a="qwen"] .paired-none`)))
	if got := eval[string](e, `document.querySelector('.paired-panel .paired-none').textContent + ' | ' +
		document.querySelectorAll('.paired-panel dd').length + ' | ' + document.querySelector('.paired-apart').textContent`); got !=
		"qwen and opus both finished 1 task: fewer than 2, no figures. | 0 | Only opus finished: t2, t3, t4, t5" {
		t.Errorf("qwen − opus: %q", got)
	}
	choose(e, "select.pick-a", "sonnet")
	e.do("back to sonnet − opus", 20*time.Second, chromedp.WaitVisible(chromedp.CSS(`.paired-panel[data-a="sonnet"] dd[data-field="diff"]`)))

	// A cell opens its attempts: each one's trace and diff.
	cellSel := `table.bench-grid tr[data-task="t1"] td[data-model="sonnet"]`
	e.do("open a cell's attempts", 10*time.Second,
		chromedp.Click(chromedp.CSS(cellSel+` details.cell-attempts > summary`)),
		chromedp.WaitVisible(chromedp.CSS(cellSel+` ul.cell-attempts-list li[data-n="2"]`)))
	type link struct{ Trace, Diff string }
	links := eval[[]link](e, `[...document.querySelectorAll('`+cellSel+` ul.cell-attempts-list li')].map((li) =>
		({ trace: li.querySelector('a.trace')?.getAttribute('href') ?? '', diff: li.querySelector('a.files-changed')?.getAttribute('href') ?? '' }))`)
	if want := []link{{"/runs/run-sonnet-t1-1", "/runs/run-sonnet-t1-1/changes"}, {"/runs/run-sonnet-t1-2", "/runs/run-sonnet-t1-2/changes"}}; !slices.Equal(links, want) {
		t.Errorf("t1 × sonnet's attempts link %v, want %v", links, want)
	}

	// Live: opus's attempt at t6 passes while the page is open. The pair,
	// the order, the filter and the open cell stay; sonnet − opus now
	// shares t6 too, a tie: differences 1, 1, 0, 0, 0, 0, mean 1/3 →
	// +33.3 pts, 4 ties, nothing only sonnet finished.
	done := as[slices.IndexFunc(as, func(a record.Attempt) bool { return a.TaskID == "t6" && a.Model == "opus" })]
	done.Status, done.CostUSD, done.DurationMS = record.AttemptPassed, 0.10, 2000
	if err := e.writer.SaveAttempt(context.Background(), &done); err != nil {
		t.Fatal(err)
	}
	e.do("the matrix follows the bench", 30*time.Second,
		chromedp.Poll[chromedp.Void](`document.querySelector('.paired-panel dd[data-field="wlt"]')?.textContent === 'sonnet better on 2, opus on 0, tied on 4'`))
	checkPanel(e, "opus", map[string]string{"diff": "+33.3 pts", "wlt": "sonnet better on 2, opus on 0, tied on 4", "apart": ""})
	kept := eval[string](e, `[document.querySelector('select.pick-a').value, document.querySelector('select.pick-b').value,
		document.querySelector('select.sort-tasks').value, document.querySelector('input.differ').checked,
		!!document.querySelector('`+cellSel+` details.cell-attempts[open] li[data-n="2"]')].join(' ')`)
	if kept != "sonnet opus diff true true" {
		t.Errorf("after the update: A, B, order, filter, open cell %q; want sonnet opus diff true true", kept)
	}
	checkRows(e, "after the update, those that differ", []string{"t1:+100 pts", "t2:+100 pts"})
	e.do("show every task", 10*time.Second, chromedp.Click(chromedp.CSS(`input.differ`)))
	checkRows(e, "every task by sonnet − opus", []string{"t1:+100 pts", "t2:+100 pts", "t3:0", "t4:0", "t5:0", "t6:0"})
	if c := cell("t6", "opus"); c.Score != "1/1" || c.Meta != "$0.10 \u00b7 2.0s" {
		t.Errorf("t6 × opus after its attempt passed: %+v, want 1/1, $0.10 · 2.0s", c)
	}

	// The reader's comparison is in the page's address.
	const chosen = "?a=sonnet&b=opus&sort=diff"
	if q := eval[string](e, `location.search`); q != chosen {
		t.Errorf("the address keeps %q, want %s", q, chosen)
	}

	if *updateScreenshot {
		shotCtx, cancel := context.WithTimeout(e.ctx, 20*time.Second)
		png, err := chromedp.Run(shotCtx, chromedp.FullScreenshot(100))
		cancel()
		if err != nil {
			e.fatal("screenshot", err)
		}
		if err := os.WriteFile(filepath.Join("testdata", "bench-matrix.png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// An attempt's trace link leads to its run.
	e.do("follow an attempt to its run", 30*time.Second,
		chromedp.Click(chromedp.CSS(cellSel+` li[data-n="2"] a.trace`)),
		chromedp.WaitVisible(chromedp.CSS(`.run-head dl.kv`)))
	if path := eval[string](e, `location.pathname`); path != "/runs/run-sonnet-t1-2" {
		t.Errorf("the attempt's trace led to %s", path)
	}

	// Opened again from the address it had: the same pair, in the same
	// order.
	e.open("open the bench from its address", 30*time.Second, e.url+"/bench/"+b.ID+chosen,
		chromedp.WaitVisible(chromedp.CSS(panel("opus")+` dd[data-field="diff"]`)))
	if got := eval[string](e, `document.querySelector('select.pick-a').value + ' ' + document.querySelector('select.sort-tasks').value`); got != "sonnet diff" {
		t.Errorf("opened from the address: A and order %q, want sonnet diff", got)
	}
	checkRows(e, "opened from the address", []string{"t1:+100 pts", "t2:+100 pts", "t3:0", "t4:0", "t5:0", "t6:0"})

	// A bench that has ended is not refreshed: a pair the first answer
	// (every two models, each with the later ones) lacks is asked for.
	// opus − haiku is −(haiku − opus): −25.0 pts, haiku better on t2, t3.
	e.open("open the ended bench", 30*time.Second, e.url+"/bench/p-0031-ended",
		chromedp.WaitVisible(chromedp.CSS(panel("haiku")+` dd[data-field="diff"]`)))
	choose(e, "select.pick-a", "opus")
	e.do("the pair opus − haiku", 20*time.Second, chromedp.WaitVisible(chromedp.CSS(`.paired-panel[data-a="opus"] dd[data-field="diff"]`)))
	checkPanel(e, "haiku", map[string]string{"diff": "\u221225.0 pts", "wlt": "opus better on 0, haiku on 2, tied on 2",
		"apart": "only-a: Only opus finished: t5 | errored: Left out for errors of the task or its environment: t5"})
}

// choose picks value in the select sel, as a reader does.
func choose(e *browserEnv, sel, value string) {
	e.t.Helper()
	if !eval[bool](e, `(() => { const s = document.querySelector('`+sel+`'); if (!s || ![...s.options].some((o) => o.value === '`+value+`')) return false;
		s.value = '`+value+`'; s.dispatchEvent(new Event('change')); return true; })()`) {
		e.t.Fatalf("no option %s in %s", value, sel)
	}
}

// checkPanel checks the paired panel of the pair against b: each figure
// by its field, and the tasks left out ("apart", kind: text | …).
func checkPanel(e *browserEnv, b string, want map[string]string) {
	e.t.Helper()
	got := eval[map[string]string](e, `(() => {
		const p = document.querySelector('.paired-panel[data-b="`+b+`"]'), out = {};
		for (const dd of p.querySelectorAll('dd[data-field]')) out[dd.dataset.field] = dd.textContent;
		out.apart = [...p.querySelectorAll('.paired-apart li')].map((li) => li.dataset.apart + ': ' + li.textContent).join(' | ');
		return out; })()`)
	for k, w := range want {
		if got[k] != w {
			e.t.Errorf("panel against %s, %s: %q, want %q", b, k, got[k], w)
		}
	}
}

// checkRows checks the matrix's rows, each as task:A − B.
func checkRows(e *browserEnv, what string, want []string) {
	e.t.Helper()
	js := `[...document.querySelectorAll('table.bench-grid tbody tr[data-task]')].map((tr) => tr.dataset.task + ':' + tr.querySelector('td.diff').textContent).join(',')`
	// A choice redraws the page at once; a live update within the poll.
	ctx, cancel := context.WithTimeout(e.ctx, 10*time.Second)
	defer cancel()
	w := strings.Join(want, ",")
	if _, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](js+` === `+fmt.Sprintf("%q", w))); err != nil {
		e.t.Errorf("%s: rows %s, want %s", what, eval[string](e, js), w)
	}
}
