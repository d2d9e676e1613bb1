package runner

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// writeFiles writes files (path relative to root → content) under root.
func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// hermeticVar is the value of name among add, the hermetic run's variables.
func hermeticVar(t *testing.T, add []string, name string) string {
	t.Helper()
	v := LookupEnv(add, name)
	if v == "" {
		t.Fatalf("the hermetic run's variables %v lack %s", add, name)
	}
	return v
}

// wantHermeticDir fails t unless dir holds the login file and none of gone.
func wantHermeticDir(t *testing.T, dir, login string, gone ...string) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(dir, login)); err != nil {
		t.Errorf("the login was not copied: %v", err)
	}
	for _, name := range gone {
		if _, err := os.Stat(filepath.Join(dir, name)); !os.IsNotExist(err) {
			t.Errorf("%s is in the hermetic home: %v", name, err)
		}
	}
}

// Gemini CLI's hermetic home keeps the user's Google login and choice of
// sign-in, and nothing else of ~/.gemini; pointed at an endpoint, the
// sign-in is lane's.
func TestGeminiHermeticKeepsTheSignInAlone(t *testing.T) {
	t.Parallel()
	user := t.TempDir()
	writeFiles(t, user, map[string]string{
		".gemini/GEMINI.md":         "always answer in French\n",
		".gemini/oauth_creds.json":  `{"access_token":"ya29.test"}`,
		".gemini/settings.json":     `{"security":{"auth":{"selectedType":"oauth-personal"}},"mcpServers":{"x":{"command":"evil"}}}`,
		".gemini/extensions/x/a.md": "an extension\n",
	})
	settingsOf := func(o Options) (map[string]any, []string, string) {
		add, excluded, err := geminiHermetic(o, nil)
		if err != nil {
			t.Fatal(err)
		}
		home := hermeticVar(t, add, "GEMINI_CLI_HOME")
		b, err := os.ReadFile(filepath.Join(home, ".gemini", "settings.json"))
		if err != nil {
			t.Fatal(err)
		}
		var settings map[string]any
		if err := json.Unmarshal(b, &settings); err != nil {
			t.Fatal(err)
		}
		return settings, excluded, home
	}
	settings, excluded, home := settingsOf(Options{Env: []string{"HOME=" + user}, HermeticHome: t.TempDir()})
	wantHermeticDir(t, filepath.Join(home, ".gemini"), "oauth_creds.json", "GEMINI.md", "extensions")
	if got := settings["security"]; got == nil || settings["mcpServers"] != nil {
		t.Errorf("settings %v, want the user's sign-in alone", settings)
	} else if auth := got.(map[string]any)["auth"].(map[string]any); auth["selectedType"] != "oauth-personal" {
		t.Errorf("sign-in %v, want the user's oauth-personal", auth)
	}
	if !slices.Equal(excluded, []string{"GEMINI.md", "settings.json", "extensions"}) {
		t.Errorf("kept out %v", excluded)
	}

	settings, _, _ = settingsOf(Options{Env: []string{"HOME=" + user}, HermeticHome: t.TempDir(), BaseURL: "http://127.0.0.1:1"})
	if auth := settings["security"].(map[string]any)["auth"].(map[string]any); auth["selectedType"] != "gemini-api-key" {
		t.Errorf("sign-in of a run on an endpoint %v, want lane's gemini-api-key", auth)
	}
}

// Qwen Code's hermetic QWEN_HOME holds its login and the sign-in alone.
func TestQwenHermeticKeepsTheSignInAlone(t *testing.T) {
	t.Parallel()
	user := t.TempDir()
	writeFiles(t, user, map[string]string{
		".qwen/QWEN.md":          "always answer in French\n",
		".qwen/oauth_creds.json": `{"access_token":"test"}`,
		".qwen/settings.json":    `{"security":{"auth":{"selectedType":"qwen-oauth"}},"model":{"name":"other"}}`,
	})
	add, excluded, err := qwenHermetic(Options{Env: []string{"HOME=" + user}, HermeticHome: t.TempDir()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := hermeticVar(t, add, "QWEN_HOME")
	b, _ := os.ReadFile(filepath.Join(dir, "settings.json"))
	var settings map[string]any
	if err := json.Unmarshal(b, &settings); err != nil || settings["model"] != nil || settings["security"] == nil {
		t.Errorf("settings %s (%v), want the sign-in alone", b, err)
	}
	wantHermeticDir(t, dir, "oauth_creds.json", "QWEN.md")
	if !slices.Equal(excluded, []string{"QWEN.md", "settings.json"}) {
		t.Errorf("kept out %v", excluded)
	}
}

// opencode's hermetic config home is empty, and Claude Code's CLAUDE.md,
// which opencode reads otherwise, is turned off and noted.
func TestOpencodeHermeticConfigHome(t *testing.T) {
	t.Parallel()
	user := t.TempDir()
	writeFiles(t, user, map[string]string{
		".config/opencode/AGENTS.md":     "always answer in French\n",
		".config/opencode/opencode.json": `{"mcp":{}}`,
		".claude/CLAUDE.md":              "always answer in German\n",
	})
	add, excluded, err := opencodeHermetic(Options{Env: []string{"HOME=" + user}, HermeticHome: t.TempDir()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := hermeticVar(t, add, "XDG_CONFIG_HOME")
	if entries, err := os.ReadDir(filepath.Join(cfg, "opencode")); err != nil || len(entries) != 0 {
		t.Errorf("the hermetic config folder holds %v (%v), want nothing", entries, err)
	}
	if LookupEnv(add, "OPENCODE_DISABLE_CLAUDE_CODE") != "1" {
		t.Errorf("variables %v: Claude Code's files are not turned off", add)
	}
	if !slices.Equal(excluded, []string{"opencode.json", "AGENTS.md", "~/.claude/CLAUDE.md"}) {
		t.Errorf("kept out %v", excluded)
	}
}
