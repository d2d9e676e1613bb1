package suiteload

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/lanehq/lane/internal/bench"
	"github.com/lanehq/lane/internal/bench/harbor"
	"github.com/lanehq/lane/internal/bench/polyglot"
)

// Plan is what `lane bench --dry-run PATH` shows: every task of the suite
// at Path with what it uses, and whether lane runs it.
type Plan struct {
	Path   string     `json:"path"`
	Format string     `json:"format"`
	Tasks  []PlanTask `json:"tasks"`
}

// PlanTask is one task of a Plan. Which fields are set depends on the
// format: a Harbor task has an image and a verifier, a suite file's task
// a folder and a check.
type PlanTask struct {
	ID  string `json:"id"`
	Dir string `json:"dir,omitempty"` // a Harbor task's or a polyglot exercise's folder
	// Runs says whether lane runs the task; when not, Refusals or Reason
	// say why.
	Runs     bool             `json:"runs"`
	Refusals []harbor.Refusal `json:"refusals,omitempty"`
	Reason   string           `json:"reason,omitempty"`

	Folder   string   `json:"folder,omitempty"`   // where the agent works: a fixture, a git repository, or empty
	Image    string   `json:"image,omitempty"`    // a Harbor task's docker_image, or the Dockerfile it builds
	Services []string `json:"services,omitempty"` // a Harbor task's other compose services
	Network  string   `json:"network,omitempty"`  // a Harbor task's networks (harbor.Task.NetworkSummary)
	CPUs     float64  `json:"cpus,omitempty"`
	MemoryMB int      `json:"memory_mb,omitempty"`
	// AgentTimeoutSec is the agent's limit; 0: lane's own default.
	AgentTimeoutSec float64 `json:"agent_timeout_sec,omitempty"`
	AgentUser       string  `json:"agent_user,omitempty"`
	// Check is how an attempt is scored: a command, files, or a Harbor
	// task's verifier and where it runs.
	Check           string  `json:"check,omitempty"`
	CheckTimeoutSec float64 `json:"check_timeout_sec,omitempty"`
	BuildTimeoutSec float64 `json:"build_timeout_sec,omitempty"`
	Tries           int     `json:"tries,omitempty"`
	// Oracle says whether the task has a reference solution for
	// --models oracle.
	Oracle bool `json:"oracle"`
	// MCPServers are the MCP servers a Harbor task gives its agent, each
	// as "NAME (TRANSPORT)".
	MCPServers []string `json:"mcp_servers,omitempty"`
	// Artifacts are the files a Harbor task's attempt keeps, each as its
	// source (with its service, or its step, when it has one); Collect its
	// [[verifier.collect]] hooks' commands.
	Artifacts []string `json:"artifacts,omitempty"`
	Collect   []string `json:"collect,omitempty"`
	// Notes are what lane reads of the task without carrying out, and
	// that changes no figure (docker-compose keys).
	Notes []string `json:"notes,omitempty"`
}

// AllRun says whether lane runs every task of the plan.
func (p *Plan) AllRun() bool {
	for _, t := range p.Tasks {
		if !t.Runs {
			return false
		}
	}
	return true
}

