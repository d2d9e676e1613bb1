package harbor

import (
	"context"
	"fmt"
	"io"
	"maps"
	"strings"
	"time"

	"github.com/lanehq/lane/internal/container"
)

// healthPoll is how often a service's healthcheck runs while it fails:
// more often than compose's interval, whose multiples still bound it.
const healthPoll = 500 * time.Millisecond

// startServices starts t's other services beside main, in their order,
// each healthy before the next starts, and gives every container the
// others' names at 127.0.0.1 (they share main's network).
func startServices(ctx context.Context, e *container.Engine, t *Task, main *container.Container) error {
	if len(t.Services) == 0 {
		return nil
	}
	names := make([]string, 0, len(t.Services))
	var started []*container.Container
	for _, svc := range t.Services {
		c, err := startService(ctx, e, t, main, svc)
		if err != nil {
			return err
		}
		started = append(started, c)
		names = append(names, svc.Name)
	}
	if err := main.AddHosts(ctx, "127.0.0.1", names...); err != nil {
		return startError(ctx, t, fmt.Errorf("name the services in main's /etc/hosts: %w", err))
	}
	for _, c := range started {
		// Best effort: a service's image may have no sh, and a service
		// rarely calls main by name.
		_ = c.AddHosts(ctx, "127.0.0.1", MainService)
	}
	return nil
}

func startService(ctx context.Context, e *container.Engine, t *Task, main *container.Container, svc Service) (*container.Container, error) {
	image := qualify(ctx, e, svc.Image)
	if b := svc.Build; b != nil {
		args := maps.Clone(b.Args)
		if args == nil {
			args = map[string]string{}
		}
		maps.Copy(args, t.BuildArgs) // the caller's (proxies, a test's BASE) win
		var err error
		if image, err = build(ctx, e, t, t.Name+"-"+svc.Name, b.Context, b.Dockerfile, args); err != nil {
			return nil, fmt.Errorf("service %s: %w", svc.Name, err)
		}
	}
	env, err := envList(svc.Env, "service "+svc.Name+" environment")
	if err != nil {
		return nil, &TaskError{Kind: ErrStart, Task: t.Name, Err: err}
	}
	c, err := main.StartBeside(ctx, container.RunSpec{
		Image: image, Name: serviceContainerName(main, svc.Name),
		Service: true, Entrypoint: svc.Entrypoint, Command: svc.Command, User: svc.User, Workdir: svc.Workdir,
		Env: env, Labels: map[string]string{"lane.harbor.task": t.Name, "lane.harbor.service": svc.Name},
	})
	if err != nil {
		return nil, startError(ctx, t, fmt.Errorf("service %s: %w", svc.Name, err))
	}
	if svc.Health != nil {
		if err := awaitHealthy(ctx, c, svc); err != nil {
			return nil, startError(ctx, t, err)
		}
	}
	return c, nil
}

// awaitHealthy runs svc's healthcheck in c until it passes, for at most
// its deadline.
func awaitHealthy(ctx context.Context, c *container.Container, svc Service) error {
	deadline := svc.Health.Deadline()
	hctx, cancel := context.WithTimeout(ctx, deadline)
	defer cancel()
	var last strings.Builder
	for {
		last.Reset()
		code, err := c.Exec(hctx, container.ExecSpec{Argv: svc.Health.Test, Stdout: io.Discard, Stderr: &last})
		if err == nil && code == 0 {
			return nil
		}
		select {
		case <-hctx.Done():
			if ctx.Err() != nil {
				return ctx.Err()
			}
			why := strings.TrimSpace(last.String())
			if err != nil {
				why = err.Error()
			}
			return fmt.Errorf("service %s is not healthy after %s (its healthcheck %q: %s)", svc.Name, deadline, svc.Health.Test, why)
		case <-time.After(healthPoll):
		}
	}
}

// serviceContainerName is the name of service name's container beside
// main: startService gives it, the collection of artifacts finds it.
func serviceContainerName(main *container.Container, name string) string {
	return main.Name + "-" + tagName(name)
}
