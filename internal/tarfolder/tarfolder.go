// Package tarfolder writes a folder of this machine into a tar archive:
// the one walk that lane's stored fixtures and task folders and the
// folders it puts in containers share.
package tarfolder

import (
	"archive/tar"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// Write adds the contents of the folder dir to tw, each entry named by
// its path relative to dir with / between parts: folders (named with a
// trailing /), regular files, and symbolic links as they are. Sockets,
// devices and pipes are left out: they mean nothing elsewhere. A header
// holds the entry's permission bits and nothing of its owner or times;
// adjust, when not nil, may change it before it is written. A file that
// grew while it was read is cut at the size its header says.
func Write(tw *tar.Writer, dir string, adjust func(*tar.Header, fs.FileInfo)) error {
	return filepath.WalkDir(dir, func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, name)
		if err != nil || rel == "." {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		return writeEntry(tw, name, filepath.ToSlash(rel), info, adjust)
	})
}

func writeEntry(tw *tar.Writer, name, rel string, info fs.FileInfo, adjust func(*tar.Header, fs.FileInfo)) error {
	h := &tar.Header{Name: rel, Mode: int64(info.Mode().Perm())}
	switch mode := info.Mode(); {
	case mode.IsDir():
		h.Typeflag, h.Name = tar.TypeDir, rel+"/"
	case mode&fs.ModeSymlink != 0:
		link, err := os.Readlink(name)
		if err != nil {
			return err
		}
		h.Typeflag, h.Linkname = tar.TypeSymlink, link
	case mode.IsRegular():
		h.Typeflag, h.Size = tar.TypeReg, info.Size()
	default:
		return nil
	}
	if adjust != nil {
		adjust(h, info)
	}
	if h.Typeflag != tar.TypeReg {
		return tw.WriteHeader(h)
	}
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := tw.WriteHeader(h); err != nil {
		return err
	}
	_, err = io.Copy(tw, io.LimitReader(f, h.Size))
	return err
}
