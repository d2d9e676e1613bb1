package bench

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/lanehq/lane/internal/bench/harbor"
	"github.com/lanehq/lane/internal/container"
	"github.com/lanehq/lane/internal/record"
)

// Collect is one collection of a container task's artifacts: the step it
// follows ("" for the attempt's own) and what harbor.Collect takes
// besides the task's own (a step's artifacts and hooks; StopMain for the
// last use of the agent's container before a separate verifier).
type Collect struct {
	Step      string
	Artifacts []harbor.Artifact
	Hooks     []harbor.CollectHook
	StopMain  bool
}

// collectArtifacts runs the collect hooks of ht and copies its artifacts
// out of c (harbor.Collect) into a folder of the attempt's, and adds them
// to a.Artifacts (their archive stored through env.PutBlob), so that
// saving a stores them. It is best-effort: what goes wrong is said in out
// and leaves the attempt as it is. It returns the collection, for a
// separate verifier (nil when none could be made), and the function that
// removes its folder.
func collectArtifacts(ctx context.Context, env AttemptEnv, ht *harbor.Task, c *container.Container, a *record.Attempt,
	spec Collect, out io.Writer) (*harbor.Collection, func()) {
	dir, err := os.MkdirTemp(env.WorkDir, "harbor-artifacts-")
	if err != nil {
		fmt.Fprintf(out, "\n[lane: artifacts not collected: %v]\n", err)
		return nil, func() {}
	}
	cleanup := func() { _ = removeTree(dir) }
	coll, err := harbor.Collect(ctx, c, ht, harbor.CollectOptions{
		Dir: dir, Artifacts: spec.Artifacts, Hooks: spec.Hooks, StopMain: spec.StopMain, Log: out,
	})
	if err != nil {
		fmt.Fprintf(out, "\n[lane: artifacts not collected: %v]\n", err)
		return nil, cleanup
	}
	set, err := storeArtifacts(ctx, env, coll)
	if err != nil {
		fmt.Fprintf(out, "\n[lane: artifacts not stored: %v]\n", err)
	}
	set.Step = spec.Step
	a.Artifacts = append(a.Artifacts, set)
	return coll, cleanup
}

// storeArtifacts makes coll an ArtifactSet: its files archived and stored
// through env.PutBlob (when there is any file and a store to put it in),
// its manifest as it is.
func storeArtifacts(ctx context.Context, env AttemptEnv, coll *harbor.Collection) (record.ArtifactSet, error) {
	set := record.ArtifactSet{Artifacts: []record.ArtifactEntry{}, Files: []record.ArtifactFile{}}
	for _, e := range coll.Artifacts {
		set.Artifacts = append(set.Artifacts, record.ArtifactEntry{Source: e.Source, Service: e.Service, Path: e.Path, Status: e.Status, Error: e.Error})
	}
	for _, f := range coll.Files {
		set.Files = append(set.Files, record.ArtifactFile{Path: f.Path, Source: f.Source, Service: f.Service, Size: f.Size})
	}
	if len(coll.Files) == 0 || env.PutBlob == nil {
		return set, nil
	}
	data, err := PackFixture(coll.Dir)
	if err == nil {
		set.Blob, err = env.PutBlob(ctx, data)
	}
	if err != nil {
		set.Files = []record.ArtifactFile{} // the files are not kept: the manifest must not list them
		return set, err
	}
	return set, nil
}
