// Package runtimes is the table of the runtimes lane ships: the one place
// that lists them (each lives in its own folder here), which the commands,
// config, lane doctor and lane import read.
package runtimes

import (
	"lane/importer"
	"lane/runner"
	"lane/runtimes/claude"
	"lane/runtimes/codex"
	"lane/runtimes/gemini"
	"lane/runtimes/local"
	"lane/runtimes/opencode"
	"lane/runtimes/qwen"
	"lane/trace"
)

// Entries lists every runtime lane drives, in the order lane documents
// them. Each call returns fresh entries: nobody can change another's.
func Entries() runner.Entries {
	return runner.Entries{claude.Runtime(), codex.Runtime(), gemini.Runtime(), opencode.Runtime(), qwen.Runtime(), local.Runtime()}
}

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
