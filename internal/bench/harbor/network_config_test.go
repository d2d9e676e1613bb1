package harbor

import (
	"errors"
	"strings"
	"testing"
)

// Each phase's network is read as Harbor reads it: [agent] and [verifier]
// over [environment], allow_internet as the older spelling of the
// [environment]'s, a separate verifier's own environment under [verifier].
func TestPhaseNetworks(t *testing.T) {
	t.Parallel()
	none := NetworkSpec{Mode: NetworkNone}
	public := NetworkSpec{Mode: NetworkPublic}
	for _, tc := range []struct {
		name, toml            string
		base, agent, verifier NetworkSpec
	}{
		{name: "default", base: public, agent: public, verifier: public},
		{name: "allow_internet", toml: "[environment]\nallow_internet = false\n", base: none, agent: none, verifier: none},
		{name: "network_mode over allow_internet", toml: "[environment]\nallow_internet = false\nnetwork_mode = \"public\"\n",
			base: public, agent: public, verifier: public},
		{name: "allowlist", toml: "[environment]\nnetwork_mode = \"allowlist\"\nallowed_hosts = [\"PyPI.org.\", \"*.Example.com\", \"10.0.0.0/8\", \"pypi.org\"]\n",
			base:     NetworkSpec{Mode: NetworkAllowlist, Hosts: []string{"pypi.org", "*.example.com", "10.0.0.0/8"}},
			agent:    NetworkSpec{Mode: NetworkAllowlist, Hosts: []string{"pypi.org", "*.example.com", "10.0.0.0/8"}},
			verifier: NetworkSpec{Mode: NetworkAllowlist, Hosts: []string{"pypi.org", "*.example.com", "10.0.0.0/8"}}},
		{name: "phases", toml: "[environment]\nallow_internet = false\n[agent]\nnetwork_mode = \"allowlist\"\nallowed_hosts = [\"api.github.com\"]\n[verifier]\nnetwork_mode = \"public\"\n",
			base: none, agent: NetworkSpec{Mode: NetworkAllowlist, Hosts: []string{"api.github.com"}}, verifier: public},
		{name: "separate verifier's own", toml: "[environment]\nnetwork_mode = \"public\"\n[verifier.environment]\nallow_internet = false\n",
			base: public, agent: public, verifier: none},
		{name: "verifier phase over its environment", toml: "[verifier]\nnetwork_mode = \"public\"\n[verifier.environment]\nnetwork_mode = \"no-network\"\n",
			base: public, agent: public, verifier: public},
	} {
		files := map[string]string{"task.toml": tc.toml}
		if strings.Contains(tc.toml, "verifier.environment") {
			files["tests/Dockerfile"] = "FROM scratch\n"
		}
		task, err := LoadTask(writeTask(t, files))
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if got := task.BaseNetwork(); !got.Equal(tc.base) {
			t.Errorf("%s: BaseNetwork = %v, want %v", tc.name, got, tc.base)
		}
		if got := task.AgentNetwork(); !got.Equal(tc.agent) {
			t.Errorf("%s: AgentNetwork = %v, want %v", tc.name, got, tc.agent)
		}
		if got := task.VerifierNetwork(); !got.Equal(tc.verifier) {
			t.Errorf("%s: VerifierNetwork = %v, want %v", tc.name, got, tc.verifier)
		}
	}
}

