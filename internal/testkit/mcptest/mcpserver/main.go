// Command mcpserver serves mcptest's MCP server: over HTTP at -addr
// (streamable HTTP at /mcp, HTTP+SSE at /sse), or over stdio with -stdio.
// With -check URL it only says, by its exit code, whether URL answers 200
// (a container's healthcheck, in an image without wget).
package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"

	"github.com/lanehq/lane/internal/testkit/mcptest"
)

func main() {
	addr := flag.String("addr", ":8000", "address to serve HTTP at")
	word := flag.String("word", "", "the word the lookup tool answers with")
	stdio := flag.Bool("stdio", false, "serve over stdin and stdout instead of HTTP")
	check := flag.String("check", "", "only check that this URL answers 200")
	flag.Parse()
	if err := run(*addr, *word, *stdio, *check); err != nil {
		fmt.Fprintln(os.Stderr, "mcpserver:", err)
		os.Exit(1)
	}
}

func run(addr, word string, stdio bool, check string) error {
	s := &mcptest.Server{Word: word, Log: os.Stderr}
	switch {
	case check != "":
		resp, err := http.Get(check)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s: %s", check, resp.Status)
		}
		return nil
	case stdio:
		return s.ServeStdio(context.Background(), os.Stdin, os.Stdout)
	}
	return http.ListenAndServe(addr, s.Handler())
}
