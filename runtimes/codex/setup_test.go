package codex

import (
	"slices"
	"strings"
	"testing"

	"lane/internal/runtest"
)

// The command line, environment and configuration of one run (part of
// what runner's TestCLISetup checked of every agent CLI).
func TestCodexSetup(t *testing.T) {
	t.Parallel()
	_, withEndpoint, resumed := runtest.SetupCases()

	su, _ := codexSetup(withEndpoint, t.TempDir())
	args, extra := su.Args, su.Env
	joined := strings.Join(args, " ")
	for _, want := range []string{"exec --json", "-C /proj", "-m m1", `base_url="http://127.0.0.1:9/v1"`, `wire_api="responses"`} {
		if !strings.Contains(joined, want) {
			t.Errorf("args %q lack %q", joined, want)
		}
	}
	if args[len(args)-2] != "--" || args[len(args)-1] != "-fix it" {
		t.Errorf("the task must follow --: %q", args)
	}
	if !slices.Contains(extra, codexKeyEnv+"=sk-1") {
		t.Errorf("env %q", extra)
	}
	su, _ = codexSetup(resumed, t.TempDir())
	args = su.Args
	if i := slices.Index(args, "resume"); i < 0 || args[i+1] != "sess-9" {
		t.Errorf("resume args %q", args)
	}
}
