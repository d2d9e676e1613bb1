package bench

import (
	"fmt"
	"net"
	"net/http"
	"reflect"
	"strings"
	"testing"
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
// proxy; step two's verifier none again ([environment]'s). Each solve.sh
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
		"steps/two/tests/test.sh": score("cat /app/two.txt; echo \"verifier: $(gateway "+p+") $(proxied localhost:"+p+")\"",
			"allowed: HTTP/1.1 200 OK\nrefused: HTTP/1.1 403 Forbidden\nagent: offline\nverifier: offline offline"),
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
