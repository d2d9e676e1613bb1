// Package harbor reads tasks in the Harbor task format (the format of
// Terminal-Bench 2 and of the datasets Harbor runs) and carries out the
// container steps of an attempt at one: build or pick the task's image,
// start its container, run the reference solution, run the tests and read
// the reward they write.
//
// A task is a folder:
//
//	task.toml        configuration: timeouts, resources, network, metadata
//	instruction.md   the prompt, given to the agent verbatim
//	environment/     a Dockerfile and its build context (and maybe a
//	                 docker-compose.yaml of services beside it)
//	tests/test.sh    the verifier: writes /logs/verifier/reward.txt or .json
//	tests/Dockerfile   a separate verifier's image (optional)
//	solution/solve.sh  a reference solution (optional): the "oracle"
//
// A dataset is a folder of task folders. LoadTask reads schema versions
// 1.0 to 1.4 of task.toml as tasks in the wild write them (the 1.0 spelling
// `version` and the older `memory = "2G"` and `allow_internet` included);
// keys it does not know are kept in Task.Extra, never an error.
//
// environment/ may hold a docker-compose.yaml too, as Harbor's tasks with
// several services do: its service main is the task's own container, the
// others run beside it in main's network (see Service).
//
// Networks are applied per phase (see NetworkSpec and Network): the
// [environment]'s network_mode while the container starts, [agent]'s while
// the agent works, [verifier]'s while the tests run; an allowlist is
// carried out by lane's egress proxy.
//
// [environment.healthcheck] is applied: AwaitHealthy runs it in the
// started container, before the agent, as Harbor does.
//
// A task whose [verifier] environment_mode is "separate" (or that gives
// [verifier.environment]) has its tests run in a container of their own,
// built from tests/ (VerifierImage), which sees nothing of the agent's but
// /logs/artifacts and the task's artifacts, at their paths (VerifySeparate).
//
// artifacts and [[verifier.collect]] are applied: Collect runs the hooks
// and copies the artifacts out after the agent, best-effort.
//
// A multi-step task ([[steps]], each with its folder steps/<name>/) runs
// its steps in order in one container, each with its own instruction,
// workdir/, setup.sh, solution and verifier (see Step).
//
// A task that asks for what lane cannot do is refused when it loads,
// never run as a weaker task whose figure Harbor would not give: LoadTask
// returns an *UnsupportedError naming the task and each key, and Inspect
// gives the task with its refusals (see refusalRules in refuse.go, one row
// a feature). Refused today: Windows tasks, a compose file in a separate
// verifier's tests/, GPUs, TPUs and skills_dir. Read but not applied, as
// they change no figure:
// storage_mb and gpu_types.
package harbor

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
)

// Harbor's defaults for what task.toml leaves out.
const (
	DefaultVerifierTimeout = 600 * time.Second
	DefaultBuildTimeout    = 600 * time.Second
	DefaultCPUs            = 1
	DefaultMemoryMB        = 2048
	DefaultStorageMB       = 10240
	DefaultWorkdir         = "/app"
)

// Network modes of [environment] network_mode.
const (
	NetworkPublic    = "public"     // full network access (Harbor's default)
	NetworkNone      = "no-network" // none
	NetworkAllowlist = "allowlist"  // only allowed_hosts, through lane's egress proxy
)

