package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/lanehq/lane/internal/testkit/anthropictest"
)

// lane run --models runs the task on each model at once, each in a copy of
// the folder, checks each copy, and leaves the folder alone; lane apply
// brings one run's changes in, refuses when the folder changed since, and
// is a run lane undo takes back.
func TestRunOnSeveralModelsThenApply(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	os.WriteFile(filepath.Join(e.proj, "README"), []byte("the answer goes in answer.txt\n"), 0o644)
	e.srv.SetResponder(func(r anthropictest.Request) (anthropictest.Turn, bool) {
		for _, m := range r.Messages {
			for _, b := range m.Blocks() {
				if b.Type == "tool_result" {
					return anthropictest.Text("done"), true
				}
			}
		}
		answer := "42"
		if strings.Contains(r.Model, "haiku") {
			answer = "41" // the other model gets it wrong
		}
		return anthropictest.Tools(anthropictest.Bash("", "echo "+answer+" > answer.txt")), true
	})
	h := newHook(t)
	// lane keeps each model's copy for apply, in the temporary folder: the
	// test's own, so that none is left behind.
	e.vars = append(e.vars, "LANE_NOTIFY_URL="+h.srv.URL, "TMPDIR="+t.TempDir())
	r := e.lane(t.Context(), "run", "--dir", e.proj, "--models", "sonnet,haiku", "--check", "grep -qx 42 answer.txt",
		"-o", "json", "write the answer")
	wantExit(t, r, 0)
	var cmp struct {
		Comparison string
		Runs       []struct {
			Model, Check, Folder string
			RunID                string `json:"run_id"`
		}
	}
	if err := json.Unmarshal([]byte(lastLine(r.stdout)), &cmp); err != nil || len(cmp.Runs) != 2 {
		t.Fatalf("comparison %q: %v", r.stdout, err)
	}
	// The comparison's end is told once, as a bench's: its runs' are not.
	onlyBenchEnd(t, h, cmp.Comparison, "1 of 2 passed")
	var sonnet, haiku = cmp.Runs[0], cmp.Runs[1]
	if sonnet.Model != "sonnet" || sonnet.Check != "pass" || haiku.Model != "haiku" || haiku.Check != "fail" ||
		sonnet.RunID == "" || sonnet.Folder == e.proj {
		t.Fatalf("comparison %+v", cmp)
	}
	if _, err := os.Stat(filepath.Join(e.proj, "answer.txt")); err == nil {
		t.Fatal("the folder was changed before any lane apply")
	}
	// The table a person reads.
	text := e.lane(t.Context(), "run", "--dir", e.proj, "--models", "sonnet,haiku", "--check", "grep -qx 42 answer.txt", "write the answer")
	wantExit(t, text, 0)
	for _, want := range []string{"MODEL", "CHECK", "FILES", "lane apply RUN brings its changes into " + e.proj} {
		if !strings.Contains(text.stdout, want) {
			t.Errorf("the table lacks %q:\n%s", want, text.stdout)
		}
	}
	if !regexp.MustCompile(`(?m)^sonnet +pass +\$\S+ +\S+ +1 \(\+1 −0\) +run [0-9a-f]{8}$`).MatchString(text.stdout) ||
		!regexp.MustCompile(`(?m)^haiku +fail `).MatchString(text.stdout) {
		t.Errorf("the table:\n%s", text.stdout)
	}

	r = e.lane(t.Context(), "apply", sonnet.RunID)
	wantExit(t, r, 0)
	if b, err := os.ReadFile(filepath.Join(e.proj, "answer.txt")); err != nil || string(b) != "42\n" {
		t.Fatalf("after lane apply: %q, %v\n%s", b, err, r.stderr)
	}
	_, after, _ := strings.Cut(r.stdout, "· run ")
	applyRun, _, _ := strings.Cut(after, " ")

	// Applied already: the folder holds answer.txt now, where the copy had none.
	r = e.lane(t.Context(), "apply", haiku.RunID)
	wantExit(t, r, 1)
	if !strings.Contains(r.stderr, "answer.txt: changed here since the copy was made") {
		t.Errorf("a second apply: %s", r.stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(e.proj, "answer.txt")); string(b) != "42\n" {
		t.Errorf("a refused apply changed the folder: %q", b)
	}
	wantExit(t, e.lane(t.Context(), "undo", applyRun), 0)
	if _, err := os.Stat(filepath.Join(e.proj, "answer.txt")); err == nil {
		t.Error("lane undo of the apply left answer.txt")
	}
	// The dashboard's Apply: the other model's run, then the first one
	// refused (the folder changed since), then forced.
	base := startDashboard(t, e)
	var csrf struct{ CSRF string }
	getJSON(t, base+"/api/csrf", &csrf)
	apply := func(runID, body string) int {
		req, _ := http.NewRequest("POST", base+"/api/runs/"+runID+"/apply", strings.NewReader(body))
		req.Header.Set("Origin", base)
		req.Header.Set("X-CSRF-Token", csrf.CSRF)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := apply(haiku.RunID, `{}`); code != http.StatusOK {
		t.Errorf("the dashboard's apply of %s: %d", haiku.Model, code)
	}
	if code := apply(sonnet.RunID, `{}`); code != http.StatusConflict {
		t.Errorf("the dashboard's apply over a changed folder: %d, want 409", code)
	}
	if b, _ := os.ReadFile(filepath.Join(e.proj, "answer.txt")); string(b) != "41\n" {
		t.Errorf("after the dashboard's apply and a refused one: %q", b)
	}
	if code := apply(sonnet.RunID, `{"force":true}`); code != http.StatusOK {
		t.Errorf("the dashboard's forced apply: %d", code)
	}
	if b, _ := os.ReadFile(filepath.Join(e.proj, "answer.txt")); string(b) != "42\n" {
		t.Errorf("after the forced apply: %q", b)
	}

	rec, err := e.openStore().GetRun(context.Background(), applyRun)
	if err != nil || rec.Runtime != "apply" || rec.ParentRunID != sonnet.RunID || rec.Dir != e.proj || rec.Changes == nil ||
		rec.Changes.Files != 1 || rec.Changes.UndoneBy == "" {
		t.Errorf("the apply's run %+v, %v", rec, err)
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
