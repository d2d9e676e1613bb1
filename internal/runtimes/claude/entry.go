package claude

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/lanehq/lane/internal/approval"
	"github.com/lanehq/lane/internal/pricing"
	"github.com/lanehq/lane/internal/record"
	"github.com/lanehq/lane/internal/runner"
	"github.com/lanehq/lane/internal/runtimes/claude/streamjson"
	"github.com/lanehq/lane/internal/runtimes/descriptor"
)

// Runtime is Claude Code, driven headless:
// `claude -p --output-format stream-json --verbose … -- TASK`, or, in an
// interactive run, two-way: `claude -p --input-format stream-json
// --output-format stream-json --verbose …` with the task, the answers to
// its permission requests and people's messages on stdin (see
// claudeDialog).
func Runtime() *runner.Runtime {
	return &runner.Runtime{
		Descriptor: descriptor.Descriptor{
			Name: "claude", Title: "Claude Code", Package: "@anthropic-ai/claude-code",
			DefaultModel: "sonnet", Fallback: true,
			ModelProvider: "anthropic",
			AccountEnv:    "CLAUDE_CONFIG_DIR", AccountDir: ".claude",
		},
		Describe: streamjson.Call,
		Edits:    streamjson.Edits,
		Process: &runner.Process{
			Binary: runner.BinarySpec{
				Extra: []string{
					filepath.Join(".claude", "local", "claude"),
					filepath.Join(".claude", "local", "node_modules", ".bin", "claude"),
				},
				VersionOK: func(out string) bool { return strings.Contains(out, "Claude Code") },
				Want:      `"Claude Code"`,
			},
			Setup: func(o runner.Options, _ string) (runner.Setup, error) {
				return runner.Setup{Args: ClaudeArgs(o)}, nil
			},
			CleanEnv:     ClaudeEnv,
			Hermetic:     claudeHermetic,
			ContainerEnv: []string{"ANTHROPIC_", "CLAUDE_", "DISABLE_", "IS_SANDBOX=", "MAX_THINKING_TOKENS="},
			NewSource: func(r io.Reader) runner.EventSource {
				d := streamjson.NewDecoder(r)
				d.MaxOutputSize = runner.MaxEventOutput
				return d
			},
			NewJudge:  func(o runner.Options) runner.Judge { return &claudeJudge{o: o} },
			NewDialog: newClaudeDialog,
			TakesMCP:  runner.EveryRun, // --mcp-config
			Final:     func(ev record.Event) bool { return ev.Kind == record.KindResult },
			// Claude Code retries a refused key for minutes; the first
			// refusal is enough to know. (Its final word on a refusal is
			// left to the judge, which weighs the result's fields.)
			StopOn: func(ev record.Event) error {
				if ev.Kind == record.KindRetry {
					return runner.AuthRefusal(ev)
				}
				return nil
			},
			AuthHint: streamjson.AuthHint,
			Capability: func(o runner.Options) record.Capability {
				return record.Capability{
					Dir: o.Dir, AddDirs: o.AddDirs, AllowedTools: o.AllowedTools,
					PermissionMode: o.PermissionMode, MCPIsolated: !o.AllowMCP,
				}
			},
		},
	}
}

