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
}

func newRunRecorder(st *store.Store, io IO, format string) *runRecorder {
	r := &runRecorder{st: st, format: format, io: io, enc: json.NewEncoder(io.Out)}
	if format == formatText {
		r.printer = view.NewPrinter(io.Out, io.Color)
	}
	return r
}

func (r *runRecorder) BeginRun(ctx context.Context, run *trace.Run) error {
	if err := r.st.CreateRun(ctx, run); err != nil {
		return err
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
