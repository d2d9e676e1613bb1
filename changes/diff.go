package changes

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"lane/trace"
)

// Diff compares two snapshots of one folder: what changed, with line
// counts, and the unified diff (at most Config.PatchCap bytes, cut at a
// line's end). Files over the size limit are listed, marked Large, with no
// lines counted and no patch.
func (s *Snapshotter) Diff(ctx context.Context, before, after *Snapshot) (*trace.Changes, string, error) {
	if before == nil || after == nil {
		return nil, "", errors.New("diff: a snapshot is missing")
	}
	if before.GitDir != after.GitDir || before.Root != after.Root {
		return nil, "", fmt.Errorf("diff: snapshots of different folders (%s, %s)", before.Root, after.Root)
	}
	c := &trace.Changes{Method: after.Method, Root: after.Root, GitDir: after.GitDir,
		Before: before.Tree, After: after.Tree}
	list, err := s.changed(ctx, after.GitDir, before.Tree, after.Tree)
	if err != nil {
		return nil, "", fmt.Errorf("diff: %w", err)
	}
	large := map[string]bool{}
	for p := range before.Large {
		large[p] = true
	}
	for p := range after.Large {
		large[p] = true
	}
	nLarge := 0
	for i := range list {
		fc := &list[i]
		if large[fc.Path] || (fc.OldPath != "" && large[fc.OldPath]) {
			fc.Large, fc.Insertions, fc.Deletions, fc.Binary = true, 0, 0, false
			nLarge++
		}
		c.Insertions += fc.Insertions
		c.Deletions += fc.Deletions
	}
	c.List, c.Files = list, len(list)
	if nLarge > 0 {
		c.Note = fmt.Sprintf("%d %s over the size limit (%d bytes) compared by size and modification time only, with no content diff",
			nLarge, plural(nLarge, "file", "files"), s.cfg.SizeLimit)
	}
	if n := len(after.Nested); n > 0 {
		note := fmt.Sprintf("%d nested %s left out (%s)", n, plural(n, "repository", "repositories"), strings.Join(after.Nested, ", "))
		c.Note = strings.TrimPrefix(c.Note+"; "+note, "; ")
	}
	if len(list) == 0 {
		return c, "", nil
	}
	patch, size, err := s.patch(ctx, after.GitDir, before.Tree, after.Tree, large)
	if err != nil {
		return nil, "", fmt.Errorf("diff: %w", err)
	}
	c.PatchSize, c.Truncated = size, int64(len(patch)) < size
	return c, patch, nil
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// changed lists the paths that differ between two trees, with their modes,
// blobs and line counts, sorted by path.
func (s *Snapshotter) changed(ctx context.Context, gitDir, a, b string) ([]trace.FileChange, error) {
	o := gitOpts{gitDir: gitDir}
	raw, err := s.git(ctx, o, "diff-tree", "-r", "-M", "-z", "--raw", "--no-abbrev", a, b)
	if err != nil {
		return nil, err
	}
	list, err := parseRaw(raw)
	if err != nil {
		return nil, err
	}
	num, err := s.git(ctx, o, "diff-tree", "-r", "-M", "-z", "--numstat", "--no-ext-diff", "--no-textconv", a, b)
	if err != nil {
		return nil, err
	}
	counts, err := parseNumstat(num)
	if err != nil {
		return nil, err
	}
	for i := range list {
		n, ok := counts[list[i].Path]
		if !ok {
			continue
		}
		list[i].Insertions, list[i].Deletions, list[i].Binary = n.ins, n.del, n.binary
	}
	sort.Slice(list, func(i, j int) bool { return list[i].Path < list[j].Path })
	return list, nil
}

// parseRaw reads diff-tree -z --raw: ":old new oldsha newsha S\0path\0",
// with a second path for a rename.
func parseRaw(b []byte) ([]trace.FileChange, error) {
	f := splitNUL(b)
	var list []trace.FileChange
	for i := 0; i < len(f); i++ {
		meta := strings.Fields(strings.TrimPrefix(f[i], ":"))
		if len(meta) != 5 || i+1 >= len(f) {
			return nil, fmt.Errorf("unexpected diff-tree output %q", f[i])
		}
		fc := trace.FileChange{OldMode: meta[0], NewMode: meta[1], OldHash: meta[2], NewHash: meta[3]}
		i++
		fc.Path = f[i]
		switch meta[4][0] {
		case 'A':
			fc.Status = "added"
		case 'D':
			fc.Status = "deleted"
		case 'M':
			fc.Status = "modified"
		case 'T':
			fc.Status = "type"
		case 'R', 'C':
			if i+1 >= len(f) {
				return nil, fmt.Errorf("unexpected diff-tree output %q", meta)
			}
			i++
			fc.Status, fc.OldPath, fc.Path = "renamed", fc.Path, f[i]
		default:
			return nil, fmt.Errorf("unexpected diff-tree status %q", meta[4])
		}
		if fc.OldMode == "000000" {
			fc.OldMode, fc.OldHash = "", ""
		}
		if fc.NewMode == "000000" {
			fc.NewMode, fc.NewHash = "", ""
		}
		list = append(list, fc)
	}
	return list, nil
}

type lineCount struct {
	ins, del int
	binary   bool
}

// parseNumstat reads diff-tree -z --numstat: "ins\tdel\tpath\0", or for a
// rename "ins\tdel\t\0old\0new\0"; a binary file counts "-\t-". The counts
// are keyed by the (new) path.
func parseNumstat(b []byte) (map[string]lineCount, error) {
	f := splitNUL(b)
	out := map[string]lineCount{}
	for i := 0; i < len(f); i++ {
		parts := strings.SplitN(f[i], "\t", 3)
		if len(parts) != 3 {
			return nil, fmt.Errorf("unexpected numstat output %q", f[i])
		}
		path := parts[2]
		if path == "" { // a rename: old and new follow
			if i+2 >= len(f) {
				return nil, fmt.Errorf("unexpected numstat output %q", f[i])
			}
			path = f[i+2]
			i += 2
		}
		var n lineCount
		if parts[0] == "-" && parts[1] == "-" {
			n.binary = true
		} else {
			var err1, err2 error
			n.ins, err1 = strconv.Atoi(parts[0])
			n.del, err2 = strconv.Atoi(parts[1])
			if err1 != nil || err2 != nil {
				return nil, fmt.Errorf("unexpected numstat output %q", f[i])
			}
		}
		out[path] = n
	}
	return out, nil
}

// patch is the unified diff between two trees without the files in skip,
// at most PatchCap bytes, and its full size.
func (s *Snapshotter) patch(ctx context.Context, gitDir, a, b string, skip map[string]bool) (string, int64, error) {
	args := []string{"diff-tree", "-r", "-M", "-p", "--no-ext-diff", "--no-textconv", "--no-color",
		"--src-prefix=a/", "--dst-prefix=b/", a, b}
	if len(skip) > 0 {
		args = append(args, "--", ":/")
		for p := range skip {
			args = append(args, ":(top,literal,exclude)"+p)
		}
	}
	w := &capWriter{limit: int(s.cfg.PatchCap)}
	if _, err := s.git(ctx, gitOpts{gitDir: gitDir, stdout: w}, args...); err != nil {
		return "", 0, err
	}
	return w.text(), w.size, nil
}

// capWriter keeps the first limit bytes of what it is given and counts the
// rest.
type capWriter struct {
	limit int
	buf   bytes.Buffer
	size  int64
}

func (w *capWriter) Write(p []byte) (int, error) {
	w.size += int64(len(p))
	if room := w.limit - w.buf.Len(); room > 0 {
		w.buf.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

// text is what was kept, cut after its last whole line when it was cut.
func (w *capWriter) text() string {
	b := w.buf.Bytes()
	if int64(len(b)) < w.size {
		if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
			b = b[:i+1]
		} else {
			b = nil
		}
	}
	return string(b)
}