// Task is one task folder, read.
type Task struct {
	Dir string // the task folder, absolute
	// Name is [task] name, else the folder's name.
	Name string
	// SchemaVersion is schema_version (or version, its 1.0 spelling).
	SchemaVersion string
	// Instruction is instruction.md, verbatim.
	Instruction string

	Info        Info // [task]
	Metadata    Metadata
	Agent       AgentConfig
	Verifier    VerifierConfig
	Solution    SolutionConfig
	Environment EnvironmentConfig

	// Dockerfile is environment/Dockerfile, or "" (a task with a
	// docker_image may have none).
	Dockerfile string
	// HasSolution says whether solution/solve.sh exists.
	HasSolution bool
	// Services are the other services of environment/docker-compose.yaml
	// (main's settings are folded into the fields above), in the order
	// they start; ComposeIgnored are the keys of that file lane does not
	// carry out, as services.NAME.KEY.
	Services       []Service
	ComposeIgnored []string

	// Net says how lane gives the container its phases' networks; a
	// caller sets it, as it does BuildArgs.
	Net NetOptions

	// BuildArgs are build arguments Image passes to the build. No
	// task.toml sets them: a caller adds them (proxies, or tests whose
	// Dockerfiles are FROM ${BASE}).
	BuildArgs map[string]string

	// Artifacts are what is copied out of the containers after the agent
	// (task.toml's artifacts; /logs/artifacts always comes too): see
	// Collect.
	Artifacts []Artifact
	// Steps are a multi-step task's [[steps]], in order (see Step); nil
	// for a task of one step. StepRewards is multi_step_reward_strategy,
	// StepsMean or StepsFinal ("" without steps).
	Steps       []Step
	StepRewards string

	// Extra holds the keys of task.toml that Task has no field for, by
	// dotted path ("artifacts", "environment.skills_dir"), with their
	// values as the TOML library decodes them.
	Extra map[string]any
}

// Info is the [task] table: the task as a package.
type Info struct {
	Name        string
	Version     string
	Description string
	Authors     []Author
	Keywords    []string
}

// Author is one of [task] authors.
type Author struct {
	Name  string
	Email string
}

// Metadata is [metadata], which Harbor leaves free-form: the fields that
// Terminal-Bench tasks use, and every key in All.
type Metadata struct {
	AuthorName            string
	AuthorEmail           string
	Difficulty            string
	Category              string
	Tags                  []string
	ExpertTimeEstimateMin float64
	JuniorTimeEstimateMin float64
	// All is the whole table, the fields above included.
	All map[string]any
}

// AgentConfig is [agent].
type AgentConfig struct {
	Timeout time.Duration // 0: none given
	User    string        // "" is the image's user
	// Network is [agent] network_mode and allowed_hosts, the agent's
	// network while it runs; nil when not given (the [environment]'s).
	Network *NetworkSpec
}

// VerifierConfig is [verifier].
type VerifierConfig struct {
	Timeout time.Duration
	// Env is added to the tests' environment. Values may name host
	// variables, "${NAME}" or "${NAME:-default}": see Task.ExpandEnv.
	Env  map[string]string
	User string // "" is the image's user
	// Mode is environment_mode: VerifierShared (the agent's container)
	// or VerifierSeparate (a container of its own, see Task.Separate).
	Mode string
	// Environment is [verifier.environment], nil when the task gives
	// none (a separate verifier then copies [environment]).
	Environment *EnvironmentConfig
	// Dockerfile is tests/Dockerfile of a separate verifier, or "".
	Dockerfile string
	// Network is [verifier] network_mode and allowed_hosts, the tests'
	// network while they run; nil when not given (see Task.VerifierNetwork).
	Network *NetworkSpec
	// Collect are [[verifier.collect]]'s hooks, run before the artifacts
	// are copied out.
	Collect []CollectHook
}

// SolutionConfig is [solution].
type SolutionConfig struct {
	Env map[string]string
}

// EnvironmentConfig is [environment].
type EnvironmentConfig struct {
	BuildTimeout time.Duration
	// DockerImage, if set, is a prebuilt image used instead of building
	// environment/.
	DockerImage string
	CPUs        float64
	MemoryMB    int
	StorageMB   int // not enforced
	GPUs        int // not provided
	// NetworkMode is NetworkPublic, NetworkNone or NetworkAllowlist:
	// network_mode, else from the older allow_internet (true by default).
	NetworkMode string
	// AllowedHosts are allowed_hosts (allowlist mode only), normalized as
	// Harbor does: lower case, without a trailing dot.
	AllowedHosts []string
	// Workdir is where the agent, the solution and the tests run:
	// workdir, else DefaultWorkdir.
	Workdir string
	// Env is the container's environment; values may name host variables
	// as VerifierConfig.Env's do.
	Env map[string]string
	OS  string // "linux"
	// Healthcheck is [environment.healthcheck], nil when none: see
	// AwaitHealthy.
	Healthcheck *Healthcheck
	// MCPServers are [[environment.mcp_servers]]: given to the agent.
	MCPServers []MCPServer
}

