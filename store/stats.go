package store

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"lane/trace"
)

// StatsQuery bounds Stats on started_at: Since included, Until excluded;
// zero = open.
type StatsQuery struct {
	Since, Until time.Time
}

// Bucket sums up runs. Failed counts every finished run that did not
// succeed (failed, cancelled, timed out, interrupted); running runs count
// in Runs only.
type Bucket struct {
	Key       string      `json:"key"`
	Runs      int         `json:"runs"`
	Succeeded int         `json:"succeeded"`
	Failed    int         `json:"failed"`
	CostUSD   float64     `json:"cost_usd"`
	Usage     trace.Usage `json:"usage"`
}

func (b *Bucket) add(o Bucket) {
	b.Runs += o.Runs
	b.Succeeded += o.Succeeded
	b.Failed += o.Failed
	b.CostUSD += o.CostUSD
	b.Usage = b.Usage.Add(o.Usage)
}

// Stats sums up runs in all, by day, by model and by dir. ByDay is keyed
// YYYY-MM-DD (UTC), oldest first, and has every day from the first with a
// run to the last, empty ones included (over ten years, only days with runs). ByModel and ByDir are by cost,
// highest first, then by runs. Totals has no key.
type Stats struct {
	Totals  Bucket   `json:"totals"`
	ByDay   []Bucket `json:"by_day"`
	ByModel []Bucket `json:"by_model"`
	ByDir   []Bucket `json:"by_dir"`
}

const (
	nsPerDay = int64(24 * time.Hour)
	// maxDenseDays is the longest span ByDay fills with empty days; over a
	// longer one it has only the days with runs.
	maxDenseDays = 3660
)

// Stats sums up the runs that started within q. Running runs whose owner
// has exited are marked interrupted first.
func (s *Store) Stats(ctx context.Context, q StatsQuery) (Stats, error) {
	if _, err := s.SweepInterrupted(ctx); err != nil {
		return Stats{}, fmt.Errorf("stats: %w", err)
	}
	sqlq, args := s.statsQuery(q)
	rows, err := s.db.QueryContext(ctx, sqlq, args...)
	if err != nil {
		return Stats{}, fmt.Errorf("stats: %w", err)
	}
	defer rows.Close()
	g := statsGroups{days: map[int64]*Bucket{}, models: map[string]*Bucket{}, dirs: map[string]*Bucket{}}
	for rows.Next() {
		if err := g.scan(rows); err != nil {
			return Stats{}, fmt.Errorf("stats: %w", err)
		}
	}
	if err := rows.Err(); err != nil {
		return Stats{}, fmt.Errorf("stats: %w", err)
	}
	return g.stats(), nil
}

// statsQuery is the one pass that groups the runs q selects. On SQLite it
// groups by (day, model, dir), and each group counts in the three
// breakdowns (set 0). On PostgreSQL GROUPING SETS makes the three in the
// same pass: a few hundred rows rather than one per (day, model, dir),
// which over a long range is about one per run. GROUPING() says whose a
// row is: 3 a day's, 5 a model's, 6 a dir's.
func (s *Store) statsQuery(q StatsQuery) (string, []any) {
	var (
		where []string
		args  = []any{string(trace.StatusSucceeded), string(trace.StatusSucceeded), string(trace.StatusRunning)}
	)
	if !q.Since.IsZero() {
		where = append(where, "started_at >= ?")
		args = append(args, q.Since.UnixNano())
	}
	if !q.Until.IsZero() {
		where = append(where, "started_at < ?")
		args = append(args, q.Until.UnixNano())
	}
	cond := ""
	if len(where) > 0 {
		cond = " WHERE " + strings.Join(where, " AND ")
	}
	agg := `count(*),
		sum(CASE WHEN status = ? THEN 1 ELSE 0 END), sum(CASE WHEN status NOT IN (?, ?, '') THEN 1 ELSE 0 END),
		coalesce(sum(cost_usd), 0.0), CAST(sum(input_tokens) AS BIGINT), CAST(sum(output_tokens) AS BIGINT),
		CAST(sum(cache_read_tokens) AS BIGINT), CAST(sum(cache_creation_tokens) AS BIGINT)`
	if s.pg != nil {
		return `SELECT GROUPING(day, model, dir), day, model, dir, ` + agg + `
		FROM (SELECT started_at / ` + fmt.Sprint(nsPerDay) + ` AS day, model, dir, status, cost_usd,
			input_tokens, output_tokens, cache_read_tokens, cache_creation_tokens FROM runs` + cond + `) AS r
		GROUP BY GROUPING SETS ((day), (model), (dir))`, args
	}
	return `SELECT 0, started_at / ` + fmt.Sprint(nsPerDay) + ` AS day, model, dir, ` + agg + `
		FROM runs` + cond + ` GROUP BY day, model, dir`, args
}

