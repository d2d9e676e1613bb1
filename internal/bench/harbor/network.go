package harbor

import (
	"bufio"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/lanehq/lane/internal/container"
	"github.com/lanehq/lane/internal/container/egress"
)

// ErrNetwork is the kind of a *TaskError whose phase's network could not
// be set: the engine would not connect or disconnect the container, or
// lane's forwarding to the egress proxy did not start in it.
var ErrNetwork = errors.New("the phase's network could not be set")

// NetOptions says how lane gives a task's container its networks. A
// caller sets Task.Net; the zero value does for most.
type NetOptions struct {
	// Forwarder is the program that, run in the container as
	// `FORWARDER forward ADDR SOCKET`, serves ADDR there through the unix
	// socket SOCKET and says "ready" (lane's `lane forward`). "" is the
	// program running now, lane itself. It is bound into the container
	// at its own path when a phase has an allowlist.
	Forwarder string
	// Dir is where the egress proxy's socket folder is made; "" is the
	// system's temporary folder.
	Dir string
	// Resolver finds the allowed hosts' addresses; nil is the system's.
	Resolver egress.Resolver
	// Phases are further networks the caller will give the container
	// with Network.Set (a multi-step task's steps'), so that Start makes
	// it able to take them.
	Phases []NetworkSpec
}

// proxyEnv are the variables a phase with an allowlist gives every command
// in the container, besides HTTP_PROXY and the rest, which name the proxy:
// lane's own forwarded endpoints (a model's, on loopback) are not proxied.
const noProxy = "localhost,127.0.0.1,::1"

// forwardReady bounds the wait for the forwarder's "ready".
const forwardReady = 30 * time.Second

// Network is the network of a task's container, set phase by phase. A
// container that is to change between public and no network starts on a
// network of its own, which Set connects and disconnects (an engine cannot
// connect a container started without a network). An allowlist is no
// network but one address in the container, forwarded to lane's egress
// proxy, which lets only the allowed hosts through; its commands find it
// through HTTP_PROXY, HTTPS_PROXY, http_proxy and https_proxy. Its methods
// are safe for concurrent use; the container's Remove ends what it runs.
type Network struct {
	c    *container.Container
	task string
	// own is the container's network of its own, "" if it has none and
	// so cannot change between public and no network.
	own    string
	online bool
	sock   string // the proxy's unix socket, "" when no phase has an allowlist
	opts   NetOptions

	mu      sync.Mutex
	current *NetworkSpec
	proxy   *egress.Proxy
	addr    string // the proxy's address in the container once forwarded
	stop    func() // ends the proxy and the forwarder
}

// netPlan is how a task's container starts for its phases' networks: the
// engine network it runs on ("none", "" for the engine's default, or a
// network of its own to be made) and whether an allowlist needs the
// forwarder's files bound into it.
type netPlan struct {
	network   string
	own       bool
	allowlist bool
}

// planNetwork is t's netPlan, given the networks of its phases: no
// network, or the engine's default, when they all agree on it (as before
// phases were carried out), else a network of the container's own.
func planNetwork(t *Task) netPlan {
	var on, off bool
	var p netPlan
	for _, s := range t.phaseNetworks() {
		on = on || s.online()
		off = off || !s.online()
		p.allowlist = p.allowlist || (s.Mode == NetworkAllowlist && len(s.Hosts) > 0)
	}
	switch {
	case on && off:
		p.own = true
	case off:
		p.network = "none"
	}
	return p
}

// prepareNetwork makes what t's container needs before it starts for plan:
// its network of its own, named name, and the egress proxy's socket folder
// with the forwarder's binding. The Network and mounts are Start's; undo
// removes what was made, for a start that fails.
func prepareNetwork(ctx context.Context, e *container.Engine, t *Task, name string, plan netPlan, mounts []container.Mount) (*Network, []container.Mount, func(), error) {
	n := &Network{task: t.Name, opts: t.Net}
	var undo []func()
	undoAll := func() {
		for i := len(undo) - 1; i >= 0; i-- {
			undo[i]()
		}
	}
	if plan.own {
		if err := e.CreateNetwork(ctx, name); err != nil {
			return nil, nil, nil, startError(ctx, t, err)
		}
		n.own, n.online = name, true
		undo = append(undo, func() { _ = e.RemoveNetwork(context.WithoutCancel(ctx), name) })
	} else {
		n.online = plan.network != "none"
	}
	if plan.allowlist {
		fwd, err := forwarder(t.Net.Forwarder)
		if err != nil {
			undoAll()
			return nil, nil, nil, startError(ctx, t, err)
		}
		n.opts.Forwarder = fwd
		dir, err := os.MkdirTemp(t.Net.Dir, "lane-egress-")
		if err != nil {
			undoAll()
			return nil, nil, nil, startError(ctx, t, fmt.Errorf("make the egress proxy's folder: %w", err))
		}
		undo = append(undo, func() { _ = os.RemoveAll(dir) })
		n.sock = filepath.Join(dir, "proxy.sock")
		mounts = append(mounts, container.Mount{Host: dir, Container: dir})
		if !mounted(mounts, fwd) {
			mounts = append(mounts, container.Mount{Host: fwd, Container: fwd, ReadOnly: true})
		}
	}
	return n, mounts, undoAll, nil
}

