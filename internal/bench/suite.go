// Package bench runs a task suite across models (lane bench): every task,
// with every model, a number of times, each attempt a normal lane run in a
// fresh copy of the task's folder followed by a check; and it compares the
// models from what was recorded.
package bench

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Built-in defaults, used when neither a task nor the suite's defaults say.
const (
	DefaultCheckTimeout = 5 * time.Minute
	DefaultSetupTimeout = 5 * time.Minute
)

// Suite is a parsed suite file. Load fills every task from the defaults, so
// a Task says all that is needed to run it.
type Suite struct {
	Name     string       `json:"name"`
	Path     string       `json:"path,omitempty"` // the suite file, absolute
	Dir      string       `json:"dir"`            // the suite file's folder, absolute; fixtures are relative to it
	Models   []string     `json:"models,omitempty"`
	Repeat   int          `json:"repeat,omitempty"` // 0: not set in the file
	Defaults TaskDefaults `json:"defaults"`
	Tasks    []Task       `json:"tasks"`
}

// TaskDefaults apply to every task that does not set the field itself.
type TaskDefaults struct {
	Timeout      time.Duration `json:"timeout,omitempty"`
	CheckTimeout time.Duration `json:"check_timeout,omitempty"`
	SetupTimeout time.Duration `json:"setup_timeout,omitempty"`
	Setup        []string      `json:"setup,omitempty"`
	MaxTurns     int           `json:"max_turns,omitempty"`
	MaxCostUSD   float64       `json:"max_cost_usd,omitempty"`
	TokenLimit   int64         `json:"token_limit,omitempty"`
	CostLimitUSD float64       `json:"cost_limit_usd,omitempty"`
}

// Task is one job of a suite. Its folder comes from Fixture (a directory
// relative to the suite's Dir, copied fresh for every attempt, or a
// worktree of it when it is a git repository), from Git, or, with neither,
// is empty.
type Task struct {
	ID      string `json:"id"`
	Prompt  string `json:"prompt"`
	Fixture string `json:"fixture,omitempty"`
	// FixtureBlob is the digest of the fixture as stored for lane workers
	// (a tar archive in the database), set by a Pool's Pack.
	FixtureBlob string `json:"fixture_blob,omitempty"`
	// FixtureCommit is the commit of a Fixture that is a git repository,
	// taken when the bench was created: each attempt's folder is then a
	// worktree of the fixture detached at it. Empty: the fixture is copied
	// (not a repository, or one with uncommitted changes).
	FixtureCommit string `json:"fixture_commit,omitempty"`

	Git          *GitSource    `json:"git,omitempty"`
	Setup        []string      `json:"setup,omitempty"` // sh -c commands run in the folder before the agent
	SetupTimeout time.Duration `json:"setup_timeout,omitempty"`
	Check        Check         `json:"check"`
	Timeout      time.Duration `json:"timeout,omitempty"` // the agent's run; 0: lane's own default
	Tags         []string      `json:"tags,omitempty"`
	MaxTurns     int           `json:"max_turns,omitempty"`
	MaxCostUSD   float64       `json:"max_cost_usd,omitempty"`
	// TokenLimit and CostLimitUSD bound each attempt's run (--token-limit,
	// --cost-limit); 0: no limit.
	TokenLimit   int64   `json:"token_limit,omitempty"`
	CostLimitUSD float64 `json:"cost_limit_usd,omitempty"`

	// Hide are paths of the fixture (relative to it) left out of the
	// attempt's folder: a reference solution the agent must not see.
	Hide []string `json:"hide,omitempty"`
	// Protect are paths put back as the fixture has them before every
	// check, whatever the agent did to them: the tests.
	Protect []string `json:"protect,omitempty"`
	// Oracle are sh -c commands that solve the task in its folder, run
	// instead of an agent for the model "oracle" (OracleModel), with
	// LANE_FIXTURE set to the fixture as shipped (hidden paths included).
	// A task whose oracle fails its check is broken.
	Oracle []string `json:"oracle,omitempty"`
	// Tries is how many times the agent is asked, in the same session,
	// while the check fails (Aider's polyglot benchmark asks twice); 0 or
	// 1: once. RetryPrompt is what it is asked again, with "{output}"
	// replaced by the check's output.
	Tries       int    `json:"tries,omitempty"`
	RetryPrompt string `json:"retry_prompt,omitempty"`
	// Container, when set, makes the task run in a container of its own
	// (a Harbor task); its check is the task's verifier.
	Container *ContainerTask `json:"container,omitempty"`
	// Retry is the bench's retry policy (lane bench --retries), kept with
	// each task so that a worker running it has it; nil: none.
	Retry *RetryPolicy `json:"retry,omitempty"`
}