// Inspect reads path as Load does, but runs nothing, installs nothing and
// refuses nothing: it lists every task, those lane would not run with why.
func Inspect(ctx context.Context, path string, opts Options) (*Plan, error) {
	format := opts.Format
	if format == "" {
		var err error
		if format, err = Detect(path); err != nil {
			return nil, err
		}
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	p := &Plan{Path: abs, Format: format}
	switch format {
	case FormatLane:
		s, err := bench.Load(path)
		if err != nil {
			return nil, err
		}
		for _, t := range s.Tasks {
			p.Tasks = append(p.Tasks, benchPlanTask(t))
		}
	case FormatPolyglot:
		err = p.addPolyglot(ctx, path, opts)
	case FormatHarbor:
		err = p.addHarbor(abs)
	default:
		err = fmt.Errorf("unknown --format %q (want %s, %s or %s)", format, FormatLane, FormatHarbor, FormatPolyglot)
	}
	if err != nil {
		return nil, err
	}
	return p, nil
}

// benchPlanTask is a task of lane's own, which lane runs.
func benchPlanTask(t bench.Task) PlanTask {
	pt := PlanTask{ID: t.ID, Runs: true, AgentTimeoutSec: t.Timeout.Seconds(), Tries: t.Tries, Oracle: len(t.Oracle) > 0}
	switch {
	case t.Git != nil:
		pt.Folder = "git " + t.Git.Repo
		if t.Git.Rev != "" {
			pt.Folder += "@" + t.Git.Rev
		}
	case t.Fixture != "":
		pt.Folder = "fixture " + t.Fixture
	default:
		pt.Folder = "empty"
	}
	var checks []string
	if t.Check.Command != "" {
		checks = append(checks, t.Check.Command)
	}
	for _, f := range t.Check.Files {
		checks = append(checks, "file "+f.Path)
	}
	pt.Check, pt.CheckTimeoutSec = strings.Join(checks, "; "), t.Check.Timeout.Seconds()
	return pt
}

// addPolyglot lists the checkout's exercises: those whose language's
// toolchain is missing here do not run.
func (p *Plan) addPolyglot(ctx context.Context, path string, opts Options) error {
	pb, err := polyglot.Load(path, opts.Languages)
	if err != nil {
		return err
	}
	tries := opts.Tries
	if tries == 0 {
		tries = polyglot.DefaultTries
	}
	missing := map[string]error{}
	for _, e := range pb.Exercises {
		err, checked := missing[e.Language]
		if !checked {
			err = polyglot.CheckToolchain(ctx, e.Language)
			missing[e.Language] = err
		}
		if err != nil {
			p.Tasks = append(p.Tasks, PlanTask{ID: e.Language + "-" + e.Slug, Dir: e.Dir, Reason: err.Error()})
			continue
		}
		t, err := polyglotTask(pb.Dir, e, tries)
		if err != nil {
			return err
		}
		pt := benchPlanTask(t)
		pt.Dir = e.Dir
		p.Tasks = append(p.Tasks, pt)
	}
	return nil
}

// addHarbor lists the Harbor task dir, or the dataset dir's tasks.
func (p *Plan) addHarbor(dir string) error {
	all, err := harbor.InspectAll(dir)
	if err != nil {
		return err
	}
	for _, in := range all {
		pt := PlanTask{ID: taskID(filepath.Base(in.Dir)), Dir: in.Dir, Refusals: in.Refusals}
		switch {
		case in.Err != nil:
			pt.Reason = in.Err.Error()
		default:
			pt.Runs = len(in.Refusals) == 0
			harborPlanTask(&pt, in.Task)
		}
		p.Tasks = append(p.Tasks, pt)
	}
	return nil
}

// harborPlanTask fills pt with what Harbor task t uses.
func harborPlanTask(pt *PlanTask, t *harbor.Task) {
	env := t.Environment
	pt.Image = env.DockerImage
	if pt.Image == "" && t.Dockerfile != "" {
		rel, _ := filepath.Rel(t.Dir, t.Dockerfile)
		pt.Image = "build " + rel
	}
	for _, s := range t.Services {
		pt.Services = append(pt.Services, s.Name)
	}
	pt.Network, pt.CPUs, pt.MemoryMB = t.NetworkSummary(), env.CPUs, env.MemoryMB
	for _, m := range env.MCPServers {
		pt.MCPServers = append(pt.MCPServers, m.Name+" ("+m.Transport+")")
	}
	pt.AgentTimeoutSec, pt.AgentUser = t.Agent.Timeout.Seconds(), t.Agent.User
	pt.Check = "tests/test.sh in the agent's container"
	if t.Separate() {
		pt.Check = "tests/test.sh in a container of its own (" + verifierImage(t) + "), given the artifacts"
	}
	if t.Verifier.User != "" {
		pt.Check += " as " + t.Verifier.User
	}
	harborArtifactsPlan(pt, t)
	pt.CheckTimeoutSec, pt.BuildTimeoutSec = t.Verifier.Timeout.Seconds(), env.BuildTimeout.Seconds()
	pt.Oracle = t.HasSolution
	if t.HasSteps() {
		harborStepsPlan(pt, t)
	}
	if len(t.ComposeIgnored) > 0 {
		pt.Notes = append(pt.Notes, "docker-compose keys lane does not apply: "+strings.Join(t.ComposeIgnored, ", "))
	}
}

// seconds is a limit in seconds as text: "none" for 0.
func seconds(s float64) string {
	if s == 0 {
		return "none"
	}
	return time.Duration(s * float64(time.Second)).String()
}

// WriteJSON writes the plan as one indented JSON object.
func (p *Plan) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(p)
}

