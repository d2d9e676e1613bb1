package harbor

import (
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"strings"
)

// NetworkSpec is the network of one phase of an attempt: the container's
// start ([environment]), the agent's run ([agent]), the tests ([verifier]),
// or a step's.
type NetworkSpec struct {
	Mode string // NetworkPublic, NetworkNone or NetworkAllowlist
	// Hosts are the allowed hosts of an allowlist, normalized; an
	// allowlist of none is no network.
	Hosts []string
}

// Equal says whether s and o give the same network.
func (s NetworkSpec) Equal(o NetworkSpec) bool {
	return s.Mode == o.Mode && slices.Equal(s.Hosts, o.Hosts)
}

// online says whether the container is on a network in phase s: public
// only; an allowlist reaches its hosts through lane's forwarding alone.
func (s NetworkSpec) online() bool { return s.Mode == NetworkPublic }

func (s NetworkSpec) String() string {
	if s.Mode == NetworkAllowlist {
		return fmt.Sprintf("%s [%s]", s.Mode, strings.Join(s.Hosts, ", "))
	}
	return s.Mode
}

// BaseNetwork is the network the task's container starts with: [environment]
// network_mode and allowed_hosts.
func (t *Task) BaseNetwork() NetworkSpec {
	return NetworkSpec{Mode: t.Environment.NetworkMode, Hosts: t.Environment.AllowedHosts}
}

// AgentNetwork is the agent's network while it runs: [agent]'s, else the
// [environment]'s.
func (t *Task) AgentNetwork() NetworkSpec {
	if t.Agent.Network != nil {
		return *t.Agent.Network
	}
	return t.BaseNetwork()
}

// VerifierNetwork is the tests' network while they run: [verifier]'s, else
// the network of the environment they run in ([environment], or a
// separate verifier's own).
func (t *Task) VerifierNetwork() NetworkSpec {
	if t.Verifier.Network != nil {
		return *t.Verifier.Network
	}
	if t.Separate() {
		ve := t.VerifierEnvironment()
		return NetworkSpec{Mode: ve.NetworkMode, Hosts: ve.AllowedHosts}
	}
	return t.BaseNetwork()
}

// phaseNetworks are the networks the task's own container has, one phase
// after another: its start's, the agent's, a shared verifier's, each
// step's agent's and shared verifier's, and those the caller will set
// besides (NetOptions.Phases).
func (t *Task) phaseNetworks() []NetworkSpec {
	specs := []NetworkSpec{t.BaseNetwork(), t.AgentNetwork()}
	if !t.Separate() {
		specs = append(specs, t.VerifierNetwork())
	}
	for i := range t.Steps {
		st := t.StepTask(&t.Steps[i])
		specs = append(specs, st.AgentNetwork())
		if !st.Separate() {
			specs = append(specs, st.VerifierNetwork())
		}
	}
	return append(specs, t.Net.Phases...)
}

// baselineNetwork is an [environment]'s network_mode and allowed_hosts, as
// Harbor reads them: the mode given, else the older allow_internet's
// (true: public, false: no-network), unless allowed_hosts is given, which
// only an allowlist may.
func baselineNetwork(re rawEnvironment, fail func(key, format string, args ...any) error) (string, []string, error) {
	mode := NetworkPublic
	switch re.NetworkMode {
	case NetworkPublic, NetworkNone, NetworkAllowlist:
		mode = re.NetworkMode
	case "":
		if re.AllowInternet != nil && !*re.AllowInternet && re.AllowedHosts == nil {
			mode = NetworkNone
		}
	default:
		return "", nil, fail("environment.network_mode", "%q is none of public, no-network, allowlist", re.NetworkMode)
	}
	if re.AllowedHosts == nil {
		return mode, nil, nil
	}
	hosts, err := allowedHosts("environment.allowed_hosts", *re.AllowedHosts, fail)
	if err != nil {
		return "", nil, err
	}
	if mode != NetworkAllowlist && len(hosts) > 0 {
		return "", nil, fail("environment.allowed_hosts", "only an allowlist has allowed hosts: set network_mode = %q (it is %q)", NetworkAllowlist, mode)
	}
	return mode, hosts, nil
}

// phaseNetwork is [agent] or [verifier] (table) network_mode and
// allowed_hosts, nil when network_mode is not given (the phase keeps its
// environment's); allowed_hosts needs network_mode = "allowlist".
func phaseNetwork(table string, mode *string, hosts *[]string, fail func(key, format string, args ...any) error) (*NetworkSpec, error) {
	if mode == nil {
		if hosts != nil {
			return nil, fail(table+".allowed_hosts", "only an allowlist has allowed hosts: set [%s] network_mode = %q", table, NetworkAllowlist)
		}
		return nil, nil
	}
	switch *mode {
	case NetworkPublic, NetworkNone, NetworkAllowlist:
	default:
		return nil, fail(table+".network_mode", "%q is none of public, no-network, allowlist", *mode)
	}
	spec := &NetworkSpec{Mode: *mode}
	if hosts == nil {
		return spec, nil
	}
	var err error
	if spec.Hosts, err = allowedHosts(table+".allowed_hosts", *hosts, fail); err != nil {
		return nil, err
	}
	if *mode != NetworkAllowlist && len(spec.Hosts) > 0 {
		return nil, fail(table+".allowed_hosts", "only an allowlist has allowed hosts: set network_mode = %q (it is %q)", NetworkAllowlist, *mode)
	}
	return spec, nil
}

// hostLabel is one label of a host name, as Harbor accepts it.
var hostLabel = regexp.MustCompile(`^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$`)

// allowedHosts checks and normalizes allowed_hosts entries as Harbor does:
// host names, leading wildcards ("*.example.com"), IP addresses and CIDR
// ranges; no ports, no URLs. Names are made lower case, without a
// trailing dot; repeats are dropped.
func allowedHosts(key string, hosts []string, fail func(key, format string, args ...any) error) ([]string, error) {
	var out []string
	for _, raw := range hosts {
		h := strings.TrimRight(strings.ToLower(strings.TrimSpace(raw)), ".")
		ok := true
		switch {
		case h == "":
			ok = false
		case strings.Contains(h, "/"):
			p, err := netip.ParsePrefix(h)
			ok = err == nil && p.Masked() == p
		case strings.Contains(h, ":"):
			_, err := netip.ParseAddr(h)
			ok = err == nil
		default:
			name := strings.TrimPrefix(h, "*.")
			if _, err := netip.ParseAddr(name); err == nil {
				ok = name == h // an IPv4 address, but no wildcard of one
				break
			}
			for _, label := range strings.Split(name, ".") {
				ok = ok && hostLabel.MatchString(label)
			}
		}
		if !ok {
			return nil, fail(key, "%q is no host name, wildcard (*.example.com), IP address or CIDR range", raw)
		}
		if !slices.Contains(out, h) {
			out = append(out, h)
		}
	}
	return out, nil
}

// NetworkSummary says the task's networks in a line: the [environment]'s
// ("public", "allowlist [pypi.org]"), then each phase's that differs
// ("no-network; agent allowlist [api.github.com]; verifier public").
func (t *Task) NetworkSummary() string {
	base := t.BaseNetwork()
	parts := []string{base.String()}
	if a := t.AgentNetwork(); !a.Equal(base) {
		parts = append(parts, "agent "+a.String())
	}
	if v := t.VerifierNetwork(); !v.Equal(base) {
		parts = append(parts, "verifier "+v.String())
	}
	return strings.Join(parts, "; ")
}
