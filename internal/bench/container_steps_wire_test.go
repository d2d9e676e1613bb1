package bench

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/lanehq/lane/internal/record"
	"github.com/lanehq/lane/internal/store"
)

// hostPort serves "ok" over HTTP on every address of this machine until
// the test ends, and returns its port: a container reaches it at its
// gateway when it is on a network, lane's egress proxy at localhost.
func hostPort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", ":0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") })}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().(*net.TCPAddr).Port
}

// reach defines two bash functions that print the status line of an
// HTTP GET of /, or "offline" when it cannot be made: gateway PORT asks
// the host at the container's gateway, proxied HOST:PORT asks the proxy
// of $HTTP_PROXY for http://HOST:PORT/.
const reach = `gateway() { (
  gw=$(ip route 2>/dev/null | awk '/^default/ {print $3}'); [ -n "$gw" ] || gw=10.255.255.1
  exec 3<>"/dev/tcp/$gw/$1" || exit 1
  printf 'GET / HTTP/1.0\r\n\r\n' >&3; head -1 <&3 | tr -d '\r' | grep .
) 2>/dev/null || echo offline; }
proxied() { (
  p=${HTTP_PROXY#http://}; p=${p%/}; [ -n "$p" ] || exit 1
  exec 3<>"/dev/tcp/${p%:*}/${p##*:}" || exit 1
  printf 'GET http://%s/ HTTP/1.0\r\nHost: %s\r\n\r\n' "$1" "$1" >&3; head -1 <&3 | tr -d '\r' | grep .
) 2>/dev/null || echo offline; }
`

// networkSteps is a two-step task whose steps' phases have networks of
// their own, under a task whose [agent] is public and whose environment
// has none: step one's agent (its solve.sh) none, its verifier public;
// step two's agent an allowlist of localhost, through lane's egress
// proxy; step two's verifier none again ([environment]'s), as its
// setup.sh has before its agent and the task's collect hook after it, as
// in Harbor, where a phase's network is the agent's run's or the tests'
// only. Each solve.sh
// writes what it could reach into a file its step's test checks, with
// what the test reaches itself. first is step one's [steps.agent]
// network_mode.
func networkSteps(port int, first string) map[string]string {
	p := fmt.Sprint(port)
	// score makes a test.sh print what was reached and score 1 if it is
	// want, else 0.
	score := func(lines, want string) string {
		return "#!/bin/bash\n" + reach + "got=$(" + lines + ")\necho \"$got\"\n" +
			"if [ \"$got\" = \"" + want + "\" ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt\n"
	}
	return map[string]string{
		"task.toml": `schema_version = "1.4"
[environment]
network_mode = "no-network"
[agent]
network_mode = "public"
[[verifier.collect]]
command = '''` + reach + `echo "hook: $(proxied localhost:` + p + `)" >> /app/hooks.txt'''
[[steps]]
name = "one"
[steps.agent]
network_mode = "` + first + `"
[steps.verifier]
network_mode = "public"
[[steps]]
name = "two"
[steps.agent]
network_mode = "allowlist"
allowed_hosts = ["localhost"]
`,
		"steps/one/instruction.md":    "Find out what you can reach.\n",
		"steps/one/solution/solve.sh": "#!/bin/bash\n" + reach + "echo \"agent: $(gateway " + p + ")\" > /app/one.txt\n",
		"steps/one/tests/test.sh": score("cat /app/one.txt; echo \"verifier: $(gateway "+p+")\"",
			"agent: offline\nverifier: HTTP/1.0 200 OK"),
		"steps/two/instruction.md": "Find out what you can reach now.\n",
		"steps/two/solution/solve.sh": "#!/bin/bash\n" + reach + "{ echo \"allowed: $(proxied localhost:" + p + ")\"\n" +
			"echo \"refused: $(proxied 127.0.0.1:" + p + ")\"\necho \"agent: $(gateway " + p + ")\"; } > /app/two.txt\n",
		"steps/two/workdir/setup.sh": "#!/bin/bash\n" + reach + "echo \"setup: $(gateway " + p + ")\" > /app/setup.txt\n",
		"steps/two/tests/test.sh": score("cat /app/setup.txt /app/two.txt /app/hooks.txt; echo \"verifier: $(gateway "+p+") $(proxied localhost:"+p+")\"",
			"setup: offline\nallowed: HTTP/1.1 200 OK\nrefused: HTTP/1.1 403 Forbidden\nagent: offline\nhook: offline\nhook: offline\nverifier: offline offline"),
	}
}

