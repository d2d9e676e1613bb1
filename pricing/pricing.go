// Package pricing prices Claude models' token usage in USD, from Anthropic's
// published list prices. It is used to estimate a run's cost when the runtime
// does not report one. The table is plain data: a caller may change it or build
// its own.
//
// Not modelled: long-context surcharges (Sonnet 4/4.5 above 200k input tokens),
// 1-hour cache writes (priced here as 5-minute ones), batch discounts, and
// server tools such as web search.
package pricing

import (
	"strconv"
	"strings"

	"lane/trace"
)

// Price is what a model charges, in USD per million tokens.
type Price struct {
	Input      float64 `json:"input"`
	Output     float64 `json:"output"`
	CacheRead  float64 `json:"cache_read"`
	CacheWrite float64 `json:"cache_write"` // 5-minute cache writes
}

// Cost is what u costs at p, in USD.
func (p Price) Cost(u trace.Usage) float64 {
	return (float64(u.InputTokens)*p.Input +
		float64(u.OutputTokens)*p.Output +
		float64(u.CacheReadTokens)*p.CacheRead +
		float64(u.CacheCreationTokens)*p.CacheWrite) / 1e6
}

// Version is a model generation, 4.5 as {4, 5}.
type Version struct{ Major, Minor int }

// Less reports whether v comes before o.
func (v Version) Less(o Version) bool {
	return v.Major < o.Major || v.Major == o.Major && v.Minor < o.Minor
}

// Family prices the models whose id names a family ("opus", "sonnet",
// "haiku") from a version on.
type Family struct {
	Name  string  // a word of the model id, lower case
	Since Version // the first version these prices apply to; zero for all
	Price Price
}

// Table looks prices up by exact model id, then by family.
type Table struct {
	// Models prices exact model ids; it is consulted first.
	Models map[string]Price
	// Families are tried in order and the first that matches wins, so a
	// family's newer versions come before its older ones. An id whose version
	// cannot be read ("opus", "sonnet") is taken to be the newest.
	Families []Family
}

// Default returns a fresh table of Anthropic's list prices.
func Default() *Table {
	return &Table{
		Models: map[string]Price{},
		Families: []Family{
			{Name: "opus", Since: Version{4, 5}, Price: Price{5, 25, 0.50, 6.25}},
			{Name: "opus", Price: Price{15, 75, 1.50, 18.75}},
			{Name: "sonnet", Price: Price{3, 15, 0.30, 3.75}},
			{Name: "haiku", Since: Version{4, 5}, Price: Price{1, 5, 0.10, 1.25}},
			{Name: "haiku", Since: Version{3, 5}, Price: Price{0.80, 4, 0.08, 1}},
			{Name: "haiku", Price: Price{0.25, 1.25, 0.03, 0.30}},
		},
	}
}

// newest stands for the version of an id that names none.
var newest = Version{Major: 1 << 30}

// Lookup finds the price of a model: claude-sonnet-4-5-20250929,
// claude-3-5-haiku-20241022, claude-opus-4-1, a Bedrock or Vertex id, or an
// alias such as "opus". It reports false for a model it does not know.
func (t *Table) Lookup(model string) (Price, bool) {
	if t == nil {
		return Price{}, false
	}
	if p, ok := t.Models[model]; ok {
		return p, true
	}
	words := split(strings.ToLower(model))
	for _, f := range t.Families {
		at := indexOf(words, f.Name)
		if at < 0 {
			continue
		}
		if !version(words, at).Less(f.Since) {
			return f.Price, true
		}
	}
	return Price{}, false
}

// Cost is what u costs on model, in USD, and whether the model is known. Its
// signature fits streamjson's Tally.Cost.
func (t *Table) Cost(model string, u trace.Usage) (usd float64, known bool) {
	p, ok := t.Lookup(model)
	if !ok {
		return 0, false
	}
	return p.Cost(u), true
}

// split cuts a model id into its words: "claude-3-5-haiku@2024" → claude 3 5
// haiku 2024.
func split(id string) []string {
	return strings.FieldsFunc(id, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9')
	})
}

func indexOf(words []string, w string) int {
	for i, x := range words {
		if x == w {
			return i
		}
	}
	return -1
}

// version reads the model generation next to the family word at: after it
// (claude-opus-4-1) or else before it (claude-3-5-haiku). Dates and other
// long numbers are not versions.
func version(words []string, at int) Version {
	var nums []int
	for _, w := range words[at+1:] {
		n, ok := small(w)
		if !ok {
			break
		}
		nums = append(nums, n)
	}
	if len(nums) == 0 {
		i := at
		for i > 0 {
			if _, ok := small(words[i-1]); !ok {
				break
			}
			i--
		}
		for _, w := range words[i:at] {
			n, _ := small(w)
			nums = append(nums, n)
		}
	}
	switch len(nums) {
	case 0:
		return newest
	case 1:
		return Version{Major: nums[0]}
	}
	return Version{Major: nums[0], Minor: nums[1]}
}

// small parses a version number: one or two digits.
func small(w string) (int, bool) {
	if len(w) == 0 || len(w) > 2 {
		return 0, false
	}
	n, err := strconv.Atoi(w)
	return n, err == nil
}
