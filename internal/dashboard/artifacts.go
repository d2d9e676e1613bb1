package dashboard

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"path"
	"strconv"

	"github.com/lanehq/lane/internal/record"
	"github.com/lanehq/lane/internal/store"
)

// artifactsRoutes registers what shows the artifacts a bench's container
// tasks collected (API.md, Benches): each attempt's sets, and one file of
// a set, as lane bench artifacts would write it.
func (s *Server) artifactsRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /api/benches/{id}/artifacts", s.benchArtifacts)
	mux.HandleFunc("GET /api/benches/{id}/artifacts/file", s.benchArtifactFile)
}

// attemptArtifacts are the artifact sets of one attempt: its own, then
// each step's.
type attemptArtifacts struct {
	Task  string               `json:"task"`
	Model string               `json:"model"`
	N     int                  `json:"n"`
	Sets  []record.ArtifactSet `json:"sets"`
}

func (s *Server) benchArtifacts(w http.ResponseWriter, r *http.Request) {
	b, sets, ok := s.artifactsOf(w, r)
	if !ok {
		return
	}
	out := []attemptArtifacts{}
	for _, sa := range sets {
		k := sa.Key
		if n := len(out); n == 0 || out[n-1].Task != k.TaskID || out[n-1].Model != k.Model || out[n-1].N != k.N {
			out = append(out, attemptArtifacts{Task: k.TaskID, Model: k.Model, N: k.N})
		}
		out[len(out)-1].Sets = append(out[len(out)-1].Sets, sa.Set)
	}
	writeJSON(w, http.StatusOK, struct {
		BenchID  string             `json:"bench_id"`
		Attempts []attemptArtifacts `json:"attempts"`
	}{b.ID, out})
}

// benchArtifactFile serves the file ?path= of the set of the attempt
// ?task=&model=&n= collected after ?step= ("" for the attempt's own), as
// a download.
func (s *Server) benchArtifactFile(w http.ResponseWriter, r *http.Request) {
	_, sets, ok := s.artifactsOf(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	n, err := strconv.Atoi(q.Get("n"))
	if err != nil {
		writeError(w, http.StatusBadRequest, "n is an attempt's number")
		return
	}
	name := q.Get("path")
	var set *record.ArtifactSet
	for i, sa := range sets {
		if sa.Key.TaskID == q.Get("task") && sa.Key.Model == q.Get("model") && sa.Key.N == n && sa.Set.Step == q.Get("step") {
			set = &sets[i].Set
		}
	}
	if set == nil || set.Blob == "" || name == "" {
		writeError(w, http.StatusNotFound, "no such artifact set, or no file in it")
		return
	}
	archive, err := s.st.Blob(r.Context(), set.Blob)
	if err != nil {
		writeStoreError(w, err)
		return
	}
	data, err := fileInArchive(archive, name)
	if err != nil {
		writeError(w, http.StatusNotFound, err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": path.Base(name)}))
	w.Header().Set("X-Content-Type-Options", "nosniff")
	_, _ = w.Write(data)
}

// artifactsOf finds the bench of r's {id} and its attempts' artifact
// sets; it answers r itself when it cannot.
func (s *Server) artifactsOf(w http.ResponseWriter, r *http.Request) (*record.Bench, []store.StoredArtifacts, bool) {
	b, err := s.st.GetBench(r.Context(), r.PathValue("id"))
	if err != nil {
		writeStoreError(w, err)
		return nil, nil, false
	}
	sets, err := s.st.AttemptArtifacts(r.Context(), b.ID)
	if err != nil {
		writeStoreError(w, err)
		return nil, nil, false
	}
	return b, sets, true
}

// fileInArchive returns the regular file name of a set's tar archive.
func fileInArchive(archive []byte, name string) ([]byte, error) {
	tr := tar.NewReader(bytes.NewReader(archive))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("the set has no file %q", name)
		}
		if err != nil {
			return nil, fmt.Errorf("read the set's archive: %w", err)
		}
		if h.Typeflag == tar.TypeReg && path.Clean(h.Name) == path.Clean(name) {
			return io.ReadAll(tr)
		}
	}
}
