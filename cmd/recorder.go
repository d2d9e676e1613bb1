package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"lane/internal/proc"
	"lane/runner"
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

// recordMissing records a run that could not start because the runtime is
// missing, so the history shows it too.
func (r *runRecorder) recordMissing(ctx context.Context, runtime, model string, opts *RunOptions, dir string, me *runner.MissingError) (*trace.Run, error) {
	now := time.Now().UTC()
	run := &trace.Run{
		ID: trace.NewRunID(), ParentRunID: opts.ParentRunID, Attempt: 1,
		Status: trace.StatusFailed, Runtime: runtime, Model: model, Dir: dir, Prompt: opts.Task,
		StartedAt: now, EndedAt: now,
		ErrorKind: trace.ErrorRuntimeMissing, ErrorMessage: me.Error(), ErrorHint: me.Hint,
		Capability: trace.Capability{Dir: dir, AllowedTools: opts.AllowedTools, PermissionMode: opts.PermissionMode, MCPIsolated: !opts.AllowMCP},
		OwnerPID:   os.Getpid(),
	}
	run.OwnerStart, _ = proc.StartTime(run.OwnerPID)
	if err := r.st.CreateRun(ctx, run); err != nil {
		return nil, err
	}
	if r.format == formatText {
		_ = r.printer.Summary(run)
	}
	return run, nil
}
