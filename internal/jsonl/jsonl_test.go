package jsonl

import (
	"errors"
	"io"
	"strings"
	"testing"
)

func TestReaderLines(t *testing.T) {
	giant := strings.Repeat("x", 3*readSize)
	in := "one\r\n\n  \ntwo\n" + giant + "\n" + strings.Repeat("y", 2000) + "\nlast"
	r := NewReader(strings.NewReader(in))
	r.MaxLineSize = 4 * readSize
	type got struct {
		line string
		long bool
		n    int64
	}
	var lines []got
	for {
		line, long, err := r.Next()
		if line != nil || long {
			lines = append(lines, got{string(line), long, r.Line()})
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	want := []got{{"one", false, 1}, {"two", false, 4}, {giant, false, 5}, {strings.Repeat("y", 2000), false, 6}, {"last", false, 7}}
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d", len(lines), len(want))
	}
	for i := range want {
		if lines[i] != want[i] {
			t.Errorf("line %d: %.20q long %v n %d, want %.20q long %v n %d", i, lines[i].line, lines[i].long, lines[i].n, want[i].line, want[i].long, want[i].n)
		}
	}
	if len(r.long.chunks) != 0 || cap(r.long.spare) > chunkSize {
		t.Errorf("the reader keeps %d chunks after a long line", len(r.long.chunks))
	}
}

func TestReaderSkipsOverlongLines(t *testing.T) {
	in := "a\n" + strings.Repeat("z", 5*readSize) + "\nb\n"
	r := NewReader(strings.NewReader(in))
	r.MaxLineSize = readSize
	var seq []string
	for {
		line, long, err := r.Next()
		switch {
		case long:
			seq = append(seq, "LONG")
		case line != nil:
			seq = append(seq, string(line))
		}
		if err != nil {
			break
		}
	}
	if strings.Join(seq, ",") != "a,LONG,b" {
		t.Errorf("got %v", seq)
	}
}
