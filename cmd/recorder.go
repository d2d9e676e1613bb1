package cmd

import (
	"context"
	"encoding/json"
	"fmt"

	"lane/store"
	"lane/trace"
	"lane/view"
)

// runRecorder writes a run to the store as it happens and shows it in the
// chosen output format.
type runRecorder struct {
	st      *store.Store
	writer  *store.EventWriter
	format  string
	io      IO
	printer *view.Printer
	enc     *json.Encoder

	// worker, when set, is the lane worker that runs the runs: recorded in
	// each, and told of each run's start (to link it to the attempt's
	// lease) and end.
	worker *workerHooks
}

type workerHooks struct {
	name  string
	begin func(ctx context.Context, run *trace.Run) error
	end   func(run *trace.Run)
}

func newRunRecorder(st *store.Store, io IO, format string) *runRecorder {
	r := &runRecorder{st: st, format: format, io: io, enc: json.NewEncoder(io.Out)}
	if format == formatText {
		r.printer = view.NewPrinter(io.Out, io.Color)
	}
	return r
}

func (r *runRecorder) BeginRun(ctx context.Context, run *trace.Run) error {
	if r.worker != nil {
		run.Worker = r.worker.name
	}
	if err := r.st.CreateRun(ctx, run); err != nil {
		return err
	}
	if r.worker != nil {
		if err := r.worker.begin(ctx, run); err != nil {
			return err
		}
	}
	r.writer = r.st.NewEventWriter(run.ID)
	return nil
}

func (r *runRecorder) Event(ev trace.Event) error {
	err := r.writer.Write(ev)
	switch r.format {
	case formatText:
		if perr := r.printer.Event(ev); perr != nil && err == nil {
			err = perr
		}
	case formatStreamJSON:
		if jerr := r.enc.Encode(ev); jerr != nil && err == nil {
			err = jerr
		}
	}
	return err
}

func (r *runRecorder) EndRun(ctx context.Context, run *trace.Run) error {
	if r.worker != nil {
		defer r.worker.end(run)
	}
	err := r.writer.Close(ctx)
	if uerr := r.st.UpdateRun(ctx, run); uerr != nil && err == nil {
		err = uerr
	}
	if r.format == formatText {
		_ = r.printer.Summary(run)
	}
	return err
}

// finish prints the final run record for the data formats.
func (r *runRecorder) finish(run *trace.Run) error {
	if r.format == formatText || r.format == formatNone {
		return nil
	}
	if err := r.enc.Encode(run); err != nil {
		return fmt.Errorf("write run record: %w", err)
	}
	return nil
}
