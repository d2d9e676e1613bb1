// Package forwardtest lets a test binary stand in for lane's `forward`
// command, which a container task's container runs to reach the egress
// proxy of an allowlist phase (harbor.NetOptions.Forwarder, "" being the
// running program).
package forwardtest

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"testing"

	"github.com/lanehq/lane/internal/container/netfwd"
)

// Main is a TestMain: the binary started as `forward ADDR SOCKET` forwards
// as lane does until it is stopped; started otherwise, it runs the tests.
func Main(m *testing.M) {
	if len(os.Args) == 4 && os.Args[1] == "forward" {
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
		err := netfwd.Listen(ctx, os.Args[2], os.Args[3], func() { fmt.Println("ready") })
		stop()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}
