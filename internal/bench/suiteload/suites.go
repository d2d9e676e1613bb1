// Package suiteload turns what `lane bench PATH` is given into a bench suite:
// a suite file in lane's own YAML, or a checkout of Aider's polyglot
// benchmark (package polyglot), told apart by their layout or named by
// --format. It is where bench meets the formats the field publishes; bench
// itself knows only its tasks.
package suiteload

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/lanehq/lane/internal/bench"
	"github.com/lanehq/lane/internal/bench/harbor"
	"github.com/lanehq/lane/internal/bench/polyglot"
)

// Formats of what lane bench runs.
const (
	FormatLane     = "lane"     // a suite file (bench.Load)
	FormatPolyglot = "polyglot" // a checkout of Aider's polyglot benchmark
	FormatHarbor   = "harbor"   // a Harbor task folder, or a dataset: a folder of them
)

// Options say how a path becomes a suite.
type Options struct {
	Format    string   // "" tells the formats apart by the layout
	Languages []string // polyglot: only these (all when empty)
	Tries     int      // polyglot: tries per attempt (0: polyglot.DefaultTries)
	// CacheDir is where dependencies installed once per bench go (the
	// polyglot JavaScript exercises' jest and babel).
	CacheDir string
	// BuildArgs go to every Harbor task's image build (--build-arg).
	BuildArgs map[string]string
	// PassReward is the reward at or above which a Harbor attempt passed
	// (0: 1, a full score).
	PassReward float64
	// PassKey is the key of the verifier's reward that PassReward is
	// compared with ("": "reward").
	PassKey string
	// StepSession is how a multi-step task's agent meets each step after
	// the first (bench.StepSessionFresh, or "" for it, or
	// bench.StepSessionContinue).
	StepSession string
	// SkipUnsupported leaves out the Harbor tasks lane refuses (see
	// harbor.UnsupportedError), each in Loaded.Skipped; without it, a
	// dataset with one is refused whole.
	SkipUnsupported bool
}

// Loaded is a suite and what was left out of it, and why (a language
// whose toolchain is missing), for the person to read.
type Loaded struct {
	Suite   *bench.Suite
	Format  string
	Skipped []string
	// Notes are what the user should know of tasks that run: what of them
	// lane reads but does not carry out.
	Notes []string
}

// Detect says which format path is: a file is a suite file; a folder in
// the polyglot benchmark's layout is a polyglot checkout.
func Detect(path string) (string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("bench %s: %w", path, err)
	}
	switch {
	case !st.IsDir():
		return FormatLane, nil
	case polyglot.IsCheckout(path):
		return FormatPolyglot, nil
	case harbor.IsTask(path) || harbor.IsDataset(path):
		return FormatHarbor, nil
	}
	return "", fmt.Errorf("bench %s: a folder lane does not know: give a suite file (YAML), a Harbor task "+
		"(task.toml, instruction.md, environment/, tests/) or a folder of them, or a checkout of Aider's polyglot "+
		"benchmark (<language>/exercises/practice/<slug>/)", path)
}

// Load reads path as opts.Format says, or as its layout says.
func Load(ctx context.Context, path string, opts Options) (*Loaded, error) {
	format := opts.Format
	if format == "" {
		var err error
		if format, err = Detect(path); err != nil {
			return nil, err
		}
	}
	switch format {
	case FormatLane:
		if len(opts.Languages) > 0 || opts.Tries > 0 {
			return nil, errors.New("--languages and --tries are for the polyglot benchmark; a suite file says tries per task")
		}
		s, err := bench.Load(path)
		if err != nil {
			return nil, err
		}
		return &Loaded{Suite: s, Format: format}, nil
	case FormatPolyglot:
		return loadPolyglot(ctx, path, opts)
	case FormatHarbor:
		return loadHarbor(path, opts)
	}
	return nil, fmt.Errorf("unknown --format %q (want %s, %s or %s)", format, FormatLane, FormatHarbor, FormatPolyglot)
}

// loadPolyglot makes a suite of the checkout's exercises whose language's
// toolchain is here, one task each, as Aider's harness runs them.
func loadPolyglot(ctx context.Context, path string, opts Options) (*Loaded, error) {
	pb, err := polyglot.Load(path, opts.Languages)
	if err != nil {
		return nil, err
	}
	out := &Loaded{Format: FormatPolyglot}
	missing := map[string]error{} // by language; only the languages loaded are checked
	var kept []*polyglot.Exercise
	for _, e := range pb.Exercises {
		err, checked := missing[e.Language]
		if !checked {
			err = polyglot.CheckToolchain(ctx, e.Language)
			missing[e.Language] = err
			if err != nil {
				out.Skipped = append(out.Skipped, e.Language+": "+err.Error())
			}
		}
		if err == nil {
			kept = append(kept, e)
		}
	}
	if len(kept) == 0 {
		return nil, fmt.Errorf("no polyglot exercise can run here: %s", strings.Join(out.Skipped, "; "))
	}
	pb.Exercises = kept
	if opts.CacheDir != "" {
		if err := pb.PrepareJavaScript(ctx, opts.CacheDir); err != nil {
			return nil, fmt.Errorf("install the JavaScript exercises' test dependencies: %w", err)
		}
	}
	tries := opts.Tries
	if tries == 0 {
		tries = polyglot.DefaultTries
	}
	s := &bench.Suite{Name: "polyglot", Dir: pb.Dir}
	for _, e := range kept {
		t, err := polyglotTask(pb.Dir, e, tries)
		if err != nil {
			return nil, err
		}
		s.Tasks = append(s.Tasks, t)
	}
	out.Suite = s
	return out, nil
}

