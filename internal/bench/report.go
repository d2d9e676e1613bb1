package bench

import (
	"cmp"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/lanehq/lane/internal/bench/stats"
	"github.com/lanehq/lane/internal/console"
)

// WriteTable writes the report as aligned text tables for a terminal: the
// models, then every task × model.
func (r Report) WriteTable(w io.Writer) error {
	ew := &errWriter{w: w}
	fmt.Fprintf(ew, "%s\n\n", r.title())
	tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(r.header(false), "\t"))
	for _, m := range r.Models {
		fmt.Fprintln(tw, strings.Join(r.modelCells(m), "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(r.Tasks) > 0 {
		fmt.Fprintln(ew)
		tw = tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, strings.Join(r.header(true), "\t"))
		for _, t := range r.Tasks {
			fmt.Fprintln(tw, strings.Join(r.cells([]string{t.Task, t.Model}, t.Stats, t.Changed), "\t"))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if err := r.writePairedText(ew); err != nil {
		return err
	}
	fmt.Fprint(ew, r.brokenLine())
	fmt.Fprint(ew, r.retriesLine())
	fmt.Fprint(ew, r.accountsLine())
	fmt.Fprint(ew, r.stepsText())
	fmt.Fprintf(ew, "\n%s\n", r.legend())
	return ew.err
}

// accountsLine says which logins ran the attempts, when more than one did
// ("accounts: claude /home/me/.claude-work 3, claude /home/me/.claude-home 5").
func (r Report) accountsLine() string {
	if len(r.Accounts) < 2 {
		return ""
	}
	var parts []string
	for _, a := range r.Accounts {
		parts = append(parts, a.Runtime+" "+a.Account+" "+itoa(a.Attempts))
	}
	return "\naccounts: " + strings.Join(parts, ", ") + "\n"
}

// legend says what the columns are.
const legend = "RATE: passed/finished, 95% CI: Wilson; MEDIAN, MEAN: the agent's run; " +
	"$/ATTEMPT, TOKENS, TURNS, TOOLS: means per attempt; $/PASS: total cost / passes; " +
	"FILES CHANGED: median per attempt whose run recorded its changes."

// WriteMarkdown writes the report as markdown tables.
func (r Report) WriteMarkdown(w io.Writer) error {
	ew := &errWriter{w: w}
	fmt.Fprintf(ew, "## %s\n\n", r.title())
	table := func(head []string, names int, rows [][]string) {
		fmt.Fprintf(ew, "| %s |\n", strings.Join(head, " | "))
		aligns := make([]string, len(head))
		for i := range aligns {
			aligns[i] = "---:"
			if i < names || i == len(head)-1 {
				aligns[i] = "---" // names and failures
			}
		}
		fmt.Fprintf(ew, "|%s|\n", strings.Join(aligns, "|"))
		for _, row := range rows {
			for i, c := range row {
				row[i] = strings.ReplaceAll(c, "|", `\|`)
			}
			fmt.Fprintf(ew, "| %s |\n", strings.Join(row, " | "))
		}
	}
	var rows [][]string
	for _, m := range r.Models {
		rows = append(rows, r.modelCells(m))
	}
	table(r.header(false), 1, rows)
	if len(r.Tasks) > 0 {
		rows = nil
		for _, t := range r.Tasks {
			rows = append(rows, r.cells([]string{t.Task, t.Model}, t.Stats, t.Changed))
		}
		fmt.Fprintln(ew)
		table(r.header(true), 2, rows)
	}
	r.writePairedMarkdown(ew)
	fmt.Fprint(ew, r.brokenLine())
	fmt.Fprintf(ew, "\n%s\n", r.legend())
	return ew.err
}

// csvHeader are the columns of WriteCSV. scope is "model" (a model over
// every task, task empty) or "task" (one task × model).
var csvHeader = []string{
	"scope", "task", "model", "attempts", "finished", "passed", "failed", "skipped", "pending", "runs",
	"pass_rate", "ci_low", "ci_high", "pass_at_1", "k", "pass_at_k",
	"median_duration_ms", "mean_duration_ms", "cost_usd", "cost_per_attempt_usd", "cost_per_pass_usd",
	"input_tokens", "output_tokens", "cache_read_tokens", "cache_creation_tokens", "tokens",
	"turns", "tool_calls", "mean_turns", "mean_tool_calls", "failures", "median_files_changed", "mean_rewards",
}

// WriteCSV writes one row per model and one per task × model, with every
// figure at full precision; an empty cell is a figure that has nothing to
// be computed from.
func (r Report) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	_ = cw.Write(append(slices.Clone(csvHeader), pairedCSVHeader...))
	row := func(scope, task, model string, s stats.Stats, ch Changed, score *stats.ModelScore) {
		var p1, k, pk string
		for _, p := range s.PassAtK {
			if p.K == 1 {
				p1 = num(p.Value)
			} else {
				k, pk = strconv.Itoa(p.K), num(p.Value)
			}
		}
		u := s.Usage
		_ = cw.Write(append([]string{
			scope, task, model, itoa(s.Attempts), itoa(s.Finished), itoa(s.Passed), itoa(s.Failed), itoa(s.Skipped),
			itoa(s.Pending), itoa(s.Runs),
			optNum(s.PassRate), optNum(s.CILow), optNum(s.CIHigh), p1, k, pk,
			optNum(s.MedianDurationMS), optNum(s.MeanDurationMS), num(s.CostUSD), optNum(s.CostPerAttemptUSD),
			optNum(s.CostPerPassUSD),
			i64(u.InputTokens), i64(u.OutputTokens), i64(u.CacheReadTokens), i64(u.CacheCreationTokens), i64(s.Tokens),
			itoa(s.Turns), itoa(s.ToolCalls), optNum(s.MeanTurns), optNum(s.MeanToolCalls), failuresCSV(s.Failures),
			optNum(ch.MedianFilesChanged), rewardsCSV(s.MeanRewards),
		}, scoreCSV(score)...))
	}
	for _, m := range r.Models {
		row("model", "", m.Model, m.Stats, m.Changed, &m.Score)
	}
	for _, t := range r.Tasks {
		row("task", t.Task, t.Model, t.Stats, t.Changed, nil)
	}
	r.writePairsCSV(cw)
	cw.Flush()
	return cw.Error()
}

// WriteJSON writes the report as one indented JSON object.
func (r Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

func (r Report) title() string {
	b := r.Bench
	tasks := map[string]bool{}
	attempts, skipped, pending := 0, 0, 0
	for _, t := range r.Tasks {
		tasks[t.Task] = true
		attempts += t.Attempts
		skipped += t.Skipped
		pending += t.Pending
	}
	id := b.ID
	if len(id) > 8 {
		id = id[:8]
	}
	s := fmt.Sprintf("%s · bench %s · %s · %s × %s × %d · %s",
		cmp.Or(b.Name, "bench"), id, b.Status, plural(len(tasks), "task"), plural(len(r.Models), "model"), b.Repeat,
		plural(attempts, "attempt"))
	var notRun []string
	if skipped > 0 {
		notRun = append(notRun, fmt.Sprintf("%d skipped", skipped))
	}
	if pending > 0 {
		notRun = append(notRun, fmt.Sprintf("%d unfinished", pending))
	}
	if len(notRun) > 0 {
		s += " (" + strings.Join(notRun, ", ") + ")"
	}
	return s + " · " + console.USD(r.CostUSD)
}

// header is the column names of the tables; perTask adds the task column.
func (r Report) header(perTask bool) []string {
	var h []string
	if perTask {
		h = append(h, "TASK")
	}
	h = append(h, "MODEL", "PASSED", "RATE", "95% CI")
	if !perTask {
		h = append(h, "TASK MEAN ± SE")
	}
	for _, k := range r.ks() {
		h = append(h, fmt.Sprintf("PASS@%d", k))
	}
	for k := 1; k <= r.tries(); k++ {
		h = append(h, fmt.Sprintf("TRY %d", k))
	}
	if r.rewarded() {
		h = append(h, "REWARD")
	}
	if r.keyed() {
		h = append(h, "REWARD KEYS")
	}
	if r.errored() {
		h = append(h, "ERRORS")
	}
	return append(h, "MEDIAN", "MEAN", "$/ATTEMPT", "$/PASS", "TOKENS", "TURNS", "TOOLS", "FILES CHANGED", "FAILURES")
}

// Broken are the tasks whose own solution did not pass under the oracle
// (OracleModel): their check fails, or they have none to run (a check
// that failed for its environment does not make a task broken). A bench
// without the oracle has none.
func (r Report) Broken() []string {
	var out []string
	for _, t := range r.Tasks {
		ended := t.Finished + t.Errored - t.Errors[FailEnvironment] // an environment's fault is not the task's
		if t.Model == OracleModel && ended > 0 && t.Passed < ended {
			out = append(out, t.Task)
		}
	}
	return out
}

// brokenLine says which tasks are broken, "" when none is.
func (r Report) brokenLine() string {
	b := r.Broken()
	if len(b) == 0 {
		return ""
	}
	return fmt.Sprintf("\nbroken tasks (their own solution does not pass): %s\n", strings.Join(b, ", "))
}

// retriesLine says, per model, how many attempts were run again after a
// failure and how many times ("retried: sonnet 2 attempts (3 retries)").
func (r Report) retriesLine() string {
	var parts []string
	for _, m := range r.Models {
		if m.Stats.Retried > 0 {
			retries := plural(m.Stats.Retries, "retry")
			if m.Stats.Retries > 1 {
				retries = fmt.Sprintf("%d retries", m.Stats.Retries)
			}
			parts = append(parts, fmt.Sprintf("%s %s (%s)", m.Model, plural(m.Stats.Retried, "attempt"), retries))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "\nretried: " + strings.Join(parts, ", ") + "\n"
}

// tries is how many pass-rate-after-try columns the tables have: the most
// tries of any attempt, when more than one.
func (r Report) tries() int {
	n := 0
	for _, m := range r.Models {
		n = max(n, len(m.Stats.PassRateByTry))
	}
	return n
}

// rewarded says whether any attempt has a verifier's reward.
func (r Report) rewarded() bool {
	return slices.ContainsFunc(r.Models, func(m ModelStats) bool { return m.Stats.MeanReward != nil })
}

// keyed says whether any verifier wrote a reward key other than "reward"
// (reward.json's named numbers), whose means then have a column.
func (r Report) keyed() bool {
	return slices.ContainsFunc(r.Models, func(m ModelStats) bool {
		return slices.ContainsFunc(slices.Collect(maps.Keys(m.Stats.MeanRewards)), func(k string) bool { return k != "reward" })
	})
}

// rewardKeysText is "accuracy 0.80, reward 1.00": each key's mean, in name
// order.
func rewardKeysText(means map[string]float64) string {
	parts := make([]string, 0, len(means))
	for _, k := range slices.Sorted(maps.Keys(means)) {
		parts = append(parts, k+" "+strconv.FormatFloat(means[k], 'f', 2, 64))
	}
	return strings.Join(parts, ", ")
}

// errored says whether any attempt failed for its task or environment.
func (r Report) errored() bool {
	return slices.ContainsFunc(r.Models, func(m ModelStats) bool { return m.Stats.Errored > 0 })
}

// ks are the pass@k columns: those of the bench's repeat.
func (r Report) ks() []int { return stats.Ks(r.Bench.Repeat) }

func (r Report) cells(names []string, s stats.Stats, ch Changed) []string {
	c := append(names, fmt.Sprintf("%d/%d", s.Passed, s.Finished), optPct(s.PassRate), ci(s))
	for _, k := range r.ks() {
		v := "-"
		for _, p := range s.PassAtK {
			if p.K == k {
				v = strconv.FormatFloat(p.Value, 'f', 2, 64)
			}
		}
		c = append(c, v)
	}
	for k := range r.tries() {
		v := "-"
		if k < len(s.PassRateByTry) {
			v = optPct(&s.PassRateByTry[k])
		}
		c = append(c, v)
	}
	if r.rewarded() {
		v := "-"
		if s.MeanReward != nil {
			v = strconv.FormatFloat(*s.MeanReward, 'f', 2, 64)
		}
		c = append(c, v)
	}
	if r.keyed() {
		c = append(c, cmp.Or(rewardKeysText(s.MeanRewards), "-"))
	}
	if r.errored() {
		c = append(c, cmp.Or(failuresText(s.Errors), "-"))
	}
	fail := failuresText(s.Failures)
	if s.Skipped > 0 {
		fail = strings.TrimPrefix(fail+fmt.Sprintf(", %d skipped", s.Skipped), ", ")
	}
	if fail == "" {
		fail = "-"
	}
	return append(c, optDur(s.MedianDurationMS), optDur(s.MeanDurationMS), optUSD(s.CostPerAttemptUSD),
		optUSD(s.CostPerPassUSD), optTokens(s.MeanTokens), optOne(s.MeanTurns), optOne(s.MeanToolCalls),
		optCount(ch.MedianFilesChanged), fail)
}

// optCount is a median of counts: whole, or halfway between two.
func optCount(v *float64) string {
	if v == nil {
		return "-"
	}
	return strconv.FormatFloat(*v, 'f', -1, 64)
}

func ci(s stats.Stats) string {
	if s.CILow == nil {
		return "-"
	}
	return fmt.Sprintf("%.0f–%.0f%%", 100**s.CILow, 100**s.CIHigh)
}

// failuresText is "check_failed 3, timeout 1": most frequent first.
func failuresText(f map[string]int) string {
	keys := slices.SortedFunc(maps.Keys(f), func(a, b string) int {
		return cmp.Or(cmp.Compare(f[b], f[a]), cmp.Compare(a, b))
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, f[k])
	}
	return strings.Join(parts, ", ")
}

// failuresCSV is "check_failed=3;timeout=1", in name order.
func failuresCSV(f map[string]int) string {
	keys := slices.Sorted(maps.Keys(f))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%d", k, f[k])
	}
	return strings.Join(parts, ";")
}

// rewardsCSV is "accuracy=0.5;reward=1", each reward key's mean at full
// precision, in name order.
func rewardsCSV(means map[string]float64) string {
	parts := make([]string, 0, len(means))
	for _, k := range slices.Sorted(maps.Keys(means)) {
		parts = append(parts, k+"="+num(means[k]))
	}
	return strings.Join(parts, ";")
}

func optPct(p *float64) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprintf("%.0f%%", 100**p)
}

func optDur(ms *float64) string {
	if ms == nil {
		return "-"
	}
	d := time.Duration(*ms * float64(time.Millisecond))
	switch {
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	default:
		return d.Round(time.Second).String()
	}
}

func optUSD(v *float64) string {
	if v == nil {
		return "-"
	}
	return console.USD(*v)
}

func optOne(v *float64) string {
	if v == nil {
		return "-"
	}
	return strconv.FormatFloat(*v, 'f', 1, 64)
}

func optTokens(v *float64) string {
	if v == nil {
		return "-"
	}
	return tokens(int64(*v + 0.5))
}

func tokens(n int64) string {
	switch {
	case n >= 1_000_000:
		return strconv.FormatFloat(float64(n)/1e6, 'f', 1, 64) + "M"
	case n >= 10_000:
		return strconv.FormatFloat(float64(n)/1e3, 'f', 0, 64) + "k"
	case n >= 1_000:
		return strconv.FormatFloat(float64(n)/1e3, 'f', 1, 64) + "k"
	}
	return strconv.FormatInt(n, 10)
}

// num is v to 12 significant digits: enough, without float noise.
func num(v float64) string { return strconv.FormatFloat(v, 'g', 12, 64) }

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

func optNum(v *float64) string {
	if v == nil {
		return ""
	}
	return num(*v)
}

func itoa(n int) string  { return strconv.Itoa(n) }
func i64(n int64) string { return strconv.FormatInt(n, 10) }

// errWriter keeps the first write error, so that a run of Fprintf calls
// needs one check.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}
