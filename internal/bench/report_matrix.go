package bench

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/lanehq/lane/internal/bench/stats"
	"github.com/lanehq/lane/internal/console"
)

// matrixLegend says what a cell of the matrix holds.
const matrixLegend = "Each cell: passes/finished attempts, or the mean reward when the verifier gave one; " +
	"the attempts' cost; the median time of the agent's runs. \"error\": every attempt failed for the task or its environment."

// WriteMatrix writes the tasks × models grid, a row per task and a column
// per model, as aligned text or as a markdown table.
func (r Report) WriteMatrix(w io.Writer, markdown bool) error {
	ew := &errWriter{w: w}
	head := []string{"TASK"}
	for _, m := range r.Models {
		head = append(head, m.Model)
	}
	cells := map[[2]string]stats.Stats{}
	var tasks []string
	for _, t := range r.Tasks {
		if _, seen := cells[[2]string{t.Task, ""}]; !seen {
			cells[[2]string{t.Task, ""}] = stats.Stats{}
			tasks = append(tasks, t.Task)
		}
		cells[[2]string{t.Task, t.Model}] = t.Stats
	}
	rows := make([][]string, 0, len(tasks))
	for _, task := range tasks {
		row := []string{task}
		for _, m := range r.Models {
			row = append(row, matrixCell(cells[[2]string{task, m.Model}], markdown))
		}
		rows = append(rows, row)
	}
	if markdown {
		fmt.Fprintf(ew, "## %s\n\n| %s |\n|---|%s\n", r.title(), strings.Join(escapeCells(head), " | "),
			strings.Repeat("---:|", len(head)-1))
		for _, row := range rows {
			fmt.Fprintf(ew, "| %s |\n", strings.Join(escapeCells(row), " | "))
		}
	} else {
		fmt.Fprintf(ew, "%s\n\n", r.title())
		tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, strings.Join(head, "\t"))
		for _, row := range rows {
			fmt.Fprintln(tw, strings.Join(row, "\t"))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	fmt.Fprintf(ew, "\n%s\n", matrixLegend)
	return ew.err
}

// matrixCell is one model on one task: "2/3 $0.12 14s" ("2/3 · $0.12 ·
// 14s" in markdown), "-" when it has no finished attempt.
func matrixCell(s stats.Stats, markdown bool) string {
	if s.Finished == 0 {
		if s.Errored > 0 {
			return "error"
		}
		return "-"
	}
	score := fmt.Sprintf("%d/%d", s.Passed, s.Finished)
	if s.MeanReward != nil {
		score = strconv.FormatFloat(*s.MeanReward, 'f', 2, 64)
	}
	sep := " "
	if markdown {
		sep = " · "
	}
	return strings.Join([]string{score, console.USD(s.CostUSD), optDur(s.MedianDurationMS)}, sep)
}

// escapeCells escapes the pipes of markdown table cells.
func escapeCells(cells []string) []string {
	out := make([]string, len(cells))
	for i, c := range cells {
		out[i] = strings.ReplaceAll(c, "|", `\|`)
	}
	return out
}
