package console

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/lanehq/lane/internal/record"
)

// Summary prints how a run ended: one line with its status, cost, tokens,
// turns, tool calls, duration and ids, then its error, hint and any
// contradiction in the runtime's own account, each on a line of its own.
func (p *Printer) Summary(r *record.Run) error {
	if r == nil {
		return nil
	}
	var b strings.Builder
	label := statusLabel(r)
	if w, ok := refusedWindow(r); ok && r.ErrorKind == record.ErrorRateLimited {
		label += resets(w.ResetsAt, r.EndedAt) // "rate limited (claude five_hour) · resets 21:13"
	}
	parts := []string{p.paint(statusStyle(r.Status), statusMarker(r.Status)+" "+label), cost(r)}
	if u := r.Usage; !u.IsZero() {
		parts = append(parts, "in "+count(u.InputTokens), "out "+count(u.OutputTokens))
		if u.CacheReadTokens != 0 || u.CacheCreationTokens != 0 {
			parts = append(parts, "cache "+count(u.CacheReadTokens)+"r/"+count(u.CacheCreationTokens)+"w")
		}
	}
	if c := contextLabel(r.ContextTokens, r.ContextWindow); c != "" {
		parts = append(parts, c)
	}
	parts = append(parts, plural(r.Turns, "turn"), plural(r.ToolCalls, "tool"))
	if d := runDuration(r); d > 0 {
		parts = append(parts, humanDuration(d))
	}
	if pc := r.Permissions; pc.Requests > 0 || pc.Denied > 0 {
		parts = append(parts, plural(pc.Requests, "request")+" ("+count(int64(pc.Allowed))+" allowed, "+count(int64(pc.Denied))+" denied)")
	}
	if c := changesLabel(r.Changes); c != "" {
		parts = append(parts, c)
	}
	if r.Worker != "" {
		parts = append(parts, "worker "+r.Worker)
	}
	if r.Via != "" {
		parts = append(parts, "via "+flat(r.Via))
	}
	if r.SessionID != "" {
		parts = append(parts, "session "+Short(r.SessionID))
	}
	if r.ID != "" {
		parts = append(parts, "run "+flat(r.ID))
	}
	b.WriteString(strings.Join(parts, " · "))
	b.WriteByte('\n')

	// The error event that ended the run was just shown: say it once.
	if r.ErrorMessage != p.lastError {
		p.detail(&b, red, "error", r.ErrorMessage)
	}
	p.detail(&b, "", "hint", r.ErrorHint)
	p.detail(&b, "", "limits", BudgetLabel(r.Budget))
	p.detail(&b, yellow, "note", prefixed("runtime status was contradictory: ", r.Contradiction))
	if c := r.Changes; c != nil {
		p.detail(&b, yellow, "note", prefixed("changes not recorded: ", c.Error))
		p.detail(&b, "", "note", c.Note)
	}
	_, err := io.WriteString(p.w, b.String())
	return err
}

// BudgetLabel says what a run was allowed: "400k tokens · $2.00 · 30
// turns", "" for none.
func BudgetLabel(b *record.Budget) string {
	if b == nil {
		return ""
	}
	var parts []string
	if b.Tokens > 0 {
		parts = append(parts, count(b.Tokens)+" tokens")
	}
	if b.CostUSD > 0 {
		parts = append(parts, USD(b.CostUSD))
	}
	if b.Turns > 0 {
		parts = append(parts, plural(b.Turns, "turn"))
	}
	return strings.Join(parts, " · ")
}

// contextLabel says how full the model's context was at the last call:
// "context 45k/200k (23 %)", "context 45k" when the window is not known,
// "" when nothing was counted.
func contextLabel(tokens int64, window int) string {
	switch {
	case tokens <= 0:
		return ""
	case window <= 0:
		return "context " + count(tokens)
	}
	return "context " + count(tokens) + "/" + count(int64(window)) + " (" + percent(float64(tokens)/float64(window)) + ")"
}

// changesLabel says what a run changed in its folder, "" when lane did not
// look or could not tell.
func changesLabel(c *record.Changes) string {
	switch {
	case c == nil || c.Error != "":
		return ""
	case c.Files == 0:
		return "no files changed"
	}
	return fmt.Sprintf("changed %s (+%d −%d)", plural(c.Files, "file"), c.Insertions, c.Deletions)
}

