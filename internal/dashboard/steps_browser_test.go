package dashboard

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/lanehq/lane/internal/record"
)

// A bench of a multi-step Harbor task lists each attempt's steps in order,
// each with its status, its reward and a link to its own agent's run; the
// step that ended the attempt below its min_reward says so.
func TestBrowserBenchSteps(t *testing.T) {
	t0 := time.Now().Add(-time.Hour).UTC().Truncate(time.Second)
	reward := func(v float64) *float64 { return &v }
	e := startBrowserEnv(t, func(e *browserEnv) {
		b := &record.Bench{ID: "b-0020-steps", Name: "milestones", Models: []string{"sonnet"},
			Repeat: 2, Parallel: 1, Status: record.StatusSucceeded, StartedAt: t0, EndedAt: t0.Add(time.Minute)}
		full := att("ledger", "sonnet", 1, record.AttemptPassed)
		full.Reward = reward(1)
		full.Steps = []record.AttemptStep{
			{Name: "open", RunID: "run-ledger-open", Status: record.AttemptPassed, Reward: reward(1), Rewards: map[string]float64{"reward": 1}},
			{Name: "post", RunID: "run-ledger-post", Status: record.AttemptPassed, Reward: reward(1), Rewards: map[string]float64{"reward": 1}},
		}
		gated := att("ledger", "sonnet", 2, record.AttemptFailed)
		gated.Reward, gated.FailureKind = reward(0.5), "below_min_reward"
		gated.Steps = []record.AttemptStep{
			{Name: "open", RunID: "run-ledger-open-2", Status: record.AttemptPassed, Reward: reward(1), Rewards: map[string]float64{"reward": 1}},
			{Name: "post", RunID: "run-ledger-post-2", Status: record.AttemptFailed, FailureKind: "below_min_reward",
				Reward: reward(0), Rewards: map[string]float64{"reward": 0}, Error: "reward 0 is below the step's min_reward 1"},
		}
		withArtifacts(e.t, e.writer, &full)
		recordBench(e.t, e.writer, b, []record.Attempt{full, gated})
		for _, id := range []string{"run-ledger-open", "run-ledger-post", "run-ledger-open-2", "run-ledger-post-2"} {
			r := &record.Run{ID: id, Runtime: "claude", Model: "sonnet", Dir: "/work/ledger",
				Prompt: "step " + id, Status: record.StatusSucceeded, StartedAt: t0, EndedAt: t0.Add(time.Second)}
			if err := e.writer.CreateRun(context.Background(), r); err != nil {
				e.t.Fatal(err)
			}
		}
	})

	e.open("open the multi-step bench", 30*time.Second, e.url+"/bench/b-0020-steps",
		chromedp.WaitVisible(chromedp.CSS(`table.bench-steps tbody tr[data-n="2"]`)))
	type step struct{ Name, Text, Href, Class, Title string }
	steps := func(n string) []step {
		return eval[[]step](e, `[...document.querySelectorAll('table.bench-steps tr[data-n="`+n+`"] .pill.step')].map((p) =>
			({ name: p.dataset.step, text: p.textContent, href: p.getAttribute('href') || '', class: p.className, title: p.title }))`)
	}
	first, second := steps("1"), steps("2")
	if len(first) != 2 || first[0].Name != "open" || first[1].Name != "post" || first[1].Href != "/runs/run-ledger-post" {
		t.Fatalf("attempt 1's steps %+v, want open then post, post linked to its run", first)
	}
	if len(second) != 2 || !strings.Contains(second[1].Class, "a-failed") || second[1].Text != "post 0" ||
		!strings.Contains(second[1].Title, "below_min_reward") || !strings.Contains(second[1].Title, "min_reward 1") {
		t.Fatalf("attempt 2's steps %+v, want post failed below its min_reward with reward 0", second)
	}
	cell := `table.bench-grid tr[data-task="ledger"] td[data-model="sonnet"] a.a-failed`
	if title := eval[string](e, `document.querySelector('`+cell+`')?.title ?? 'none'`); !strings.Contains(title, "steps open passed → post below_min_reward") {
		t.Errorf("the grid's attempt title %q, want its steps in order", title)
	}

	// Attempt 1's artifacts, its own and step post's: each file a link
	// that downloads it, and what could not be collected.
	type artRow struct{ Step, Files string }
	rows := eval[[]artRow](e, `[...document.querySelectorAll('table.bench-artifacts tbody tr')].map((tr) =>
		({ step: tr.dataset.step + '@' + tr.dataset.n, files: tr.querySelector('ul.artifact-files').textContent }))`)
	if want := []artRow{{"@1", "logs/artifacts/result.txt 3 B"}, {"post@1", "app/notes.txt 7 B/app/missing.txt: missing"}}; !slices.Equal(rows, want) {
		t.Errorf("the artifacts' rows %+v, want %+v", rows, want)
	}
	got := eval[string](e, `fetch(document.querySelector('table.bench-artifacts tr[data-step="post"] a.artifact-file').href).then((r) => r.text())`, chromedp.EvalAwaitPromise)
	if got != "posted\n" {
		t.Errorf("step post's notes.txt downloaded as %q", got)
	}

	e.open("follow a step to its run", 30*time.Second, e.url+"/bench/b-0020-steps",
		chromedp.WaitVisible(chromedp.CSS(`table.bench-steps a.pill.step[href="/runs/run-ledger-post-2"]`)),
		chromedp.Click(`table.bench-steps a.pill.step[href="/runs/run-ledger-post-2"]`),
		chromedp.WaitVisible(chromedp.CSS(`.run-head`)))
	if loc := eval[string](e, `location.pathname`); loc != "/runs/run-ledger-post-2" {
		t.Errorf("the step's link led to %s", loc)
	}
}
