package store

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"reflect"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/lanehq/lane/internal/proc"
	"github.com/lanehq/lane/internal/record"
)

var t0 = time.Unix(1_760_000_000, 123_456_789)

// testRun is a finished run with the fewest fields set.
func testRun(id string) *record.Run {
	return &record.Run{ID: id, Status: record.StatusSucceeded, StartedAt: t0}
}

// selfOwner returns the pid and start time of the test process, an owner
// that is alive.
func selfOwner(t testing.TB) (int, uint64) {
	t.Helper()
	start, err := proc.StartTime(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	return os.Getpid(), start
}

// fullRun has every field of record.Run set.
func fullRun(t *testing.T, id string) *record.Run {
	pid, start := selfOwner(t)
	exit := 3
	return &record.Run{
		ID:             id,
		ParentRunID:    "parent",
		Attempt:        2,
		Status:         record.StatusRunning,
		Runtime:        "claude",
		Model:          "opus",
		Dir:            "/work/x",
		Prompt:         "do it\nwith ünïcode and 'quotes'",
		SessionID:      "sess-1",
		RuntimeVer:     "2.1.0",
		Account:        "/home/dev/.claude",
		ContextTokens:  45_000,
		Origin:         "/work/origin",
		Via:            "acp",
		ContextWindow:  200_000,
		Limits:         []record.LimitWindow{{Name: "five_hour", Utilization: 0.92, Status: record.LimitWarning, ResetsAt: t0.Add(time.Hour).UTC()}},
		CostUSD:        0.125,
		CostEstimate:   true,
		SessionCostUSD: 1.5,
		Usage:          record.Usage{InputTokens: 1, OutputTokens: 2, CacheReadTokens: 3, CacheCreationTokens: 4, CacheCreation1hTokens: 5},
		Turns:          5,
		ToolCalls:      6,
		StartedAt:      t0,
		EndedAt:        t0.Add(90 * time.Second),
		DurationMS:     90_000,
		ExitCode:       &exit,
		ErrorKind:      record.ErrorAgent,
		ErrorMessage:   "it failed",
		ErrorHint:      "try again",
		Contradiction:  "is_error=false subtype=error",
		ResultText:     "done",
		Capability: record.Capability{
			Dir:            "/work/cap",
			AddDirs:        []string{"/a", "/b"},
			AllowedTools:   []string{"Read", "Bash(git *)"},
			PermissionMode: "acceptEdits",
			MCPIsolated:    true,
			Steer:          []string{"message", "interrupt", "cancel"},
			Hermetic:       []string{"CLAUDE.md", "settings.json"},
		},
		PermissionDenials: json.RawMessage(`[{"tool_name":"Bash"}]`),
		OwnerPID:          pid,
		OwnerStart:        start,
		OwnerHost:         "host-a",
		Worker:            "worker-1",
		Permissions:       record.PermissionCounts{Requests: 3, Allowed: 2, Denied: 1},
		Imported:          true,
		Source:            "/home/dev/.claude/projects/p/s.jsonl",
		Budget:            &record.Budget{Tokens: 200_000, CostUSD: 2, Turns: 30},
		Changes: &record.Changes{Files: 2, Insertions: 5, Deletions: 1, Method: "git", Root: "/work/x",
			GitDir: "/work/x/.git", Before: "aaa", After: "bbb", Note: "1 file over the size limit"},
	}
}

// allSet fails when a field of v, a struct, is zero, so that a field added
// to record.Run later is not silently left out of the round trip.
func allSet(t *testing.T, v reflect.Value, path string) {
	for i := range v.NumField() {
		f, name := v.Field(i), path+v.Type().Field(i).Name
		if f.IsZero() {
			t.Errorf("test run leaves %s unset", name)
		}
		if f.Kind() == reflect.Struct && f.Type() != reflect.TypeFor[time.Time]() {
			allSet(t, f, name+".")
		}
	}
}

func TestRunRoundTrip(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, be backend) {
		ctx := context.Background()
		s := be.open(t)

		full := fullRun(t, "full")
		allSet(t, reflect.ValueOf(*full), "")

		// The update changes every mutable field.
		upd := fullRun(t, "full")
		exit := 0
		*upd = record.Run{
			ID: "full", ParentRunID: "p2", Attempt: 3, Status: record.StatusFailed, Runtime: "local", Model: "sonnet",
			Dir: "/other", Prompt: "p", SessionID: "sess-2", RuntimeVer: "2.2", CostUSD: 2, SessionCostUSD: 3,
			Usage: record.Usage{InputTokens: 10, OutputTokens: 20, CacheReadTokens: 30, CacheCreationTokens: 40},
			Turns: 50, ToolCalls: 60, StartedAt: t0.Add(time.Second), EndedAt: t0.Add(time.Hour), DurationMS: 1,
			ExitCode: &exit, ErrorKind: record.ErrorTimeout, ErrorMessage: "m", ErrorHint: "h", Contradiction: "c",
			ResultText: "r", Capability: record.Capability{Dir: "/d", AddDirs: []string{}, PermissionMode: "plan"},
			OwnerPID: 1, OwnerStart: 2,
		}

		tests := []struct {
			name   string
			create *record.Run
			update *record.Run // nil: no update
		}{
			{"full", full, upd},
			{"minimal", testRun("minimal"), nil},
			{"minimal to full", testRun("m2f"), func() *record.Run { r := fullRun(t, "m2f"); r.Status = record.StatusCancelled; return r }()},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				if err := s.CreateRun(ctx, tt.create); err != nil {
					t.Fatal(err)
				}
				got, err := s.GetRun(ctx, tt.create.ID)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, tt.create) {
					t.Errorf("after create:\n got %+v\nwant %+v", got, tt.create)
				}
				if tt.update == nil {
					return
				}
				if err := s.UpdateRun(ctx, tt.update); err != nil {
					t.Fatal(err)
				}
				got, err = s.GetRun(ctx, tt.create.ID)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, tt.update) {
					t.Errorf("after update:\n got %+v\nwant %+v", got, tt.update)
				}
			})
		}
	})
}

