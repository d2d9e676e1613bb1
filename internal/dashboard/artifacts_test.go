package dashboard

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"net/url"
	"testing"
	"time"

	"github.com/lanehq/lane/internal/record"
	"github.com/lanehq/lane/internal/store"
)

// tarOf is an artifact set's archive of files (name → content).
func tarOf(t testing.TB, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for name, data := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(data))
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// withArtifacts gives a the sets a two-step container task collects: its
// own (/logs/artifacts/result.txt) and step post's (/app/notes.txt, and
// /app/missing.txt, which was not there), their archives stored in st.
func withArtifacts(t testing.TB, st *store.Store, a *record.Attempt) {
	t.Helper()
	blob := func(files map[string]string) string {
		d, err := st.PutBlob(context.Background(), tarOf(t, files))
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	a.Artifacts = []record.ArtifactSet{
		{Blob: blob(map[string]string{"logs/artifacts/result.txt": "42\n"}),
			Artifacts: []record.ArtifactEntry{{Source: "/logs/artifacts", Service: "main", Path: "logs/artifacts", Status: "ok"}},
			Files:     []record.ArtifactFile{{Path: "logs/artifacts/result.txt", Source: "/logs/artifacts/result.txt", Service: "main", Size: 3}}},
		{Step: "post", Blob: blob(map[string]string{"app/notes.txt": "posted\n"}),
			Artifacts: []record.ArtifactEntry{{Source: "/app/notes.txt", Service: "main", Path: "app/notes.txt", Status: "ok"},
				{Source: "/app/missing.txt", Service: "main", Status: "missing"}},
			Files: []record.ArtifactFile{{Path: "app/notes.txt", Source: "/app/notes.txt", Service: "main", Size: 7}}},
	}
}

// A bench's artifacts: each attempt's sets with their manifests, and each
// file as a download; what is not there is a 404, a bad number a 400.
func TestBenchArtifactsAPI(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpt{})
	t0 := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	b := &record.Bench{ID: "b-0040-artifacts", Name: "artifacts", Models: []string{"sonnet"}, Repeat: 2, Parallel: 1,
		Status: record.StatusSucceeded, StartedAt: t0, EndedAt: t0.Add(time.Minute)}
	kept := att("ledger", "sonnet", 1, record.AttemptPassed)
	withArtifacts(t, e.other, &kept)
	recordBench(t, e.other, b, []record.Attempt{kept, att("ledger", "sonnet", 2, record.AttemptPassed)})

	var got struct {
		BenchID  string             `json:"bench_id"`
		Attempts []attemptArtifacts `json:"attempts"`
	}
	e.getJSON("/api/benches/b-0040/artifacts", 200, &got)
	if got.BenchID != b.ID || len(got.Attempts) != 1 {
		t.Fatalf("artifacts %+v, want attempt 1's alone", got)
	}
	a := got.Attempts[0]
	if a.Task != "ledger" || a.Model != "sonnet" || a.N != 1 || len(a.Sets) != 2 || a.Sets[0].Step != "" || a.Sets[1].Step != "post" ||
		len(a.Sets[1].Files) != 1 || a.Sets[1].Artifacts[1].Status != "missing" {
		t.Errorf("attempt's artifacts %+v", a)
	}

	file := func(step, path, n string) (int, string, string) {
		q := url.Values{"task": {"ledger"}, "model": {"sonnet"}, "n": {n}, "step": {step}, "path": {path}}
		resp := e.request("GET", "/api/benches/"+b.ID+"/artifacts/file?"+q.Encode(), nil, nil)
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body), resp.Header.Get("Content-Disposition")
	}
	if code, body, disp := file("", "logs/artifacts/result.txt", "1"); code != 200 || body != "42\n" || disp != "attachment; filename=result.txt" {
		t.Errorf("the attempt's file: %d %q %q", code, body, disp)
	}
	if code, body, _ := file("post", "app/notes.txt", "1"); code != 200 || body != "posted\n" {
		t.Errorf("step post's file: %d %q", code, body)
	}
	for _, c := range []struct {
		step, path, n string
		code          int
	}{
		{"post", "logs/artifacts/result.txt", "1", 404}, // another set's
		{"", "app/missing.txt", "1", 404},
		{"", "logs/artifacts/result.txt", "2", 404}, // an attempt that kept none
		{"", "logs/artifacts/result.txt", "one", 400},
	} {
		if code, body, _ := file(c.step, c.path, c.n); code != c.code {
			t.Errorf("step %q path %s attempt %s: %d %q, want %d", c.step, c.path, c.n, code, body, c.code)
		}
	}
	e.getJSON("/api/benches/zz-none/artifacts", 404, nil)
}
