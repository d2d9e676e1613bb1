package bench

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// writeSuite writes yaml as suite.yaml in a fresh folder that also holds an
// empty fixture folder fx, and returns the file's path.
func writeSuite(t testing.TB, yaml string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "fx"), 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "suite.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestLoad(t *testing.T) {
	path := writeSuite(t, `
name: demo
models: sonnet, ollama:qwen2.5-coder:14b
repeat: 3
x-common: &common
  fixture: fx
  tags: [go]
defaults:
  timeout: 10m
  check-timeout: 1m
  max-turns: 20
  max-cost: 0.5
  token-limit: 400000
  cost-limit: 2
  setup: go mod download
tasks:
  - id: one
    <<: *common
    prompt: |
      fix it
    check: go test ./...
  - id: two
    prompt: make out.txt
    setup: []
    timeout: 90s
    max-turns: 5
    max-cost: 2
    token-limit: 100000
    cost-limit: 0.25
    check:
      command: test -s out.txt
      timeout: 5s
      files:
        - out.txt
        - path: sub/../b.txt
          contains: hello
          matches: ^h
`)
	s, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Dir(path)
	want := &Suite{
		Name: "demo", Path: path, Dir: dir, Models: []string{"sonnet", "ollama:qwen2.5-coder:14b"}, Repeat: 3,
		Defaults: TaskDefaults{Timeout: 10 * time.Minute, CheckTimeout: time.Minute, SetupTimeout: DefaultSetupTimeout,
			Setup: []string{"go mod download"}, MaxTurns: 20, MaxCostUSD: 0.5, TokenLimit: 400_000, CostLimitUSD: 2},
		Tasks: []Task{
			{ID: "one", Prompt: "fix it", Fixture: "fx", Setup: []string{"go mod download"},
				SetupTimeout: DefaultSetupTimeout, Check: Check{Command: "go test ./...", Timeout: time.Minute},
				Timeout: 10 * time.Minute, Tags: []string{"go"}, MaxTurns: 20, MaxCostUSD: 0.5, TokenLimit: 400_000, CostLimitUSD: 2},
			{ID: "two", Prompt: "make out.txt", SetupTimeout: DefaultSetupTimeout,
				Check: Check{Command: "test -s out.txt", Timeout: 5 * time.Second, Files: []FileCheck{
					{Path: "out.txt"}, {Path: "b.txt", Contains: "hello", Matches: "^h"}}},
				Timeout: 90 * time.Second, MaxTurns: 5, MaxCostUSD: 2, TokenLimit: 100_000, CostLimitUSD: 0.25},
		},
	}
	if !reflect.DeepEqual(s, want) {
		t.Errorf("Load =\n%+v\nwant\n%+v", s, want)
	}
}