// statsGroups adds up the rows of statsQuery.
type statsGroups struct {
	totals      Bucket
	days        map[int64]*Bucket
	models      map[string]*Bucket
	dirs        map[string]*Bucket
	first, last int64
	seen        bool
}

func (g *statsGroups) scan(sc scanner) error {
	var (
		set        int
		day        sql.NullInt64
		model, dir sql.NullString
		b          Bucket
	)
	err := sc.Scan(&set, &day, &model, &dir, &b.Runs, &b.Succeeded, &b.Failed, &b.CostUSD,
		&b.Usage.InputTokens, &b.Usage.OutputTokens, &b.Usage.CacheReadTokens, &b.Usage.CacheCreationTokens)
	if err != nil {
		return err
	}
	// A group of SQLite's (set 0) counts in every breakdown.
	if set == 0 || set == 5 {
		bucket(g.models, model.String).add(b)
	}
	if set == 0 || set == 6 {
		bucket(g.dirs, dir.String).add(b)
	}
	if set != 0 && set != 3 {
		return nil
	}
	d := day.Int64
	g.totals.add(b)
	bucket(g.days, d).add(b)
	if !g.seen || d < g.first {
		g.first = d
	}
	if !g.seen || d > g.last {
		g.last = d
	}
	g.seen = true
	return nil
}

// stats is the sums: every day from the first to the last when the range
// is short enough (days without runs too), else the days with runs.
func (g *statsGroups) stats() Stats {
	st := Stats{Totals: g.totals}
	dayKeys := slices.Sorted(maps.Keys(g.days))
	if g.seen && g.last-g.first <= maxDenseDays {
		dayKeys = dayKeys[:0]
		for d := g.first; d <= g.last; d++ {
			dayKeys = append(dayKeys, d)
		}
	}
	st.ByDay = make([]Bucket, 0, len(dayKeys))
	for _, d := range dayKeys {
		b := Bucket{Key: time.Unix(d*(nsPerDay/int64(time.Second)), 0).UTC().Format(time.DateOnly)}
		if day := g.days[d]; day != nil {
			b.add(*day)
		}
		st.ByDay = append(st.ByDay, b)
	}
	st.ByModel, st.ByDir = byCost(g.models), byCost(g.dirs)
	return st
}

func bucket[K comparable](m map[K]*Bucket, k K) *Bucket {
	b := m[k]
	if b == nil {
		b = &Bucket{}
		m[k] = b
	}
	return b
}

// byCost returns the buckets of m keyed, highest cost first, then most runs,
// then by key.
func byCost(m map[string]*Bucket) []Bucket {
	out := make([]Bucket, 0, len(m))
	for k, b := range m {
		b.Key = k
		out = append(out, *b)
	}
	slices.SortFunc(out, func(a, b Bucket) int {
		if c := cmp.Compare(b.CostUSD, a.CostUSD); c != 0 {
			return c
		}
		if c := cmp.Compare(b.Runs, a.Runs); c != 0 {
			return c
		}
		return strings.Compare(a.Key, b.Key)
	})
	return out
}
