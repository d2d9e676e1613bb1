package harbor_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lanehq/lane/internal/bench/harbor"
	"github.com/lanehq/lane/internal/container"
	"github.com/lanehq/lane/internal/testkit/forwardtest"
)

// TestMain makes the test binary answer `forward ADDR SOCKET` as lane
// does, for the allowlist phases of the tasks' containers.
func TestMain(m *testing.M) { forwardtest.Main(m) }

// serveSecret serves "secret" over HTTP on addr until the test ends, and
// returns its port.
func serveSecret(t *testing.T, addr string) string {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "secret") })}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { srv.Close() })
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return port
}

// writeNetTask writes a task whose image is FROM the test base image.
func writeNetTask(t *testing.T, toml, solve, test string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range map[string]string{
		"task.toml":              toml,
		"instruction.md":         "Find out whether the network is there.\n",
		"environment/Dockerfile": "ARG BASE=lane-test-base\nFROM ${BASE}\nRUN mkdir -p /app\n",
		"solution/solve.sh":      solve,
		"tests/test.sh":          test,
	} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// reachHost is a bash line that fetches / from the host's port $PORT at
// its address on the container's network (its default gateway), printing
// the answer's first line, or failing.
const reachHost = `gw=$(ip route 2>/dev/null | awk '/^default/ {print $3}'); [ -n "$gw" ] || gw=10.255.255.1
exec 3<>"/dev/tcp/$gw/$PORT" || exit 1
printf 'GET / HTTP/1.0\r\n\r\n' >&3; head -1 <&3`

// The agent's phase has no network, the verifier's has: the oracle's
// solve.sh, as the agent, cannot reach a server on the host, and the
// tests, in the same container, can.
func TestPhaseNetworksApplied(t *testing.T) {
	t.Parallel()
	port := serveSecret(t, ":0")
	toml := fmt.Sprintf(`[agent]
network_mode = "no-network"
[verifier]
network_mode = "public"
[verifier.env]
PORT = "%s"
[solution.env]
PORT = "%s"
`, port, port)
	solve := "#!/bin/bash\nif ( " + reachHost + " ) >/dev/null 2>&1; then echo online >/app/agent.txt; else echo offline >/app/agent.txt; fi\n"
	test := "#!/bin/bash\nmkdir -p /logs/verifier\nline=$( " + reachHost + " )\necho \"verifier: $line; agent: $(cat /app/agent.txt)\"\n" +
		`if [[ "$line" == *200* && "$(cat /app/agent.txt)" == offline ]]; then echo 1; else echo 0; fi >/logs/verifier/reward.txt` + "\n"
	a := prepareDir(t, writeNetTask(t, toml, solve, test))
	a.build(t)
	c, nw, err := harbor.StartNetwork(a.ctx, a.e, a.task, a.image)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Remove(a.ctx); err != nil {
			t.Error(err)
		}
	})
	if err := nw.Set(a.ctx, a.task.AgentNetwork()); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := harbor.RunOracle(a.ctx, c, a.task, &out); err != nil {
		t.Fatalf("RunOracle: %v\n%s", err, out.String())
	}
	if err := nw.Set(a.ctx, a.task.VerifierNetwork()); err != nil {
		t.Fatal(err)
	}
	r, err := harbor.Verify(a.ctx, c, a.task, &out)
	if err != nil || r.Value != 1 {
		t.Errorf("Verify = %v, %v; want 1 (the agent offline, the verifier online); output:\n%s", r.Value, err, out.String())
	}
}

// names resolves the test's host names to this machine's loopback.
type names map[string]string

