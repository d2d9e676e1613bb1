package store

import (
	"cmp"
	"context"
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
	var (
		where []string
		args  []any
	)
	if !q.Since.IsZero() {
		where = append(where, "started_at >= ?")
		args = append(args, q.Since.UnixNano())
	}
	if !q.Until.IsZero() {
		where = append(where, "started_at < ?")
		args = append(args, q.Until.UnixNano())
	}
	// One pass groups by (day, model, dir); the three breakdowns are sums
	// of those groups.
	sqlq := `SELECT started_at / ` + fmt.Sprint(nsPerDay) + ` AS day, model, dir, count(*),
		sum(CASE WHEN status = ? THEN 1 ELSE 0 END), sum(CASE WHEN status NOT IN (?, ?, '') THEN 1 ELSE 0 END),
		coalesce(sum(cost_usd), 0.0), CAST(sum(input_tokens) AS BIGINT), CAST(sum(output_tokens) AS BIGINT),
		CAST(sum(cache_read_tokens) AS BIGINT), CAST(sum(cache_creation_tokens) AS BIGINT)
		FROM runs`
	args = append([]any{string(trace.StatusSucceeded), string(trace.StatusSucceeded), string(trace.StatusRunning)}, args...)
	if len(where) > 0 {
		sqlq += " WHERE " + strings.Join(where, " AND ")
	}
	sqlq += " GROUP BY day, model, dir"
	rows, err := s.db.QueryContext(ctx, sqlq, args...)
	if err != nil {
		return Stats{}, fmt.Errorf("stats: %w", err)
	}
	defer rows.Close()
	var (
		st     Stats
		days   = map[int64]*Bucket{}
		models = map[string]*Bucket{}
		dirs   = map[string]*Bucket{}
		first  int64
		last   int64
		seen   bool
	)
	for rows.Next() {
		var (
			day        int64
			model, dir string
			b          Bucket
		)
		err := rows.Scan(&day, &model, &dir, &b.Runs, &b.Succeeded, &b.Failed, &b.CostUSD,
			&b.Usage.InputTokens, &b.Usage.OutputTokens, &b.Usage.CacheReadTokens, &b.Usage.CacheCreationTokens)
		if err != nil {
			return Stats{}, fmt.Errorf("stats: %w", err)
		}
		st.Totals.add(b)
		bucket(days, day).add(b)
		bucket(models, model).add(b)
		bucket(dirs, dir).add(b)
		if !seen || day < first {
			first = day
		}
		if !seen || day > last {
			last = day
		}
		seen = true
	}
	if err := rows.Err(); err != nil {
		return Stats{}, fmt.Errorf("stats: %w", err)
	}
	dayKeys := slices.Sorted(maps.Keys(days))
	if seen && last-first <= maxDenseDays {
		dayKeys = dayKeys[:0]
		for d := first; d <= last; d++ {
			dayKeys = append(dayKeys, d)
		}
	}
	st.ByDay = make([]Bucket, 0, len(dayKeys))
	for _, d := range dayKeys {
		b := Bucket{Key: time.Unix(d*(nsPerDay/int64(time.Second)), 0).UTC().Format(time.DateOnly)}
		if g := days[d]; g != nil {
			b.add(*g)
		}
		st.ByDay = append(st.ByDay, b)
	}
	st.ByModel, st.ByDir = byCost(models), byCost(dirs)
	return st, nil
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