// GitSource is a repository cloned for every attempt, checked out at Rev
// (its default branch when empty). A local Repo is absolute after Load.
type GitSource struct {
	Repo string `json:"repo"`
	Rev  string `json:"rev,omitempty"`
}

// Check decides whether an attempt passed: Command (sh -c in the attempt's
// folder) must exit 0 within Timeout, and every file of Files must be
// there and match. At least one of the two is set.
type Check struct {
	Command string        `json:"command,omitempty"`
	Files   []FileCheck   `json:"files,omitempty"`
	Timeout time.Duration `json:"timeout,omitempty"`
	// EnvironmentErrors are regular expressions: a failed check whose
	// output matches one failed for its environment (a crate or a tool it
	// could not download), not for the agent's work; the attempt is then
	// errored, counted apart.
	EnvironmentErrors []string `json:"environment_errors,omitempty"`
}

// FileCheck is a file that must exist, relative to the attempt's folder,
// and contain a text and match a regular expression when those are set.
type FileCheck struct {
	Path     string `json:"path"`
	Contains string `json:"contains,omitempty"`
	Matches  string `json:"matches,omitempty"`
}

// SuiteError is one mistake in a suite file, at a line (and column) of it.
type SuiteError struct {
	Path      string
	Line, Col int // 1-based; 0 when unknown
	Msg       string
}

func (e *SuiteError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.Path, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.Path, e.Msg)
}

// SuiteErrors is every mistake Load found when there was more than one.
// errors.As finds the first *SuiteError in it.
type SuiteErrors []*SuiteError