func TestCreateUpdateErrors(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, be backend) {
		ctx := context.Background()
		s := be.open(t)
		if err := s.CreateRun(ctx, testRun("dup")); err != nil {
			t.Fatal(err)
		}
		if err := s.CreateRun(ctx, testRun("dup")); err == nil {
			t.Error("CreateRun of an existing id succeeded")
		}
		if err := s.CreateRun(ctx, testRun("")); err == nil {
			t.Error("CreateRun with an empty id succeeded")
		}
		if err := s.CreateRun(ctx, &record.Run{ID: "nostart", Status: record.StatusRunning}); err == nil {
			t.Error("CreateRun with zero StartedAt succeeded")
		}
		if err := s.UpdateRun(ctx, testRun("missing")); !errors.Is(err, ErrNotFound) {
			t.Errorf("UpdateRun of a missing run: %v, want ErrNotFound", err)
		}
	})
}

func TestGetRunPrefix(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, be backend) {
		ctx := context.Background()
		s := be.open(t)
		for _, id := range []string{"abc123", "abc456", "abd789", "ff", "ff01"} {
			if err := s.CreateRun(ctx, testRun(id)); err != nil {
				t.Fatal(err)
			}
		}
		tests := []struct {
			arg       string
			want      string   // id found
			ambiguous []string // candidates
			notFound  bool
		}{
			{arg: "abc123", want: "abc123"},
			{arg: "abd", want: "abd789"},
			{arg: "abc4", want: "abc456"},
			{arg: "ff", want: "ff"}, // an exact id wins over longer ones
			{arg: "abc", ambiguous: []string{"abc123", "abc456"}},
			{arg: "a", ambiguous: []string{"abc123", "abc456", "abd789"}},
			{arg: "abc1234", notFound: true},
			{arg: "zz", notFound: true},
			{arg: "", notFound: true},
			{arg: "%", notFound: true},
		}
		for _, tt := range tests {
			t.Run(tt.arg, func(t *testing.T) {
				r, err := s.GetRun(ctx, tt.arg)
				var amb *AmbiguousError
				switch {
				case tt.notFound:
					if !errors.Is(err, ErrNotFound) {
						t.Errorf("err = %v, want ErrNotFound", err)
					}
				case tt.ambiguous != nil:
					if !errors.Is(err, ErrAmbiguous) || !errors.As(err, &amb) {
						t.Fatalf("err = %v, want an AmbiguousError", err)
					}
					if !slices.Equal(amb.IDs, tt.ambiguous) {
						t.Errorf("candidates = %v, want %v", amb.IDs, tt.ambiguous)
					}
				default:
					if err != nil {
						t.Fatal(err)
					}
					if r.ID != tt.want {
						t.Errorf("got run %s, want %s", r.ID, tt.want)
					}
				}
			})
		}
	})
}

