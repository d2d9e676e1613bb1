package container

import (
	"context"
	"fmt"
	"io"
)

// Stop stops the container at once (its processes are killed), leaving
// it and the containers started beside it in place: files can still be
// copied out of it, and those beside it keep running in its network
// namespace. Remove removes it as it would a running one.
func (c *Container) Stop(ctx context.Context) error {
	if err := c.engine.run(ctx, nil, io.Discard, "stop", "-t", "0", c.Name); err != nil {
		return fmt.Errorf("stop container %s: %w", c.Name, err)
	}
	return nil
}

// Beside returns the container started beside c (StartBeside) under
// name, or nil when there is none.
func (c *Container) Beside(name string) *Container {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, b := range c.besides {
		if b.Name == name {
			return b
		}
	}
	return nil
}