func (es SuiteErrors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap gives each mistake to errors.Is and errors.As.
func (es SuiteErrors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// idPattern is what a task id may be: it names folders and report rows.
var idPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// Load reads and checks the suite file at path. Every mistake it finds is
// reported, each a *SuiteError with its line ("suite.yaml:12: task "x":
// timeout: …"); more than one come as SuiteErrors.
func Load(path string) (*Suite, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("load suite: %w", err)
	}
	b, err := os.ReadFile(abs)
	if err != nil {
		return nil, fmt.Errorf("load suite: %w", err)
	}
	s, err := parse(b, path, filepath.Dir(abs))
	if err != nil {
		return nil, err
	}
	s.Path = abs
	return s, nil
}

// parse reads a suite from b. name is the file as the errors call it; dir
// is where relative fixtures are looked up.
func parse(b []byte, name, dir string) (*Suite, error) {
	p := &parser{path: name, dir: dir}
	s := p.suite(b)
	switch len(p.errs) {
	case 0:
		return s, nil
	case 1:
		return nil, p.errs[0]
	default:
		return nil, SuiteErrors(p.errs)
	}
}

type parser struct {
	path string
	dir  string
	errs []*SuiteError
}

// errorf records a mistake at n. where prefixes the message (`task "x"`).
func (p *parser) errorf(n *yaml.Node, where, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if where != "" {
		msg = where + ": " + msg
	}
	e := &SuiteError{Path: p.path, Msg: msg}
	if n != nil {
		e.Line, e.Col = n.Line, n.Column
	}
	p.errs = append(p.errs, e)
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

func (p *parser) suite(b []byte) *Suite {
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		e := &SuiteError{Path: p.path, Msg: strings.TrimPrefix(err.Error(), "yaml: ")}
		if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
			e.Line, _ = strconv.Atoi(m[1])
			e.Msg = m[2]
			if lines := strings.Split(string(b), "\n"); e.Line <= len(lines) && strings.Contains(lines[e.Line-1], "\t") {
				e.Msg += " (a tab? YAML indents with spaces)"
			}
		}
		p.errs = append(p.errs, e)
		return nil
	}
	if len(doc.Content) == 0 {
		p.errorf(nil, "", "the suite is empty: it needs at least tasks")
		return nil
	}
	root := resolve(doc.Content[0])
	f := p.fields(root, "", "name", "models", "repeat", "defaults", "tasks")
	if f == nil {
		return nil
	}
	s := &Suite{Dir: p.dir}
	s.Name = p.str(f.get("name"), "", "name")
	if s.Name == "" {
		base := filepath.Base(p.path)
		s.Name = strings.TrimSuffix(base, filepath.Ext(base))
	}
	s.Models = p.models(f.get("models"))
	if n := f.get("repeat"); n != nil {
		if s.Repeat = p.integer(n, "", "repeat"); s.Repeat < 1 && p.ok(n) {
			p.errorf(n, "", "repeat must be at least 1")
		}
	}
	s.Defaults = p.defaults(f.get("defaults"))

	tn := f.get("tasks")
	if tn == nil {
		p.errorf(root, "", "no tasks: add a tasks: list")
		return s
	}
	if tn.Kind != yaml.SequenceNode || len(tn.Content) == 0 {
		p.errorf(tn, "", "tasks must be a list of tasks, each with id, prompt and check")
		return s
	}
	seen := map[string]int{}
	for i, n := range tn.Content {
		t, ok := p.task(resolve(n), i+1, s.Defaults)
		if !ok {
			continue
		}
		if line, dup := seen[t.ID]; dup {
			p.errorf(n, fmt.Sprintf("task %q", t.ID), "duplicate id (first at line %d)", line)
			continue
		}
		seen[t.ID] = n.Line
		s.Tasks = append(s.Tasks, t)
	}
	return s
}

// ok reports whether no mistake has been recorded at n, so that a value
// already found wrong is not reported twice.
func (p *parser) ok(n *yaml.Node) bool {
	for _, e := range p.errs {
		if e.Line == n.Line && e.Col == n.Column {
			return false
		}
	}
	return true
}

func (p *parser) models(n *yaml.Node) []string {
	if n == nil {
		return nil
	}
	var models []string
	switch n.Kind {
	case yaml.ScalarNode: // "sonnet,haiku"
		for m := range strings.SplitSeq(n.Value, ",") {
			if m = strings.TrimSpace(m); m != "" {
				models = append(models, m)
			}
		}
	case yaml.SequenceNode:
		models = p.strList(n, "", "models")
	default:
		p.errorf(n, "", "models must be a list of model names")
		return nil
	}
	for i, m := range models {
		if slices.Contains(models[:i], m) {
			p.errorf(n, "", "model %q is listed twice", m)
		}
	}
	return models
}

func (p *parser) defaults(n *yaml.Node) TaskDefaults {
	d := TaskDefaults{CheckTimeout: DefaultCheckTimeout, SetupTimeout: DefaultSetupTimeout}
	if n == nil {
		return d
	}
	const where = "defaults"
	f := p.fields(n, where, "timeout", "check-timeout", "setup-timeout", "setup", "max-turns", "max-cost",
		"token-limit", "cost-limit")
	if f == nil {
		return d
	}
	if v := f.get("timeout"); v != nil {
		d.Timeout = p.duration(v, where, "timeout")
	}
	if v := f.get("check-timeout"); v != nil {
		d.CheckTimeout = p.duration(v, where, "check-timeout")
	}
	if v := f.get("setup-timeout"); v != nil {
		d.SetupTimeout = p.duration(v, where, "setup-timeout")
	}
	d.Setup = p.commands(f.get("setup"), where)
	d.MaxTurns = p.nonNegInt(f.get("max-turns"), where, "max-turns")
	d.MaxCostUSD = p.nonNegFloat(f.get("max-cost"), where, "max-cost")
	d.TokenLimit = int64(p.nonNegInt(f.get("token-limit"), where, "token-limit"))
	d.CostLimitUSD = p.nonNegFloat(f.get("cost-limit"), where, "cost-limit")
	return d
}