// A multi-step task's steps each get their own networks under the oracle:
// step one's solve.sh cannot reach a server on this machine and its
// verifier can; step two's reaches it through lane's egress proxy by the
// name it allows and is refused it by address, with no other way out, and
// its verifier, back to no network, has neither. The same task with step
// one's agent public fails step one: the steps' networks decide the pass.
func TestStepsPhaseNetworks(t *testing.T) {
	t.Parallel()
	port := hostPort(t)
	attempts := runStepTasks(t, map[string]string{
		"steps-net":   writeStepTask(t, "steps-net", networkSteps(port, "no-network")),
		"step-public": writeStepTask(t, "step-public", networkSteps(port, "public")),
	}, []string{OracleModel}, nil, "")
	a := attempts["steps-net/oracle/1"]
	if got := stepNames(a); !reflect.DeepEqual(got, []string{"one:passed:", "two:passed:"}) {
		t.Errorf("steps %v\n%s", got, a.CheckOutput)
	}
	pub := attempts["step-public/oracle/1"]
	if got := stepNames(pub); !reflect.DeepEqual(got, []string{"one:failed:check_failed", "two:passed:"}) ||
		!strings.Contains(pub.CheckOutput, "agent: HTTP/1.0 200 OK") {
		t.Errorf("with step one's agent public: steps %v\n%s", got, pub.CheckOutput)
	}
}

// artifactSteps is a two-step task with artifacts: the task's own
// (/app/notes.txt, which each step adds a line to), step "build"'s folder
// under a destination with its object files excluded, and step
// "answer"'s /app/answer.txt, which its separate verifier (built from its
// tests/) scores at that path. hack makes the answer wrong and plants in
// the agent's container a cat that says the right one and a reward.
func artifactSteps(hack bool) map[string]string {
	answer := "echo 42 > /app/answer.txt\n"
	if hack {
		answer = "echo 41 > /app/answer.txt\nmkdir -p /usr/local/bin /logs/verifier\n" +
			"printf '#!/bin/sh\\necho 42\\n' > /usr/local/bin/cat && chmod +x /usr/local/bin/cat\n" +
			"echo 1 > /logs/verifier/reward.txt\necho '{\"reward\": 1}' > /logs/verifier/reward.json\n"
	}
	return map[string]string{
		"task.toml": `schema_version = "1.4"
artifacts = ["/app/notes.txt"]
[environment]
allow_internet = false
[[steps]]
name = "build"
artifacts = [{ source = "/app/build", destination = "build-output", exclude = ["*.o"] }]
[[steps]]
name = "answer"
artifacts = ["/app/answer.txt"]
[steps.verifier]
environment_mode = "separate"
`,
		"steps/build/instruction.md":     "Build it.\n",
		"steps/build/solution/solve.sh":  "mkdir -p /app/build && echo prog > /app/build/prog && echo obj > /app/build/main.o\necho build >> /app/notes.txt\n",
		"tests/test.sh":                  "if [ -f /app/build/prog ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt\n",
		"steps/answer/instruction.md":    "Answer.\n",
		"steps/answer/solution/solve.sh": "echo answer >> /app/notes.txt\n" + answer,
		"steps/answer/tests/Dockerfile":  "ARG BASE\nFROM ${BASE}\nCOPY test.sh /tests/test.sh\n",
		// seen: the step's artifact is there; notes: the task's is, with
		// both steps' lines.
		"steps/answer/tests/test.sh": `r=0; seen=0; notes=0
[ "$(cat /app/answer.txt)" = 42 ] && r=1
[ -f /app/answer.txt ] && seen=1
[ "$(cat /app/notes.txt | tr '\n' ' ')" = "build answer " ] && notes=1
mkdir -p /logs/verifier && echo "{\"reward\": $r, \"seen\": $seen, \"notes\": $notes}" > /logs/verifier/reward.json
`,
	}
}