func prefixed(prefix, s string) string {
	if s == "" {
		return ""
	}
	return prefix + s
}

// detail writes "  label: text", continuation lines aligned under the text.
func (p *Printer) detail(b *strings.Builder, style, label, text string) {
	ls := lines(text)
	if len(ls) == 0 {
		return
	}
	head := label + ": "
	for i, l := range ls {
		if i > 0 {
			head = strings.Repeat(" ", len(head))
		}
		b.WriteString("  " + p.paint(style, head+l) + "\n")
	}
}

func statusMarker(s record.Status) string {
	switch s {
	case record.StatusSucceeded:
		return "✔"
	case record.StatusRunning, "":
		return "●"
	}
	return "✘"
}

func statusStyle(s record.Status) string {
	switch s {
	case record.StatusSucceeded:
		return boldGrn
	case record.StatusRunning, "":
		return boldYell
	}
	return boldRed
}

// statusLabel reads like "succeeded", "timed out" or "failed (auth)".
func statusLabel(r *record.Run) string {
	s := string(r.Status)
	if s == "" {
		s = "unknown"
	}
	label := flat(strings.ReplaceAll(s, "_", " "))
	k := r.ErrorKind
	if k == record.ErrorRateLimited {
		if w, ok := refusedWindow(r); ok {
			return "rate limited (" + limitLabel(r.Runtime, w.Name) + ")"
		}
		return "rate limited"
	}
	redundant := (r.Status == record.StatusTimedOut && k == record.ErrorTimeout) ||
		(r.Status == record.StatusCancelled && k == record.ErrorCancelled)
	if k != record.ErrorNone && !redundant {
		label += " (" + flat(string(k)) + ")"
	}
	return label
}

// cost reads like "$0.0081" (see USD), or "~$0.0081" when lane estimated it.
func cost(r *record.Run) string {
	s := USD(r.CostUSD)
	if r.CostEstimate {
		s = "~" + s
	}
	return s
}

// Bytes is a size for a person: 512 bytes, 1.5 KiB, 3.2 MiB.
func Bytes(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

// count shortens a token count: 950, 1.5k, 12.3k, 456k, 1.2M.
func count(n int64) string {
	trim := func(whole, tenth int64, unit string) string {
		if tenth == 0 {
			return strconv.FormatInt(whole, 10) + unit
		}
		return strconv.FormatInt(whole, 10) + "." + strconv.FormatInt(tenth, 10) + unit
	}
	switch {
	case n < 1000:
		return strconv.FormatInt(n, 10)
	case n < 100_000:
		return trim(n/1000, n%1000/100, "k")
	case n < 1_000_000:
		return strconv.FormatInt(n/1000, 10) + "k"
	case n < 100_000_000:
		return trim(n/1_000_000, n%1_000_000/100_000, "M")
	}
	return strconv.FormatInt(n/1_000_000, 10) + "M"
}

// runDuration is how long a finished run took.
func runDuration(r *record.Run) time.Duration {
	if r.DurationMS > 0 {
		return time.Duration(r.DurationMS) * time.Millisecond
	}
	if !r.StartedAt.IsZero() && !r.EndedAt.IsZero() {
		return r.EndedAt.Sub(r.StartedAt)
	}
	return 0
}

func humanMS(ms int64) string { return humanDuration(time.Duration(ms) * time.Millisecond) }

// humanDuration reads like 850ms, 4.2s, 3m05s or 2h07m.
func humanDuration(d time.Duration) string {
	switch {
	case d < 0:
		return "0ms"
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%d.%ds", d/time.Second, d%time.Second/(100*time.Millisecond))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", d/time.Minute, d%time.Minute/time.Second)
	}
	return fmt.Sprintf("%dh%02dm", d/time.Hour, d%time.Hour/time.Minute)
}

// Short is the first eight characters of an id, as lane shows ids.
func Short(id string) string {
	id = flat(id)
	if r := []rune(id); len(r) > 8 {
		return string(r[:8])
	}
	return id
}