func (p *parser) task(n *yaml.Node, num int, d TaskDefaults) (Task, bool) {
	before := len(p.errs)
	where := fmt.Sprintf("task %d", num)
	if id := peekID(n); id != "" {
		where = fmt.Sprintf("task %q", id)
	}
	f := p.fields(n, where, "id", "prompt", "fixture", "git", "setup", "setup-timeout", "check", "timeout",
		"tags", "max-turns", "max-cost", "token-limit", "cost-limit", "hide", "protect", "oracle", "tries", "retry-prompt")
	if f == nil {
		return Task{}, false
	}
	t := Task{
		Timeout: d.Timeout, SetupTimeout: d.SetupTimeout, Setup: d.Setup,
		MaxTurns: d.MaxTurns, MaxCostUSD: d.MaxCostUSD, TokenLimit: d.TokenLimit, CostLimitUSD: d.CostLimitUSD,
	}
	if idn := f.get("id"); idn == nil {
		p.errorf(n, where, "missing id")
	} else if t.ID = p.str(idn, where, "id"); t.ID != "" {
		if !idPattern.MatchString(t.ID) {
			p.errorf(idn, where, "id %q: use letters, digits, '.', '_' and '-' (it names folders)", t.ID)
		}
	}
	if pn := f.get("prompt"); pn == nil {
		p.errorf(n, where, "missing prompt")
	} else if t.Prompt = strings.TrimSpace(p.str(pn, where, "prompt")); t.Prompt == "" && p.ok(pn) {
		p.errorf(pn, where, "prompt is empty")
	}
	if fn := f.get("fixture"); fn != nil {
		t.Fixture = p.fixture(fn, where)
	}
	if gn := f.get("git"); gn != nil {
		if f.get("fixture") != nil {
			p.errorf(gn, where, "give a fixture or git, not both")
		}
		t.Git = p.git(gn, where)
	}
	if v := f.get("setup"); v != nil {
		t.Setup = p.commands(v, where)
	}
	if v := f.get("setup-timeout"); v != nil {
		t.SetupTimeout = p.duration(v, where, "setup-timeout")
	}
	if v := f.get("timeout"); v != nil {
		t.Timeout = p.duration(v, where, "timeout")
	}
	if v := f.get("tags"); v != nil {
		t.Tags = p.strList(v, where, "tags")
	}
	if v := f.get("max-turns"); v != nil {
		t.MaxTurns = p.nonNegInt(v, where, "max-turns")
	}
	if v := f.get("max-cost"); v != nil {
		t.MaxCostUSD = p.nonNegFloat(v, where, "max-cost")
	}
	if v := f.get("token-limit"); v != nil {
		t.TokenLimit = int64(p.nonNegInt(v, where, "token-limit"))
	}
	if v := f.get("cost-limit"); v != nil {
		t.CostLimitUSD = p.nonNegFloat(v, where, "cost-limit")
	}
	p.solving(f, &t, where)
	if cn := f.get("check"); cn == nil {
		p.errorf(n, where, "missing check: give a command (e.g. go test ./...) or files that must exist")
	} else {
		t.Check = p.check(cn, where, d.CheckTimeout)
	}
	return t, len(p.errs) == before
}

