package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lanehq/lane/internal/record"
	"github.com/lanehq/lane/internal/store"
	"github.com/lanehq/lane/internal/testkit/pgtest"
)

// urlSecret is the password the tests' URLs carry (the servers trust any):
// it must appear in no output and no error.
const urlSecret = "s3cr3t-in-the-url"

// runLane runs lane with args and returns its output and error; the error
// text is part of what lane shows (Main prints it).
func runLane(t *testing.T, args ...string) (shown string, err error) {
	t.Helper()
	f, out, errOut := testFactory(t, "")
	root := NewRootCmd(f)
	root.SetArgs(args)
	err = root.ExecuteContext(context.Background())
	shown = out.String() + errOut.String()
	if err != nil {
		shown += "lane: " + err.Error()
	}
	if strings.Contains(shown, urlSecret) {
		t.Errorf("lane %s shows the password:\n%s", strings.Join(args, " "), shown)
	}
	return shown, err
}

// sourceDB is a SQLite file with two runs of one session and three events.
func sourceDB(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "src.db")
	st, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for i, id := range []string{"run-a", "run-b"} {
		r := &record.Run{ID: id, Status: record.StatusSucceeded, Prompt: "task " + id, SessionID: "sess",
			StartedAt: time.Unix(1_760_000_000+int64(i), 0)}
		if err := st.CreateRun(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	evs := []record.Event{{RunID: "run-a", Seq: 1, Kind: record.KindText, Text: "hi", Raw: []byte("{}")},
		{RunID: "run-a", Seq: 2, Kind: record.KindText, Text: "more"}, {RunID: "run-b", Seq: 1, Kind: record.KindText}}
	if err := st.AppendEvents(ctx, evs); err != nil {
		t.Fatal(err)
	}
	return path
}

// lane db copy takes a history from SQLite to PostgreSQL and back, says
// what it copied and where, copies nothing the second time, and shows no
// URL's password.
func TestDBCopy(t *testing.T) {
	srv := pgtest.ForTest(t)
	src := sourceDB(t)
	pg := strings.Replace(pgtest.NewDB(t, srv), pgtest.Password, urlSecret, 1)
	back := filepath.Join(t.TempDir(), "back.db")
	for _, tt := range []struct {
		from, to string
		want     []string
	}{
		{src, pg, []string{"copied 2 runs, 3 events, 0 benches, 0 attempts, 0 attempt runs, 0 blobs, 0 requests for approval, 0 messages, 0 stored diffs, 0 attempts' artifacts\n",
			"from " + src + " to postgres://lane:xxxxx@127.0.0.1:"}},
		{src, pg, []string{"copied 0 runs (2 already there), 0 events (3 already there), 0 benches,"}},
		{pg, back, []string{"copied 2 runs, 3 events,", "from postgres://lane:xxxxx@127.0.0.1:"}},
	} {
		shown, err := runLane(t, "db", "copy", "--from", tt.from, "--to", tt.to)
		if err != nil {
			t.Fatalf("%v\n%s", err, shown)
		}
		for _, w := range tt.want {
			if !strings.Contains(shown, w) {
				t.Errorf("lane db copy --from %s --to %s says\n%s\nwithout %q", store.Redact(tt.from), store.Redact(tt.to), shown, w)
			}
		}
	}
	st, err := store.Open(context.Background(), back)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if r, err := st.GetRun(context.Background(), "run-a"); err != nil || r.SessionID != "sess" {
		t.Errorf("run-a after the round trip: %+v, %v", r, err)
	}
}

// Mistakes in how lane db copy is called are usage errors; a database that
// cannot be opened is lane's failure; neither shows a password.
func TestDBCopyErrors(t *testing.T) {
	srv := pgtest.ForTest(t)
	src := sourceDB(t)
	pg := strings.Replace(pgtest.NewDB(t, srv), pgtest.Password, urlSecret, 1)
	missing := filepath.Join(t.TempDir(), "missing.db")
	noDB := strings.Replace(pg, "/t_", "/no_such_", 1)
	for _, tt := range []struct {
		name string
		args []string
		code int
		says string
	}{
		{"no --from", []string{"--to", pg}, ExitUsage, "needs both --from and --to"},
		{"no --to", []string{"--from", src}, ExitUsage, "needs both --from and --to"},
		{"a --from file that is not there", []string{"--from", missing, "--to", pg}, ExitUsage, "no such file"},
		{"a database into itself", []string{"--from", pg, "--to", pg + "&application_name=again"}, ExitUsage, "same database"},
		{"a file into itself", []string{"--from", src, "--to", filepath.Join(filepath.Dir(src), ".", "src.db")}, ExitUsage, "same database"},
		{"a database that is not there", []string{"--from", src, "--to", noDB}, ExitInternal, "postgres://lane:xxxxx@"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			shown, err := runLane(t, append([]string{"db", "copy"}, tt.args...)...)
			if code := ExitCode(err); code != tt.code {
				t.Errorf("exit %d (%v), want %d", code, err, tt.code)
			}
			if !strings.Contains(shown, tt.says) {
				t.Errorf("lane says\n%s\nwithout %q", shown, tt.says)
			}
		})
	}
	if _, err := os.Stat(missing); err == nil {
		t.Error("a copy from a file that was not there made it")
	}
}