func TestLoadDefaultsName(t *testing.T) {
	s, err := Load(writeSuite(t, "tasks:\n  - {id: a, prompt: p, check: 'true'}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "suite" || s.Repeat != 0 || s.Tasks[0].Check.Timeout != DefaultCheckTimeout {
		t.Errorf("Load = %+v", s)
	}
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name, yaml string
		want       []string // each error, "line: message" (the file name is cut)
	}{
		{"syntax", "tasks:\n  - id: a\n    prompt: p: q\n", []string{"3: mapping values are not allowed in this context"}},
		{"tab", "tasks:\n\t- id: a\n", []string{"2: found character that cannot start any token (a tab? YAML indents with spaces)"}},
		{"empty", "", []string{"the suite is empty: it needs at least tasks"}},
		{"not a mapping", "- a\n- b\n", []string{"1: want a mapping (key: value lines), found a list"}},
		{"no tasks", "name: x\n", []string{"1: no tasks: add a tasks: list"}},
		{"tasks not a list", "tasks: 3\n", []string{`1: tasks must be a list of tasks, each with id, prompt and check`}},
		{"unknown top field", "modles: [a]\ntasks:\n  - {id: a, prompt: p, check: 'true'}\n",
			[]string{`1: unknown field "modles" (did you mean "models"?)`}},
		{"unknown task field", "tasks:\n  - id: a\n    prompt: p\n    check: 'true'\n    max_turns: 3\n",
			[]string{`5: task "a": unknown field "max_turns" (did you mean "max-turns"?)`}},
		{"unknown field far off", "tasks:\n  - id: a\n    prompt: p\n    check: 'true'\n    colour: red\n",
			[]string{`5: task "a": unknown field "colour" (known: id, prompt, fixture, git, setup, setup-timeout, check, timeout, tags, max-turns, max-cost, token-limit, cost-limit, hide, protect, oracle, tries, retry-prompt)`}},
		{"missing id", "tasks:\n  - prompt: p\n    check: 'true'\n", []string{"2: task 1: missing id"}},
		{"missing prompt", "tasks:\n  - id: a\n    check: 'true'\n", []string{`2: task "a": missing prompt`}},
		{"empty prompt", "tasks:\n  - id: a\n    prompt: ''\n    check: 'true'\n", []string{`3: task "a": prompt is empty`}},
		{"missing check", "tasks:\n  - id: a\n    prompt: p\n",
			[]string{`2: task "a": missing check: give a command (e.g. go test ./...) or files that must exist`}},
		{"empty check", "tasks:\n  - id: a\n    prompt: p\n    check: {timeout: 1m}\n",
			[]string{`4: task "a": check: give a command or files (or both)`}},
		{"no files", "tasks:\n  - id: a\n    prompt: p\n    check: {files: []}\n",
			[]string{`4: task "a": check: give a command or files (or both)`}},
		{"duplicate id", "tasks:\n  - {id: a, prompt: p, check: 'true'}\n  - {id: b, prompt: p, check: 'true'}\n  - {id: a, prompt: q, check: 'true'}\n",
			[]string{`4: task "a": duplicate id (first at line 2)`}},
		{"bad id", "tasks:\n  - {id: 'a b', prompt: p, check: 'true'}\n",
			[]string{`2: task 1: id "a b": use letters, digits, '.', '_' and '-' (it names folders)`}},
		{"bad duration", "tasks:\n  - id: x\n    prompt: p\n    check: 'true'\n    timeout: 5 minutes\n",
			[]string{`5: task "x": timeout: bad duration "5 minutes" (write it like 90s, 5m, 1h30m)`}},
		{"bad check timeout", "tasks:\n  - id: x\n    prompt: p\n    check:\n      command: 'true'\n      timeout: soon\n",
			[]string{`6: task "x": check: timeout: bad duration "soon" (write it like 90s, 5m, 1h30m)`}},
		{"negative duration", "defaults:\n  timeout: -1m\ntasks:\n  - {id: x, prompt: p, check: 'true'}\n",
			[]string{`2: defaults: timeout must not be negative`}},
		{"fixture missing", "tasks:\n  - id: x\n    prompt: p\n    fixture: nope\n    check: 'true'\n",
			[]string{`4: task "x": fixture "nope": no such folder (looked for DIR/nope)`}},
		{"fixture is a file", "tasks:\n  - id: x\n    prompt: p\n    fixture: suite.yaml\n    check: 'true'\n",
			[]string{`4: task "x": fixture "suite.yaml" is not a folder`}},
		{"fixture and git", "tasks:\n  - id: x\n    prompt: p\n    fixture: fx\n    git: {repo: fx}\n    check: 'true'\n",
			[]string{`5: task "x": give a fixture or git, not both`}},
		{"git without repo", "tasks:\n  - id: x\n    prompt: p\n    git: {rev: main}\n    check: 'true'\n",
			[]string{`4: task "x": git: missing repo`}},
		{"git local repo missing", "tasks:\n  - id: x\n    prompt: p\n    git: {repo: ../nowhere}\n    check: 'true'\n",
			[]string{`4: task "x": git: repo PARENT/nowhere: no such folder`}},
		{"bad regexp", "tasks:\n  - id: x\n    prompt: p\n    check:\n      files:\n        - path: a\n          matches: '(['\n",
			[]string{"7: task \"x\": check: files: matches: error parsing regexp: missing closing ]: `[`"}},
		{"file outside", "tasks:\n  - id: x\n    prompt: p\n    check:\n      files: [../etc/passwd]\n",
			[]string{`5: task "x": check: files: path "../etc/passwd" must be relative to the attempt's folder and stay inside it`}},
		{"repeat zero", "repeat: 0\ntasks:\n  - {id: x, prompt: p, check: 'true'}\n", []string{"1: repeat must be at least 1"}},
		{"repeat text", "repeat: many\ntasks:\n  - {id: x, prompt: p, check: 'true'}\n",
			[]string{`1: repeat must be a whole number, found "many"`}},
		{"max-cost text", "tasks:\n  - {id: x, prompt: p, check: 'true', max-cost: lots}\n",
			[]string{`2: task "x": max-cost must be a number (USD), found "lots"`}},
		{"max-turns negative", "tasks:\n  - {id: x, prompt: p, check: 'true', max-turns: -2}\n",
			[]string{`2: task "x": max-turns must not be negative`}},
		{"model twice", "models: [a, a]\ntasks:\n  - {id: x, prompt: p, check: 'true'}\n", []string{`1: model "a" is listed twice`}},
		{"field twice", "tasks:\n  - id: x\n    prompt: p\n    prompt: q\n    check: 'true'\n",
			[]string{`4: task "x": prompt given twice (first at line 3)`}},
		{"prompt a list", "tasks:\n  - id: x\n    prompt: [a]\n    check: 'true'\n",
			[]string{`3: task "x": prompt must be text, found a list`}},
		{"task not a mapping", "tasks:\n  - just do it\n",
			[]string{`2: task 1: want a mapping (key: value lines), found "just do it"`}},
		{"several", "tasks:\n  - id: x\n    prompt: p\n  - id: y\n    check: 'true'\n    timeout: 3\n", []string{
			`2: task "x": missing check: give a command (e.g. go test ./...) or files that must exist`,
			`4: task "y": missing prompt`,
			`6: task "y": timeout: bad duration "3" (write it like 90s, 5m, 1h30m)`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeSuite(t, tt.yaml)
			_, err := Load(path)
			if err == nil {
				t.Fatal("Load succeeded")
			}
			var se *SuiteError
			if !errors.As(err, &se) {
				t.Fatalf("error %v (%T) is not a *SuiteError", err, err)
			}
			dir := filepath.Dir(path)
			var got []string
			for l := range strings.SplitSeq(err.Error(), "\n") {
				l = strings.TrimPrefix(l, path+":")
				l = strings.TrimPrefix(l, " ")
				l = strings.ReplaceAll(l, dir, "DIR")
				l = strings.ReplaceAll(l, filepath.Dir(dir), "PARENT")
				got = append(got, l)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
			if se.Line == 0 && tt.name != "empty" {
				t.Errorf("first error %+v has no line", se)
			}
		})
	}
}

// The path in an error is the one Load was given, as a person typed it.
func TestLoadErrorNamesTheFileAsGiven(t *testing.T) {
	path := writeSuite(t, "tasks:\n  - id: x\n    prompt: p\n    check: 'true'\n    timeout: 5 minutes\n")
	t.Chdir(filepath.Dir(path))
	_, err := Load("suite.yaml")
	const want = `suite.yaml:5: task "x": timeout: bad duration "5 minutes" (write it like 90s, 5m, 1h30m)`
	if err == nil || err.Error() != want {
		t.Errorf("Load = %v, want %s", err, want)
	}
	var se *SuiteError
	if !errors.As(err, &se) || se.Line != 5 || se.Col != 14 || se.Path != "suite.yaml" {
		t.Errorf("SuiteError = %+v", se)
	}
}
