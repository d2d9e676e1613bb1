package cmd

import (
	"fmt"

	"github.com/spf13/cobra"

	"lane/netfwd"
)

// NewCmdForward builds the hidden `lane forward ADDR SOCKET`, which lane
// runs inside a bench attempt's container without a network: it serves
// the agent's model endpoint address (ADDR, 127.0.0.1:PORT as on the host)
// through the unix socket SOCKET that lane serves from the host.
func NewCmdForward() *cobra.Command {
	return &cobra.Command{
		Use:    "forward ADDR SOCKET",
		Short:  "Serve ADDR through a unix socket (inside a bench attempt's container)",
		Hidden: true,
		Args:   exactArgs(2),
		RunE: func(c *cobra.Command, args []string) error {
			return netfwd.Listen(c.Context(), args[0], args[1], func() { fmt.Fprintln(c.OutOrStdout(), "ready") })
		},
	}
}
