package container

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
)

// CreateNetwork makes a bridge network of the engine's, named name: a
// container started on it (RunSpec.Network) can later be disconnected
// from it and connected again, as one started with no network cannot.
func (e *Engine) CreateNetwork(ctx context.Context, name string) error {
	if err := e.run(ctx, nil, io.Discard, "network", "create", name); err != nil {
		return fmt.Errorf("create network %s: %w", name, err)
	}
	return nil
}

// RemoveNetwork removes the network name, once no container uses it; a
// network already gone is no error.
func (e *Engine) RemoveNetwork(ctx context.Context, name string) error {
	err := e.run(ctx, nil, io.Discard, "network", "rm", name)
	var ce *CommandError
	if errors.As(err, &ce) && strings.Contains(strings.ToLower(ce.Stderr), "no such network") ||
		errors.As(err, &ce) && strings.Contains(strings.ToLower(ce.Stderr), "not found") {
		return nil
	}
	if err != nil {
		return fmt.Errorf("remove network %s: %w", name, err)
	}
	return nil
}

// Connect connects the running container to network.
func (c *Container) Connect(ctx context.Context, network string) error {
	if err := c.engine.run(ctx, nil, io.Discard, "network", "connect", network, c.Name); err != nil {
		return fmt.Errorf("connect container %s to network %s: %w", c.Name, network, err)
	}
	return nil
}

// Disconnect takes the running container off network: with no other, it
// is left its loopback alone.
func (c *Container) Disconnect(ctx context.Context, network string) error {
	if err := c.engine.run(ctx, nil, io.Discard, "network", "disconnect", network, c.Name); err != nil {
		return fmt.Errorf("disconnect container %s from network %s: %w", c.Name, network, err)
	}
	return nil
}

// SetEnv sets variables (NAME=value) that every later Exec and Command in
// the container gets, before their own ExecSpec.Env (which wins): a
// phase's proxy settings, say. nil drops them.
func (c *Container) SetEnv(env []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.env = slices.Clone(env)
}

// execEnv is the environment of an exec of spec: SetEnv's, then spec's.
func (c *Container) execEnv(spec ExecSpec) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.env) == 0 {
		return spec.Env
	}
	return append(slices.Clone(c.env), spec.Env...)
}

// AtRemove has Remove call f once the container is gone (to remove what
// was made for it: its network, a proxy serving it), last added first.
// An error of f is Remove's.
func (c *Container) AtRemove(f func(ctx context.Context) error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.atRemove = append(c.atRemove, f)
}

// runAtRemove calls the functions AtRemove was given, once.
func (c *Container) runAtRemove(ctx context.Context) error {
	c.mu.Lock()
	fs := c.atRemove
	c.atRemove = nil
	c.mu.Unlock()
	var errs []error
	for i := len(fs) - 1; i >= 0; i-- {
		errs = append(errs, fs[i](ctx))
	}
	return errors.Join(errs...)
}