// AllowInternet says whether the task's container gets a network.
func (e EnvironmentConfig) AllowInternet() bool { return e.NetworkMode == NetworkPublic }

// ParseError is a task.toml that cannot be read: the file, the line (0 if
// unknown) and what is wrong.
type ParseError struct {
	File string
	Line int
	Err  error
}

func (e *ParseError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %v", e.File, e.Line, e.Err)
	}
	return fmt.Sprintf("%s: %v", e.File, e.Err)
}

func (e *ParseError) Unwrap() error { return e.Err }

// ErrUnsupported is what a task this package cannot run matches (an
// *UnsupportedError naming each key): a Windows task, say.
var ErrUnsupported = errors.New("not supported")

// TaskFile is the name of a task's configuration file.
const TaskFile = "task.toml"

// IsTask says whether dir holds a task.toml.
func IsTask(dir string) bool {
	fi, err := os.Stat(filepath.Join(dir, TaskFile))
	return err == nil && fi.Mode().IsRegular()
}

// IsDataset says whether dir is a folder of task folders: no task itself,
// and at least one task folder in it.
func IsDataset(dir string) bool {
	if IsTask(dir) {
		return false
	}
	subs, err := taskDirs(dir)
	return err == nil && len(subs) > 0
}

// taskDirs lists dir's task folders, sorted; hidden folders are skipped.
func taskDirs(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var dirs []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		p := filepath.Join(dir, e.Name())
		if fi, err := os.Stat(p); err == nil && fi.IsDir() && IsTask(p) {
			dirs = append(dirs, p)
		}
	}
	sort.Strings(dirs)
	return dirs, nil
}

// LoadDataset loads every task folder in dir, in the order of their names.
// A task that cannot be loaded is reported in the errors (each naming its
// folder) and the others still load.
func LoadDataset(dir string) ([]*Task, []error) {
	dirs, err := datasetDirs(dir)
	if err != nil {
		return nil, []error{err}
	}
	var tasks []*Task
	var errs []error
	for _, d := range dirs {
		t, err := LoadTask(d)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		tasks = append(tasks, t)
	}
	return tasks, errs
}

// datasetDirs is the task folders of the dataset dir, in the order of
// their names; a dataset without one is an error.
func datasetDirs(dir string) ([]string, error) {
	dirs, err := taskDirs(dir)
	if err != nil {
		return nil, fmt.Errorf("harbor: dataset %s: %w", dir, err)
	}
	if len(dirs) == 0 {
		return nil, fmt.Errorf("harbor: dataset %s holds no task folder (none with a %s)", dir, TaskFile)
	}
	return dirs, nil
}

// LoadTask reads the task folder dir. A task.toml that cannot be parsed is
// a *ParseError naming the file and line; a task that asks for what this
// package cannot do is an *UnsupportedError, which matches ErrUnsupported.
func LoadTask(dir string) (*Task, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("harbor: task %s: %w", dir, err)
	}
	t, err := loadTask(abs)
	var pe *ParseError
	var ue *UnsupportedError
	switch {
	case errors.As(err, &pe):
		return nil, fmt.Errorf("harbor: %w", err) // it names the file
	case errors.As(err, &ue):
		return nil, ue // it names the task
	}
	if err != nil {
		return nil, fmt.Errorf("harbor: task %s: %w", abs, err)
	}
	return t, nil
}

func loadTask(dir string) (*Task, error) {
	file := filepath.Join(dir, TaskFile)
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	t, err := parseConfig(file, data)
	if err != nil {
		return nil, err
	}
	t.Dir = dir
	if t.Name == "" {
		t.Name = filepath.Base(dir)
	}
	if refused := refusals(t, data); len(refused) > 0 {
		return nil, t.unsupported(refused)
	}

	if !t.HasSteps() { // a multi-step task's is each step's
		instruction, err := os.ReadFile(filepath.Join(dir, "instruction.md"))
		if err != nil {
			return nil, fmt.Errorf("instruction.md: %w", err)
		}
		t.Instruction = string(instruction)
	}

	env := filepath.Join(dir, "environment")
	if err := t.loadCompose(env); err != nil {
		return nil, err
	}
	if err := t.checkServices(); err != nil {
		return nil, err
	}
	if df := filepath.Join(env, "Dockerfile"); t.Dockerfile == "" && isFile(df) {
		t.Dockerfile = df
	}
	if t.Dockerfile == "" && t.Environment.DockerImage == "" {
		return nil, errors.New("environment/Dockerfile is missing, and task.toml names no environment.docker_image")
	}
	t.HasSolution = isFile(filepath.Join(dir, "solution", "solve.sh"))
	if t.HasSteps() {
		if err := t.loadSteps(dir); err != nil {
			return nil, err
		}
		return t, nil
	}
	if err := t.loadVerifierEnvironment(dir); err != nil {
		return nil, err
	}
	if !t.Separate() && !isFile(filepath.Join(dir, "tests", "test.sh")) {
		return nil, errors.New("tests/test.sh is missing")
	}
	return t, nil
}

func isFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}

// rawConfig is task.toml as decoded; the fields that accept more than
// one TOML type are of types with their own UnmarshalTOML.
type rawConfig struct {
	SchemaVersion *string `toml:"schema_version"`
	Version       *string `toml:"version"`
	Task          struct {
		Name        string
		Version     string
		Description string
		Authors     []struct {
			Name  string
			Email string
		}
		Keywords []string
	}
	Metadata map[string]any
	Agent    struct {
		TimeoutSec *seconds `toml:"timeout_sec"`
		User       user
		// Read by phaseNetwork.
		NetworkMode  *string   `toml:"network_mode"`
		AllowedHosts *[]string `toml:"allowed_hosts"`
	}
	Verifier struct {
		TimeoutSec *seconds `toml:"timeout_sec"`
		Env        map[string]string
		User       user
		// Read by verifierMode.
		EnvironmentMode *string         `toml:"environment_mode"`
		Environment     *rawEnvironment `toml:"environment"`
		NetworkMode     *string         `toml:"network_mode"`
		AllowedHosts    *[]string       `toml:"allowed_hosts"`
		Collect         any             `toml:"collect"` // read by ParseCollectHooks
	}
	Solution struct {
		Env map[string]string
	}
	Environment rawEnvironment
	Artifacts   any `toml:"artifacts"` // read by ParseArtifacts
	// Read by Task.steps; multi_step_reward_mode, the spelling before
	// schema 1.3, is dropped unread as Harbor drops it.
	Steps              []rawStep `toml:"steps"`
	StepRewardStrategy *string   `toml:"multi_step_reward_strategy"`
	StepRewardMode     any       `toml:"multi_step_reward_mode"`
}

// rawEnvironment is task.toml's [environment] as decoded.
type rawEnvironment struct {
	BuildTimeoutSec *seconds  `toml:"build_timeout_sec"`
	DockerImage     string    `toml:"docker_image"`
	CPUs            *float64  `toml:"cpus"`
	MemoryMB        *int      `toml:"memory_mb"`
	Memory          *size     `toml:"memory"`
	StorageMB       *int      `toml:"storage_mb"`
	Storage         *size     `toml:"storage"`
	GPUs            int       `toml:"gpus"`
	AllowInternet   *bool     `toml:"allow_internet"`
	NetworkMode     string    `toml:"network_mode"`
	AllowedHosts    *[]string `toml:"allowed_hosts"`
	Workdir         string    `toml:"workdir"`
	Env             map[string]string
	OS              string          `toml:"os"`
	Healthcheck     *rawHealthcheck `toml:"healthcheck"`
	MCPServers      []rawMCPServer  `toml:"mcp_servers"`
}

// tomlSeconds is a TOML number, integer or float, as seconds.
func tomlSeconds(v any) (float64, error) {
	switch n := v.(type) {
	case int64:
		return float64(n), nil
	case float64:
		return n, nil
	}
	return 0, fmt.Errorf("want a number of seconds, not %T", v)
}

// seconds is a positive, finite number of seconds, integer or float.
type seconds float64

func (s *seconds) UnmarshalTOML(v any) error {
	f, err := tomlSeconds(v)
	if err != nil {
		return err
	}
	if f <= 0 || math.IsNaN(f) || math.IsInf(f, 0) {
		return fmt.Errorf("want a positive number of seconds, not %v", f)
	}
	*s = seconds(f)
	return nil
}