// WriteText writes the plan for a person: each task, whether it runs and
// why not, what it uses; then the counts.
func (p *Plan) WriteText(w io.Writer) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "%s (%s)\n", p.Path, p.Format)
	runs, refused, other := 0, 0, 0
	for _, t := range p.Tasks {
		switch {
		case t.Runs:
			runs++
			fmt.Fprintf(bw, "\n%s: runs\n", t.ID)
		case len(t.Refusals) > 0:
			refused++
			fmt.Fprintf(bw, "\n%s: refused\n", t.ID)
		default:
			other++
			fmt.Fprintf(bw, "\n%s: not run\n", t.ID)
		}
		for _, r := range t.Refusals {
			field(bw, "refused", r.String())
		}
		field(bw, "reason", t.Reason)
		t.writeUses(bw)
	}
	fmt.Fprintf(bw, "\n%d tasks: %d run, %d refused, %d not run otherwise\n", len(p.Tasks), runs, refused, other)
	return bw.Flush()
}

// writeUses writes what t uses, a line each.
func (t PlanTask) writeUses(w io.Writer) {
	field(w, "folder", t.Folder)
	field(w, "image", t.Image)
	if len(t.Services) > 0 {
		field(w, "services", strings.Join(t.Services, ", "))
	}
	field(w, "network", t.Network)
	if len(t.MCPServers) > 0 {
		field(w, "mcp", strings.Join(t.MCPServers, ", "))
	}
	if len(t.Artifacts) > 0 {
		field(w, "artifacts", strings.Join(t.Artifacts, ", "))
	}
	if len(t.Collect) > 0 {
		field(w, "collect", strings.Join(t.Collect, "; "))
	}
	if t.CPUs > 0 || t.MemoryMB > 0 {
		field(w, "resources", fmt.Sprintf("cpus %g, memory %d MB", t.CPUs, t.MemoryMB))
	}
	if t.Image != "" || t.Folder != "" {
		agent := "timeout lane's default"
		if t.AgentTimeoutSec > 0 {
			agent = "timeout " + seconds(t.AgentTimeoutSec)
		}
		if t.AgentUser != "" {
			agent += ", as " + t.AgentUser
		}
		field(w, "agent", agent)
	}
	if check, _, more := strings.Cut(strings.TrimSpace(t.Check), "\n"); check != "" {
		if more {
			check = fmt.Sprintf("a script of %d lines (-o json shows it)", strings.Count(strings.TrimSpace(t.Check), "\n")+1)
		}
		field(w, "check", check+" (timeout "+seconds(t.CheckTimeoutSec)+")")
	}
	if t.BuildTimeoutSec > 0 {
		field(w, "build", "timeout "+seconds(t.BuildTimeoutSec))
	}
	if t.Tries > 1 {
		field(w, "tries", strconv.Itoa(t.Tries))
	}
	if t.Image != "" || t.Folder != "" {
		oracle := "no"
		if t.Oracle {
			oracle = "yes"
		}
		field(w, "oracle", oracle)
	}
	for _, n := range t.Notes {
		field(w, "note", n)
	}
}

// field writes one line of a task, a value of several lines indented;
// nothing for an empty value.
func field(w io.Writer, name, value string) {
	if value == "" {
		return
	}
	fmt.Fprintf(w, "  %-10s %s\n", name+":", strings.ReplaceAll(value, "\n", "\n             "))
}
