package bench

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/lanehq/lane/internal/bench/stats"
)

// Scores of Paired.Score.
const (
	ScorePass   = stats.ScorePass
	ScoreReward = stats.ScoreReward
)

// Paired are a report's paired comparisons (package stats' Paired): every
// two models in the bench's order, or every model against Baseline. The
// oracle, whose attempts are the tasks' own solutions, is left out.
type Paired = stats.Paired

// SetBaseline compares every other model against model instead of every
// two models with each other.
func (r *Report) SetBaseline(model string) error {
	if !slices.ContainsFunc(r.Models, func(m ModelStats) bool { return m.Model == model }) || model == OracleModel {
		names := make([]string, 0, len(r.Models))
		for _, m := range r.Models {
			if m.Model != OracleModel {
				names = append(names, m.Model)
			}
		}
		if len(names) == 0 {
			return fmt.Errorf("no model %q in bench %s: it has no model to compare, the oracle aside", model, r.Bench.ID)
		}
		return fmt.Errorf("no model %q in bench %s (its models: %s)", model, r.Bench.ID, strings.Join(names, ", "))
	}
	p := r.table.Paired(model)
	if p == nil {
		return errors.New("a baseline needs another model to compare with: the bench has only " + model)
	}
	r.Paired = p
	return nil
}

// pairedLegend says what the paired tables' columns are.
const pairedLegend = "A − B: the mean over the tasks both finished of A's score − B's, each task's attempts averaged; " +
	"95% CI: Student's t with n−1 df below 30 tasks, normal from 30 (DIST says which); " +
	"P: paired t-test, two-sided; EXACT P: sign test (McNemar's exact), when every score is 0 or 1; " +
	"WINS, LOSSES, TIES: tasks where A scored more, less, the same; " +
	"DETECTABLE: the smallest difference these tasks detect at 80% power, α = 0.05; " +
	"HALVED BY: the tasks that would halve it (4×). " +
	"TASK MEAN ± SE: the mean per-task score, its standard error clustered by task (repeats are not independent), " +
	"where 95% CI is Wilson's over the attempts."

var pairedHeader = []string{"A", "B", "TASKS", "A − B", "95% CI", "DIST", "P", "EXACT P", "WINS", "LOSSES", "TIES",
	"DETECTABLE", "HALVED BY"}

// pairedTables are the report's paired tables, one per score: a title
// and its rows; nil when the report has no pairs.
func (r Report) pairedTables() (titles []string, tables [][][]string) {
	if r.Paired == nil {
		return nil, nil
	}
	for i, p := range r.Paired.Pairs {
		if i == 0 || p.Key != r.Paired.Pairs[i-1].Key {
			titles = append(titles, r.pairedTitle(p.Key))
			tables = append(tables, nil)
		}
		tables[len(tables)-1] = append(tables[len(tables)-1], r.pairRow(p))
	}
	return titles, tables
}

// pairedTitle says what a paired table compares.
func (r Report) pairedTitle(key string) string {
	var score string
	switch {
	case key != "":
		score = "reward key " + key + " (0 for an attempt whose verifier did not write it)"
	case r.Paired.Score == ScoreReward:
		score = "the verifier's reward (pass = 1, fail = 0 without one)"
	default:
		score = "pass = 1, fail = 0"
	}
	against := "every two models"
	if r.Paired.Baseline != "" {
		against = "every model against " + r.Paired.Baseline
	}
	return "paired comparisons, " + against + ": " + score
}

// pairRow is one pair's cells, "-" for the figures it has not.
func (r Report) pairRow(p stats.Pair) []string {
	row := []string{p.A, p.B, itoa(p.Tasks)}
	d := p.Difference
	if d == nil {
		row = append(row, "-", "-", "-", "-", "-")
	} else {
		dist := "normal"
		if d.Dist == stats.DistT {
			dist = fmt.Sprintf("t, %d df", d.DF)
		}
		exact := "-"
		if d.ExactP != nil {
			exact = pValue(*d.ExactP)
		}
		row = append(row, r.signed(p.Key, d.Mean), r.interval(p.Key, d.CILow, d.CIHigh), dist,
			pValue(d.P), exact)
	}
	row = append(row, itoa(p.Wins), itoa(p.Losses), itoa(p.Ties))
	if d == nil {
		return append(row, "-", "-")
	}
	return append(row, r.unsigned(p.Key, d.MDE), plural(d.TasksToHalveMDE, "task"))
}

// signed is a difference of scores: in percentage points for passes, as
// a number for rewards.
func (r Report) signed(key string, v float64) string {
	if key == "" && r.Paired.Score == ScorePass {
		return fmt.Sprintf("%+.1f pts", 100*v)
	}
	return fmt.Sprintf("%+.3f", v)
}

// interval is "-12.5 to +30.0 pts", or "-0.125 to +0.300".
func (r Report) interval(key string, low, high float64) string {
	lo, _, _ := strings.Cut(r.signed(key, low), " ")
	return lo + " to " + r.signed(key, high)
}

func (r Report) unsigned(key string, v float64) string {
	return strings.TrimPrefix(r.signed(key, v), "+")
}

// pValue is p to 3 decimals, or "<0.001".
func pValue(p float64) string {
	if p < 0.001 {
		return "<0.001"
	}
	return strconv.FormatFloat(p, 'f', 3, 64)
}

