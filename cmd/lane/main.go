// Command lane runs coding agents on real folders, records every run and
// compares agents.
package main

import (
	"os"

	"lane/cmd"
)

func main() {
	os.Exit(cmd.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