// forwarder is the forwarding program's real path: fwd, else the running
// program's.
func forwarder(fwd string) (string, error) {
	if fwd == "" {
		self, err := os.Executable()
		if err != nil {
			return "", fmt.Errorf("find lane's own binary to forward the egress proxy: %w", err)
		}
		fwd = self
	}
	return filepath.EvalSymlinks(fwd)
}

func mounted(mounts []container.Mount, at string) bool {
	for _, m := range mounts {
		if m.Container == at {
			return true
		}
	}
	return false
}

// attach gives n its started container c, which ends what n runs (and
// removes what prepareNetwork made) when it is removed, and sets c's
// network to spec.
func (n *Network) attach(ctx context.Context, c *container.Container, spec NetworkSpec, undo func()) error {
	n.c = c
	c.AtRemove(func(context.Context) error {
		n.close()
		undo()
		return nil
	})
	return n.Set(ctx, spec)
}

// Set gives the container the network spec from now on: connected to its
// network of its own or not, and for an allowlist, lane's egress proxy
// forwarded into it with the phase's hosts and the proxy variables set
// for every command it runs (container.Container.SetEnv). A network the
// container cannot take (public, for a container started without one,
// because its task's phases did not ask for it) is an error. Its errors
// are *TaskErrors of kind ErrNetwork, unless ctx is done.
func (n *Network) Set(ctx context.Context, spec NetworkSpec) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.current != nil && n.current.Equal(spec) {
		return nil
	}
	if err := n.set(ctx, spec); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("harbor: task %s: network %s: %w", n.task, spec, err)
		}
		return &TaskError{Kind: ErrNetwork, Task: n.task, Err: fmt.Errorf("network %s: %w", spec, err)}
	}
	n.current = &spec
	return nil
}

func (n *Network) set(ctx context.Context, spec NetworkSpec) error {
	if want := spec.online(); want != n.online {
		if n.own == "" {
			return errors.New("the container started without a network of its own to connect and disconnect")
		}
		var err error
		if want {
			err = n.c.Connect(ctx, n.own)
		} else {
			err = n.c.Disconnect(ctx, n.own)
		}
		if err != nil {
			return err
		}
		n.online = want
	}
	if spec.Mode != NetworkAllowlist || len(spec.Hosts) == 0 {
		n.c.SetEnv(nil)
		if n.proxy != nil {
			n.proxy.SetAllowlist(&egress.Allowlist{}) // refuses every host
		}
		return nil
	}
	allow, err := egress.ParseAllowlist(spec.Hosts)
	if err != nil {
		return err
	}
	if n.proxy == nil {
		if err := n.startProxy(ctx); err != nil {
			return err
		}
	}
	n.proxy.SetAllowlist(allow)
	url := "http://" + n.addr
	n.c.SetEnv([]string{"HTTP_PROXY=" + url, "HTTPS_PROXY=" + url, "http_proxy=" + url, "https_proxy=" + url,
		"NO_PROXY=" + noProxy, "no_proxy=" + noProxy})
	return nil
}

// startProxy starts the egress proxy on n's socket, refusing every host
// until Set gives it the phase's, and lane's forwarding to it in the
// container, at a loopback port there.
func (n *Network) startProxy(ctx context.Context) error {
	if n.sock == "" {
		return errors.New("the container started without lane's forwarding to an egress proxy")
	}
	ln, err := (&net.ListenConfig{}).Listen(ctx, "unix", n.sock)
	if err != nil {
		return fmt.Errorf("egress proxy: %w", err)
	}
	// Commands in the container may run as any user.
	_ = os.Chmod(n.sock, 0o777)
	pctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	stop := func() { cancel(); wg.Wait() }
	proxy := egress.New(&egress.Allowlist{}, n.opts.Resolver, nil)
	wg.Go(func() { _ = proxy.Serve(pctx, ln) }) // ends with pctx
	addr, err := n.forward(ctx, pctx, &wg)
	if err != nil {
		stop()
		return err
	}
	n.proxy, n.addr, n.stop = proxy, addr, stop
	return nil
}

// forward starts lane's forwarding from a loopback port in the container
// to the proxy's socket, until pctx ends; it returns the port's address.
func (n *Network) forward(ctx, pctx context.Context, wg *sync.WaitGroup) (string, error) {
	port, err := rand.Int(rand.Reader, big.NewInt(10000))
	if err != nil {
		return "", err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", 40000+port.Int64())
	cmd := n.c.Command(pctx, container.ExecSpec{Argv: []string{n.opts.Forwarder, "forward", addr, n.sock}, User: "0"})
	out, err := cmd.StdoutPipe()
	if err == nil {
		err = cmd.Start()
	}
	if err != nil {
		return "", fmt.Errorf("forward the egress proxy into the container: %w", err)
	}
	wg.Go(func() { _ = cmd.Wait() })
	line := make(chan string, 1)
	go func() {
		l, _ := bufio.NewReader(out).ReadString('\n')
		line <- strings.TrimSpace(l)
	}()
	select {
	case l := <-line:
		if l == "ready" {
			return addr, nil
		}
	case <-time.After(forwardReady):
	case <-ctx.Done():
		return "", ctx.Err()
	}
	return "", fmt.Errorf("forward the egress proxy into the container: %s forward did not start (it may not run in the task's image)", n.opts.Forwarder)
}

// close ends the proxy and the forwarding, if they run.
func (n *Network) close() {
	n.mu.Lock()
	stop := n.stop
	n.stop, n.proxy = nil, nil
	n.mu.Unlock()
	if stop != nil {
		stop()
	}
}
