package harbor

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/lanehq/lane/internal/container"
)

// giveArtifacts puts each artifact of coll into the verifier's container
// c at its source path, as Harbor does (whatever its destination), then
// empties /logs/verifier and opens it to every user. An artifact whose
// path is, holds, or lies in TestsDir or VerifierLogsDir is not given: it
// would replace the verifier's tests or put a reward before them (a line
// to log says so).
func giveArtifacts(ctx context.Context, c *container.Container, coll *Collection, log io.Writer) error {
	if coll != nil {
		for _, a := range coll.Artifacts {
			if a.Status != ArtifactOK || a.Path == "" {
				continue
			}
			if reserved := verifierOwn(a.Source); reserved != "" {
				fmt.Fprintf(log, "[lane: artifact %s is not given to the verifier: it would overwrite its %s]\n", a.Source, reserved)
				continue
			}
			if err := giveArtifact(ctx, c, filepath.Join(coll.Dir, filepath.FromSlash(a.Path)), a.Source); err != nil {
				return fmt.Errorf("give artifact %s to the verifier: %w", a.Source, err)
			}
		}
	}
	sctx, cancel := context.WithTimeout(ctx, setupTimeout)
	defer cancel()
	out := &tailWriter{max: 2 << 10}
	code, err := c.Exec(sctx, container.ExecSpec{
		Argv: []string{"sh", "-c", `rm -rf "$0" && mkdir -p "$0" && chmod 777 "$0"`, VerifierLogsDir}, User: "0",
		Stdout: out, Stderr: out,
	})
	if err == nil && code != 0 {
		err = fmt.Errorf("exited %d: %s", code, strings.TrimSpace(out.String()))
	}
	if err != nil {
		return fmt.Errorf("prepare %s: %w", VerifierLogsDir, err)
	}
	return nil
}

// verifierOwn is the folder of the verifier's that the container path p
// is, holds or lies in, "" for none.
func verifierOwn(p string) string {
	for _, own := range []string{TestsDir, VerifierLogsDir} {
		if p == own || p == "/" || strings.HasPrefix(p, own+"/") || strings.HasPrefix(own, p+"/") {
			return own
		}
	}
	return ""
}

// giveArtifact copies the host file or folder src to dst in c: a folder
// replaces what is there, and everything copied is readable by every
// user (the copies belong to root).
func giveArtifact(ctx context.Context, c *container.Container, src, dst string) error {
	fi, err := os.Stat(src)
	if err != nil {
		return err
	}
	sctx, cancel := context.WithTimeout(ctx, setupTimeout)
	defer cancel()
	if fi.IsDir() {
		code, err := c.Exec(sctx, container.ExecSpec{Argv: []string{"sh", "-c", `rm -rf "$0" && mkdir -p "$0" && chmod 777 "$0"`, dst}, User: "0"})
		if err == nil && code != 0 {
			err = fmt.Errorf("make %s: exited %d", dst, code)
		}
		if err != nil {
			return err
		}
	}
	if err := c.CopyTo(sctx, src, dst); err != nil {
		return err
	}
	code, err := c.Exec(sctx, container.ExecSpec{Argv: []string{"chmod", "-R", "a+rX", dst}, User: "0"})
	if err == nil && code != 0 {
		err = fmt.Errorf("chmod %s: exited %d", dst, code)
	}
	return err
}
