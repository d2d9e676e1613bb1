// Package launch starts one agent run from its options, as lane run, lane
// resume, every attempt of lane bench and every prompt of lane acp do: it
// resolves the model to its runtime, gives the runner its options and runs
// it, with the fallback when that runtime cannot run the task.
package launch

import (
	"time"

	"github.com/lanehq/lane/internal/approval"
	"github.com/lanehq/lane/internal/record"
	"github.com/lanehq/lane/internal/recorder"
	"github.com/lanehq/lane/internal/runner"
)

// Options are how one run goes: the flags of `lane run` (and `lane resume`,
// and the runtime flags lane bench, lane worker and lane acp share), and
// what a command sets beyond them.
type Options struct {
	Dir string
	// Models, when set (--models), runs the task on each of them at once,
	// each in a copy of Dir, with Check run in each copy after (see
	// runCompare).
	Models       []string
	Check        string
	CheckTimeout time.Duration
	// Profile is the config file's profile (a login of its own) the run
	// uses, "" for the one the environment points at.
	Profile string
	// NoChanges records no snapshot of the folder (--no-changes).
	NoChanges          bool
	Model              string
	AllowedTools       []string
	AddDirs            []string
	AppendSystemPrompt string
	Resume             string
	PermissionMode     string
	AllowMCP           bool
	MaxTurns           int
	// TokenLimit and CostLimit (USD) bound each attempt (--token-limit,
	// --cost-limit); 0: no limit.
	TokenLimit int64
	CostLimit  float64
	// ClaudeBin is --claude-bin: Claude Code's own flag for its binary,
	// from before lane drove other runtimes; it wins over RuntimeBin.
	ClaudeBin        string
	RuntimeBin       string
	FirstByteTimeout time.Duration
	IdleTimeout      time.Duration
	HardTimeout      time.Duration
	Retries          int
	OutputFormat     string
	Task             string

	// The local loop's (see docs/running.md, "The local-model lane").
	Runtime     string
	BaseURL     string
	ToolMode    string
	Sandbox     string
	MaxCost     float64
	Fallback    string
	BashTimeout time.Duration

	// Interactive runs.
	ApprovalTimeout time.Duration
	Linger          time.Duration
	// Desk is where the run's requests and steering go (set by the command);
	// Attended: a person may steer the run (lane run, lane resume).
	Desk     approval.Desk
	Attended bool
	// MCPServers are MCP servers the run is given (lane acp's editor's,
	// a Harbor task's).
	MCPServers []runner.MCPServer
	// RequireMCP: the run must have MCPServers (a task that gives its
	// agent servers), so a runtime that cannot take them refuses the run
	// rather than run it without them.
	RequireMCP bool
	// HermeticHome: a bench attempt's folder for a hermetic run's runtime
	// configuration (runner.Options.HermeticHome).
	HermeticHome string
	// Within: an attempt's runtime runs in its container
	// (runner.Options.Within); TempDir is where its per-run configuration
	// goes (runner.Options.TempDir) and StateDir its lasting home
	// (runner.Options.StateDir), folders the container shares.
	Within            func(runner.Invocation) runner.Invocation
	TempDir, StateDir string

	// Live OpenTelemetry export (recorder/otel.go): the flags, and the
	// export the command started.
	OTel     recorder.OTelOptions
	OTelSink *recorder.OTelSink

	// Set by lane resume.
	ParentRunID         string
	PriorSessionCostUSD float64
	PriorSessionUsage   record.Usage
}