// A network the task cannot have as it writes it is an error of the task
// when it loads, naming the key, never a network lane picks instead.
func TestPhaseNetworkErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, toml, message string
		line                int
	}{
		{name: "hosts without allowlist", toml: "[environment]\nallowed_hosts = [\"pypi.org\"]\n", line: 2, message: "environment.allowed_hosts: only an allowlist"},
		{name: "hosts with allow_internet", toml: "[environment]\nallow_internet = false\nallowed_hosts = [\"pypi.org\"]\n", line: 3, message: "environment.allowed_hosts"},
		{name: "agent hosts alone", toml: "[agent]\nallowed_hosts = [\"api.github.com\"]\n", line: 2, message: "agent.allowed_hosts"},
		{name: "verifier public with hosts", toml: "[verifier]\nnetwork_mode = \"public\"\nallowed_hosts = [\"a.com\"]\n", line: 3, message: "verifier.allowed_hosts"},
		{name: "agent mode", toml: "[agent]\nnetwork_mode = \"lan\"\n", line: 2, message: `agent.network_mode: "lan" is none of`},
		{name: "verifier mode", toml: "[verifier]\nnetwork_mode = \"none\"\n", line: 2, message: "verifier.network_mode"},
		{name: "a port", toml: "[agent]\nnetwork_mode = \"allowlist\"\nallowed_hosts = [\"pypi.org:443\"]\n", line: 3, message: `"pypi.org:443" is no host name`},
		{name: "a URL", toml: "[environment]\nnetwork_mode = \"allowlist\"\nallowed_hosts = [\"https://pypi.org\"]\n", line: 3, message: "https://pypi.org"},
		{name: "a wildcard inside", toml: "[environment]\nnetwork_mode = \"allowlist\"\nallowed_hosts = [\"a.*.org\"]\n", line: 3, message: "a.*.org"},
		{name: "a range with host bits", toml: "[environment]\nnetwork_mode = \"allowlist\"\nallowed_hosts = [\"10.1.2.3/8\"]\n", line: 3, message: "10.1.2.3/8"},
		{name: "an empty host", toml: "[environment]\nnetwork_mode = \"allowlist\"\nallowed_hosts = [\" \"]\n", line: 3, message: "allowed_hosts"},
	} {
		task, err := LoadTask(writeTask(t, map[string]string{"task.toml": tc.toml}))
		var pe *ParseError
		if !errors.As(err, &pe) || pe.Line != tc.line || !strings.Contains(err.Error(), tc.message) {
			t.Errorf("%s: LoadTask = %v, %v; want a ParseError at line %d saying %q", tc.name, task, err, tc.line, tc.message)
		}
	}
}

// A container starts with no network, or the engine's default, when its
// phases agree, as before phases were carried out; on a network of its
// own only when they differ, so that it can be switched.
func TestPlanNetwork(t *testing.T) {
	t.Parallel()
	allow := NetworkSpec{Mode: NetworkAllowlist, Hosts: []string{"pypi.org"}}
	for _, tc := range []struct {
		name  string
		task  Task
		want  netPlan
		extra []NetworkSpec
	}{
		{name: "public", task: Task{Environment: EnvironmentConfig{NetworkMode: NetworkPublic}}, want: netPlan{}},
		{name: "none", task: Task{Environment: EnvironmentConfig{NetworkMode: NetworkNone}}, want: netPlan{network: "none"}},
		{name: "allowlist", task: Task{Environment: EnvironmentConfig{NetworkMode: NetworkAllowlist, AllowedHosts: allow.Hosts}},
			want: netPlan{network: "none", allowlist: true}},
		{name: "allowlist of none", task: Task{Environment: EnvironmentConfig{NetworkMode: NetworkAllowlist}}, want: netPlan{network: "none"}},
		{name: "agent offline", task: Task{Environment: EnvironmentConfig{NetworkMode: NetworkPublic}, Agent: AgentConfig{Network: &NetworkSpec{Mode: NetworkNone}}},
			want: netPlan{own: true}},
		{name: "separate verifier online", task: Task{Environment: EnvironmentConfig{NetworkMode: NetworkNone},
			Verifier: VerifierConfig{Mode: VerifierSeparate, Network: &NetworkSpec{Mode: NetworkPublic}}}, want: netPlan{network: "none"}},
		{name: "a step's", task: Task{Environment: EnvironmentConfig{NetworkMode: NetworkNone}}, extra: []NetworkSpec{allow},
			want: netPlan{network: "none", allowlist: true}},
		{name: "a step online", task: Task{Environment: EnvironmentConfig{NetworkMode: NetworkNone}}, extra: []NetworkSpec{{Mode: NetworkPublic}},
			want: netPlan{own: true}},
	} {
		tc.task.Net.Phases = tc.extra
		if got := planNetwork(&tc.task); got != tc.want {
			t.Errorf("%s: planNetwork = %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

func TestNetworkSummary(t *testing.T) {
	t.Parallel()
	task, err := LoadTask(writeTask(t, map[string]string{"task.toml": "[environment]\nallow_internet = false\n[agent]\nnetwork_mode = \"allowlist\"\nallowed_hosts = [\"api.github.com\", \"*.pypi.org\"]\n[verifier]\nnetwork_mode = \"public\"\n"}))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := task.NetworkSummary(), "no-network; agent allowlist [api.github.com, *.pypi.org]; verifier public"; got != want {
		t.Errorf("NetworkSummary = %q, want %q", got, want)
	}
}