func (n names) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if ip, ok := n[host]; ok {
		return []netip.Addr{netip.MustParseAddr(ip)}, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// throughProxy is a bash script that asks the proxy of $HTTP_PROXY (or
// the address $2 when it is unset) for http://$1/, plainly and through
// CONNECT, printing each answer's status line.
const throughProxy = `p=${HTTP_PROXY#http://}; p=${p%/}; [ -n "$p" ] || p=$2
exec 3<>"/dev/tcp/${p%:*}/${p##*:}" || exit 1
printf 'GET http://%s/ HTTP/1.0\r\nHost: %s\r\n\r\n' "$1" "$1" >&3; echo "plain: $(head -1 <&3 | tr -d '\r')"
exec 3<>"/dev/tcp/${p%:*}/${p##*:}" || exit 1
printf 'CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n' "$1" "$1" >&3; read -r status <&3; echo "connect: ${status%$'\r'}"
if [[ $status == *" 200 "* ]]; then read -r _ <&3; printf 'GET / HTTP/1.0\r\n\r\n' >&3; echo "tunnel: $(head -1 <&3 | tr -d '\r')"; fi`

// An allowlist phase reaches its hosts through lane's egress proxy, by
// name, and nothing else; the next phase, without network, has the proxy
// refuse them too.
func TestAllowlistPhase(t *testing.T) {
	t.Parallel()
	port := serveSecret(t, "127.0.0.1:0")
	toml := "[environment]\nnetwork_mode = \"no-network\"\n[agent]\nnetwork_mode = \"allowlist\"\nallowed_hosts = [\"allowed.test\"]\n"
	a := prepareDir(t, writeNetTask(t, toml, "#!/bin/bash\n", "#!/bin/bash\n"))
	a.task.Net.Resolver = names{"allowed.test": "127.0.0.1", "other.test": "127.0.0.1"}
	a.build(t)
	c, nw, err := harbor.StartNetwork(a.ctx, a.e, a.task, a.image)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Remove(a.ctx); err != nil {
			t.Error(err)
		}
	})
	run := func(argv ...string) string {
		t.Helper()
		var out bytes.Buffer
		if _, err := c.Exec(a.ctx, container.ExecSpec{Argv: argv, Stdout: &out, Stderr: &out}); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	if err := nw.Set(a.ctx, a.task.AgentNetwork()); err != nil {
		t.Fatal(err)
	}
	proxyAddr := strings.TrimPrefix(strings.TrimSpace(run("sh", "-c", `echo "$HTTP_PROXY"`)), "http://")
	if !strings.HasPrefix(proxyAddr, "127.0.0.1:") || !strings.Contains(run("sh", "-c", "echo $NO_PROXY"), "127.0.0.1") {
		t.Fatalf("the agent's phase has HTTP_PROXY %q and NO_PROXY %q", proxyAddr, run("sh", "-c", "echo $NO_PROXY"))
	}
	allowed := run("bash", "-c", throughProxy, "bash", "allowed.test:"+port)
	for _, want := range []string{"plain: HTTP/1.1 200 OK", "connect: HTTP/1.1 200 Connection established", "tunnel: HTTP/1.0 200 OK"} {
		if !strings.Contains(allowed, want) {
			t.Errorf("allowed host through the proxy: %q, want %q", allowed, want)
		}
	}
	other := run("bash", "-c", throughProxy, "bash", "other.test:"+port)
	if !strings.Contains(other, "plain: HTTP/1.1 403 Forbidden") || !strings.Contains(other, "connect: HTTP/1.1 403 Forbidden") {
		t.Errorf("other host through the proxy: %q, want 403 twice", other)
	}
	// No way out but the proxy.
	if out := run("bash", "-c", `exec 3<>/dev/tcp/192.0.2.1/80 && echo connected`); strings.Contains(out, "connected") {
		t.Errorf("the allowlist phase reached an address directly: %q", out)
	}

	if err := nw.Set(a.ctx, a.task.VerifierNetwork()); err != nil {
		t.Fatal(err)
	}
	if env := run("sh", "-c", "echo $HTTP_PROXY"); strings.TrimSpace(env) != "" {
		t.Errorf("the no-network phase still has HTTP_PROXY=%s", env)
	}
	after := run("bash", "-c", throughProxy, "bash", "allowed.test:"+port, proxyAddr)
	if !strings.Contains(after, "plain: HTTP/1.1 403 Forbidden") {
		t.Errorf("the allowed host in the next phase, without network: %q, want 403", after)
	}
}