// ClaudeArgs builds the command line for one Claude Code invocation. The
// task goes last, after "--", so that a task starting with "-" is not read
// as a flag; in an interactive run it goes on stdin instead.
func ClaudeArgs(o runner.Options) []string {
	args := []string{"-p", "--output-format", "stream-json", "--verbose"}
	if o.Interactive() {
		args = []string{"-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose"}
	}
	if o.Model != "" {
		args = append(args, "--model", o.Model)
	}
	args = append(args, "--add-dir", o.Dir)
	for _, d := range o.AddDirs {
		args = append(args, "--add-dir", d)
	}
	switch {
	case o.Interactive():
		// Said even when it is lane's default: Claude Code's own would ask.
		args = append(args, "--permission-mode", string(o.Mode()))
	case o.PermissionMode != "":
		args = append(args, "--permission-mode", o.PermissionMode)
	}
	asks := o.Interactive() && claudeAsks(o.Mode())
	if asks {
		// Claude Code's questions come to lane as control requests.
		args = append(args, "--permission-prompt-tool", "stdio")
	}
	switch {
	case len(o.AllowedTools) > 0 && asks:
		// The model must see the tools it may ask for: the rules only spare
		// the asking.
		args = append(args, "--allowedTools", strings.Join(o.AllowedTools, ","))
	case len(o.AllowedTools) > 0:
		// --allowedTools only spares permission prompts (and bypassPermissions
		// spares them all); --tools is what limits the tools the model sees.
		args = append(args, "--tools", strings.Join(toolNames(o.AllowedTools), ","),
			"--allowedTools", strings.Join(o.AllowedTools, ","))
	}
	if len(o.DenyRules) > 0 {
		args = append(args, "--disallowedTools", strings.Join(o.DenyRules, ","))
	}
	if !o.AllowMCP {
		args = append(args, "--strict-mcp-config")
	}
	if cfg := mcpConfig(o.MCPServers); cfg != "" {
		args = append(args, "--mcp-config", cfg)
	}
	if o.AppendSystemPrompt != "" {
		args = append(args, "--append-system-prompt", o.AppendSystemPrompt)
	}
	if o.HermeticHome != "" {
		// The user's settings (and with them hooks and plugins) stay out;
		// the folder's own are part of the task.
		args = append(args, "--setting-sources", "project,local")
	}
	if o.ResumeSession != "" {
		args = append(args, "--resume", o.ResumeSession)
	}
	if o.MaxTurns > 0 {
		args = append(args, "--max-turns", strconv.Itoa(o.MaxTurns))
	}
	if o.Interactive() {
		return args
	}
	return append(args, "--", o.Prompt)
}

// claudeAsks reports whether Claude Code may ask a person in mode: default
// and acceptEdits for what the rules leave open, plan to leave plan mode
// (its ExitPlanMode tool asks whatever the rules say).
func claudeAsks(mode approval.Mode) bool { return mode.Asks() || mode == approval.ModePlan }

// toolNames reduces permission rules such as "Bash(git *)" to the tool
// names they concern, each once.
func toolNames(rules []string) []string {
	var names []string
	seen := map[string]bool{}
	for _, r := range rules {
		name, _, _ := strings.Cut(r, "(")
		name = strings.TrimSpace(name)
		if name != "" && !seen[name] {
			seen[name] = true
			names = append(names, name)
		}
	}
	return names
}

// claudeUserSetup are what Claude Code reads from the user's configuration
// folder that a hermetic run leaves out: instructions, settings (and the
// hooks in them), plugins, skills, subagents, commands, output styles.
func claudeUserSetup() []string {
	return []string{
		"CLAUDE.md", "settings.json", "settings.local.json", "hooks", "plugins", "skills", "agents", "commands",
		"output-styles",
	}
}

// claudeHermetic gives a hermetic run a configuration folder of its own
// (CLAUDE_CONFIG_DIR) in home, holding only the user's login: a
// subscription's .credentials.json. ~/.claude.json (the user's MCP servers
// and per-project settings) stays out with it. A key in the environment
// (ANTHROPIC_API_KEY, CLAUDE_CODE_OAUTH_TOKEN) passes as it does for any
// run.
func claudeHermetic(o runner.Options, env []string) (add, excluded []string, err error) {
	user := runner.UserDir(env, "CLAUDE_CONFIG_DIR", ".claude")
	dir, excluded, err := runner.HermeticConfig(o.HermeticHome, "claude", user, []string{".credentials.json"}, claudeUserSetup())
	if err != nil {
		return nil, nil, err
	}
	if h := runner.LookupEnv(env, "HOME"); h != "" && runner.LookupEnv(env, "CLAUDE_CONFIG_DIR") == "" {
		if _, err := os.Lstat(filepath.Join(h, ".claude.json")); err == nil {
			excluded = append(excluded, ".claude.json")
		}
	}
	return []string{"CLAUDE_CONFIG_DIR=" + dir}, excluded, nil
}

// ClaudeEnv is env without the variables that make Claude Code believe it
// runs nested inside another Claude Code session.
func ClaudeEnv(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		if strings.HasPrefix(kv, "CLAUDECODE=") {
			continue
		}
		out = append(out, kv)
	}
	return out
}

// rootRefusal is what Claude Code prints when run as root with
// bypassPermissions outside a sandbox.
const rootRefusal = "cannot be used with root/sudo privileges"