// blobFiles is the files of the tar archive stored as digest: name →
// content.
func blobFiles(t *testing.T, st *store.Store, digest string) map[string]string {
	t.Helper()
	data, err := st.Blob(context.Background(), digest)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	tr := tar.NewReader(bytes.NewReader(data))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			b, _ := io.ReadAll(tr)
			files[h.Name] = string(b)
		}
	}
}

// A multi-step task's artifacts, collected after each step under the
// oracle: the task's own and the step's, stored as a set per step (named
// by it) with their files as the step left them (a destination, an
// exclude pattern). The separate verifier of step "answer" gets them at
// their paths in the container; the hack planted in the agent's container
// (a lying cat, a reward file) does not reach it, and scores 0.
func TestStepsArtifacts(t *testing.T) {
	t.Parallel()
	st, id := runStepBench(t, map[string]string{
		"honest": writeStepTask(t, "honest", artifactSteps(false)),
		"hack":   writeStepTask(t, "hack", artifactSteps(true)),
	}, []string{OracleModel}, nil, "")
	attempts := attemptsOf(t, st, id)
	for task, want := range map[string]map[string]float64{
		"honest": {"reward": 1, "seen": 1, "notes": 1},
		"hack":   {"reward": 0, "seen": 1, "notes": 1},
	} {
		a := attempts[task+"/oracle/1"]
		if len(a.Steps) != 2 || !reflect.DeepEqual(a.Steps[1].Rewards, want) {
			t.Errorf("%s: steps %v, step answer's rewards %v, want %v\n%s", task, stepNames(a), a.Steps, want, a.CheckOutput)
		}
	}
	sets, err := st.AttemptArtifacts(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]map[string]string{}
	for _, sa := range sets {
		files := map[string]string{}
		if sa.Set.Blob != "" {
			files = blobFiles(t, st, sa.Set.Blob)
		}
		for _, f := range sa.Set.Files {
			if _, ok := files[f.Path]; !ok || int64(len(files[f.Path])) != f.Size {
				t.Errorf("%s step %s: manifest lists %+v, archive has %q", sa.Key, sa.Set.Step, f, files[f.Path])
			}
		}
		got[sa.Key.TaskID+" "+sa.Set.Step] = files
	}
	want := map[string]map[string]string{
		"hack build":    {"app/notes.txt": "build\n", "build-output/prog": "prog\n"},
		"hack answer":   {"app/notes.txt": "build\nanswer\n", "app/answer.txt": "41\n"},
		"honest build":  {"app/notes.txt": "build\n", "build-output/prog": "prog\n"},
		"honest answer": {"app/notes.txt": "build\nanswer\n", "app/answer.txt": "42\n"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("stored artifacts %v\nwant %v", got, want)
	}
}

// A single-step task's collect hook runs on the environment's network, as
// in Harbor, not on its agent's allowlist: under the oracle, the solve.sh
// reaches the allowed host through lane's egress proxy, the hook does not.
func TestCollectHookNetwork(t *testing.T) {
	t.Parallel()
	p := fmt.Sprint(hostPort(t))
	task := writeStepTask(t, "hook-net", map[string]string{
		"task.toml": `schema_version = "1.4"
[environment]
network_mode = "no-network"
[agent]
network_mode = "allowlist"
allowed_hosts = ["localhost"]
[[verifier.collect]]
command = '''` + reach + `echo "hook: $(proxied localhost:` + p + `)" >> /app/reached.txt'''
`,
		"instruction.md":    "Reach it.\n",
		"solution/solve.sh": "#!/bin/bash\n" + reach + "echo \"agent: $(proxied localhost:" + p + ")\" > /app/reached.txt\n",
		"tests/test.sh": "#!/bin/bash\ncat /app/reached.txt\n" +
			"if [ \"$(cat /app/reached.txt)\" = $'agent: HTTP/1.1 200 OK\\nhook: offline' ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt\n",
	})
	attempts := runStepTasks(t, map[string]string{"hook-net": task}, []string{OracleModel}, nil, "")
	if a := attempts["hook-net/oracle/1"]; a.Status != record.AttemptPassed {
		t.Errorf("attempt %s %s:\n%s", a.Status, a.FailureKind, a.CheckOutput)
	}
}
