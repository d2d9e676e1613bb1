package harbor

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

// artifacts and [[verifier.collect]] load as Harbor reads them: paths or
// tables, the defaults filled in.
func TestLoadTaskArtifacts(t *testing.T) {
	t.Parallel()
	dir := writeTask(t, map[string]string{
		"task.toml": `schema_version = "1.4"
artifacts = ["/app/out.json", { source = "/app/build", destination = "build", exclude = ["*.o", "cache/"] },
	{ source = "/var/log/db", service = "db" }]
[[verifier.collect]]
command = "pg_dump > /var/log/db/dump.sql"
service = "db"
timeout_sec = 5
user = 999
[[verifier.collect]]
command = "git diff > /logs/artifacts/model.patch"
`,
		"environment/docker-compose.yaml": "services:\n  main:\n    build: .\n  db:\n    image: postgres\n",
	})
	task, err := LoadTask(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []Artifact{
		{Source: "/app/out.json"},
		{Source: "/app/build", Destination: "build", Exclude: []string{"*.o", "cache/"}},
		{Source: "/var/log/db", Service: "db"},
	}
	if !reflect.DeepEqual(task.Artifacts, want) {
		t.Errorf("Artifacts = %+v\nwant %+v", task.Artifacts, want)
	}
	hooks := []CollectHook{
		{Command: "pg_dump > /var/log/db/dump.sql", Service: "db", Timeout: 5 * time.Second, User: "999"},
		{Command: "git diff > /logs/artifacts/model.patch", Service: MainService, Timeout: DefaultCollectTimeout},
	}
	if !reflect.DeepEqual(task.Verifier.Collect, hooks) {
		t.Errorf("Collect = %+v\nwant %+v", task.Verifier.Collect, hooks)
	}
	if _, ok := task.Extra["artifacts"]; ok {
		t.Error("artifacts is read, yet kept among the unknown keys")
	}

	// [[artifacts]], an array of tables, is a list too.
	dir = writeTask(t, map[string]string{"task.toml": "[[artifacts]]\nsource = \"out\"\n"})
	if task, err = LoadTask(dir); err != nil || !reflect.DeepEqual(task.Artifacts, []Artifact{{Source: "out"}}) {
		t.Errorf("[[artifacts]]: %+v, %v", task, err)
	}
}

// What Harbor refuses in an artifact or a hook is an error of the task,
// naming the key and the entry.
func TestLoadTaskArtifactErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ toml, want string }{
		{`artifacts = "/app"`, "artifacts: want a list"},
		{`artifacts = [1]`, "artifacts: entry 1: want a path or a table, not an integer"},
		{`artifacts = ["/a", "/b/../etc"]`, `artifacts: entry 2: source "/b/../etc" has a ".." component`},
		{`artifacts = [{ destination = "x" }]`, "artifacts: entry 1: source is missing"},
		{`artifacts = [{ source = "/a", destination = "/abs" }]`, `destination "/abs" is not a relative path`},
		{`artifacts = [{ source = "/a", destination = "manifest.json" }]`, `destination "manifest.json" names no file`},
		{`artifacts = [{ source = "/a", destination = "a\\b" }]`, `use / between its parts`},
		{`artifacts = [{ source = "rel", service = "db" }]`, `source "rel" of service db is not an absolute path`},
		{`artifacts = [{ source = "/a", service = "-db" }]`, `service "-db" is no compose service name`},
		{`artifacts = [{ source = "/a", exclude = "*.log" }]`, "exclude: want a list of strings"},
		{`artifacts = [{ source = "/a", mode = "copy" }]`, `unknown key "mode"`},
		{`artifacts = [{ source = "/a", service = "db" }]`, "service db, which environment/'s compose file does not define"},
		{"[[verifier.collect]]\nservice = \"main\"", "verifier.collect: entry 1: command is missing"},
		{"[[verifier.collect]]\ncommand = \"x\"\ntimeout_sec = 0", "timeout_sec: want a positive number of seconds"},
		{"[[verifier.collect]]\ncommand = \"x\"\nservice = \"db\"", "runs in service db, which environment/'s compose file does not define"},
	} {
		_, err := LoadTask(writeTask(t, map[string]string{"task.toml": tc.toml + "\n"}))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error with %q", tc.toml, err, tc.want)
		}
	}
}

// Exclude patterns match as tar --exclude's: a name anywhere, or a path.
func TestExcluded(t *testing.T) {
	t.Parallel()
	patterns := []string{"*.log", "./cache/", "build/tmp"}
	for rel, want := range map[string]bool{
		"out.log": true, "a/b/out.log": true, "cache": true, "x/cache": true, "build/tmp": true,
		"src/build/tmp": true, "out.txt": false, "cache.txt": false, "build": false, "logs/out.txt": false,
	} {
		if got := excluded(rel, patterns); got != want {
			t.Errorf("excluded(%q) = %v, want %v", rel, got, want)
		}
	}
}

// A stored path comes from the destination, else from the source.
func TestStoredPath(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		a    Artifact
		want string
	}{
		{Artifact{Source: "/logs/artifacts"}, "logs/artifacts"},
		{Artifact{Source: "app/out.json"}, "app/out.json"},
		{Artifact{Source: "/app/build/", Destination: "./build/"}, "build"},
		{Artifact{Source: "/var/log/db", Destination: "db/logs", Service: "db"}, "db/logs"},
	} {
		if got := storedPath(tc.a); got != tc.want {
			t.Errorf("storedPath(%+v) = %q, want %q", tc.a, got, tc.want)
		}
	}
}
