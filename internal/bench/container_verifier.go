package bench

import (
	"context"

	"github.com/lanehq/lane/internal/bench/harbor"
	"github.com/lanehq/lane/internal/container"
)

// verify scores the work done in c with the task's verifier: in c itself
// (nw giving it the verifier's network),
// or, for a task whose verifier runs in an environment of its own, in a
// container of verifierImage that sees only what the agent left in
// harbor.ArtifactsDir and the task's artifacts, coll (c is removed first).
func verify(ctx context.Context, env AttemptEnv, ht *harbor.Task, c *container.Container, nw *harbor.Network,
	verifierImage string, coll *harbor.Collection, out *capBuffer) (harbor.Reward, error) {
	if ht.Separate() {
		return harbor.VerifySeparate(ctx, env.Engine, c, ht, verifierImage, coll, out)
	}
	if err := nw.Set(ctx, ht.VerifierNetwork()); err != nil {
		return harbor.Reward{}, err
	}
	return harbor.Verify(ctx, c, ht, out)
}
