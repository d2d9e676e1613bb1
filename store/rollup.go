package store

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
)

// The daily roll-ups Stats reads (tables run_stats_day, run_stats_model and
// run_stats_dir, migration 0008) hold, per UTC day of started_at, the sums
// of the runs that started that day, overall, by model and by dir. Triggers
// on runs keep them: every insert, delete and update of a counted column
// takes the run's old contribution away and adds its new one, whoever
// writes (lane's runs, lane reindex, imports, lane db copy). The sums are
// integers (costs in units of 1e-10 dollars), so this never drifts and
// adding days up gives what a scan of their runs gives.

// statsSpan is a range of started_at for a scan: [from, to), either end
// open.
type statsSpan struct {
	from, to         int64
	openFrom, openTo bool
}

func spanOf(q StatsQuery) statsSpan {
	sp := statsSpan{openFrom: q.Since.IsZero(), openTo: q.Until.IsZero()}
	if !sp.openFrom {
		sp.from = q.Since.UnixNano()
	}
	if !sp.openTo {
		sp.to = q.Until.UnixNano()
	}
	return sp
}

// statsPlan is how Stats answers a range: the roll-ups of days
// [firstDay, endDay) when rollups is set (from the first day there is when
// openStart, to the last when openEnd), and a scan of each span.
type statsPlan struct {
	rollups            bool
	firstDay, endDay   int64
	openStart, openEnd bool
	scans              []statsSpan
}

// planStats splits q into the whole UTC days within it, which the roll-ups
// answer, and the partial days at its ends, which are scanned. Days start
// at multiples of nsPerDay; day is started_at / nsPerDay, which SQL
// truncates towards zero, so day 0 spans two days of time and the days
// before it are shifted. A day d >= 1 holds exactly the runs of
// [d*nsPerDay, (d+1)*nsPerDay), and the days below e >= 1 exactly the runs
// before e*nsPerDay: a range that starts is cut at day 1 at the earliest,
// one that does not takes every day below its end.
func planStats(q StatsQuery) statsPlan {
	sp := spanOf(q)
	p := statsPlan{firstDay: 1, openStart: sp.openFrom, openEnd: sp.openTo}
	if !sp.openFrom && sp.from > nsPerDay {
		p.firstDay = sp.from / nsPerDay
		if sp.from%nsPerDay != 0 {
			p.firstDay++
		}
	}
	if p.firstDay > math.MaxInt64/nsPerDay {
		return statsPlan{scans: []statsSpan{sp}} // the last day time.Time's UnixNano can name
	}
	if !sp.openTo {
		p.endDay = max(sp.to, 0) / nsPerDay
	}
	if !p.openEnd && p.endDay <= p.firstDay {
		return statsPlan{scans: []statsSpan{sp}} // no whole day within q
	}
	p.rollups = true
	if start := p.firstDay * nsPerDay; !sp.openFrom && sp.from < start {
		p.scans = append(p.scans, statsSpan{from: sp.from, to: start})
	}
	if end := p.endDay * nsPerDay; !p.openEnd && end < sp.to {
		p.scans = append(p.scans, statsSpan{from: end, to: sp.to})
	}
	return p
}

// rollupQuery reads the roll-ups of p's whole days: a row per day, per
// model and per dir, in statsQuery's columns.
func rollupQuery(p statsPlan) (string, []any) {
	var (
		args  []any
		where []string
	)
	if !p.openStart {
		where = append(where, "day >= ?")
		args = append(args, p.firstDay)
	}
	if !p.openEnd {
		where = append(where, "day < ?")
		args = append(args, p.endDay)
	}
	cond := ""
	if len(where) > 0 {
		cond = " WHERE " + strings.Join(where, " AND ")
	}
	sums := `CAST(sum(runs) AS BIGINT), CAST(sum(succeeded) AS BIGINT), CAST(sum(failed) AS BIGINT),
		CAST(sum(cost_units) AS BIGINT), CAST(sum(input_tokens) AS BIGINT), CAST(sum(output_tokens) AS BIGINT),
		CAST(sum(cache_read_tokens) AS BIGINT), CAST(sum(cache_creation_tokens) AS BIGINT)`
	return `SELECT 3, day, CAST(NULL AS TEXT), CAST(NULL AS TEXT), runs, succeeded, failed, cost_units,
		input_tokens, output_tokens, cache_read_tokens, cache_creation_tokens FROM run_stats_day` + cond + `
	UNION ALL
	SELECT 5, CAST(NULL AS BIGINT), model, CAST(NULL AS TEXT), ` + sums + ` FROM run_stats_model` + cond + ` GROUP BY model
	UNION ALL
	SELECT 6, CAST(NULL AS BIGINT), CAST(NULL AS TEXT), dir, ` + sums + ` FROM run_stats_dir` + cond + ` GROUP BY dir`,
		slices.Concat(args, args, args) // the same bounds for each of the three
}

// RebuildStats recomputes the roll-ups from the runs, in one write
// transaction, and returns how many runs they count. The triggers keep
// them up to date; this is for roll-ups that something outside lane
// changed or bypassed (a hand-edited table, a TRUNCATE of runs): `lane db
// rebuild-stats`.
func (s *Store) RebuildStats(ctx context.Context) (int64, error) {
	var n int64
	err := s.writeTx(ctx, func(tx *txn) error {
		for _, t := range []struct{ table, key string }{
			{"run_stats_day", ""}, {"run_stats_model", ", model"}, {"run_stats_dir", ", dir"},
		} {
			if _, err := tx.ExecContext(ctx, "DELETE FROM "+t.table); err != nil {
				return err
			}
			q := `INSERT INTO ` + t.table + ` SELECT started_at / ` + fmt.Sprint(nsPerDay) + t.key + `, count(*),
				sum(CASE WHEN status = 'succeeded' THEN 1 ELSE 0 END),
				sum(CASE WHEN status NOT IN ('succeeded', 'running', '') THEN 1 ELSE 0 END),
				sum(` + s.statsCostUnits("cost_usd") + `), sum(input_tokens), sum(output_tokens),
				sum(cache_read_tokens), sum(cache_creation_tokens)
				FROM runs GROUP BY started_at / ` + fmt.Sprint(nsPerDay) + t.key
			if _, err := tx.ExecContext(ctx, q); err != nil {
				return err
			}
		}
		return tx.QueryRowContext(ctx, `SELECT CAST(coalesce(sum(runs), 0) AS BIGINT) FROM run_stats_day`).Scan(&n)
	})
	if err != nil {
		return 0, fmt.Errorf("rebuild stats: %w", err)
	}
	return n, nil
}
