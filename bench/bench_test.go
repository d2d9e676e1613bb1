package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	"lane/trace"
)

// BenchmarkBenchOverhead measures what lane bench itself costs per attempt:
// a 100-attempt bench (5 tasks × 2 models × 10) whose agent returns at once
// and whose check is `true`, recorded in a real SQLite file. What is left is
// the fixture copy, the check's process, the folder's removal and the
// store's writes.
func BenchmarkBenchOverhead(b *testing.B) {
	yaml := "models: [m1, m2]\nrepeat: 10\ntasks:\n"
	for i := range 5 {
		yaml += fmt.Sprintf("  - {id: t%d, prompt: p, fixture: fx, check: 'true'}\n", i)
	}
	suite := makeSuite(b, yaml, map[string]map[string]string{
		"fx": {"go.mod": "module x\n", "main.go": "package main\n\nfunc main() {}\n", "sub/data.txt": "data\n"},
	})
	instant := func(_ context.Context, spec RunSpec) (*trace.Run, error) {
		return &trace.Run{Status: trace.StatusSucceeded, Model: spec.Model, DurationMS: 1}, nil
	}
	for _, parallel := range []int{1, 4} {
		b.Run(fmt.Sprintf("parallel=%d", parallel), func(b *testing.B) {
			st := openStore(b)
			work := b.TempDir()
			attempts := 0
			start := time.Now()
			for b.Loop() {
				bn, err := Run(context.Background(), Config{Suite: suite, Parallel: parallel, Run: instant, Store: st, WorkDir: work})
				if err != nil || bn.Status != trace.StatusSucceeded {
					b.Fatalf("Run = %+v, %v", bn, err)
				}
				attempts += 100
			}
			b.ReportMetric(float64(attempts)/time.Since(start).Seconds(), "attempts/s")
		})
	}
}
