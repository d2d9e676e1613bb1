package bench

import (
	"testing"

	"github.com/lanehq/lane/internal/testkit/forwardtest"
)

// TestMain makes the test binary answer `forward ADDR SOCKET` as lane
// does, for the allowlist phases of container tasks.
func TestMain(m *testing.M) { forwardtest.Main(m) }
