package pricing

import (
	"math"
	"testing"

	"lane/trace"
)

func TestLookup(t *testing.T) {
	var (
		opusNew = Price{5, 25, 0.50, 6.25}
		opusOld = Price{15, 75, 1.50, 18.75}
		sonnet  = Price{3, 15, 0.30, 3.75}
		haiku45 = Price{1, 5, 0.10, 1.25}
		haiku35 = Price{0.80, 4, 0.08, 1}
		haiku3  = Price{0.25, 1.25, 0.03, 0.30}
	)
	tests := []struct {
		model string
		want  Price
		known bool
	}{
		{"claude-opus-4-5-20251101", opusNew, true},
		{"claude-opus-4-5", opusNew, true},
		{"claude-opus-4-6", opusNew, true},
		{"claude-opus-5", opusNew, true},
		{"claude-opus-4-1", opusOld, true},
		{"claude-opus-4-1-20250805", opusOld, true},
		{"claude-opus-4-20250514", opusOld, true},
		{"claude-3-opus-20240229", opusOld, true},
		{"opus", opusNew, true},
		{"Claude-Opus-4-5", opusNew, true},
		{"claude-sonnet-4-5-20250929", sonnet, true},
		{"claude-sonnet-4-5[1m]", sonnet, true},
		{"claude-sonnet-5-5", sonnet, true},
		{"claude-3-5-sonnet-20241022", sonnet, true},
		{"claude-3-7-sonnet-latest", sonnet, true},
		{"sonnet", sonnet, true},
		{"us.anthropic.claude-sonnet-4-5-20250929-v1:0", sonnet, true},
		{"claude-sonnet-4-5@20250929", sonnet, true},
		{"claude-haiku-4-5", haiku45, true},
		{"claude-haiku-4-5-20251001", haiku45, true},
		{"haiku", haiku45, true},
		{"claude-3-5-haiku-20241022", haiku35, true},
		{"anthropic.claude-3-5-haiku-20241022-v1:0", haiku35, true},
		{"claude-3-haiku-20240307", haiku3, true},
		{"gpt-4o", Price{}, false},
		{"", Price{}, false},
		{"<synthetic>", Price{}, false},
		{"magnum-opus", opusNew, true}, // a family word is a family word
		{"claude-sonnetx", Price{}, false},
	}
	tbl := Default()
	for _, tt := range tests {
		got, known := tbl.Lookup(tt.model)
		if got != tt.want || known != tt.known {
			t.Errorf("Lookup(%q) = %v, %v; want %v, %v", tt.model, got, known, tt.want, tt.known)
		}
	}
}

func TestCost(t *testing.T) {
	u := trace.Usage{InputTokens: 1_000_000, OutputTokens: 100_000, CacheReadTokens: 2_000_000, CacheCreationTokens: 400_000}
	tests := []struct {
		model string
		want  float64
		known bool
	}{
		{"claude-sonnet-4-5", 3 + 1.5 + 0.6 + 1.5, true},
		{"claude-opus-4-5", 5 + 2.5 + 1 + 2.5, true},
		{"claude-opus-4-1", 15 + 7.5 + 3 + 7.5, true},
		{"claude-haiku-4-5", 1 + 0.5 + 0.2 + 0.5, true},
		{"unknown-model", 0, false},
	}
	tbl := Default()
	for _, tt := range tests {
		got, known := tbl.Cost(tt.model, u)
		if math.Abs(got-tt.want) > 1e-9 || known != tt.known {
			t.Errorf("Cost(%q) = %v, %v; want %v, %v", tt.model, got, known, tt.want, tt.known)
		}
	}
	if got, _ := tbl.Cost("sonnet", trace.Usage{}); got != 0 {
		t.Errorf("no tokens cost %v", got)
	}
}

func TestOverride(t *testing.T) {
	tbl := Default()
	tbl.Models["claude-sonnet-4-5"] = Price{Input: 6, Output: 22.5}
	tbl.Models["my-proxy-model"] = Price{Input: 1}
	if p, _ := tbl.Lookup("claude-sonnet-4-5"); p.Input != 6 {
		t.Errorf("an exact id does not override its family: %v", p)
	}
	if p, _ := tbl.Lookup("claude-sonnet-4-5-20250929"); p.Input != 3 {
		t.Errorf("the override leaked to another id: %v", p)
	}
	if c, ok := tbl.Cost("my-proxy-model", trace.Usage{InputTokens: 2_000_000}); !ok || c != 2 {
		t.Errorf("custom model: %v %v", c, ok)
	}
	if p, _ := Default().Lookup("claude-sonnet-4-5"); p.Input != 3 {
		t.Error("Default shares its map between calls")
	}

	custom := &Table{Families: []Family{{Name: "sonnet", Since: Version{4, 0}, Price: Price{Input: 9}}}}
	if p, ok := custom.Lookup("claude-3-7-sonnet"); ok {
		t.Errorf("a version below every family matched: %v", p)
	}
	if p, ok := custom.Lookup("claude-sonnet-4"); !ok || p.Input != 9 {
		t.Errorf("custom family: %v %v", p, ok)
	}
	var none *Table
	if _, ok := none.Cost("sonnet", trace.Usage{InputTokens: 1}); ok {
		t.Error("a nil table knows a price")
	}
}

func TestVersion(t *testing.T) {
	tests := map[string]Version{
		"claude-opus-4-1-20250805":  {4, 1},
		"claude-opus-4-20250514":    {4, 0},
		"claude-3-5-haiku-20241022": {3, 5},
		"claude-3-haiku":            {3, 0},
		"claude-sonnet-4-5-v2-0":    {4, 5},
		"opus":                      newest,
		"claude-opus-20250101":      newest,
		"x-12-7-opus":               {12, 7},
	}
	for id, want := range tests {
		words := split(id)
		at := -1
		for _, f := range []string{"opus", "sonnet", "haiku"} {
			if i := indexOf(words, f); i >= 0 {
				at = i
			}
		}
		if got := version(words, at); got != want {
			t.Errorf("version(%q) = %v, want %v", id, got, want)
		}
	}
}