func (s *seconds) duration(def time.Duration) time.Duration {
	if s == nil {
		return def
	}
	return time.Duration(float64(*s) * float64(time.Second))
}

// user is a user name or a uid.
type user string

func (u *user) UnmarshalTOML(v any) error {
	switch x := v.(type) {
	case string:
		*u = user(x)
	case int64:
		*u = user(strconv.FormatInt(x, 10))
	default:
		return fmt.Errorf("want a user name or uid, not %T", v)
	}
	return nil
}

// size is an older size spelling in MB: "2G", "512M", "1024K" (as
// Harbor reads them: G is 1024 M), or a number of MB.
type size int

func (s *size) UnmarshalTOML(v any) error {
	switch x := v.(type) {
	case int64:
		*s = size(x)
		return nil
	case string:
		mb, err := parseSizeMB(x)
		if err != nil {
			return err
		}
		*s = size(mb)
		return nil
	}
	return fmt.Errorf("want a size like \"2G\" or \"512M\", not %T", v)
}

func parseSizeMB(s string) (int, error) {
	t := strings.ToUpper(strings.TrimSpace(s))
	t = strings.TrimSuffix(strings.TrimSuffix(t, "B"), "I") // "2GB", "2Gi"
	mult := 0.0
	switch {
	case strings.HasSuffix(t, "G"):
		mult = 1024
	case strings.HasSuffix(t, "M"):
		mult = 1
	case strings.HasSuffix(t, "K"):
		mult = 1.0 / 1024
	}
	if mult == 0 {
		return 0, fmt.Errorf("want a size like \"2G\", \"512M\" or \"1024K\", not %q", s)
	}
	f, err := strconv.ParseFloat(t[:len(t)-1], 64)
	if err != nil || f < 0 {
		return 0, fmt.Errorf("want a size like \"2G\", \"512M\" or \"1024K\", not %q", s)
	}
	return int(f * mult), nil
}

// parseConfig decodes task.toml (file is its path, for errors).
func parseConfig(file string, data []byte) (*Task, error) {
	var raw rawConfig
	md, err := toml.Decode(string(data), &raw)
	if err != nil {
		return nil, decodeError(file, data, err)
	}
	fail := func(key, format string, args ...any) error {
		return &ParseError{File: file, Line: keyLine(data, key), Err: fmt.Errorf(key+": "+format, args...)}
	}

	t := &Task{Name: raw.Task.Name}
	switch {
	case raw.SchemaVersion != nil:
		t.SchemaVersion = *raw.SchemaVersion
	case raw.Version != nil:
		t.SchemaVersion = *raw.Version
	}
	t.Info, t.Metadata = describe(raw)
	t.Agent = AgentConfig{Timeout: raw.Agent.TimeoutSec.duration(0), User: string(raw.Agent.User)}
	t.Verifier = VerifierConfig{Timeout: raw.Verifier.TimeoutSec.duration(DefaultVerifierTimeout), Env: raw.Verifier.Env, User: string(raw.Verifier.User)}
	t.Solution = SolutionConfig{Env: raw.Solution.Env}

	for _, table := range []string{"verifier.env", "solution.env", "environment.env", "verifier.environment.env"} {
		key := strings.Split(table, ".")
		if md.IsDefined(key...) && md.Type(key...) != "Hash" {
			return nil, fail(table, "want a table of NAME = \"value\" (got %s)", strings.ToLower(md.Type(key...)))
		}
	}
	if t.Environment, err = environment(raw.Environment, fail); err != nil {
		return nil, err
	}
	if err := t.verifierMode(raw.Verifier.EnvironmentMode, raw.Verifier.Environment, fail); err != nil {
		return nil, err
	}
	if t.Agent.Network, err = phaseNetwork("agent", raw.Agent.NetworkMode, raw.Agent.AllowedHosts, fail); err != nil {
		return nil, err
	}
	if t.Verifier.Network, err = phaseNetwork("verifier", raw.Verifier.NetworkMode, raw.Verifier.AllowedHosts, fail); err != nil {
		return nil, err
	}
	if t.Artifacts, err = ParseArtifacts(raw.Artifacts); err != nil {
		return nil, fail("artifacts", "%w", err)
	}
	if t.Verifier.Collect, err = ParseCollectHooks(raw.Verifier.Collect); err != nil {
		return nil, fail("verifier.collect", "%w", err)
	}
	if err := t.steps(raw.Steps, raw.StepRewardStrategy, fail); err != nil {
		return nil, err
	}

	if undecoded := md.Undecoded(); len(undecoded) > 0 {
		var all map[string]any
		if _, err := toml.Decode(string(data), &all); err != nil {
			return nil, &ParseError{File: file, Err: err} // decoded once already: cannot happen
		}
		t.Extra = extra(undecoded, all)
	}
	return t, nil
}

