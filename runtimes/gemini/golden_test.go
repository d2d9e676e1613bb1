package gemini

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"lane/trace"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// captureDir holds Gemini CLI 0.61.0's real stdout for lane's scripted cases,
// with INDEX.md giving each run's exit code.
const captureDir = "testdata/captures"

// captures lists the recorded streams, by name without .jsonl.
func captures(t testing.TB) []string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(captureDir, "*.jsonl"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no captures in %s: %v", captureDir, err)
	}
	names := make([]string, len(paths))
	for i, p := range paths {
		names[i] = strings.TrimSuffix(filepath.Base(p), ".jsonl")
	}
	return names
}

func readCapture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(captureDir, name+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// decodeAll decodes a whole stream, failing the test on an error other than
// io.EOF.
func decodeAll(t testing.TB, d *Decoder) []trace.Event {
	t.Helper()
	var all []trace.Event
	for {
		evs, err := d.Next()
		if errors.Is(err, io.EOF) {
			return all
		}
		if err != nil {
			t.Fatalf("Next: %v", err)
		}
		if len(evs) == 0 {
			t.Fatal("Next returned no events and no error")
		}
		all = append(all, evs...)
	}
}

func TestGolden(t *testing.T) {
	for _, name := range captures(t) {
		t.Run(name, func(t *testing.T) {
			data := readCapture(t, name)
			evs := decodeAll(t, NewDecoder(bytes.NewReader(data)))
			checkRaw(t, data, evs)

			var got bytes.Buffer
			for _, ev := range evs {
				b, err := json.Marshal(ev)
				if err != nil {
					t.Fatal(err)
				}
				got.Write(b)
				got.WriteByte('\n')
			}
			path := filepath.Join("testdata", "golden", name+".golden.jsonl")
			if *update {
				if err := os.WriteFile(path, got.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./runtimes/gemini -update)", err)
			}
			if !bytes.Equal(got.Bytes(), want) {
				gl, wl := strings.Split(got.String(), "\n"), strings.Split(string(want), "\n")
				for i := range max(len(gl), len(wl)) {
					var g, w string
					if i < len(gl) {
						g = gl[i]
					}
					if i < len(wl) {
						w = wl[i]
					}
					if g != w {
						t.Fatalf("%s differs at event %d:\ngot  %s\nwant %s", path, i+1, g, w)
					}
				}
			}
		})
	}
}

// checkRaw checks that every line gave events numbered with it, the first
// carrying the line itself and the others no Raw.
func checkRaw(t *testing.T, data []byte, evs []trace.Event) {
	t.Helper()
	var lines [][]byte
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		lines = append(lines, bytes.Clone(sc.Bytes()))
	}
	prev := int64(0)
	for i, ev := range evs {
		if ev.Line < 1 || ev.Line > int64(len(lines)) {
			t.Fatalf("event %d: line %d out of range", i, ev.Line)
		}
		if ev.Line < prev {
			t.Fatalf("event %d: line %d after line %d", i, ev.Line, prev)
		}
		if ev.Seq != 0 || !ev.Time.IsZero() || ev.RunID != "" {
			t.Errorf("event %d: decoder set Seq/Time/RunID", i)
		}
		first := ev.Line != prev
		if first && !bytes.Equal(ev.Raw, lines[ev.Line-1]) {
			t.Errorf("event %d (line %d): Raw is not the line", i, ev.Line)
		}
		if !first && ev.Raw != nil {
			t.Errorf("event %d (line %d): Raw set on a further event of the line", i, ev.Line)
		}
		prev = ev.Line
	}
	if prev != int64(len(lines)) {
		t.Errorf("last event is of line %d, want %d", prev, len(lines))
	}
}
