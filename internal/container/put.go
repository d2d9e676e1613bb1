package container

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"

	"github.com/lanehq/lane/internal/tarfolder"
)

// Put says what Container.Put puts in a container.
type Put struct {
	// Sources are host folders whose contents replace Dest's, in order: a
	// file of a later one replaces the same file of an earlier one.
	Sources []string
	// Dest is an absolute folder in the container.
	Dest string
	// Readable makes every copy readable by every user, and every folder
	// and executable enterable by every user (chmod a+rX).
	Readable bool
	// Fresh are other absolute folders made empty and writable by every
	// user on the way.
	Fresh []string
}

// putScript empties $1 and readies the fresh folders after $2, then,
// when $2 is "tar", unpacks its stdin into $1 and gives what it unpacked
// to the container's user (its first process's), as the engine's cp
// does. It exits noTar, having changed nothing, in an image without tar.
const putScript = `d=$1; m=$2; shift 2
if [ "$m" = tar ]; then command -v tar >/dev/null 2>&1 || exit 67; fi
for f in "$@"; do mkdir -p "$f" && chmod 777 "$f" && rm -rf "$f"/* "$f"/.[!.]* "$f"/..?* || exit 1; done
rm -rf "$d" && mkdir -p "$d" || exit 1
[ "$m" = tar ] || exit 0
tar -x -f - -C "$d" || exit 1
o=$(stat -c %u:%g /proc/1 2>/dev/null) || exit 0
[ "$o" = 0:0 ] || chown -R "$o" "$d"`

// noTar is putScript's exit code in an image without tar.
const noTar = 67

// errPutOver ends the writing of a Put's archive once its exec is over.
var errPutOver = errors.New("container: the put's exec is over")

// Put replaces a folder in the container with copies of p's host folders,
// sent as one archive that a single exec unpacks, readying p.Fresh in the
// same exec: a task's files reach its container in one engine command
// rather than three or four. The copies belong to the container's user,
// as the engine's cp makes them. In an image without tar it falls back
// to the engine's cp, at the cost of those commands.
func (c *Container) Put(ctx context.Context, p Put) error {
	for _, dir := range append([]string{p.Dest}, p.Fresh...) {
		if !path.IsAbs(dir) {
			return fmt.Errorf("put in container %s: %q is not an absolute path", c.Name, dir)
		}
	}
	for _, src := range p.Sources {
		if fi, err := os.Stat(src); err != nil {
			return fmt.Errorf("put in container %s: %w", c.Name, err)
		} else if !fi.IsDir() {
			return fmt.Errorf("put in container %s: %s is not a folder", c.Name, src)
		}
	}
	err := c.putArchive(ctx, p)
	var ce *CommandError
	if !errors.As(err, &ce) || ce.ExitCode != noTar {
		return err
	}
	return c.putCopies(ctx, p)
}

func (c *Container) putArgs(p Put, mode string) []string {
	args := []string{"exec"}
	if mode == "tar" {
		args = append(args, "-i")
	}
	args = append(args, "--user", "0", c.Name, "sh", "-c", putScript, "sh", p.Dest, mode)
	return append(args, p.Fresh...)
}

// putArchive streams p's folders as a tar archive into putScript.
func (c *Container) putArchive(ctx context.Context, p Put) error {
	pr, pw := io.Pipe()
	written := make(chan error, 1)
	go func() {
		err := writeArchive(pw, p.Sources, p.Readable)
		pw.CloseWithError(err)
		written <- err
	}()
	err := c.engine.run(ctx, pr, io.Discard, c.putArgs(p, "tar")...)
	// The exec may have stopped reading (it failed, or found no tar).
	pr.CloseWithError(errPutOver)
	if werr := <-written; werr != nil && !errors.Is(werr, errPutOver) {
		return fmt.Errorf("put in %s in container %s: %w", p.Dest, c.Name, werr)
	}
	if err != nil {
		return fmt.Errorf("put in %s in container %s: %w", p.Dest, c.Name, err)
	}
	return nil
}

// putCopies does what putArchive does with the engine's cp.
func (c *Container) putCopies(ctx context.Context, p Put) error {
	if err := c.engine.run(ctx, nil, io.Discard, c.putArgs(p, "prep")...); err != nil {
		return fmt.Errorf("put in %s in container %s: %w", p.Dest, c.Name, err)
	}
	for _, src := range p.Sources {
		if err := c.CopyTo(ctx, src, p.Dest); err != nil {
			return err
		}
	}
	if p.Readable {
		return c.rootExec(ctx, "chmod", "-R", "a+rX", p.Dest)
	}
	return nil
}

// writeArchive writes the contents of the host folders dirs to w as one
// tar archive, with their times; readable opens them as chmod a+rX would.
func writeArchive(w io.Writer, dirs []string, readable bool) error {
	tw := tar.NewWriter(w)
	for _, dir := range dirs {
		err := tarfolder.Write(tw, dir, func(h *tar.Header, info fs.FileInfo) {
			h.ModTime, h.Uname, h.Gname = info.ModTime(), "root", "root"
			if readable {
				h.Mode |= 0o444
				if h.Typeflag == tar.TypeDir || h.Mode&0o111 != 0 {
					h.Mode |= 0o111
				}
			}
		})
		if err != nil {
			return err
		}
	}
	return tw.Close()
}

// readFirstScript prints the name of the first of its arguments that
// exists, a newline, then that file; it exits 66 if none does.
const readFirstScript = `for f in "$@"; do if [ -e "$f" ]; then printf '%s\n' "$f"; exec cat "$f"; fi; done; exit 66`

// ReadFirst returns the first of names that exists in the container, and
// its content, read as root in one exec. None existing is an error that
// matches fs.ErrNotExist.
func (c *Container) ReadFirst(ctx context.Context, names ...string) (string, []byte, error) {
	args := append([]string{"exec", "--user", "0", c.Name, "sh", "-c", readFirstScript, "sh"}, names...)
	out, err := c.engine.output(ctx, nil, args...)
	if err != nil {
		var ce *CommandError
		if errors.As(err, &ce) && ce.ExitCode == 66 {
			return "", nil, fmt.Errorf("read %v in container %s: %w", names, c.Name, fs.ErrNotExist)
		}
		return "", nil, fmt.Errorf("read %v in container %s: %w", names, c.Name, err)
	}
	for _, name := range names {
		if rest, ok := bytes.CutPrefix(out, []byte(name+"\n")); ok {
			return name, rest, nil
		}
	}
	return "", nil, fmt.Errorf("read %v in container %s: the output names none of them", names, c.Name)
}