// decodeError is task.toml's decoding error err as a ParseError, with
// the line it is on where the TOML library tells it.
func decodeError(file string, data []byte, err error) *ParseError {
	pe := &ParseError{File: file, Err: err}
	var te toml.ParseError
	if errors.As(err, &te) {
		pe.Line = te.Position.Line
		if s := te.Position.Start; s > 0 && s < len(data) {
			// The parser puts an error at a line's end on the next line.
			pe.Line = bytes.Count(data[:s], []byte("\n")) + 1
		}
		pe.Err = errors.New(te.Message)
		if te.LastKey != "" && strings.HasPrefix(te.Message, "want ") {
			// An error of a value's UnmarshalTOML: LastKey is its key
			// (of a syntax error, only the key before).
			pe.Err = fmt.Errorf("%s: %s", te.LastKey, te.Message)
		}
	} else if line, msg, ok := lineOf(err.Error()); ok {
		pe.Line, pe.Err = line, errors.New(msg)
	}
	return pe
}

// describe is the task's [task] table and its [metadata]; the first
// author stands in for a metadata author that is missing.
func describe(raw rawConfig) (Info, Metadata) {
	info := Info{Name: raw.Task.Name, Version: raw.Task.Version, Description: raw.Task.Description, Keywords: raw.Task.Keywords}
	for _, a := range raw.Task.Authors {
		info.Authors = append(info.Authors, Author{Name: a.Name, Email: a.Email})
	}
	md := metadata(raw.Metadata)
	if md.AuthorName == "" && len(info.Authors) > 0 {
		md.AuthorName, md.AuthorEmail = info.Authors[0].Name, info.Authors[0].Email
	}
	return info, md
}

// environment is the task's [environment] with the defaults filled in;
// fail makes the error of a key whose value is wrong.
func environment(re rawEnvironment, fail func(key, format string, args ...any) error) (EnvironmentConfig, error) {
	env := EnvironmentConfig{
		BuildTimeout: re.BuildTimeoutSec.duration(DefaultBuildTimeout),
		DockerImage:  strings.TrimSpace(re.DockerImage),
		CPUs:         DefaultCPUs,
		MemoryMB:     DefaultMemoryMB,
		StorageMB:    DefaultStorageMB,
		GPUs:         re.GPUs,
		Workdir:      DefaultWorkdir,
		Env:          re.Env,
		OS:           re.OS,
	}
	if re.CPUs != nil {
		if *re.CPUs <= 0 || math.IsInf(*re.CPUs, 0) || math.IsNaN(*re.CPUs) {
			return EnvironmentConfig{}, fail("environment.cpus", "want a positive number, not %v", *re.CPUs)
		}
		env.CPUs = *re.CPUs
	}
	// The older memory and storage spellings win, as in Harbor.
	switch {
	case re.Memory != nil:
		env.MemoryMB = int(*re.Memory)
	case re.MemoryMB != nil:
		env.MemoryMB = *re.MemoryMB
	}
	switch {
	case re.Storage != nil:
		env.StorageMB = int(*re.Storage)
	case re.StorageMB != nil:
		env.StorageMB = *re.StorageMB
	}
	if env.MemoryMB <= 0 {
		return EnvironmentConfig{}, fail("environment.memory_mb", "want a positive number of MB, not %d", env.MemoryMB)
	}
	var err error
	if env.NetworkMode, env.AllowedHosts, err = baselineNetwork(re, fail); err != nil {
		return EnvironmentConfig{}, err
	}
	if re.Workdir != "" {
		if !strings.HasPrefix(re.Workdir, "/") {
			return EnvironmentConfig{}, fail("environment.workdir", "%q is not an absolute path", re.Workdir)
		}
		env.Workdir = re.Workdir
	}
	if env.Healthcheck, err = healthcheck(re.Healthcheck, fail); err != nil {
		return EnvironmentConfig{}, err
	}
	if env.MCPServers, err = mcpServers(re.MCPServers, fail); err != nil {
		return EnvironmentConfig{}, err
	}
	return env, nil
}