// solving reads what a task says about its solving beyond the prompt: the
// paths hidden from the agent and put back before each check, the oracle's
// commands, and how many tries it gets.
func (p *parser) solving(f *fieldSet, t *Task, where string) {
	if v := f.get("hide"); v != nil {
		t.Hide = p.relPaths(v, where, "hide")
	}
	if v := f.get("protect"); v != nil {
		t.Protect = p.relPaths(v, where, "protect")
	}
	if v := f.get("oracle"); v != nil {
		t.Oracle = p.commands(v, where)
	}
	if v := f.get("tries"); v != nil {
		t.Tries = p.nonNegInt(v, where, "tries")
	}
	if v := f.get("retry-prompt"); v != nil {
		t.RetryPrompt = p.str(v, where, "retry-prompt")
	}
}

// relPaths is a list of paths inside the task's folder.
func (p *parser) relPaths(n *yaml.Node, where, key string) []string {
	paths := p.strList(n, where, key)
	for _, s := range paths {
		if c := filepath.Clean(s); filepath.IsAbs(s) || c == ".." || strings.HasPrefix(c, "../") || c == "." {
			p.errorf(n, where, "%s: %q is not a path inside the task's folder", key, s)
		}
	}
	return paths
}

func (p *parser) fixture(n *yaml.Node, where string) string {
	fx := p.str(n, where, "fixture")
	if fx == "" {
		if p.ok(n) {
			p.errorf(n, where, "fixture is empty")
		}
		return ""
	}
	full := fx
	if !filepath.IsAbs(full) {
		full = filepath.Join(p.dir, fx)
	}
	switch st, err := os.Stat(full); {
	case errors.Is(err, os.ErrNotExist):
		p.errorf(n, where, "fixture %q: no such folder (looked for %s)", fx, full)
	case err != nil:
		p.errorf(n, where, "fixture %q: %v", fx, err)
	case !st.IsDir():
		p.errorf(n, where, "fixture %q is not a folder", fx)
	}
	return fx
}

// peekID is the id a task mapping gives, if it gives a plausible one, to
// name the task in errors about its other fields.
func peekID(n *yaml.Node) string {
	if n.Kind != yaml.MappingNode {
		return ""
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k, v := n.Content[i], resolve(n.Content[i+1]); k.Value == "id" && v.Kind == yaml.ScalarNode &&
			idPattern.MatchString(v.Value) {
			return v.Value
		}
	}
	return ""
}

// scpLike is git's user@host:path form of a remote.
var scpLike = regexp.MustCompile(`^[A-Za-z0-9._-]+@[A-Za-z0-9._-]+:`)

func (p *parser) git(n *yaml.Node, where string) *GitSource {
	where += ": git"
	f := p.fields(n, where, "repo", "rev")
	if f == nil {
		return nil
	}
	g := &GitSource{Rev: p.str(f.get("rev"), where, "rev")}
	rn := f.get("repo")
	if rn == nil {
		p.errorf(n, where, "missing repo")
		return g
	}
	g.Repo = p.str(rn, where, "repo")
	switch {
	case g.Repo == "":
		if p.ok(rn) {
			p.errorf(rn, where, "repo is empty")
		}
	case strings.Contains(g.Repo, "://") || scpLike.MatchString(g.Repo):
		// a remote: cloned as given
	default:
		if !filepath.IsAbs(g.Repo) {
			g.Repo = filepath.Join(p.dir, g.Repo)
		}
		if _, err := os.Stat(g.Repo); err != nil {
			p.errorf(rn, where, "repo %s: no such folder", g.Repo)
		}
	}
	return g
}

