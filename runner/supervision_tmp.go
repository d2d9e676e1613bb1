package runner

// TEMPORARY until the process-lifecycle branch lands: the new supervise
// signature over the old one.

import (
	"context"
	"io"
	"sync"
	"time"

	"lane/trace"
)

type supervision struct {
	inv       Invocation
	watchdogs Watchdogs
	shim      string
	newSource func(io.Reader) EventSource
	emit      func(trace.Event) error
	settled   func() bool
	work      func(ev trace.Event) (key string, opens, closes bool)
}

func superviseNew(ctx context.Context, s supervision) (Exit, error) {
	shimExe = s.shim
	return supervise(ctx, s.inv, s.watchdogs, s.newSource, s.emit, watchHooks{settled: s.settled, work: s.work})
}

type watch struct{ limits Watchdogs }

func newWatch(limits Watchdogs, _ time.Time, _ func(ev trace.Event) (string, bool, bool)) *watch {
	return &watch{limits: limits}
}

type watchTimer struct{ *activityWatch }

func newWatchTimer(w *watch, _ func() time.Time, fire func(error)) *watchTimer {
	return &watchTimer{newActivityWatch(w.limits, fire)}
}

// activityWatch is the local loop's watchdog: the same first-byte, idle
// and hard timeouts as a runtime process gets, where an event is a byte and
// a pending tool call keeps the run alive.
type activityWatch struct {
	wd      Watchdogs
	fire    func(error)
	start   time.Time
	mu      sync.Mutex
	last    time.Time
	seen    bool
	pending map[string]bool
	timer   *time.Timer
	stopped bool
}

func newActivityWatch(wd Watchdogs, fire func(error)) *activityWatch {
	w := &activityWatch{wd: wd, fire: fire, start: time.Now(), pending: map[string]bool{}}
	w.mu.Lock()
	w.timer = time.AfterFunc(time.Hour, w.check)
	w.arm()
	w.mu.Unlock()
	return w
}

func (w *activityWatch) observe(ev trace.Event) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.last, w.seen = time.Now(), true
	switch ev.Kind {
	case trace.KindToolCall:
		w.pending[ev.ToolUseID] = true
	case trace.KindToolResult:
		delete(w.pending, ev.ToolUseID)
	}
	w.arm()
}

// arm sets the timer to the nearest deadline; w.mu is held.
func (w *activityWatch) arm() {
	if w.stopped {
		return
	}
	next, ok := w.deadline()
	if !ok {
		w.timer.Stop()
		return
	}
	w.timer.Reset(time.Until(next))
}

// deadline is the nearest watchdog deadline and its error; w.mu is held.
func (w *activityWatch) deadline() (time.Time, bool) {
	var d time.Time
	set := func(t time.Time) {
		if d.IsZero() || t.Before(d) {
			d = t
		}
	}
	if w.wd.Hard > 0 {
		set(w.start.Add(w.wd.Hard))
	}
	if !w.seen && w.wd.FirstByte > 0 {
		set(w.start.Add(w.wd.FirstByte))
	}
	if w.seen && len(w.pending) == 0 && w.wd.Idle > 0 {
		set(w.last.Add(w.wd.Idle))
	}
	return d, !d.IsZero()
}

func (w *activityWatch) check() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		return
	}
	now := time.Now()
	var cause error
	switch {
	case w.wd.Hard > 0 && !now.Before(w.start.Add(w.wd.Hard)):
		cause = &TimeoutError{Watchdog: WatchdogHard, After: w.wd.Hard}
	case !w.seen && w.wd.FirstByte > 0 && !now.Before(w.start.Add(w.wd.FirstByte)):
		cause = &TimeoutError{Watchdog: WatchdogFirstByte, After: w.wd.FirstByte}
	case w.seen && len(w.pending) == 0 && w.wd.Idle > 0 && !now.Before(w.last.Add(w.wd.Idle)):
		cause = &TimeoutError{Watchdog: WatchdogIdle, After: w.wd.Idle}
	}
	if cause == nil {
		w.arm()
		return
	}
	w.stopped = true
	w.fire(cause)
}

func (w *activityWatch) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopped = true
	w.timer.Stop()
}
