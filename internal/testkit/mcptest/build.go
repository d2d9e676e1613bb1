package mcptest

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Package is the import path of the server's program.
const Package = "github.com/lanehq/lane/internal/testkit/mcptest/mcpserver"

// Build makes the server's program as a static binary (CGO_ENABLED=0, so
// that it runs in any Linux image) in dir, and returns its path.
func Build(t testing.TB, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "mcpserver")
	cmd := exec.Command("go", "build", "-o", bin, Package)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build %s: %v\n%s", Package, err, out)
	}
	return bin
}
