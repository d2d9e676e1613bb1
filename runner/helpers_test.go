package runner

import (
	"context"

	"lane/trace"
)

// runOn runs o on the runtime called name, as lane run does.
func runOn(ctx context.Context, name string, o Options, rec Recorder) (*trace.Run, error) {
	rt, ok := Lookup(name)
	if !ok {
		panic("no runtime " + name)
	}
	return Run(ctx, Job{Runtime: rt, Options: o}, rec)
}

func runClaude(ctx context.Context, o Options, rec Recorder) (*trace.Run, error) {
	return runOn(ctx, "claude", o, rec)
}

// findRuntime finds the binary of the runtime called name.
func findRuntime(ctx context.Context, name, explicit string, env []string, versionCache string) (path, version string, err error) {
	rt, _ := Lookup(name)
	bin, err := rt.Find(ctx, explicit, env, versionCache)
	return bin.Path, bin.Version, err
}

func findClaude(ctx context.Context, explicit string, env []string) (path, version string, err error) {
	return findRuntime(ctx, "claude", explicit, env, "")
}
