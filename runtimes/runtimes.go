// Package runtimes is the table of the runtimes lane ships: the one place
// that lists them, which the commands read (their session-file readers for
// lane import here; their entries in runner.Runtimes until those move into
// the runtimes' own folders).
package runtimes

import (
	"lane/importer"
	"lane/runtimes/claude"
	"lane/runtimes/codex"
	"lane/runtimes/gemini"
	"lane/runtimes/opencode"
	"lane/runtimes/qwen"
	"lane/trace"
)

// Readers are the session-file readers of every runtime lane imports, each
// pricing usage with price where its files carry no cost.
func Readers(price func(model string, u trace.Usage) (float64, bool)) []importer.Reader {
	return []importer.Reader{
		claude.Reader{Price: price},
		codex.Reader{Price: price},
		gemini.Reader{Price: price},
		qwen.Reader{Price: price},
		opencode.Reader{Price: price},
	}
}
