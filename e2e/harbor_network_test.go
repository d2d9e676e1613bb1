package e2e

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/lanehq/lane/internal/record"
)

// reachHostScript fetches / from the host's port $PORT at its address on
// the container's network (the default gateway), printing the status
// line, or fails.
const reachHostScript = `gw=$(ip route 2>/dev/null | awk '/^default/ {print $3}'); [ -n "$gw" ] || gw=10.255.255.1
exec 3<>"/dev/tcp/$gw/$PORT" || exit 1
printf 'GET / HTTP/1.0\r\n\r\n' >&3; head -1 <&3`

// proxyScript asks the proxy of $HTTP_PROXY for http://$1/ and prints the
// status line.
const proxyScript = `p=${HTTP_PROXY#http://}; p=${p%/}; [ -n "$p" ] || exit 1
exec 3<>"/dev/tcp/${p%:*}/${p##*:}" || exit 1
printf 'GET http://%s/ HTTP/1.0\r\nHost: %s\r\n\r\n' "$1" "$1" >&3; head -1 <&3`

// Harbor tasks whose phases have networks of their own, under the oracle
// through lane bench. "offline-agent" passes only if its solve.sh (the
// agent's phase, network_mode = "no-network") cannot reach a server on
// this machine and its tests (network_mode = "public") can, in the same
// container; "online-agent", the same task with a public agent, fails. In
// "allowlist", the agent's phase reaches the server through lane's egress
// proxy (forwarded into the container by lane forward) by the name it
// allows, and is refused it by its address. Long: harbor's
// TestPhaseNetworksApplied and TestAllowlistPhase, and bench's
// TestStepsPhaseNetworks, run the same in make test.
func TestHarborPhaseNetworksLong(t *testing.T) {
	t.Parallel()
	vars, base := containerVars(t)
	e := newLocalEnv(t)
	e.vars = append(e.vars, vars...)
	e.vars = append(e.vars, "LANE_DB="+e.db)

	ln, err := net.Listen("tcp", ":0") // the containers reach it at their gateway
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") })}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	port := ln.Addr().(*net.TCPAddr).Port

	dataset := t.TempDir()
	envs := fmt.Sprintf("[verifier.env]\nPORT = \"%d\"\n[solution.env]\nPORT = \"%d\"\n", port, port)
	offlineSolve := "#!/bin/bash\nif ( " + reachHostScript + " ) >/dev/null 2>&1; then echo online; else echo offline; fi >/app/agent.txt\n"
	offlineTest := "#!/bin/bash\nmkdir -p /logs/verifier\nline=$( " + reachHostScript + " )\necho \"verifier: $line; agent: $(cat /app/agent.txt)\"\n" +
		`if [[ "$line" == *200* && "$(cat /app/agent.txt)" == offline ]]; then echo 1; else echo 0; fi >/logs/verifier/reward.txt` + "\n"
	writeNetworkTask(t, dataset, "offline-agent", "[agent]\nnetwork_mode = \"no-network\"\n[verifier]\nnetwork_mode = \"public\"\n"+envs, offlineSolve, offlineTest)
	writeNetworkTask(t, dataset, "online-agent", "[agent]\nnetwork_mode = \"public\"\n[verifier]\nnetwork_mode = \"public\"\n"+envs, offlineSolve, offlineTest)
	allowSolve := fmt.Sprintf("#!/bin/bash\nset -- localhost:%d\n{ echo \"by name: $( %s )\"; set -- 127.0.0.1:%d; echo \"by address: $( %s )\"; } >/app/agent.txt 2>&1\n",
		port, proxyScript, port, proxyScript)
	allowTest := "#!/bin/bash\nmkdir -p /logs/verifier\ncat /app/agent.txt\n" +
		`if grep -q 'by name: HTTP/1.1 200' /app/agent.txt && grep -q 'by address: HTTP/1.1 403' /app/agent.txt; then echo 1; else echo 0; fi >/logs/verifier/reward.txt` + "\n"
	writeNetworkTask(t, dataset, "allowlist", "[environment]\nnetwork_mode = \"no-network\"\n[agent]\nnetwork_mode = \"allowlist\"\nallowed_hosts = [\"localhost\"]\n"+envs, allowSolve, allowTest)

	r := e.lane(context.Background(), "bench", dataset, "--models", "oracle", "--build-arg", "BASE="+base, "--parallel", "3")
	wantExit(t, r, 0)
	st := e.openStore()
	defer st.Close()
	got := map[string]string{}
	outputs := map[string]string{}
	for _, a := range latestBenchAttempts(t, st, 3) {
		reward := "none"
		if a.Reward != nil {
			reward = fmt.Sprint(*a.Reward)
		}
		got[a.TaskID] = string(a.Status) + " " + reward
		outputs[a.TaskID] = a.CheckOutput
	}
	for task, want := range map[string]string{
		"offline-agent": string(record.AttemptPassed) + " 1",
		"online-agent":  string(record.AttemptFailed) + " 0",
		"allowlist":     string(record.AttemptPassed) + " 1",
	} {
		if got[task] != want {
			t.Errorf("%s: %q, want %q; output:\n%s", task, got[task], want, outputs[task])
		}
	}
}

// writeNetworkTask writes the task folder dataset/name, FROM the base image.
func writeNetworkTask(t *testing.T, dataset, name, toml, solve, test string) {
	t.Helper()
	for file, content := range map[string]string{
		"task.toml":              "schema_version = \"1.4\"\n" + toml,
		"instruction.md":         "Find out whether the network is there.\n",
		"environment/Dockerfile": "ARG BASE=lane-test-base\nFROM ${BASE}\nRUN mkdir -p /app\n",
		"solution/solve.sh":      solve,
		"tests/test.sh":          test,
	} {
		p := filepath.Join(dataset, name, file)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
}