func (p *parser) check(n *yaml.Node, where string, timeout time.Duration) Check {
	c := Check{Timeout: timeout}
	where += ": check"
	if n.Kind == yaml.ScalarNode { // check: go test ./...
		if c.Command = strings.TrimSpace(n.Value); c.Command == "" {
			p.errorf(n, where, "empty: give a command or files")
		}
		return c
	}
	before := len(p.errs)
	f := p.fields(n, where, "command", "files", "timeout", "environment-errors")
	if f == nil {
		return c
	}
	if v := f.get("environment-errors"); v != nil {
		c.EnvironmentErrors = p.strList(v, where, "environment-errors")
		for _, e := range c.EnvironmentErrors {
			if _, err := regexp.Compile(e); err != nil {
				p.errorf(v, where, "environment-errors: %v", err)
			}
		}
	}
	c.Command = strings.TrimSpace(p.str(f.get("command"), where, "command"))
	if v := f.get("timeout"); v != nil {
		c.Timeout = p.duration(v, where, "timeout")
	}
	if fn := f.get("files"); fn != nil {
		if fn.Kind != yaml.SequenceNode {
			p.errorf(fn, where, "files must be a list of paths or of {path, contains, matches}")
		} else {
			for _, e := range fn.Content {
				if fc, ok := p.fileCheck(resolve(e), where+": files"); ok {
					c.Files = append(c.Files, fc)
				}
			}
		}
	}
	if c.Command == "" && len(c.Files) == 0 && len(p.errs) == before {
		p.errorf(n, where, "give a command or files (or both)")
	}
	return c
}

func (p *parser) fileCheck(n *yaml.Node, where string) (FileCheck, bool) {
	var fc FileCheck
	pathNode := n
	if n.Kind == yaml.ScalarNode {
		fc.Path = n.Value
	} else {
		f := p.fields(n, where, "path", "contains", "matches")
		if f == nil {
			return fc, false
		}
		if pathNode = f.get("path"); pathNode == nil {
			p.errorf(n, where, "missing path")
			return fc, false
		}
		fc.Path = p.str(pathNode, where, "path")
		fc.Contains = p.str(f.get("contains"), where, "contains")
		if mn := f.get("matches"); mn != nil {
			fc.Matches = p.str(mn, where, "matches")
			if _, err := regexp.Compile(fc.Matches); err != nil {
				p.errorf(mn, where, "matches: %v", err)
				return fc, false
			}
		}
	}
	clean := filepath.Clean(fc.Path)
	if fc.Path == "" || filepath.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, "../") {
		p.errorf(pathNode, where, "path %q must be relative to the attempt's folder and stay inside it", fc.Path)
		return fc, false
	}
	fc.Path = clean
	return fc, true
}

// fieldSet is a mapping's keys and values, in the file's order.
type fieldSet struct {
	keys []string
	vals map[string]*yaml.Node
}

func (f *fieldSet) get(key string) *yaml.Node {
	if f == nil {
		return nil
	}
	return f.vals[key]
}

// fields reads the mapping n, reporting keys that are not allowed or given
// twice. Merge keys (<<: *anchor) are followed; a key set in n wins.
func (p *parser) fields(n *yaml.Node, where string, allowed ...string) *fieldSet {
	if n.Kind != yaml.MappingNode {
		p.errorf(n, where, "want a mapping (key: value lines), found %s", describe(n))
		return nil
	}
	f := &fieldSet{vals: map[string]*yaml.Node{}}
	firstLine := map[string]int{}
	var merged []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], resolve(n.Content[i+1])
		if k.Tag == "!!merge" {
			if v.Kind == yaml.SequenceNode {
				for _, m := range v.Content {
					merged = append(merged, resolve(m))
				}
			} else {
				merged = append(merged, v)
			}
			continue
		}
		if where == "" && strings.HasPrefix(k.Value, "x-") {
			continue // top-level x-… keys hold anchors for the tasks to share
		}
		if !slices.Contains(allowed, k.Value) {
			msg := fmt.Sprintf("unknown field %q", k.Value)
			if s := suggest(k.Value, allowed); s != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", s)
			} else {
				msg += " (known: " + strings.Join(allowed, ", ") + ")"
			}
			p.errorf(k, where, "%s", msg)
			continue
		}
		if line, dup := firstLine[k.Value]; dup {
			p.errorf(k, where, "%s given twice (first at line %d)", k.Value, line)
			continue
		}
		firstLine[k.Value] = k.Line
		f.keys = append(f.keys, k.Value)
		f.vals[k.Value] = v
	}
	for _, m := range merged {
		if m.Kind != yaml.MappingNode {
			p.errorf(m, where, "<< must merge a mapping")
			continue
		}
		mf := p.fields(m, where, allowed...)
		for _, k := range mf.keysOrNil() {
			if _, set := f.vals[k]; !set {
				f.keys = append(f.keys, k)
				f.vals[k] = mf.vals[k]
			}
		}
	}
	return f
}