// claudeJudge reads Claude Code's account of a run.
type claudeJudge struct {
	o     runner.Options
	tally streamjson.Tally

	// An interactive run: who interrupted the turn under way; whether the
	// last result ended an interrupted turn that no message followed (cut),
	// and the last result of a turn that was not interrupted (whole).
	interruptBy string
	cut         bool
	cutBy       string
	whole       *record.Result
}

func (j *claudeJudge) Observe(ev record.Event) {
	j.tally.Observe(ev)
	switch {
	case ev.Kind == record.KindInterrupt:
		j.interruptBy = ev.By
	case ev.Kind == record.KindUserMessage:
		j.cut, j.interruptBy = false, "" // a new turn begins
	case ev.Kind == record.KindResult && ev.ParentToolUseID == "" && ev.Result != nil:
		j.cut, j.cutBy = j.interruptBy != "", j.interruptBy
		if !j.cut {
			j.whole = ev.Result
		}
		j.interruptBy = ""
	}
}

// Judge weighs the runtime's account against its exit code. A run whose
// last turn a person interrupted, with no message after, ended as that
// person left it: with the last whole turn's result, else cancelled.
func (j *claudeJudge) Judge(run *record.Run, ex runner.Exit) {
	tally := &j.tally
	if tally.LastResult() == nil && stderrHas(ex.StderrTail, rootRefusal) {
		run.Status, run.ErrorKind = record.StatusFailed, record.ErrorPermission
		run.ErrorMessage = "Claude Code refuses --permission-mode bypassPermissions when run as root"
		run.ErrorHint = "set IS_SANDBOX=1 if this machine is a sandbox, or pass another --permission-mode (e.g. acceptEdits)"
		return
	}
	if j.cut {
		if j.whole != nil && j.whole.Subtype == "success" && !j.whole.IsError {
			run.Status = record.StatusSucceeded
			return
		}
		run.Status, run.ErrorKind = record.StatusCancelled, record.ErrorCancelled
		run.ErrorMessage = fmt.Sprintf("the turn was interrupted (by %s) and no message followed within %s", orSomeone(j.cutBy), j.o.LingerWait())
		return
	}
	runner.ApplyVerdict(run, tally.Judge(ex.Code), ex)
}

func orSomeone(by string) string {
	if by == "" {
		return "a person"
	}
	return by
}

func stderrHas(lines []string, s string) bool {
	for _, l := range lines {
		if strings.Contains(l, s) {
			return true
		}
	}
	return false
}

func (j *claudeJudge) Account(run *record.Run, _ int) {
	tally := &j.tally
	if id := tally.SessionID(); id != "" {
		run.SessionID = id
	}
	run.Usage = tally.Usage()
	run.Turns = tally.Turns()
	run.ToolCalls = tally.ToolCalls()
	price := j.o.Price
	if price == nil {
		price = pricing.Default().Cost
	}
	run.CostUSD, run.CostEstimate, run.SessionCostUSD = tally.Cost(j.o.PriorSessionCostUSD, price)
	res := tally.LastResult()
	if j.cut && j.whole != nil {
		res = j.whole // what the interrupted turn left is no result
	}
	if res != nil {
		run.ResultText = res.Text
		run.PermissionDenials = res.PermissionDenials
	}
}

// mcpConfig is servers as Claude Code's --mcp-config JSON, "" for none.
func mcpConfig(servers []runner.MCPServer) string {
	if len(servers) == 0 {
		return ""
	}
	type server struct {
		Type    string            `json:"type,omitempty"`
		Command string            `json:"command,omitempty"`
		Args    []string          `json:"args,omitempty"`
		Env     map[string]string `json:"env,omitempty"`
		URL     string            `json:"url,omitempty"`
		Headers map[string]string `json:"headers,omitempty"`
	}
	all := map[string]server{}
	for _, s := range servers {
		sv := server{Command: s.Command, Args: s.Args, Env: s.Env, URL: s.URL, Headers: s.Headers}
		if s.Transport == "http" || s.Transport == "sse" {
			sv.Type = s.Transport
		}
		all[s.Name] = sv
	}
	b, _ := json.Marshal(map[string]any{"mcpServers": all})
	return string(b)
}
