package dashboard

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"regexp"
	"time"
)

// webFiles is the page: web/index.html and what it loads from /assets/.
//
//go:embed web
var webFiles embed.FS

// asset is one file of web/ served under /assets/.
type asset struct {
	data []byte
	sum  string // the first hex digits of its SHA-256
}

var (
	csrfMeta = regexp.MustCompile(`(?i)<meta\s+name="csrf-token"[^>]*>`)
	headTag  = regexp.MustCompile(`(?i)<head(\s[^>]*)?>`)
)

// loadAssets reads the page from web. index.html is returned as served: the
// CSRF token in <meta name="csrf-token"> and every "/assets/NAME" it
// mentions given NAME's checksum as "?v=SUM", so that an asset can be cached
// for good under that address.
func loadAssets(web fs.FS, csrf string) ([]byte, map[string]asset, error) {
	page, err := fs.ReadFile(web, "index.html")
	if err != nil {
		return nil, nil, fmt.Errorf("read page: %w", err)
	}
	assets := map[string]asset{}
	err = fs.WalkDir(web, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || name == "index.html" {
			return err
		}
		b, err := fs.ReadFile(web, name)
		if err != nil {
			return err
		}
		h := sha256.Sum256(b)
		a := asset{data: b, sum: hex.EncodeToString(h[:6])}
		assets[name] = a
		for _, q := range []string{`"`, `'`} {
			page = bytes.ReplaceAll(page, []byte("/assets/"+name+q), []byte("/assets/"+name+"?v="+a.sum+q))
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("read assets: %w", err)
	}

	meta := []byte(`<meta name="csrf-token" content="` + csrf + `">`)
	switch {
	case csrfMeta.Match(page):
		page = csrfMeta.ReplaceAllLiteral(page, meta)
	case headTag.Match(page):
		loc := headTag.FindIndex(page)
		page = bytes.Join([][]byte{page[:loc[1]], meta, page[loc[1]:]}, []byte("\n"))
	default:
		return nil, nil, errors.New("index.html has no <head>")
	}
	return page, assets, nil
}

// servePage serves the page for each of its routes; the page routes
// client-side.
func (s *Server) servePage(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	http.ServeContent(w, r, "index.html", time.Time{}, bytes.NewReader(s.page))
}

// serveAsset serves a file of web/. Under its current checksum (?v=SUM) it
// may be cached for a year; any other address must be revalidated.
func (s *Server) serveAsset(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("path")
	a, ok := s.assets[name]
	if !ok {
		writeError(w, http.StatusNotFound, "no asset "+name)
		return
	}
	h := w.Header()
	h.Set("ETag", `"`+a.sum+`"`)
	if r.URL.Query().Get("v") == a.sum {
		h.Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		h.Set("Cache-Control", "no-cache")
	}
	http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(a.data))
}

// getCSRF serves the token that POST requests must carry in X-CSRF-Token.
func (s *Server) getCSRF(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"csrf": s.csrf})
}
