// Package streamjson decodes Claude Code's stream-json output (`claude -p …
// --output-format stream-json --verbose`) into trace events, and keeps the
// Claude-specific accounting of a run (Tally): usage, cost, and a verdict on how
// it ended.
//
// The package is pure: it reads from an io.Reader it is given, starts no
// goroutines and runs no processes. Bad input never stops it: a line that is not
// JSON becomes a raw event, a line longer than the limit becomes an error event
// and is skipped, and types it does not know pass through as raw events.
package streamjson

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"

	"lane/trace"
)

// DefaultMaxLineSize is the longest line a Decoder decodes unless told
// otherwise. Claude Code prints a whole tool result on one line, so lines of
// tens of megabytes happen.
const DefaultMaxLineSize = 128 << 20

// readSize is the size of the read buffer. Lines that fit are copied once;
// longer ones are gathered in a growing buffer.
const readSize = 64 << 10

// A Decoder reads stream-json lines and turns each into trace events.
type Decoder struct {
	// MaxLineSize is the longest line, in bytes without its end of line, that
	// is decoded; a longer one is reported as a KindError event and skipped
	// without being held in memory. Zero or less means DefaultMaxLineSize.
	// Set it before the first call to Next.
	MaxLineSize int
	// MaxOutputSize, when positive, bounds the Output of a tool_result event
	// whose content is one string: only about that many bytes are decoded
	// and OutputSize holds the full length. Raw keeps the whole line.
	MaxOutputSize int

	r        *bufio.Reader
	long     gather // gathers a line longer than r's buffer
	line     int64  // number of the last line started
	skipping bool   // the rest of an over-long line is still to be discarded
	err      error  // returned once the pending line has been given out
	w        wireLine
}

// NewDecoder returns a Decoder reading from r.
func NewDecoder(r io.Reader) *Decoder {
	return &Decoder{r: bufio.NewReaderSize(r, readSize)}
}

func (d *Decoder) maxLine() int {
	if d.MaxLineSize <= 0 {
		return DefaultMaxLineSize
	}
	return d.MaxLineSize
}

// Next returns the events of the next non-empty line: one or more, each with
// Line set, the first with Raw set to a copy of the line that the caller may
// keep. It returns io.EOF at the end of the input, and other read errors
// wrapped. Seq, Time and RunID are left for the caller to set.
func (d *Decoder) Next() ([]trace.Event, error) {
	for {
		if d.err != nil {
			return nil, d.err
		}
		line, long, err := d.readLine()
		if err != nil {
			if errors.Is(err, io.EOF) {
				d.err = io.EOF
			} else {
				d.err = fmt.Errorf("streamjson: read line %d: %w", d.line, err)
			}
		}
		if long {
			return []trace.Event{{
				Kind: trace.KindError,
				Line: d.line,
				Text: fmt.Sprintf("line %d: longer than %d bytes, skipped", d.line, d.maxLine()),
			}}, nil
		}
		if line != nil {
			return d.decode(d.line, line), nil
		}
	}
}

// readLine reads one line. It returns the line without its end of line as a
// slice the caller owns, nil for an empty or blank line, long when the line is
// over the limit (the rest of it is then discarded by the next call), and the
// read error that ended the line, if any.
func (d *Decoder) readLine() (line []byte, long bool, err error) {
	if d.skipping {
		for {
			_, err := d.r.ReadSlice('\n')
			if err == bufio.ErrBufferFull {
				continue
			}
			d.skipping = false
			if err != nil {
				return nil, false, err
			}
			break
		}
	}
	max := d.maxLine()
	d.line++
	defer d.long.reset()
	for {
		frag, rerr := d.r.ReadSlice('\n')
		if rerr == bufio.ErrBufferFull {
			// Allow for a '\r' that the end of line may still strip.
			if d.long.n+len(frag) > max+1 {
				d.skipping = true
				return nil, true, nil
			}
			d.long.add(frag)
			continue
		}
		// The line is complete: it ended in '\n', or the input ended or failed.
		if d.long.n == 0 {
			frag = trimEOL(frag)
			switch {
			case len(frag) > max:
				return nil, true, rerr
			case blank(frag):
				return nil, false, rerr
			}
			return bytes.Clone(frag), false, rerr
		}
		if d.long.n+len(trimEOL(frag)) > max+1 {
			return nil, true, rerr
		}
		d.long.add(frag)
		line = trimEOL(d.long.bytes())
		switch {
		case len(line) > max:
			return nil, true, rerr
		case blank(line):
			return nil, false, rerr
		}
		return line, false, rerr
	}
}

// chunkSize is the size of the pieces in which a long line is gathered.
const chunkSize = 1 << 20

// gather collects a line longer than the read buffer in fixed-size pieces, so
// that a huge line is copied once more only, into a slice of its exact size.
type gather struct {
	chunks [][]byte
	n      int
	spare  []byte // the first chunk, kept for the next long line
}

func (g *gather) add(p []byte) {
	for len(p) > 0 {
		if len(g.chunks) == 0 || len(g.chunks[len(g.chunks)-1]) == chunkSize {
			c := g.spare
			if len(g.chunks) > 0 || c == nil {
				c = make([]byte, 0, chunkSize)
			}
			g.chunks = append(g.chunks, c[:0])
		}
		last := &g.chunks[len(g.chunks)-1]
		k := min(chunkSize-len(*last), len(p))
		*last = append(*last, p[:k]...)
		p = p[k:]
		g.n += k
	}
}

func (g *gather) bytes() []byte {
	b := make([]byte, 0, g.n)
	for _, c := range g.chunks {
		b = append(b, c...)
	}
	return b
}

func (g *gather) reset() {
	if len(g.chunks) > 0 {
		g.spare = g.chunks[0]
	}
	clear(g.chunks)
	g.chunks = g.chunks[:0]
	g.n = 0
}

func trimEOL(b []byte) []byte {
	if len(b) > 0 && b[len(b)-1] == '\n' {
		b = b[:len(b)-1]
	}
	if len(b) > 0 && b[len(b)-1] == '\r' {
		b = b[:len(b)-1]
	}
	return b
}

func blank(b []byte) bool {
	for _, c := range b {
		if c != ' ' && c != '\t' && c != '\r' && c != '\n' {
			return false
		}
	}
	return true
}
