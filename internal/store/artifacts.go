package store

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/lanehq/lane/internal/record"
)

// artifactManifest is an ArtifactSet's manifest as attempt_artifacts
// stores it.
type artifactManifest struct {
	Artifacts []record.ArtifactEntry `json:"artifacts"`
	Files     []record.ArtifactFile  `json:"files"`
}

// replaceArtifacts makes the stored artifacts of a's attempt a.Artifacts,
// dropping those of an earlier run of it, through exec (the statement of
// the transaction that saves a).
func replaceArtifacts(exec func(q string, args ...any) error, a *record.Attempt) error {
	key := []any{a.BenchID, a.TaskID, a.Model, a.N}
	if err := exec(`DELETE FROM attempt_artifacts`+keyWhere, key...); err != nil {
		return fmt.Errorf("drop artifacts: %w", err)
	}
	for _, set := range a.Artifacts {
		b, err := json.Marshal(artifactManifest{Artifacts: set.Artifacts, Files: set.Files})
		if err != nil {
			return fmt.Errorf("encode artifacts' manifest: %w", err)
		}
		err = exec(`INSERT INTO attempt_artifacts (bench_id, task_id, model, n, step, blob, manifest)
			VALUES (?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (bench_id, task_id, model, n, step) DO UPDATE SET blob = excluded.blob, manifest = excluded.manifest`,
			append(key, set.Step, set.Blob, string(b))...)
		if err != nil {
			return fmt.Errorf("save artifacts: %w", err)
		}
	}
	return nil
}

// StoredArtifacts is one collection of an attempt's artifacts.
type StoredArtifacts struct {
	Key AttemptKey
	Set record.ArtifactSet
}

// AttemptArtifacts returns what the attempts of bench benchID collected
// (their archives are blobs: see Blob), ordered by task, model, number and
// step; none for an unknown bench.
func (s *Store) AttemptArtifacts(ctx context.Context, benchID string) ([]StoredArtifacts, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT task_id, model, n, step, blob, manifest FROM attempt_artifacts
		WHERE bench_id = ? ORDER BY task_id, model, n, step`, benchID)
	if err != nil {
		return nil, fmt.Errorf("artifacts of bench %s: %w", benchID, err)
	}
	defer rows.Close()
	var out []StoredArtifacts
	for rows.Next() {
		sa := StoredArtifacts{Key: AttemptKey{BenchID: benchID}}
		var manifest string
		if err := rows.Scan(&sa.Key.TaskID, &sa.Key.Model, &sa.Key.N, &sa.Set.Step, &sa.Set.Blob, &manifest); err != nil {
			return nil, fmt.Errorf("artifacts of bench %s: %w", benchID, err)
		}
		var m artifactManifest
		if err := json.Unmarshal([]byte(manifest), &m); err != nil {
			return nil, fmt.Errorf("artifacts of attempt %s: %w", sa.Key, err)
		}
		sa.Set.Artifacts, sa.Set.Files = m.Artifacts, m.Files
		out = append(out, sa)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("artifacts of bench %s: %w", benchID, err)
	}
	return out, nil
}
