package store

import (
	"context"
	"reflect"
	"testing"

	"github.com/lanehq/lane/internal/record"
)

// testArtifacts is an attempt's artifacts as a container task collects
// them: the archive a blob, the manifest beside it.
func testArtifacts(t *testing.T, s *Store, step string, data string) record.ArtifactSet {
	t.Helper()
	digest, err := s.PutBlob(context.Background(), []byte(data))
	if err != nil {
		t.Fatal(err)
	}
	return record.ArtifactSet{Step: step, Blob: digest,
		Artifacts: []record.ArtifactEntry{
			{Source: "/logs/artifacts", Service: "main", Path: "logs/artifacts", Status: "ok"},
			{Source: "/var/log/db", Service: "db", Status: "missing"},
		},
		Files: []record.ArtifactFile{{Path: "logs/artifacts/answer.txt", Source: "/logs/artifacts/answer.txt", Service: "main", Size: int64(len(data))}},
	}
}

// An attempt's artifacts come back as saved, on both backends, with their
// archive; saving the attempt again (a rerun, pending) drops them.
func TestAttemptArtifactsRoundTrip(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, be backend) {
		ctx := context.Background()
		s := be.open(t)
		createBenchT(t, s, testBench(t, "b1", t0))
		whole := testArtifacts(t, s, "", "forty-two")
		first, second := testArtifacts(t, s, "first", "one"), testArtifacts(t, s, "second", "two")
		a := &record.Attempt{BenchID: "b1", TaskID: "task", Model: "oracle", N: 1, Status: record.AttemptPassed,
			Artifacts: []record.ArtifactSet{whole}}
		steps := &record.Attempt{BenchID: "b1", TaskID: "steps", Model: "oracle", N: 2, Status: record.AttemptFailed,
			Artifacts: []record.ArtifactSet{second, first}}
		none := &record.Attempt{BenchID: "b1", TaskID: "none", Model: "oracle", N: 1, Status: record.AttemptPassed}
		for _, a := range []*record.Attempt{a, steps, none} {
			if err := s.SaveAttempt(ctx, a); err != nil {
				t.Fatal(err)
			}
		}
		got, err := s.AttemptArtifacts(ctx, "b1")
		if err != nil {
			t.Fatal(err)
		}
		want := []StoredArtifacts{
			{Key: AttemptKey{"b1", "steps", "oracle", 2}, Set: first},
			{Key: AttemptKey{"b1", "steps", "oracle", 2}, Set: second},
			{Key: AttemptKey{"b1", "task", "oracle", 1}, Set: whole},
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("AttemptArtifacts =\n%+v\nwant\n%+v", got, want)
		}
		if data, err := s.Blob(ctx, got[2].Set.Blob); err != nil || string(data) != "forty-two" {
			t.Errorf("the archive: %q, %v", data, err)
		}
		// The attempts read back without them.
		as, err := s.Attempts(ctx, "b1")
		if err != nil || len(as) != 3 || as[1].Artifacts != nil {
			t.Errorf("Attempts = %+v, %v", as, err)
		}

		rerun := &record.Attempt{BenchID: "b1", TaskID: "task", Model: "oracle", N: 1, Status: record.AttemptPending}
		if err := s.SaveAttempt(ctx, rerun); err != nil {
			t.Fatal(err)
		}
		got, err = s.AttemptArtifacts(ctx, "b1")
		if err != nil || len(got) != 2 || got[0].Key.TaskID != "steps" || got[1].Key.TaskID != "steps" {
			t.Errorf("after the attempt was saved pending: %+v, %v", got, err)
		}
		if got, err := s.AttemptArtifacts(ctx, "nope"); err != nil || got != nil {
			t.Errorf("an unknown bench's: %+v, %v", got, err)
		}
	})
}

// A worker's attempt records its artifacts with its result, under its
// lease, so that whoever reads the bench finds them.
func TestCompleteAttemptStoresArtifacts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := poolStore(t)
	keys := poolBench(t, s, "pool", "one")
	l := acquire(t, s, keys[0], "w1", t0)
	set := testArtifacts(t, s, "", "from a worker")
	if _, err := s.CompleteAttempt(ctx, l, &record.Attempt{Status: record.AttemptPassed, Artifacts: []record.ArtifactSet{set}}, nil); err != nil {
		t.Fatal(err)
	}
	got, err := s.AttemptArtifacts(ctx, "pool")
	if err != nil || len(got) != 1 || got[0].Key != keys[0] || !reflect.DeepEqual(got[0].Set, set) {
		t.Fatalf("AttemptArtifacts = %+v, %v", got, err)
	}
}