// polyglotTask is one exercise as a bench task: its folder without the
// reference solution, the tests put back before every run of them, the
// reference solution for the oracle.
func polyglotTask(root string, e *polyglot.Exercise, tries int) (bench.Task, error) {
	rel, err := filepath.Rel(root, e.Dir)
	if err != nil {
		return bench.Task{}, err
	}
	files, err := e.OracleFiles()
	if err != nil {
		return bench.Task{}, err
	}
	var oracle []string
	for _, ex := range slices.Sorted(maps.Keys(files)) {
		to := files[ex]
		oracle = append(oracle, fmt.Sprintf(`mkdir -p %s && cp "$LANE_FIXTURE"/%s %s`,
			shQuote(filepath.Dir(to)), shQuote(ex), shQuote(to)))
	}
	return bench.Task{
		ID: e.Language + "-" + e.Slug, Prompt: e.Prompt(), Fixture: rel,
		Hide: e.HiddenPaths(), Protect: e.ProtectedFiles(), Oracle: oracle,
		Tries: tries, RetryPrompt: e.RetryPrompt("{output}"),
		Tags:         []string{FormatPolyglot, e.Language},
		Check:        bench.Check{Command: e.TestCommand(), Timeout: polyglot.TestTimeout},
		SetupTimeout: bench.DefaultSetupTimeout,
	}, nil
}

// EnvironmentError is the polyglot benchmark's reading of a failed test
// run, for the tasks Load made of its exercises (bench's classifier hook).
func EnvironmentError(task *bench.Task, output string) (string, bool) {
	if len(task.Tags) < 2 || task.Tags[0] != FormatPolyglot {
		return "", false
	}
	return polyglot.EnvironmentError(task.Tags[1], output)
}

// CleanOutput is the polyglot benchmark's test output as a later try's
// prompt quotes it, for the tasks Load made of its exercises (bench's
// hook); other tasks' as it is.
func CleanOutput(task *bench.Task, output string) string {
	if len(task.Tags) < 2 || task.Tags[0] != FormatPolyglot {
		return output
	}
	return polyglot.CleanTestOutput(output)
}

// shQuote quotes s for sh.
func shQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// loadHarbor makes a suite of one Harbor task, or of a dataset's tasks: a
// task that cannot be read is reported and left out, the others run.
func loadHarbor(path string, opts Options) (*Loaded, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	var tasks []*harbor.Task
	out := &Loaded{Format: FormatHarbor}
	if harbor.IsTask(abs) {
		t, err := harbor.LoadTask(abs)
		if err != nil {
			return nil, err
		}
		tasks = []*harbor.Task{t}
	} else {
		var errs []error
		tasks, errs = harbor.LoadDataset(abs)
		if err := refuseDataset(abs, len(tasks)+len(errs), errs, opts.SkipUnsupported); err != nil {
			return nil, err
		}
		for _, e := range errs {
			out.Skipped = append(out.Skipped, strings.Split(e.Error(), "\n")...)
		}
		if len(tasks) == 0 {
			return nil, fmt.Errorf("no Harbor task in %s can be read: %w", abs, errors.Join(errs...))
		}
	}
	pass := opts.PassReward
	if pass == 0 {
		pass = 1
	}
	s := &bench.Suite{Name: filepath.Base(abs), Dir: abs}
	session := "" // fresh, the default, is not spelled out in the stored suite
	if opts.StepSession == bench.StepSessionContinue {
		session = opts.StepSession
	}
	for _, t := range tasks {
		if len(t.ComposeIgnored) > 0 {
			out.Notes = append(out.Notes, fmt.Sprintf("task %s: docker-compose keys lane does not apply: %s", t.Name, strings.Join(t.ComposeIgnored, ", ")))
		}
		s.Tasks = append(s.Tasks, bench.Task{
			ID: taskID(filepath.Base(t.Dir)), Prompt: t.Instruction, Timeout: t.Agent.Timeout,
			SetupTimeout: bench.DefaultSetupTimeout, Tags: []string{FormatHarbor},
			Container: &bench.ContainerTask{Dir: t.Dir, BuildArgs: opts.BuildArgs, PassReward: pass, PassKey: opts.PassKey,
				StepSession: session},
		})
	}
	out.Suite = s
	return out, nil
}

// taskID is a folder's name as a task id: letters, digits, '.', '_', '-'.
func taskID(name string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-' {
			return r
		}
		return '-'
	}, name)
}