func (f *fieldSet) keysOrNil() []string {
	if f == nil {
		return nil
	}
	return f.keys
}

// resolve follows an alias to what it names.
func resolve(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "a list"
	case yaml.MappingNode:
		return "a mapping"
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return "nothing"
		}
		return fmt.Sprintf("%q", n.Value)
	}
	return "something else"
}

// str is the text of the scalar n ("" for nil or null).
func (p *parser) str(n *yaml.Node, where, field string) string {
	if n == nil || n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return ""
	}
	if n.Kind != yaml.ScalarNode {
		p.errorf(n, where, "%s must be text, found %s", field, describe(n))
		return ""
	}
	return n.Value
}

func (p *parser) strList(n *yaml.Node, where, field string) []string {
	if n.Kind != yaml.SequenceNode {
		p.errorf(n, where, "%s must be a list, found %s", field, describe(n))
		return nil
	}
	var out []string
	for _, e := range n.Content {
		if s := strings.TrimSpace(p.str(resolve(e), where, field)); s != "" {
			out = append(out, s)
		} else if p.ok(e) {
			p.errorf(e, where, "%s: empty entry", field)
		}
	}
	return out
}

// commands is a setup list: one command or a list of them.
func (p *parser) commands(n *yaml.Node, where string) []string {
	if n == nil {
		return nil
	}
	if n.Kind == yaml.ScalarNode {
		if s := strings.TrimSpace(n.Value); s != "" {
			return []string{s}
		}
		return nil
	}
	return p.strList(n, where, "setup")
}

func (p *parser) integer(n *yaml.Node, where, field string) int {
	var v int
	if n.Kind != yaml.ScalarNode || n.Tag != "!!int" || n.Decode(&v) != nil {
		p.errorf(n, where, "%s must be a whole number, found %s", field, describe(n))
	}
	return v
}

func (p *parser) nonNegInt(n *yaml.Node, where, field string) int {
	if n == nil {
		return 0
	}
	v := p.integer(n, where, field)
	if v < 0 {
		p.errorf(n, where, "%s must not be negative", field)
	}
	return v
}

func (p *parser) nonNegFloat(n *yaml.Node, where, field string) float64 {
	if n == nil {
		return 0
	}
	var v float64
	if n.Kind != yaml.ScalarNode || (n.Tag != "!!int" && n.Tag != "!!float") || n.Decode(&v) != nil {
		p.errorf(n, where, "%s must be a number (USD), found %s", field, describe(n))
		return 0
	}
	if v < 0 {
		p.errorf(n, where, "%s must not be negative", field)
	}
	return v
}

func (p *parser) duration(n *yaml.Node, where, field string) time.Duration {
	s := p.str(n, where, field)
	if s == "" {
		if p.ok(n) {
			p.errorf(n, where, "%s is empty", field)
		}
		return 0
	}
	d, err := time.ParseDuration(s)
	switch {
	case err != nil:
		p.errorf(n, where, "%s: bad duration %q (write it like 90s, 5m, 1h30m)", field, s)
	case d < 0:
		p.errorf(n, where, "%s must not be negative", field)
	}
	return d
}

// suggest returns the allowed key closest to k, if close enough to be a
// likely typo.
func suggest(k string, allowed []string) string {
	norm := strings.ReplaceAll(strings.ToLower(k), "_", "-")
	best, bestD := "", 3
	for _, a := range allowed {
		if a == norm {
			return a
		}
		if d := editDistance(norm, a); d < bestD {
			best, bestD = a, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