// pairedNotes are a line per pair with fewer than 2 shared tasks or with
// tasks left out.
func (r Report) pairedNotes() []string {
	if r.Paired == nil {
		return nil
	}
	var notes []string
	for _, p := range r.Paired.Pairs {
		var parts []string
		if p.Difference == nil {
			parts = append(parts, fmt.Sprintf("%s both finished: fewer than 2, no figures", plural(p.Tasks, "task")))
		}
		if len(p.OnlyA) > 0 {
			parts = append(parts, "only "+p.A+" finished "+strings.Join(p.OnlyA, ", "))
		}
		if len(p.OnlyB) > 0 {
			parts = append(parts, "only "+p.B+" finished "+strings.Join(p.OnlyB, ", "))
		}
		if len(p.Errored) > 0 {
			parts = append(parts, fmt.Sprintf("%s left out for errors of the task or environment: %s",
				plural(len(p.Errored), "task"), strings.Join(p.Errored, ", ")))
		}
		if len(parts) > 0 {
			name := p.A + " − " + p.B
			if p.Key != "" {
				name += " (" + p.Key + ")"
			}
			notes = append(notes, name+": "+strings.Join(parts, "; "))
		}
	}
	return notes
}

// writePairedText writes the paired tables for a terminal.
func (r Report) writePairedText(w io.Writer) error {
	titles, tables := r.pairedTables()
	for i, rows := range tables {
		fmt.Fprintf(w, "\n%s\n", titles[i])
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, strings.Join(pairedHeader, "\t"))
		for _, row := range rows {
			fmt.Fprintln(tw, strings.Join(row, "\t"))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	for _, n := range r.pairedNotes() {
		fmt.Fprintln(w, n)
	}
	return nil
}

// writePairedMarkdown writes the paired tables as markdown.
func (r Report) writePairedMarkdown(w io.Writer) {
	titles, tables := r.pairedTables()
	for i, rows := range tables {
		fmt.Fprintf(w, "\n%s\n\n", titles[i])
		fmt.Fprintf(w, "| %s |\n|---|---|%s\n", strings.Join(pairedHeader, " | "), strings.Repeat("---:|", len(pairedHeader)-2))
		for _, row := range rows {
			for j, c := range row {
				row[j] = strings.ReplaceAll(c, "|", `\|`)
			}
			fmt.Fprintf(w, "| %s |\n", strings.Join(row, " | "))
		}
	}
	if notes := r.pairedNotes(); len(notes) > 0 {
		fmt.Fprintln(w)
		for _, n := range notes {
			fmt.Fprintf(w, "- %s\n", n)
		}
	}
}

// taskScoreText is a model's mean per-task score and its clustered
// standard error: "79% ±15" for passes, "0.79 ±0.15" for rewards.
func (r Report) taskScoreText(s stats.ModelScore) string {
	if s.Mean == nil {
		return "-"
	}
	pass := !r.rewarded() // as Paired.Score
	var t string
	if pass {
		t = fmt.Sprintf("%.0f%%", 100**s.Mean)
	} else {
		t = strconv.FormatFloat(*s.Mean, 'f', 2, 64)
	}
	switch {
	case s.SE == nil:
		return t
	case pass:
		return fmt.Sprintf("%s ±%.0f", t, 100**s.SE)
	}
	return t + " ±" + strconv.FormatFloat(*s.SE, 'f', 2, 64)
}

// pairedCSVHeader are WriteCSV's columns after csvHeader: a model's
// per-task score, then a pair's figures (scope "pair": model is A).
var pairedCSVHeader = []string{
	"task_mean", "task_se",
	"model_b", "key", "shared_tasks", "difference", "sd", "se", "dist", "df", "diff_ci_low", "diff_ci_high", "p",
	"exact_test", "exact_p", "wins", "losses", "ties", "mde", "tasks_to_halve_mde", "only_a", "only_b", "errored",
}

// scoreCSV are a row's cells under pairedCSVHeader for a model (s) or a
// task × model (nil).
func scoreCSV(s *stats.ModelScore) []string {
	cells := make([]string, len(pairedCSVHeader))
	if s != nil {
		cells[0], cells[1] = optNum(s.Mean), optNum(s.SE)
	}
	return cells
}

// writePairsCSV writes a row per pair, its figures under pairedCSVHeader.
func (r Report) writePairsCSV(cw *csv.Writer) {
	if r.Paired == nil {
		return
	}
	for _, p := range r.Paired.Pairs {
		row := make([]string, len(csvHeader))
		row[0], row[2] = "pair", p.A
		fig := make([]string, 12)
		if d := p.Difference; d != nil {
			df := ""
			if d.Dist == stats.DistT {
				df = itoa(d.DF)
			}
			fig = []string{num(d.Mean), num(d.SD), num(d.SE), d.Dist, df, num(d.CILow), num(d.CIHigh), num(d.P),
				d.ExactTest, optNum(d.ExactP), num(d.MDE), itoa(d.TasksToHalveMDE)}
		}
		row = append(row, "", "", p.B, p.Key, itoa(p.Tasks))
		row = append(row, fig[:10]...)
		row = append(row, itoa(p.Wins), itoa(p.Losses), itoa(p.Ties), fig[10], fig[11],
			strings.Join(p.OnlyA, ";"), strings.Join(p.OnlyB, ";"), strings.Join(p.Errored, ";"))
		_ = cw.Write(row)
	}
}

// modelCells are a model's cells in the models' table: the columns of
// cells, with its mean per-task score and standard error after the
// Wilson interval.
func (r Report) modelCells(m ModelStats) []string {
	c := r.cells([]string{m.Model}, m.Stats, m.Changed)
	const afterCI = 4 // MODEL, PASSED, RATE, 95% CI
	return slices.Insert(c, afterCI, r.taskScoreText(m.Score))
}

// legend is the tables' legend, with the paired tables' when there are.
func (r Report) legend() string {
	if r.Paired == nil {
		return legend + " TASK MEAN ± SE: the mean per-task score, its standard error clustered by task."
	}
	return legend + "\n" + pairedLegend
}