func TestListRuns(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, be backend) {
		ctx := context.Background()
		s := be.open(t)
		pid, start := selfOwner(t)
		runs := []*record.Run{
			{ID: "r1", Status: record.StatusSucceeded, Model: "opus", Dir: "/a", SessionID: "s1"},
			{ID: "r2", Status: record.StatusFailed, Model: "sonnet", Dir: "/a", SessionID: "s1"},
			{ID: "r3", Status: record.StatusRunning, Model: "opus", Dir: "/b", SessionID: "s2", OwnerPID: pid, OwnerStart: start},
			{ID: "r4", Status: record.StatusSucceeded, Model: "opus", Dir: "/a/sub", SessionID: "s2"},
			{ID: "r5", Status: record.StatusSucceeded, Model: "sonnet", Dir: "/b"},
			{ID: "r6", Status: record.StatusSucceeded, Runtime: "codex", Model: "gpt-5-codex", Dir: "/b", StartedAt: t0.Add(-time.Hour)},
		}
		for i, r := range runs {
			if r.StartedAt.IsZero() {
				r.StartedAt = t0.Add(time.Duration(i) * time.Minute)
			}
			if err := s.CreateRun(ctx, r); err != nil {
				t.Fatal(err)
			}
		}
		tests := []struct {
			name string
			f    RunFilter
			want []string
		}{
			{"all newest first", RunFilter{}, []string{"r5", "r4", "r3", "r2", "r1", "r6"}},
			{"limit", RunFilter{Limit: 2}, []string{"r5", "r4"}},
			{"status", RunFilter{Status: record.StatusSucceeded}, []string{"r5", "r4", "r1", "r6"}},
			{"running", RunFilter{Status: record.StatusRunning}, []string{"r3"}},
			{"model", RunFilter{Model: "sonnet"}, []string{"r5", "r2"}},
			{"dir exact", RunFilter{Dir: "/a"}, []string{"r2", "r1"}},
			{"session", RunFilter{SessionID: "s2"}, []string{"r4", "r3"}},
			{"runtime", RunFilter{Runtime: "codex"}, []string{"r6"}},
			{"combined", RunFilter{Model: "opus", Dir: "/a", Limit: 5}, []string{"r1"}},
			{"none", RunFilter{Model: "haiku"}, nil},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				got, err := s.ListRuns(ctx, tt.f)
				if err != nil {
					t.Fatal(err)
				}
				var ids []string
				for _, r := range got {
					ids = append(ids, r.ID)
				}
				if !slices.Equal(ids, tt.want) {
					t.Errorf("ListRuns(%+v) = %v, want %v", tt.f, ids, tt.want)
				}
			})
		}

		latest, err := s.LatestRunInSession(ctx, "s1")
		if err != nil || latest.ID != "r2" {
			t.Errorf("LatestRunInSession(s1) = %v, %v; want r2", latest, err)
		}
		if _, err := s.LatestRunInSession(ctx, "nope"); !errors.Is(err, ErrNotFound) {
			t.Errorf("LatestRunInSession(nope): %v, want ErrNotFound", err)
		}
	})
}

// exitedOwner starts a process, then kills and reaps it, and returns its pid
// and start time: an owner that is gone.
func exitedOwner(t *testing.T) (int, uint64) {
	t.Helper()
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	start, err := proc.StartTime(pid)
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if proc.Alive(pid, start) {
		t.Fatalf("process %d still alive after Wait", pid)
	}
	return pid, start
}

