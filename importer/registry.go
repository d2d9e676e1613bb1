package importer

import "lane/trace"

// Readers is every runtime lane imports, each pricing usage with price
// where its files carry no cost. This is the one table cmd looks runtimes
// up in.
func Readers(price func(model string, u trace.Usage) (float64, bool)) []Reader {
	return []Reader{
		Claude{Price: price},
		Codex{Price: price},
		Gemini{Price: price},
		Qwen{Price: price},
		Opencode{Price: price},
	}
}
