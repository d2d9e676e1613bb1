package runner

import (
	"context"
	"io"

	"lane/interact"
	"lane/trace"
)

// oneWay is the dialog of an interactive run on a runtime lane drives one
// way only (its JSON stream mode): lane cannot answer it, tell it more or
// stop its turn, but a person can still cancel the run.
type oneWay struct {
	o     Options
	run   *trace.Run
	stdin string // what the runtime reads on stdin, written once
}

func newOneWay(o Options, run *trace.Run, stdin string) Dialog {
	return &oneWay{o: o, run: run, stdin: stdin}
}

func (d *oneWay) Observe(trace.Event) {}

func (d *oneWay) Begin(ctx context.Context, stdin io.WriteCloser, t Talk) {
	if d.stdin != "" {
		_, _ = io.WriteString(stdin, d.stdin)
	}
	stdin.Close()
	// The run's capability offers only cancel (see oneWaySteer), so the
	// store refuses anything else at once, with a word on lane resume.
	for s := range d.o.Desk.Steering(ctx, d.run.ID) {
		if s.Kind == interact.SteerCancel {
			t.Stop(ErrCancelled)
		}
		_ = d.o.Desk.Delivered(context.WithoutCancel(ctx), s)
	}
}

// TwoWaySteer is the steering kinds a two-way run takes while it runs, recorded in its capability.
func TwoWaySteer() []string {
	return []string{string(interact.SteerMessage), string(interact.SteerInterrupt), string(interact.SteerCancel)}
}

func oneWaySteer() []string { return []string{string(interact.SteerCancel)} }
