package tarfolder_test

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/lanehq/lane/internal/tarfolder"
)

// entry is what a reader of the archive sees of one entry.
type entry struct {
	Name, Link, Data string
	Mode             int64
	Type             byte
	Uname            string
	ModTime          time.Time
}

func read(t *testing.T, data []byte) []entry {
	t.Helper()
	var out []entry
	tr := tar.NewReader(bytes.NewReader(data))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(tr)
		out = append(out, entry{Name: h.Name, Link: h.Linkname, Data: string(b), Mode: h.Mode, Type: h.Typeflag, Uname: h.Uname, ModTime: h.ModTime})
	}
}

func folder(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "sub"), 0o700)
	os.WriteFile(filepath.Join(dir, "run.sh"), []byte("#!/bin/sh\n"), 0o755)
	os.WriteFile(filepath.Join(dir, "sub", "data"), []byte("data\n"), 0o600)
	os.Symlink("sub/data", filepath.Join(dir, "link"))
	// A socket: left out.
	l, err := net.Listen("unix", filepath.Join(dir, "sock"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return dir
}

func write(t *testing.T, dir string, adjust func(*tar.Header, fs.FileInfo)) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tarfolder.Write(tw, dir, adjust); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// The folder's files, folders and link, in the walk's order, with their
// permission bits and nothing of their owner or times: the same folder
// gives the same bytes.
func TestWrite(t *testing.T) {
	t.Parallel()
	dir := folder(t)
	data := write(t, dir, nil)
	want := []entry{
		{Name: "link", Link: "sub/data", Mode: 0o777, Type: tar.TypeSymlink},
		{Name: "run.sh", Data: "#!/bin/sh\n", Mode: 0o755, Type: tar.TypeReg},
		{Name: "sub/", Mode: 0o700, Type: tar.TypeDir},
		{Name: "sub/data", Data: "data\n", Mode: 0o600, Type: tar.TypeReg},
	}
	got := read(t, data)
	for i := range got {
		if !got[i].ModTime.IsZero() && got[i].ModTime.Unix() != 0 || got[i].Uname != "" {
			t.Errorf("%s carries a time or an owner: %v %q", got[i].Name, got[i].ModTime, got[i].Uname)
		}
		got[i].ModTime = time.Time{}
	}
	if !slices.Equal(got, want) {
		t.Errorf("entries\n%+v\nwant\n%+v", got, want)
	}
	if again := write(t, dir, nil); !bytes.Equal(again, data) {
		t.Error("the same folder gave other bytes")
	}
}

// adjust changes each header before it is written.
func TestWriteAdjusts(t *testing.T) {
	t.Parallel()
	got := read(t, write(t, folder(t), func(h *tar.Header, info fs.FileInfo) {
		h.Uname, h.Mode = "root", h.Mode|0o444
	}))
	for _, e := range got {
		if e.Uname != "root" || e.Mode&0o444 != 0o444 {
			t.Errorf("%s: owner %q, mode %o", e.Name, e.Uname, e.Mode)
		}
	}
}

func TestWriteMissingFolder(t *testing.T) {
	t.Parallel()
	err := tarfolder.Write(tar.NewWriter(io.Discard), filepath.Join(t.TempDir(), "none"), nil)
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Write of a missing folder: %v", err)
	}
}
