package launch

import (
	"strings"
	"testing"

	"github.com/lanehq/lane/internal/config"
	"github.com/lanehq/lane/internal/runner"
	"github.com/lanehq/lane/internal/runtimes"
)

// The permission rules a run's mode gets: the config file's rules widen
// only the modes that ask.
func TestAllowRules(t *testing.T) {
	cfg := &config.File{Runtimes: runtimes.Entries().Table(), Permissions: config.Permissions{Allow: []string{"Bash(git status:*)"}}}
	for _, tt := range []struct {
		mode    string
		allowed []string
		want    string
	}{
		{"bypassPermissions", nil, "Read,Write,Edit,Bash,Glob,Grep"},
		{"bypassPermissions", []string{"Read"}, "Read"}, // the config's rules never widen what the agent sees
		{"default", nil, "Read,Glob,Grep,Bash(git status:*)"},
		{"acceptEdits", []string{"Read", "Edit"}, "Read,Edit,Bash(git status:*)"},
		{"plan", nil, "Read,Write,Edit,Bash,Glob,Grep"},
	} {
		got := AllowRules(cfg, &Options{PermissionMode: tt.mode, AllowedTools: tt.allowed})
		if strings.Join(got, ",") != tt.want {
			t.Errorf("%s %v: %v, want %s", tt.mode, tt.allowed, got, tt.want)
		}
	}
}

// A run that must have its MCP servers (a Harbor task's) is refused on a
// runtime that would run without them, saying which; lane acp's editor's
// servers are not required.
func TestCheckMCP(t *testing.T) {
	local, _ := runtimes.Entries().Lookup("local")
	claude, _ := runtimes.Entries().Lookup("claude")
	o := runner.Options{MCPServers: []runner.MCPServer{{Name: "docs", Transport: "sse", URL: "http://docs:8000/sse"}}}
	err := checkMCP(local, o, true)
	if want := "lane's own loop cannot be given MCP servers, and the task gives its agent some (docs)"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("lane's own loop: %v, want %q", err, want)
	}
	if err := checkMCP(local, o, false); err != nil {
		t.Errorf("servers not required: %v", err)
	}
	if err := checkMCP(claude, o, true); err != nil {
		t.Errorf("Claude Code: %v", err)
	}
}
