package store

import (
	"context"
	"reflect"
	"testing"
	"time"

	"lane/trace"
)

func TestStats(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		ctx := context.Background()
		s := be.open(t)
		livePID, liveStart := selfOwner(t)
		deadPID, deadStart := exitedOwner(t)
		// Four UTC days, the third without runs.
		day1 := time.Date(2025, 3, 30, 23, 0, 0, 0, time.UTC)
		day4 := time.Date(2025, 4, 2, 0, 30, 0, 0, time.UTC)
		u := func(n int64) trace.Usage {
			return trace.Usage{InputTokens: n, OutputTokens: n, CacheReadTokens: n, CacheCreationTokens: n}
		}
		for _, r := range []*trace.Run{
			{ID: "ok1", Status: trace.StatusSucceeded, StartedAt: day1, Model: "opus", Dir: "/a", CostUSD: 1, Usage: u(1)},
			{ID: "fail", Status: trace.StatusFailed, StartedAt: day1.Add(90 * time.Minute), Model: "sonnet", Dir: "/a", CostUSD: 2, Usage: u(2)},
			{ID: "cancel", Status: trace.StatusCancelled, StartedAt: day4, Model: "opus", Dir: "/b", CostUSD: 0.5, Usage: u(4)},
			{ID: "timeout", Status: trace.StatusTimedOut, StartedAt: day4.Add(time.Hour), Model: "haiku", Dir: "/b", Usage: u(8)},
			{ID: "dead", Status: trace.StatusRunning, StartedAt: day4.Add(2 * time.Hour), Model: "opus", Dir: "/b",
				CostUSD: 0.25, OwnerPID: deadPID, OwnerStart: deadStart},
			{ID: "live", Status: trace.StatusRunning, StartedAt: day4.Add(3 * time.Hour), Model: "opus", Dir: "/a",
				CostUSD: 0.125, OwnerPID: livePID, OwnerStart: liveStart},
			{ID: "ok2", Status: trace.StatusSucceeded, StartedAt: day4.Add(4 * time.Hour), Model: "sonnet", Dir: "/c", CostUSD: 0.5},
		} {
			createRunT(t, s, r)
		}
		b := func(key string, runs, ok, failed int, cost float64, usage int64) Bucket {
			return Bucket{Key: key, Runs: runs, Succeeded: ok, Failed: failed, CostUSD: cost, Usage: u(usage)}
		}
		tests := []struct {
			name string
			q    StatsQuery
			want Stats
		}{
			{"all", StatsQuery{}, Stats{
				Totals: b("", 7, 2, 4, 4.375, 15),
				ByDay: []Bucket{
					b("2025-03-30", 1, 1, 0, 1, 1),
					b("2025-03-31", 1, 0, 1, 2, 2), // 23:00 + 90 min is the next day
					b("2025-04-01", 0, 0, 0, 0, 0),
					b("2025-04-02", 5, 1, 3, 1.375, 12),
				},
				ByModel: []Bucket{b("sonnet", 2, 1, 1, 2.5, 2), b("opus", 4, 1, 2, 1.875, 5), b("haiku", 1, 0, 1, 0, 8)},
				ByDir:   []Bucket{b("/a", 3, 1, 1, 3.125, 3), b("/b", 3, 0, 3, 0.75, 12), b("/c", 1, 1, 0, 0.5, 0)},
			}},
			{"since and until", StatsQuery{Since: day4, Until: day4.Add(2 * time.Hour)}, Stats{
				Totals:  b("", 2, 0, 2, 0.5, 12),
				ByDay:   []Bucket{b("2025-04-02", 2, 0, 2, 0.5, 12)},
				ByModel: []Bucket{b("opus", 1, 0, 1, 0.5, 4), b("haiku", 1, 0, 1, 0, 8)},
				ByDir:   []Bucket{b("/b", 2, 0, 2, 0.5, 12)},
			}},
			{"empty", StatsQuery{Since: day4.Add(24 * time.Hour)}, Stats{ByDay: []Bucket{}, ByModel: []Bucket{}, ByDir: []Bucket{}}},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				got, err := s.Stats(ctx, tt.q)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, tt.want) {
					t.Errorf("Stats(%+v):\n got %+v\nwant %+v", tt.q, got, tt.want)
				}
			})
		}
	})
}