// lineOf reads "toml: line N ...: message" from an error of the TOML
// library that is no ParseError.
func lineOf(msg string) (int, string, bool) {
	rest, ok := strings.CutPrefix(msg, "toml: line ")
	if !ok {
		return 0, "", false
	}
	i := strings.IndexFunc(rest, func(r rune) bool { return r < '0' || r > '9' })
	if i <= 0 {
		return 0, "", false
	}
	n, err := strconv.Atoi(rest[:i])
	if err != nil {
		return 0, "", false
	}
	rest = strings.TrimLeft(rest[i:], ": ")
	// (last key "environment.cpus"): incompatible types: ...
	if after, ok := strings.CutPrefix(rest, "(last key "); ok {
		if key, msg, ok := strings.Cut(after, "): "); ok {
			if k, err := strconv.Unquote(key); err == nil {
				key = k
			}
			rest = key + ": " + strings.TrimPrefix(msg, "incompatible types: ")
		}
	}
	return n, rest, true
}

// keyLine is the line of task.toml where key ("environment.cpus") is
// set, for errors found after decoding; 0 if it cannot tell.
func keyLine(data []byte, key string) int {
	table, name := "", key
	if i := strings.LastIndexByte(key, '.'); i >= 0 {
		table, name = key[:i], key[i+1:]
	}
	current := ""
	for i, line := range strings.Split(string(data), "\n") {
		l := strings.TrimSpace(line)
		if strings.HasPrefix(l, "[") {
			current = strings.Trim(l, "[] ")
			continue
		}
		k, _, ok := strings.Cut(l, "=")
		if !ok {
			continue
		}
		k = strings.TrimSpace(k)
		if (current == table && k == name) || (current == "" && k == key) {
			return i + 1
		}
	}
	return 0
}

// metadata reads the fields Terminal-Bench tasks set, leniently: a value
// of another type than expected is only left out of its field.
func metadata(m map[string]any) Metadata {
	md := Metadata{All: m}
	str := func(k string) string { s, _ := m[k].(string); return s }
	num := func(k string) float64 {
		switch n := m[k].(type) {
		case int64:
			return float64(n)
		case float64:
			return n
		}
		return 0
	}
	md.AuthorName, md.AuthorEmail = str("author_name"), str("author_email")
	md.Difficulty, md.Category = str("difficulty"), str("category")
	md.ExpertTimeEstimateMin, md.JuniorTimeEstimateMin = num("expert_time_estimate_min"), num("junior_time_estimate_min")
	if tags, ok := m["tags"].([]any); ok {
		for _, tag := range tags {
			if s, ok := tag.(string); ok {
				md.Tags = append(md.Tags, s)
			}
		}
	}
	return md
}

// extra collects the keys the decode left alone, but [metadata] (kept
// whole in Metadata.All): the outermost of each, with its value in all.
func extra(undecoded []toml.Key, all map[string]any) map[string]any {
	out := map[string]any{}
	for _, k := range undecoded {
		if k[0] == "metadata" {
			continue
		}
		outer := false
		for i := 1; i < len(k); i++ {
			if _, ok := out[toml.Key(k[:i]).String()]; ok {
				outer = true
				break
			}
		}
		if !outer {
			out[k.String()] = lookup(all, k)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// lookup is the value at key in a decoded document; for a key inside an
// array of tables, the value of its first table.
func lookup(m map[string]any, key toml.Key) any {
	var v any = m
	for _, part := range key {
		switch x := v.(type) {
		case map[string]any:
			v = x[part]
		case []map[string]any:
			if len(x) == 0 {
				return nil
			}
			v = x[0][part]
		default:
			return nil
		}
	}
	return v
}