func TestInterruptedRuns(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, be backend) {
		ctx := context.Background()
		s := be.open(t)
		deadPID, deadStart := exitedOwner(t)
		livePID, liveStart := selfOwner(t)
		lastEvent := t0.Add(42 * time.Second)

		running := func(id string, pid int, start uint64) *record.Run {
			return &record.Run{ID: id, Status: record.StatusRunning, StartedAt: t0, SessionID: "s-" + id, OwnerPID: pid, OwnerStart: start}
		}
		for _, r := range []*record.Run{
			running("dead-events", deadPID, deadStart),
			running("dead-quiet", deadPID, deadStart),
			running("dead-list", deadPID, deadStart),
			running("dead-session", deadPID, deadStart),
			running("dead-sweep", deadPID, deadStart),
			running("reused-pid", livePID, liveStart+1), // our pid, another process's start time
			running("live", livePID, liveStart),
		} {
			if err := s.CreateRun(ctx, r); err != nil {
				t.Fatal(err)
			}
		}
		err := s.AppendEvents(ctx, []record.Event{
			{RunID: "dead-events", Seq: 1, Time: t0.Add(time.Second), Kind: record.KindText},
			{RunID: "dead-events", Seq: 2, Time: lastEvent, Kind: record.KindText},
		})
		if err != nil {
			t.Fatal(err)
		}

		wantMsg := "lane process " + strconv.Itoa(deadPID) + " exited while the run was live"
		check := func(t *testing.T, r *record.Run, ended time.Time) {
			t.Helper()
			if r.Status != record.StatusInterrupted {
				t.Fatalf("run %s status = %s, want interrupted", r.ID, r.Status)
			}
			if !r.EndedAt.Equal(ended) {
				t.Errorf("run %s ended_at = %v, want %v", r.ID, r.EndedAt, ended)
			}
			if r.DurationMS != ended.Sub(t0).Milliseconds() {
				t.Errorf("run %s duration = %d ms", r.ID, r.DurationMS)
			}
			if r.ErrorMessage != wantMsg || r.ErrorKind != record.ErrorNone {
				t.Errorf("run %s error = %q %q, want %q and no kind", r.ID, r.ErrorKind, r.ErrorMessage, wantMsg)
			}
			// Persisted, not only reported.
			var status string
			if err := s.db.QueryRow(`SELECT status FROM runs WHERE id = ?`, r.ID).Scan(&status); err != nil || status != "interrupted" {
				t.Errorf("run %s stored status = %q, %v", r.ID, status, err)
			}
		}

		t.Run("GetRun", func(t *testing.T) {
			r, err := s.GetRun(ctx, "dead-events")
			if err != nil {
				t.Fatal(err)
			}
			check(t, r, lastEvent)
			r, err = s.GetRun(ctx, "dead-q") // by prefix
			if err != nil {
				t.Fatal(err)
			}
			check(t, r, t0)
		})
		t.Run("LatestRunInSession", func(t *testing.T) {
			r, err := s.LatestRunInSession(ctx, "s-dead-session")
			if err != nil {
				t.Fatal(err)
			}
			check(t, r, t0)
		})
		t.Run("ListRuns", func(t *testing.T) {
			rs, err := s.ListRuns(ctx, RunFilter{Status: record.StatusRunning})
			if err != nil {
				t.Fatal(err)
			}
			if len(rs) != 1 || rs[0].ID != "live" {
				t.Errorf("running runs = %v, want only live", rs)
			}
			r, err := s.GetRun(ctx, "dead-list")
			if err != nil {
				t.Fatal(err)
			}
			check(t, r, t0)
		})
		t.Run("live owner stays running", func(t *testing.T) {
			r, err := s.GetRun(ctx, "live")
			if err != nil {
				t.Fatal(err)
			}
			if r.Status != record.StatusRunning || !r.EndedAt.IsZero() || r.ErrorMessage != "" {
				t.Errorf("live run = %+v", r)
			}
		})
		t.Run("reused pid", func(t *testing.T) {
			r, err := s.GetRun(ctx, "reused-pid")
			if err != nil {
				t.Fatal(err)
			}
			if r.Status != record.StatusInterrupted {
				t.Errorf("run of a reused pid: status %s, want interrupted", r.Status)
			}
		})
		t.Run("SweepInterrupted", func(t *testing.T) {
			if err := s.CreateRun(ctx, running("dead-late", deadPID, deadStart)); err != nil {
				t.Fatal(err)
			}
			n, err := s.SweepInterrupted(ctx)
			if err != nil || n != 1 {
				t.Errorf("SweepInterrupted = %d, %v; want 1", n, err)
			}
			n, err = s.SweepInterrupted(ctx)
			if err != nil || n != 0 {
				t.Errorf("second SweepInterrupted = %d, %v; want 0", n, err)
			}
		})
	})
}
