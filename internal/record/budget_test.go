package record

import (
	"encoding/json"
	"testing"
)

// An event or run recorded before the turn limit was called turn_limit
// reads as turn_limit; other kinds read as they are.
func TestOldTurnLimitKindReads(t *testing.T) {
	var run Run
	if err := json.Unmarshal([]byte(`{"error_kind":"max_turns"}`), &run); err != nil || run.ErrorKind != ErrorTurnLimit {
		t.Errorf("max_turns read as %q (%v), want turn_limit", run.ErrorKind, err)
	}
	if err := json.Unmarshal([]byte(`{"error_kind":"token_limit"}`), &run); err != nil || run.ErrorKind != ErrorTokenLimit {
		t.Errorf("token_limit read as %q (%v)", run.ErrorKind, err)
	}
	b, _ := json.Marshal(Run{ErrorKind: ErrorTurnLimit})
	var back map[string]any
	if json.Unmarshal(b, &back) != nil || back["error_kind"] != "turn_limit" {
		t.Errorf("a run stopped by the turn limit is written %s", b)
	}
}

// Total counts all four kinds of tokens, the 1-hour cache writes once
// (they are part of the cache writes).
func TestUsageTotal(t *testing.T) {
	u := Usage{InputTokens: 1, OutputTokens: 20, CacheReadTokens: 300, CacheCreationTokens: 4000, CacheCreation1hTokens: 4000}
	if got := u.Total(); got != 4321 {
		t.Errorf("Total = %d, want 4321", got)
	}
}
