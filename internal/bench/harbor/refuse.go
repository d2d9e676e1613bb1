package harbor

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/BurntSushi/toml"
)

// Refusal is one thing a task asks for that lane cannot do yet.
type Refusal struct {
	// Key is what task.toml says, as it spells it:
	// `[verifier] environment_mode = "separate"`.
	Key string `json:"key"`
	// Why is what lane would do instead, and so why it does not run the
	// task: a weaker task would give a figure Harbor would not.
	Why string `json:"why"`
}

// String is the refusal as a line of an error.
func (r Refusal) String() string { return r.Key + " is not supported yet: " + r.Why }

// UnsupportedError is a task lane refuses to run: each of Refusals names
// a key of its task.toml. It matches ErrUnsupported.
type UnsupportedError struct {
	Task     string // the task's name
	Dir      string // its folder
	Refusals []Refusal

	task *Task // as much of it as was read, for Inspect
}

// Error is one line per refusal, each naming the task (and its folder,
// when the task's name is another):
// task "x": [environment] gpus = 2 is not supported yet: ….
func (e *UnsupportedError) Error() string {
	task := fmt.Sprintf("task %q", e.Task)
	if base := filepath.Base(e.Dir); e.Dir != "" && base != e.Task {
		task += fmt.Sprintf(" (folder %s)", base)
	}
	lines := make([]string, len(e.Refusals))
	for i, r := range e.Refusals {
		lines[i] = task + ": " + r.String()
	}
	return strings.Join(lines, "\n")
}

// Is makes errors.Is(err, ErrUnsupported) true.
func (e *UnsupportedError) Is(target error) bool { return target == ErrUnsupported }

// refusalRule is one feature of Harbor's format that lane does not carry
// out: found says whether a task asks for it, and how its task.toml
// spells that. A feature lane comes to carry out loses its row; nothing
// else needs to change.
type refusalRule struct {
	found func(t *Task, doc map[string]any) (key string, ok bool)
	why   string
}

// refusalRules are the features of Harbor's task.toml (schema 1.4) that
// lane would otherwise leave out quietly, each making the task weaker or
// different from what Harbor runs, and so its figure not Harbor's.
//
// What lane reads without applying, and does not refuse, changes no
// figure: [environment] storage_mb (Harbor's own Docker environment does
// not enforce it either; a limit not enforced only leaves more room),
// gpu_types without gpus, and [verifier] environment_mode = "shared",
// which says what lane does anyway.
func refusalRules() []refusalRule {
	return []refusalRule{
		{found: notLinux,
			why: "lane runs Linux containers only"},
		{found: positive("[environment] gpus", "environment", "gpus"),
			why: "lane gives containers no GPU"},
		{found: present("[environment.tpu]", "environment", "tpu"),
			why: "lane gives containers no TPU"},
		{found: present("[environment] skills_dir", "environment", "skills_dir"),
			why: "lane would not copy these skills into the agent's configuration"},
	}
}

// refusals are what task t, whose task.toml is data, asks for that lane
// cannot do, in the order of refusalRules.
func refusals(t *Task, data []byte) []Refusal {
	var doc map[string]any
	if _, err := toml.Decode(string(data), &doc); err != nil {
		return nil // parseConfig decoded it already: cannot happen
	}
	var out []Refusal
	for _, r := range refusalRules() {
		if key, ok := r.found(t, doc); ok {
			out = append(out, Refusal{Key: key, Why: r.why})
		}
	}
	return out
}

// value is the value at path in a decoded task.toml, if set.
func value(doc map[string]any, path ...string) (any, bool) {
	var v any = doc
	for _, p := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = m[p]; !ok {
			return nil, false
		}
	}
	return v, true
}

// present finds a key set to anything.
func present(key string, path ...string) func(*Task, map[string]any) (string, bool) {
	return func(_ *Task, doc map[string]any) (string, bool) {
		_, ok := value(doc, path...)
		return key, ok
	}
}

// positive finds a number above 0, spelled with it.
func positive(key string, path ...string) func(*Task, map[string]any) (string, bool) {
	return func(_ *Task, doc map[string]any) (string, bool) {
		v, _ := value(doc, path...)
		switch n := v.(type) {
		case int64:
			return fmt.Sprintf("%s = %d", key, n), n > 0
		case float64:
			return fmt.Sprintf("%s = %v", key, n), n > 0
		}
		return key, false
	}
}

// notLinux finds an [environment] os other than Linux (Harbor reads it
// in any case).
func notLinux(t *Task, _ map[string]any) (string, bool) {
	name := t.Environment.OS
	return fmt.Sprintf("[environment] os = %q", name), name != "" && !strings.EqualFold(name, "linux")
}

// unsupported is the error of task t, which asks for what refused say,
// with as much of t read as its folder gives (a multi-step task has no
// root tests/, say), for Inspect.
func (t *Task) unsupported(refused []Refusal) *UnsupportedError {
	if b, err := os.ReadFile(filepath.Join(t.Dir, "instruction.md")); err == nil {
		t.Instruction = string(b)
	}
	env := filepath.Join(t.Dir, "environment")
	_ = t.loadCompose(env) // best effort: the task does not run
	if df := filepath.Join(env, "Dockerfile"); t.Dockerfile == "" && isFile(df) {
		t.Dockerfile = df
	}
	t.HasSolution = isFile(filepath.Join(t.Dir, "solution", "solve.sh"))
	return &UnsupportedError{Task: t.Name, Dir: t.Dir, Refusals: refused, task: t}
}

// Inspect reads the task folder dir as LoadTask does, but gives a task
// that LoadTask refuses too, as much of it as can be read, with what it
// refuses. Other errors are LoadTask's.
func Inspect(dir string) (*Task, []Refusal, error) {
	t, err := LoadTask(dir)
	var ue *UnsupportedError
	if errors.As(err, &ue) {
		return ue.task, ue.Refusals, nil
	}
	return t, nil, err
}

// Inspected is a task folder as Inspect read it: Task and Refusals, or Err.
type Inspected struct {
	Dir      string
	Task     *Task
	Refusals []Refusal
	Err      error
}

// InspectAll inspects the task folder dir, or every task folder of the
// dataset dir in the order of their names.
func InspectAll(dir string) ([]Inspected, error) {
	dirs := []string{dir}
	if !IsTask(dir) {
		var err error
		if dirs, err = datasetDirs(dir); err != nil {
			return nil, err
		}
	}
	out := make([]Inspected, len(dirs))
	for i, d := range dirs {
		t, refused, err := Inspect(d)
		out[i] = Inspected{Dir: d, Task: t, Refusals: refused, Err: err}
	}
	return out, nil
}
