// Package record defines what lane records: a run and the normalized events of
// its runtime. Every other package speaks these types; this one imports nothing
// of lane's.
package record

import (
	"encoding/json"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// Kind is the normalized kind of an event. The set is small and closed; anything
// a runtime prints that lane does not understand becomes KindRaw.
type Kind string

const (
	KindSession    Kind = "session"     // runtime started a session (id, model, cwd, tools, version)
	KindText       Kind = "text"        // assistant text
	KindThinking   Kind = "thinking"    // assistant reasoning
	KindToolCall   Kind = "tool_call"   // the agent called a tool (ToolUseID, ToolName, Input)
	KindToolResult Kind = "tool_result" // a tool finished (ToolUseID, Output, IsError)
	KindToolOutput Kind = "tool_output" // live output of a running tool (ToolUseID, Output)
	KindUsage      Kind = "usage"       // token usage of one API response (MessageID, Usage)
	KindRetry      Kind = "retry"       // the runtime retries an API call (Retry)
	KindCompact    Kind = "compact"     // the runtime compacted its context
	KindTask       Kind = "task"        // background/subagent task lifecycle (Subtype, Text)
	KindResult     Kind = "result"      // the runtime's final word (Result)
	KindError      Kind = "error"       // an error, from the runtime or from lane (Text, Error)
	KindStderr     Kind = "stderr"      // one line the runtime wrote to stderr (Text)
	KindRaw        Kind = "raw"         // a line lane could not normalize, kept as is
	KindDelta      Kind = "delta"       // a partial message fragment (Text holds a text/thinking delta)
	KindTodo       Kind = "todo"        // the agent's plan changed (Text: the rendered list)
	KindTranscript Kind = "transcript"  // the local loop's whole conversation (Raw: JSON), kept for resume
	KindRateLimit  Kind = "rate_limit"  // a subscription's usage limits as the API reported them (RateLimit)

	// A person in the loop (interactive runs).
	KindPermissionRequest  Kind = "permission_request"  // a tool call waits for a person (Permission, ToolUseID, ToolName, Input)
	KindPermissionDecision Kind = "permission_decision" // how it was answered (Permission)
	KindUserMessage        Kind = "user_message"        // a person's follow-up message reached the runtime (Text, By)
	KindInterrupt          Kind = "interrupt"           // a person stopped the current turn (By)
)

// Permission is a request for a person's approval of a tool call, or its
// answer.
type Permission struct {
	ID      string `json:"id"`
	Summary string `json:"summary,omitempty"` // request: the command or path, one line
	// decision
	Allow    bool   `json:"allow,omitempty"`
	Always   bool   `json:"always,omitempty"`
	By       string `json:"by,omitempty"` // terminal, dashboard, cli, rule, timeout, lane
	Message  string `json:"message,omitempty"`
	WaitedMS int64  `json:"waited_ms,omitempty"`
}

// PermissionCounts are a run's requests for approval and their answers.
type PermissionCounts struct {
	Requests int `json:"requests"`
	Allowed  int `json:"allowed"`
	Denied   int `json:"denied"`
}

// Usage counts tokens. Cache reads and cache creation are kept apart from
// plain input because they are priced differently.
type Usage struct {
	InputTokens         int64 `json:"input_tokens"`
	OutputTokens        int64 `json:"output_tokens"`
	CacheReadTokens     int64 `json:"cache_read_tokens"`
	CacheCreationTokens int64 `json:"cache_creation_tokens"`
	// CacheCreation1hTokens is the part of CacheCreationTokens written to
	// the 1-hour cache (the rest went to the 5-minute one), which costs more.
	CacheCreation1hTokens int64 `json:"cache_creation_1h_tokens,omitempty"`
}

// Add returns the sum of two usages.
func (u Usage) Add(o Usage) Usage {
	return Usage{
		InputTokens:           u.InputTokens + o.InputTokens,
		OutputTokens:          u.OutputTokens + o.OutputTokens,
		CacheReadTokens:       u.CacheReadTokens + o.CacheReadTokens,
		CacheCreationTokens:   u.CacheCreationTokens + o.CacheCreationTokens,
		CacheCreation1hTokens: u.CacheCreation1hTokens + o.CacheCreation1hTokens,
	}
}

// Prompt is how many tokens the request sent: plain input, cache reads and
// cache writes; for one model call, how full its context was.
func (u Usage) Prompt() int64 { return u.InputTokens + u.CacheReadTokens + u.CacheCreationTokens }

// Total is all four kinds of tokens: input, output, cache reads and
// cache writes (what --token-limit counts).
func (u Usage) Total() int64 {
	return u.InputTokens + u.OutputTokens + u.CacheReadTokens + u.CacheCreationTokens
}

// IsZero reports whether no tokens were counted.
func (u Usage) IsZero() bool { return u == Usage{} }

// Retry describes one API retry announced by the runtime.
type Retry struct {
	Attempt     int    `json:"attempt"`
	MaxRetries  int    `json:"max_retries,omitempty"`
	DelayMS     int64  `json:"delay_ms,omitempty"`
	ErrorStatus int    `json:"error_status,omitempty"` // HTTP status, 0 when none (e.g. a timeout)
	Error       string `json:"error,omitempty"`
}

// Limit statuses, as Anthropic's API says them: a window (or the account
// as a whole) is allowed, allowed but near its limit, or refusing
// requests until it resets.
const (
	LimitAllowed  = "allowed"
	LimitWarning  = "allowed_warning"
	LimitRejected = "rejected"
)

// RateLimit is one report of a subscription's usage limits, as the model
// API sent it with a response and the runtime passed it on.
type RateLimit struct {
	// Runtime and Account say whose limits these are: the runtime and the
	// identity of the login it used (its config folder, never a secret).
	// lane fills them in; the runtime's line does not say.
	Runtime string `json:"runtime,omitempty"`
	Account string `json:"account,omitempty"`
	// Status is the account's as a whole; Window is the window that
	// decides it (five_hour, seven_day…) and ResetsAt when that one resets.
	Status   string        `json:"status"`
	Window   string        `json:"window,omitempty"`
	ResetsAt time.Time     `json:"resets_at,omitzero"`
	Windows  []LimitWindow `json:"windows,omitempty"`
	// Overage is the status of paying beyond the limit ("rejected" when
	// the account may not).
	Overage string `json:"overage,omitempty"`
}

// LimitWindow is the state of one usage window of an account.
type LimitWindow struct {
	Name        string    `json:"name"`        // five_hour, seven_day, seven_day_opus…
	Utilization float64   `json:"utilization"` // the share used, 0 to 1
	Status      string    `json:"status,omitempty"`
	ResetsAt    time.Time `json:"resets_at,omitzero"`
}

// Limit is the newest state of one usage window of an account, as lane's
// ledger keeps it: what a run last reported of it.
type Limit struct {
	Runtime     string    `json:"runtime"`
	Account     string    `json:"account"`
	Window      string    `json:"window"`
	Utilization float64   `json:"utilization"`
	Status      string    `json:"status"`
	ResetsAt    time.Time `json:"resets_at,omitzero"`
	UpdatedAt   time.Time `json:"updated_at"`
	RunID       string    `json:"run_id"`
}

// Refusing says whether the window refuses requests at now: it said
// rejected and has not reset since.
func (l Limit) Refusing(now time.Time) bool {
	return l.Status == LimitRejected && (l.ResetsAt.IsZero() || now.Before(l.ResetsAt))
}

// Refused says whether the report refuses requests.
func (r *RateLimit) Refused() bool { return r != nil && r.Status == LimitRejected }

// Binding is the window the report is about: the one that refuses, else
// the one named as deciding, else the fullest.
func (r *RateLimit) Binding() LimitWindow {
	var named, fullest LimitWindow
	for _, w := range r.Windows {
		if w.Status == LimitRejected {
			return w
		}
		if w.Name == r.Window {
			named = w
		}
		if fullest.Name == "" || w.Utilization > fullest.Utilization {
			fullest = w
		}
	}
	switch {
	case named.Name != "":
		return named
	case r.Window == "" && fullest.Name != "":
		return fullest
	}
	return LimitWindow{Name: r.Window, Status: r.Status, ResetsAt: r.ResetsAt}
}

// MergeLimits is the last state of each window: was, updated by the
// windows of a newer report.
func MergeLimits(was []LimitWindow, report []LimitWindow) []LimitWindow {
	out := append([]LimitWindow(nil), was...)
	for _, w := range report {
		i := slices.IndexFunc(out, func(o LimitWindow) bool { return o.Name == w.Name })
		if i < 0 {
			out = append(out, w)
		} else {
			out[i] = w
		}
	}
	return out
}

// Result is the runtime's own account of how a run ended. lane does not take
// it at its word: runner decides the run's Status from it and the exit code.
type Result struct {
	Subtype        string   `json:"subtype,omitempty"` // success, error_max_turns, error_during_execution, …
	IsError        bool     `json:"is_error"`
	TerminalReason string   `json:"terminal_reason,omitempty"`
	StopReason     string   `json:"stop_reason,omitempty"`
	APIErrorStatus int      `json:"api_error_status,omitempty"`
	Errors         []string `json:"errors,omitempty"`
	Text           string   `json:"text,omitempty"`
	// TotalCostUSD is what the runtime reports; for Claude Code it is the
	// session's running total, which grows across --resume.
	TotalCostUSD *float64 `json:"total_cost_usd,omitempty"`
	// RunCostUSD is the cost of this invocation alone when the runtime says so
	// (Claude Code's model_usage_since_last_result).
	RunCostUSD        *float64        `json:"run_cost_usd,omitempty"`
	Usage             Usage           `json:"usage"`
	NumTurns          int             `json:"num_turns"`
	DurationMS        int64           `json:"duration_ms,omitempty"`
	DurationAPIMS     int64           `json:"duration_api_ms,omitempty"`
	PermissionDenials json.RawMessage `json:"permission_denials,omitempty"`
	ModelUsage        json.RawMessage `json:"model_usage,omitempty"`
	// ContextWindow is the model's context window in tokens as the
	// runtime says it (Claude Code's modelUsage contextWindow), 0 when not.
	ContextWindow int `json:"context_window,omitempty"`
}

// Event is one normalized event of a run. Fields beyond the first few are set
// according to Kind and omitted otherwise. Raw keeps the runtime's original
// line (absent for events lane makes itself).
type Event struct {
	RunID string    `json:"run_id,omitempty"`
	Seq   int64     `json:"seq"`            // per run, from 1, strictly increasing
	Time  time.Time `json:"time"`           // when lane received it
	Kind  Kind      `json:"kind"`           //
	Line  int64     `json:"line,omitempty"` // line number in the runtime's stdout
	// Offset is the byte offset of Raw in the file it was imported from
	// (Run.Source); zero for a live run's events.
	Offset int64 `json:"offset,omitempty"`

	// Subtype is the runtime's own name for the event where it has one
	// (e.g. "init", "api_retry", "task_started").
	Subtype string `json:"subtype,omitempty"`

	SessionID       string `json:"session_id,omitempty"`
	ParentToolUseID string `json:"parent_tool_use_id,omitempty"` // set on subagent work
	MessageID       string `json:"message_id,omitempty"`

	// session
	Model   string   `json:"model,omitempty"`
	Cwd     string   `json:"cwd,omitempty"`
	Tools   []string `json:"tools,omitempty"`
	Version string   `json:"version,omitempty"`

	// text, thinking, stderr, error, task
	Text string `json:"text,omitempty"`

	// tool_call, tool_result
	ToolUseID string          `json:"tool_use_id,omitempty"`
	ToolName  string          `json:"tool_name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	Output    string          `json:"output,omitempty"`
	IsError   bool            `json:"is_error,omitempty"`
	// OutputSize is the full output's length in bytes when Output was cut
	// short (see CapOutput); the whole output is still in Raw.
	OutputSize int64 `json:"output_size,omitempty"`
	// Call is a tool_call's meaning, the same for every runtime (see Call).
	Call *Call `json:"call,omitempty"`

	Usage  *Usage  `json:"usage,omitempty"`
	Retry  *Retry  `json:"retry,omitempty"`
	Result *Result `json:"result,omitempty"`
	// rate_limit
	RateLimit *RateLimit `json:"rate_limit,omitempty"`

	// error: a machine-readable kind (see ErrorKind) beside the human Text.
	ErrorKind ErrorKind `json:"error_kind,omitempty"`

	// permission_request, permission_decision
	Permission *Permission `json:"permission,omitempty"`
	// user_message, interrupt: who sent it (terminal, dashboard, cli)
	By string `json:"by,omitempty"`

	// Raw is the runtime's line, verbatim. It is stored beside the normalized
	// form and never re-encoded, so it is excluded from the JSON payload.
	Raw []byte `json:"-"`
}

// Status is a run's state as lane judges it.
type Status string

const (
	StatusRunning     Status = "running"
	StatusSucceeded   Status = "succeeded"
	StatusFailed      Status = "failed"
	StatusCancelled   Status = "cancelled"
	StatusTimedOut    Status = "timed_out"
	StatusInterrupted Status = "interrupted" // lane's process died while the run was live
)

// Finished reports whether the status is final.
func (s Status) Finished() bool { return s != StatusRunning && s != "" }

// ErrorKind classifies why a run did not succeed, so that a person (and a
// retry policy) can act on it.
type ErrorKind string

const (
	ErrorNone           ErrorKind = ""
	ErrorAuth           ErrorKind = "auth"            // credentials refused (401/403)
	ErrorRuntimeMissing ErrorKind = "runtime_missing" // the runtime binary was not found
	ErrorTimeout        ErrorKind = "timeout"         // a lane watchdog fired
	ErrorCrash          ErrorKind = "crash"           // the runtime died or exited without a result
	ErrorAgent          ErrorKind = "agent"           // the runtime reported a failure of its own
	ErrorTurnLimit      ErrorKind = "turn_limit"      // the turn limit was reached (--max-turns, or the runtime's own)
	ErrorTokenLimit     ErrorKind = "token_limit"     // the run used more tokens than --token-limit allows
	ErrorCostLimit      ErrorKind = "cost_limit"      // the run cost more than --cost-limit allows
	ErrorAPI            ErrorKind = "api"             // the model API kept failing (5xx, overloaded)
	ErrorPermission     ErrorKind = "permission"      // the runtime refused its permission settings
	ErrorCancelled      ErrorKind = "cancelled"       // a person or a signal stopped the run
	ErrorContradiction  ErrorKind = "contradiction"   // the runtime's status fields disagree
	ErrorUsage          ErrorKind = "usage"           // lane was called wrongly
	ErrorRateLimited    ErrorKind = "rate_limited"    // a subscription's usage limit refused the request until it resets
)

// oldTurnLimit is what runs recorded before the turn limit was one of
// the three per-attempt limits (turn_limit, token_limit, cost_limit).
const oldTurnLimit = "max_turns"

// UnmarshalText reads a kind, an old record's max_turns as turn_limit.
func (k *ErrorKind) UnmarshalText(b []byte) error {
	*k = ErrorKind(b)
	if *k == oldTurnLimit {
		*k = ErrorTurnLimit
	}
	return nil
}

// A Verdict is lane's judgement of how a run ended, as a runtime's decoder
// reads it from the runtime's own account and exit code.
type Verdict struct {
	Status    Status
	ErrorKind ErrorKind
	Message   string // what went wrong, for a person
	Hint      string // what to do about it
	// Contradiction names the runtime's fields that disagreed, e.g.
	// "subtype=success but is_error=true, terminal_reason=api_error".
	Contradiction string
}

// RateLimitedVerdict is the verdict on a run that a usage limit refused:
// failed, rate limited, saying which window and when it resets.
func RateLimitedVerdict(rl *RateLimit) Verdict {
	w := rl.Binding()
	msg := "a usage limit refused the request"
	if w.Name != "" {
		msg = "the " + w.Name + " usage limit refused the request"
	}
	if !w.ResetsAt.IsZero() {
		msg += "; it resets at " + w.ResetsAt.UTC().Format("2006-01-02 15:04 UTC")
	}
	return Verdict{
		Status: StatusFailed, ErrorKind: ErrorRateLimited, Message: msg,
		Hint: "wait for the reset (lane bench waits by itself) or use another account; lane limits shows each window",
	}
}

// Capability is what a run was allowed to touch, recorded so a person can
// check it afterwards.
type Capability struct {
	Dir            string   `json:"dir"`
	AddDirs        []string `json:"add_dirs,omitempty"`
	AllowedTools   []string `json:"allowed_tools,omitempty"`
	PermissionMode string   `json:"permission_mode,omitempty"`
	MCPIsolated    bool     `json:"mcp_isolated"`
	// Steer lists what a person can send the run while it runs: message,
	// interrupt, cancel (none for a run nobody can reach).
	Steer []string `json:"steer,omitempty"`
	// Hermetic, when not nil, says the run saw none of the user's own
	// setup for its runtime (a bench attempt): it lists what lane kept out
	// ("CLAUDE.md", "settings.json"…), empty when there was nothing to.
	Hermetic []string `json:"hermetic,omitempty"`
}

// Run is the record of one invocation of a runtime.
type Run struct {
	ID          string `json:"id"`
	ParentRunID string `json:"parent_run_id,omitempty"` // the run this one retries or resumes
	Attempt     int    `json:"attempt,omitempty"`       // 1 for a first try, 2… for retries
	Status      Status `json:"status"`
	Runtime     string `json:"runtime"` // "claude", later "local", …
	Model       string `json:"model"`
	Dir         string `json:"dir"`
	Prompt      string `json:"prompt"`
	SessionID   string `json:"session_id,omitempty"`
	RuntimeVer  string `json:"runtime_version,omitempty"`
	// Via says how the run came, when not by lane run, bench or the
	// dashboard: "acp" for a prompt of an editor through lane acp.
	Via string `json:"via,omitempty"`
	// Origin is the folder Dir is a copy of, when the run worked in a copy
	// (lane run --models): where lane apply brings its changes.
	Origin string `json:"origin,omitempty"`
	// Account is the identity of the login the runtime used (its config
	// folder), for the runtimes whose subscriptions have usage limits.
	Account string `json:"account,omitempty"`
	// Limits is the last state of each usage window the run saw reported.
	Limits []LimitWindow `json:"limits,omitempty"`

	CostUSD      float64 `json:"cost_usd"`
	CostEstimate bool    `json:"cost_estimate,omitempty"` // true when lane computed it from tokens
	// SessionCostUSD is the runtime's cumulative session total at the end of
	// this run, kept so a resumed run's own cost can be told apart.
	SessionCostUSD float64 `json:"session_cost_usd,omitempty"`
	Usage          Usage   `json:"usage"`
	Turns          int     `json:"turns"`
	ToolCalls      int     `json:"tool_calls"`
	// ContextTokens is how much the last model call of the main agent
	// sent (input, cache reads and cache writes): how full its context
	// was; ContextWindow is the model's window, 0 when unknown.
	ContextTokens int64 `json:"context_tokens,omitempty"`
	ContextWindow int   `json:"context_window,omitempty"`

	StartedAt  time.Time `json:"started_at"`
	EndedAt    time.Time `json:"ended_at,omitzero"`
	DurationMS int64     `json:"duration_ms"`
	ExitCode   *int      `json:"exit_code,omitempty"`

	ErrorKind     ErrorKind `json:"error_kind,omitempty"`
	ErrorMessage  string    `json:"error_message,omitempty"`
	ErrorHint     string    `json:"error_hint,omitempty"`
	Contradiction string    `json:"contradiction,omitempty"` // the runtime's fields that disagreed
	ResultText    string    `json:"result_text,omitempty"`

	Capability        Capability      `json:"capability"`
	PermissionDenials json.RawMessage `json:"permission_denials,omitempty"`
	// Permissions counts the run's requests for a person's approval and
	// the decisions on tool calls (a person's, a rule's, the timeout's).
	Permissions PermissionCounts `json:"permissions"`

	// The lane process that owns a running run; a run whose owner is gone is
	// shown as interrupted.
	OwnerPID   int    `json:"owner_pid,omitempty"`
	OwnerStart uint64 `json:"owner_start,omitempty"` // process start time in clock ticks since boot
	// OwnerHost is the machine of the owner (its host name): only there can
	// the owner be checked. The store fills it in when it is empty.
	OwnerHost string `json:"owner_host,omitempty"`
	// Worker is the lane worker that ran it, empty for a run started here.
	Worker string `json:"worker,omitempty"`

	// Imported marks a session lane did not run but read from the file the
	// runtime wrote (lane import); Source is that file.
	Imported bool   `json:"imported,omitempty"`
	Source   string `json:"source,omitempty"`

	// Budget is the limits the run was given on its tokens, cost and
	// turns, nil when it had none.
	Budget *Budget `json:"budget,omitempty"`

	// Changes is what the run changed in its folder, nil when lane did not
	// look (--no-changes, an imported session, a run from before lane
	// recorded changes).
	Changes *Changes `json:"changes,omitempty"`
}

// Budget is what one attempt may use before lane stops it: --token-limit,
// --cost-limit and --max-turns (0: no limit).
type Budget struct {
	Tokens  int64   `json:"tokens,omitempty"`   // all four kinds (Usage.Total)
	CostUSD float64 `json:"cost_usd,omitempty"` // lane's running estimate, or the runtime's own figure
	Turns   int     `json:"turns,omitempty"`    // the main agent's model turns
}

// IsZero reports whether the budget limits nothing.
func (b Budget) IsZero() bool { return b == Budget{} }

// Changes is what a run changed in its folder: the difference between a
// snapshot taken before it started and one taken after it ended. The
// unified diff itself is kept beside the run (lane diff), not in it.
type Changes struct {
	Files      int `json:"files"`
	Insertions int `json:"insertions"`
	Deletions  int `json:"deletions"`
	// Method is how the snapshots were taken: "git" (tree objects of the
	// work tree in its own repository) or "manifest" (a folder outside git,
	// snapshotted into lane's own object store).
	Method string `json:"method,omitempty"`
	// Root is the folder the paths are relative to: the repository's top
	// level for "git", the run's folder otherwise.
	Root string `json:"root,omitempty"`
	// GitDir holds the snapshots' objects; Before and After are their tree
	// ids there.
	GitDir string `json:"git_dir,omitempty"`
	Before string `json:"before,omitempty"`
	After  string `json:"after,omitempty"`
	// PatchSize is the full size in bytes of the unified diff; Truncated
	// says the stored one was cut at the cap.
	PatchSize int64 `json:"patch_size,omitempty"`
	Truncated bool  `json:"truncated,omitempty"`
	// Note says what the numbers leave out (files over the size limit
	// compared by size and modification time only).
	Note string `json:"note,omitempty"`
	// Error says why there is no diff: a snapshot failed (an unreadable
	// file, a folder that vanished). It never fails the run.
	Error string       `json:"error,omitempty"`
	List  []FileChange `json:"list,omitempty"`
	// Patch is the unified diff (cut at the cap), carried from the runner
	// to the store; it is read back on its own (lane diff), never with the
	// run.
	Patch string `json:"-"`
	// UndoneBy is the run that undid this one (lane undo); UndoOf, on that
	// run, is the run it undid.
	UndoneBy string `json:"undone_by,omitempty"`
	UndoOf   string `json:"undo_of,omitempty"`
}

// FileChange is one changed path of Changes.
type FileChange struct {
	Path string `json:"path"`
	// OldPath is where a renamed file was.
	OldPath string `json:"old_path,omitempty"`
	// Status is "added", "modified", "deleted", "renamed" or "type" (a file
	// that became a symlink or the other way).
	Status     string `json:"status"`
	Insertions int    `json:"insertions"`
	Deletions  int    `json:"deletions"`
	Binary     bool   `json:"binary,omitempty"`
	// Large marks a file over the size limit: compared by size and
	// modification time only, with no content diff.
	Large bool `json:"large,omitempty"`
	// Modes are git's: "100644", "100755", "120000" (a symlink); "" where
	// the file did not exist.
	OldMode string `json:"old_mode,omitempty"`
	NewMode string `json:"new_mode,omitempty"`
	OldHash string `json:"old_hash,omitempty"`
	NewHash string `json:"new_hash,omitempty"`
}

// Changed says whether c records any change.
func (c *Changes) Changed() bool { return c != nil && c.Files > 0 }

// CapOutput cuts Output to at most limit bytes (at a UTF-8 boundary) and
// records the full size, so a giant tool output is not copied into every
// consumer of the normalized form. The runtime's line in Raw keeps it whole.
func (e *Event) CapOutput(limit int) {
	if len(e.Output) <= limit {
		return
	}
	e.OutputSize = int64(len(e.Output))
	cut := limit
	for cut > 0 && !utf8.RuneStart(e.Output[cut]) {
		cut--
	}
	e.Output = strings.Clone(e.Output[:cut]) // release the large original
}

// Bench is one run of a task suite across models (lane bench).
type Bench struct {
	ID         string    `json:"id"`
	Name       string    `json:"name"`
	SuitePath  string    `json:"suite_path"`
	Models     []string  `json:"models"`
	Repeat     int       `json:"repeat"`
	Parallel   int       `json:"parallel"`
	MaxCostUSD float64   `json:"max_cost_usd,omitempty"`
	Status     Status    `json:"status"` // running, succeeded (all attempts done), cancelled, interrupted, failed
	StartedAt  time.Time `json:"started_at"`
	EndedAt    time.Time `json:"ended_at,omitzero"`
	// Suite is the suite as it was parsed, so a resumed bench runs the same tasks.
	Suite      json.RawMessage `json:"suite,omitempty"`
	OwnerPID   int             `json:"owner_pid,omitempty"`
	OwnerStart uint64          `json:"owner_start,omitempty"`
	OwnerHost  string          `json:"owner_host,omitempty"`
	// Workers is set when the bench's attempts go to the pool of lane
	// workers (lane bench --workers) rather than run in its owner.
	Workers bool `json:"workers,omitempty"`
	// Waiting is the usage limit the bench's attempts wait for ("claude
	// five_hour") until WaitingUntil; "" when none waits.
	Waiting      string    `json:"waiting,omitempty"`
	WaitingUntil time.Time `json:"waiting_until,omitzero"`
}

// AttemptStatus is where one attempt of a bench stands.
type AttemptStatus string

const (
	AttemptPending AttemptStatus = "pending"
	AttemptRunning AttemptStatus = "running"
	AttemptPassed  AttemptStatus = "passed"
	AttemptFailed  AttemptStatus = "failed"  // the check failed, or the agent did
	AttemptSkipped AttemptStatus = "skipped" // not started: the bench's budget was spent
	// AttemptErrored: the task or its environment failed, not the agent (an
	// image that did not build, a verifier that wrote no reward, a test run
	// that could not reach what it needs). Counted apart, never as a zero.
	AttemptErrored AttemptStatus = "errored"
)

// Done says whether an attempt of status s is finished for good: passed,
// failed, errored or skipped. A resumed bench runs the others again (and a
// skipped one when its budget allows).
func (s AttemptStatus) Done() bool {
	switch s {
	case AttemptPassed, AttemptFailed, AttemptErrored, AttemptSkipped:
		return true
	}
	return false
}

// Attempt is one task run by one model once, and its check.
type Attempt struct {
	BenchID string        `json:"bench_id"`
	TaskID  string        `json:"task_id"`
	Model   string        `json:"model"`
	N       int           `json:"n"` // 1-based repeat number
	RunID   string        `json:"run_id,omitempty"`
	Status  AttemptStatus `json:"status"`
	// FailureKind: check_failed, check_timeout, setup_failed, timeout, auth,
	// agent_error, crash, turn_limit, token_limit, cost_limit, cancelled… (empty when passed).
	FailureKind   string    `json:"failure_kind,omitempty"`
	CheckExitCode int       `json:"check_exit_code"`
	CheckOutput   string    `json:"check_output,omitempty"` // capped
	DurationMS    int64     `json:"duration_ms"`            // the agent's run
	CostUSD       float64   `json:"cost_usd"`
	Usage         Usage     `json:"usage"`
	Turns         int       `json:"turns"`
	ToolCalls     int       `json:"tool_calls"`
	StartedAt     time.Time `json:"started_at,omitzero"`
	EndedAt       time.Time `json:"ended_at,omitzero"`
	// Worker is the lane worker that ran the attempt (lane bench --workers).
	Worker string `json:"worker,omitempty"`
	// Tries is how many times the agent was asked (a task of several tries
	// asks again, in the same session, after a failed check); 0 before the
	// first. A passed attempt passed on its last try.
	Tries int `json:"tries,omitempty"`
	// Reward is what the task's verifier scored the attempt (Harbor tasks):
	// the key the pass was decided on; nil when the task gives none.
	Reward *float64 `json:"reward,omitempty"`
	// Rewards are every key the verifier wrote (reward.json's, or
	// reward.txt's number as "reward"); nil when it wrote none.
	Rewards map[string]float64 `json:"rewards,omitempty"`
	// Retries is how many times the attempt was run again after a failure
	// its bench retries (lane bench --retries): each run replaced the one
	// before, and what the attempt records is its last.
	Retries int `json:"retries,omitempty"`
	// Artifacts are what was collected of a container task's attempt:
	// saving the attempt stores them (and drops those of an earlier run of
	// it); reading attempts leaves them out (see the store's
	// AttemptArtifacts).
	Artifacts []ArtifactSet `json:"-"`
	// Steps are the steps of a multi-step task's attempt (Harbor's
	// [[steps]]) that ran, in their order; nil for a task of one step. The
	// attempt's Reward and Rewards are then the steps' rewards rolled up
	// (their mean, or the last step's, as the task says).
	Steps []AttemptStep `json:"steps,omitempty"`
}

// StepOfRun is the index in a.Steps of the step whose agent's run is
// runID, -1 when none is.
func (a *Attempt) StepOfRun(runID string) int {
	for i, st := range a.Steps {
		if st.RunID == runID {
			return i
		}
	}
	return -1
}

// AttemptStep is one step of an attempt at a multi-step task: the agent's
// run on the step's instruction, and the step's verifier.
type AttemptStep struct {
	Name string `json:"name"` // [[steps]] name, its folder steps/<name>/
	// RunID is the agent's run of this step, a lane run of its own; ""
	// for the oracle, or when the step stopped before its agent ran.
	RunID string `json:"run_id,omitempty"`
	// Status is passed or failed as an attempt's would be on the step's
	// rewards (its pass key against the bench's pass reward), failed when
	// the agent's run failed, errored when the step's environment did
	// (its setup.sh, healthcheck or verifier).
	Status AttemptStatus `json:"status"`
	// FailureKind is an attempt's kind, or below_min_reward: the step
	// scored below its min_reward and ended the attempt. "" when passed.
	FailureKind string `json:"failure_kind,omitempty"`
	// Error is what went wrong, with the end of its output; "" when
	// nothing did.
	Error string `json:"error,omitempty"`
	// Reward is the step's pass key's value; nil when the step was not
	// verified or its verifier wrote no such key.
	Reward *float64 `json:"reward,omitempty"`
	// Rewards are every key the step's verifier wrote; nil when it was
	// not verified.
	Rewards    map[string]float64 `json:"rewards,omitempty"`
	DurationMS int64              `json:"duration_ms"` // the agent's run
	CostUSD    float64            `json:"cost_usd"`
}
