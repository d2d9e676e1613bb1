package benchrun

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/lanehq/lane/internal/bench"
	"github.com/lanehq/lane/internal/record"
	"github.com/lanehq/lane/internal/store"
)

// ArtifactsOptions are lane bench artifacts' flags.
type ArtifactsOptions struct {
	Task, Model string // only this task's, this model's; "": all
	Out         string // the folder written
}

// ArtifactsWritten is what WriteArtifacts wrote.
type ArtifactsWritten struct {
	Attempts, Files int
	Bytes           int64
}

// AttemptManifest is an attempt's manifest.json: every file written
// (Path relative to the attempt's folder), and every artifact asked for
// with how its collection went.
type AttemptManifest struct {
	Bench     string             `json:"bench"`
	Task      string             `json:"task"`
	Model     string             `json:"model"`
	N         int                `json:"n"`
	Files     []ManifestFile     `json:"files"`
	Artifacts []ManifestArtifact `json:"artifacts"`
}

// ManifestFile is one file of an AttemptManifest.
type ManifestFile struct {
	record.ArtifactFile
	Step string `json:"step,omitempty"`
}

// ManifestArtifact is one artifact of an AttemptManifest.
type ManifestArtifact struct {
	record.ArtifactEntry
	Step string `json:"step,omitempty"`
}

// WriteArtifacts writes the stored artifacts of bench b's attempts (those
// of opts.Task and opts.Model when set) under opts.Out as
// TASK/MODEL/N/[steps/STEP/]PATH, each attempt's folder replaced, with
// a manifest.json in it.
func WriteArtifacts(ctx context.Context, st *store.Store, b *record.Bench, opts ArtifactsOptions) (ArtifactsWritten, error) {
	var done ArtifactsWritten
	sets, err := st.AttemptArtifacts(ctx, b.ID)
	if err != nil {
		return done, err
	}
	var cur *AttemptManifest
	var dir string
	flush := func() error {
		if cur == nil {
			return nil
		}
		done.Attempts++
		return writeManifest(filepath.Join(dir, "manifest.json"), cur)
	}
	for _, sa := range sets {
		k := sa.Key
		if (opts.Task != "" && k.TaskID != opts.Task) || (opts.Model != "" && k.Model != opts.Model) {
			continue
		}
		if cur == nil || cur.Task != k.TaskID || cur.Model != k.Model || cur.N != k.N {
			if err := flush(); err != nil {
				return done, err
			}
			cur = &AttemptManifest{Bench: b.ID, Task: k.TaskID, Model: k.Model, N: k.N, Files: []ManifestFile{}, Artifacts: []ManifestArtifact{}}
			dir = filepath.Join(opts.Out, pathName(k.TaskID), pathName(k.Model), strconv.Itoa(k.N))
			if err := os.RemoveAll(dir); err != nil {
				return done, err
			}
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return done, err
			}
		}
		if err := writeSet(ctx, st, dir, sa.Set, cur, &done); err != nil {
			return done, fmt.Errorf("artifacts of attempt %s: %w", k, err)
		}
	}
	return done, flush()
}

// writeSet writes one collection of an attempt into its folder dir (under
// steps/STEP/ for a step's) and adds it to the attempt's manifest m.
func writeSet(ctx context.Context, st *store.Store, dir string, set record.ArtifactSet, m *AttemptManifest, done *ArtifactsWritten) error {
	prefix := ""
	if set.Step != "" {
		prefix = "steps/" + pathName(set.Step) + "/"
	}
	for _, e := range set.Artifacts {
		if e.Path != "" {
			e.Path = prefix + e.Path
		}
		m.Artifacts = append(m.Artifacts, ManifestArtifact{ArtifactEntry: e, Step: set.Step})
	}
	for _, f := range set.Files {
		f.Path = prefix + f.Path
		m.Files = append(m.Files, ManifestFile{ArtifactFile: f, Step: set.Step})
		done.Files++
		done.Bytes += f.Size
	}
	if set.Blob == "" {
		return nil
	}
	data, err := st.Blob(ctx, set.Blob)
	if err != nil {
		return err
	}
	to := filepath.Join(dir, filepath.FromSlash(prefix))
	if err := os.MkdirAll(to, 0o755); err != nil {
		return err
	}
	// The archive is bench.PackFixture's of what Collect kept: folders and
	// regular files only.
	return bench.UnpackFixture(data, to)
}

func writeManifest(name string, m *AttemptManifest) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(name, append(b, '\n'), 0o644)
}

// pathName is a task's, model's or step's name as one folder's name: its
// slashes made underscores, and never "." or "..".
func pathName(s string) string {
	s = strings.NewReplacer("/", "_", `\`, "_", "\x00", "_").Replace(s)
	if s == "" || s == "." || s == ".." || path.Clean(s) != s {
		return "_" + s
	}
	return s
}
