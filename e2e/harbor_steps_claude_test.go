package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/lanehq/lane/internal/record"
	"github.com/lanehq/lane/internal/testkit/anthropictest"
)

// The instructions of claudeStepsTask's two steps, which the scripted
// model tells apart by their first words.
const (
	stepOneInstruction = "Step one: write the word in /app/seed.txt, in capitals, into /app/one.txt.\n"
	stepTwoInstruction = "Step two: write /app/one.txt and then /app/more.txt into /app/two.txt.\n"
)

// claudeStepsTask writes a two-step Harbor task under dataset: each step
// has its own instruction.md, a workdir/ with a file for the agent to use,
// and tests/ that pass only on the step's own work (step two's also on
// step one's, left in the one container all steps share).
func claudeStepsTask(t *testing.T, dataset string) {
	t.Helper()
	verdict := func(file, want string) string {
		return "#!/bin/bash\nmkdir -p /logs/verifier\n" +
			"if [ \"$(cat " + file + " 2>/dev/null)\" = \"" + want + "\" ]; then echo 1 > /logs/verifier/reward.txt\n" +
			"else cat " + file + "; echo 0 > /logs/verifier/reward.txt; fi\n"
	}
	writeTree(t, filepath.Join(dataset, "relay"), map[string]string{
		"task.toml": `schema_version = "1.4"

[agent]
timeout_sec = 600

[verifier]
timeout_sec = 300

[environment]
allow_internet = false
workdir = "/app"

[[steps]]
name = "capitals"

[[steps]]
name = "join"
`,
		"environment/Dockerfile":          "ARG BASE=lane-test-base\nFROM ${BASE}\nRUN mkdir -p /app\n",
		"steps/capitals/instruction.md":   stepOneInstruction,
		"steps/capitals/workdir/seed.txt": "tulip\n",
		"steps/capitals/tests/test.sh":    verdict("/app/one.txt", "TULIP"),
		"steps/join/instruction.md":       stepTwoInstruction,
		"steps/join/workdir/more.txt":     "fern\n",
		"steps/join/tests/test.sh":        verdict("/app/two.txt", "TULIP\nfern"),
		"tests/test.sh":                   "#!/bin/bash\necho 0 > /logs/verifier/reward.txt\n", // each step has its own
	})
}

// firstRequests keeps the first request a scripted model got for each
// step (by its instruction's first words).
type firstRequests[R any] struct {
	mu    sync.Mutex
	first map[string]R
}

// keep records q as step's first request, unless step has one.
func (f *firstRequests[R]) keep(step string, q R) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.first == nil {
		f.first = map[string]R{}
	}
	if _, ok := f.first[step]; !ok {
		f.first[step] = q
	}
}

// firstRequest is the first request of step, failing the test without one.
func (f *firstRequests[R]) firstRequest(t *testing.T, step string) R {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	q, ok := f.first[step]
	if !ok {
		t.Fatalf("the model was never asked to do %q", step)
	}
	return q
}

// stepsModel is a scripted model that does claudeStepsTask's steps with
// Bash, one call a step, and keeps the first request of each step.
type stepsModel struct {
	firstRequests[anthropictest.Request]
}

// stepCommand is the Bash command that does the work of the step whose
// instruction is in text, and the step ("Step one" or "Step two"); each
// command prints what it wrote, which comes back to the model as the
// call's result.
func stepCommand(text string) (step, command string) {
	switch {
	case strings.Contains(text, "Step one:"):
		return "Step one", "tr a-z A-Z < /app/seed.txt > /app/one.txt && cat /app/one.txt"
	case strings.Contains(text, "Step two:"):
		return "Step two", "cat /app/one.txt /app/more.txt > /app/two.txt && cat /app/two.txt"
	}
	return "", ""
}

// respond answers a step's instruction with its Bash call, and the call's
// result with "done".
func (m *stepsModel) respond(q anthropictest.Request) (anthropictest.Turn, bool) {
	last := lastUserMessage(q)
	for _, b := range last.Blocks() {
		if b.Type == "tool_result" {
			return anthropictest.Text("done"), true
		}
	}
	step, cmd := stepCommand(last.Text())
	if step == "" {
		return anthropictest.Text("I see no step to do."), true
	}
	m.keep(step, q)
	return anthropictest.Tools(anthropictest.Bash("", cmd)), true
}

// lastUserMessage is q's last message from the user: Claude Code may put
// a message of its own (the environment's description) after it.
func lastUserMessage(q anthropictest.Request) anthropictest.Message {
	for i := len(q.Messages) - 1; i >= 0; i-- {
		if q.Messages[i].Role == "user" {
			return q.Messages[i]
		}
	}
	return anthropictest.Message{}
}

// requestLines is a request's messages as "role: text" lines, a tool
// call as "tool_use Bash" and its result as "tool_result: OUTPUT".
func requestLines(q anthropictest.Request) []string {
	var out []string
	for _, m := range q.Messages {
		for _, b := range m.Blocks() {
			switch b.Type {
			case "text":
				out = append(out, m.Role+": "+b.Text)
			case "tool_use":
				out = append(out, m.Role+": tool_use "+b.Name)
			case "tool_result":
				var s string
				if json.Unmarshal(b.Content, &s) != nil {
					var blocks []anthropictest.ContentBlock
					_ = json.Unmarshal(b.Content, &blocks)
					for _, c := range blocks {
						s += c.Text
					}
				}
				out = append(out, m.Role+": tool_result: "+s)
			}
		}
	}
	return out
}

// indexOf is the index of the first line of lines that contains s, -1
// when none does.
func indexOf(lines []string, s string) int {
	for i, l := range lines {
		if strings.Contains(l, s) {
			return i
		}
	}
	return -1
}

// stepsReport is what lane bench report -o json says of a bench's
// multi-step attempts.
type stepsReport struct {
	Steps []struct {
		Task    string
		Status  string
		Reward  *float64
		Rewards map[string]float64
		Steps   []struct {
			Name    string
			Status  string
			RunID   string `json:"run_id"`
			Reward  *float64
			Rewards map[string]float64
			Error   string
		}
	}
}

// claudeStepsEnv is a lane environment whose Claude Code, with a
// subscription login, runs in a task's container against its own
// scripted model.
func claudeStepsEnv(t *testing.T, vars []string) (*localEnv, *stepsModel) {
	t.Helper()
	e := newLocalEnv(t)
	cs := anthropictest.NewServer(t)
	home := filepath.Join(t.TempDir(), "home")
	if err := os.Mkdir(home, 0o755); err != nil {
		t.Fatal(err)
	}
	e.vars = append(e.vars, vars...)
	e.vars = append(e.vars, anthropictest.ClaudeSubscriptionEnv(cs.URL(), home)...)
	e.vars = append(e.vars, "LANE_CLAUDE_BIN="+anthropictest.ClaudeBin(t), "HOME="+home, "LANE_DB="+e.db)
	m := &stepsModel{}
	cs.SetResponder(m.respond)
	return e, m
}

// benchSteps runs lane bench on dataset with Claude Code and extra flags,
// and reads its report's multi-step attempt, which must have passed both
// steps, each in a run of its own, with reward 1. It returns the steps'
// runs, as lane show gives them.
func benchSteps(t *testing.T, e *localEnv, dataset, base string, extra ...string) [2]record.Run {
	t.Helper()
	return benchStepsOf(t, e, dataset, base, "sonnet", extra...)
}

// benchStepsOf is benchSteps with the model of lane bench --models.
func benchStepsOf(t *testing.T, e *localEnv, dataset, base, model string, extra ...string) [2]record.Run {
	t.Helper()
	args := append([]string{"bench", dataset, "--models", model, "--build-arg", "BASE=" + base}, extra...)
	wantExit(t, e.lane(context.Background(), args...), 0)
	st := e.openStore()
	benches, err := st.ListBenches(context.Background(), 1)
	st.Close()
	if err != nil || len(benches) != 1 {
		t.Fatalf("benches %v, %v", benches, err)
	}
	id := benches[0].ID[:8]
	r := e.lane(context.Background(), "bench", "report", id, "-o", "json")
	wantExit(t, r, 0)
	var rep stepsReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || len(rep.Steps) != 1 || len(rep.Steps[0].Steps) != 2 {
		t.Fatalf("report's steps %+v, %v\n%s", rep.Steps, err, r.stdout)
	}
	a := rep.Steps[0]
	for _, s := range a.Steps {
		if s.Status != "passed" || s.Reward == nil || *s.Reward != 1 || s.RunID == "" {
			t.Errorf("step %s: %s, reward %s, run %q: %s", s.Name, s.Status, rewardText(s.Reward), s.RunID, s.Error)
		}
	}
	if a.Steps[0].Name != "capitals" || a.Steps[1].Name != "join" {
		t.Errorf("steps %s, %s; want capitals, join", a.Steps[0].Name, a.Steps[1].Name)
	}
	if a.Steps[0].RunID == a.Steps[1].RunID {
		t.Errorf("both steps in run %s; want a run each", a.Steps[0].RunID)
	}
	if a.Task != "relay" || a.Status != "passed" || a.Reward == nil || *a.Reward != 1 {
		t.Errorf("attempt %s %s, reward %s %v; want passed with the steps' mean, 1", a.Task, a.Status, rewardText(a.Reward), a.Rewards)
	}
	text := e.lane(context.Background(), "bench", "report", id)
	wantExit(t, text, 0)
	_, section, _ := strings.Cut(text.stdout, "steps of multi-step attempts:")
	lines := strings.Split(section, "\n")
	for _, name := range []string{"relay " + model + " #1", "capitals", "join"} {
		if i := indexOf(lines, name); i < 0 || !strings.Contains(lines[i], "passed") || !strings.Contains(lines[i], "reward 1") {
			t.Errorf("the text report's steps have no line for %s that passed with reward 1:\n%s", name, text.stdout)
		}
	}
	// Each step's run did that step's work alone, and the attempt's
	// figures are their sum: a resumed session's history is not counted
	// again.
	runs := [2]record.Run{showRun(t, e, a.Steps[0].RunID), showRun(t, e, a.Steps[1].RunID)}
	st = e.openStore()
	defer st.Close()
	at := latestBenchAttempts(t, st, 1)[0]
	for _, run := range runs {
		if run.Status != record.StatusSucceeded || run.ToolCalls != 1 || run.Dir != "/app" {
			t.Errorf("run %s: %s, %d tool calls, in %s; want one call in /app", run.ID, run.Status, run.ToolCalls, run.Dir)
		}
	}
	if at.ToolCalls != 2 || at.Usage != runs[0].Usage.Add(runs[1].Usage) || at.Usage.OutputTokens == 0 {
		t.Errorf("attempt: %d tool calls, usage %+v; want the steps' runs' sum, of %+v and %+v", at.ToolCalls, at.Usage, runs[0].Usage, runs[1].Usage)
	}
	return runs
}

// rewardText is a reward as a test's message shows it.
func rewardText(r *float64) string {
	if r == nil {
		return "none"
	}
	return fmt.Sprint(*r)
}

// showRun is lane show RUN -o json's run record.
func showRun(t *testing.T, e *localEnv, id string) record.Run {
	t.Helper()
	r := e.lane(context.Background(), "show", id, "-o", "json")
	wantExit(t, r, 0)
	var out struct {
		Run record.Run
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("lane show %s: %v\n%s", id, err, r.stdout)
	}
	return out.Run
}

// Claude Code inside a multi-step task's container, against a scripted
// model that does each step's work with a Bash call, as a user of lane
// bench sees it: by default each step is a session of its own (a run of
// its own whose first request carries only that step's instruction); with
// --step-session continue step two's run resumes step one's session, and
// its first request carries step one's conversation, then step two's
// instruction. Each step's verifier passes on the work, and the attempt
// passes with their mean. The fresh sessions, lane's default, are
// TestHarborStepsClaudeFreshLong's (TestHarborSteps runs the default
// through lane bench in make test).
func TestHarborStepsClaude(t *testing.T) {
	t.Parallel()
	vars, base := containerVars(t)
	dataset := t.TempDir()
	claudeStepsTask(t, dataset)
	stepsClaudeContinue(t, vars, base, dataset)
}

func TestHarborStepsClaudeFreshLong(t *testing.T) {
	t.Parallel()
	vars, base := containerVars(t)
	dataset := t.TempDir()
	claudeStepsTask(t, dataset)
	stepsClaudeFresh(t, vars, base, dataset)
}

// stepsClaudeFresh: each step a session of its own, its first request
// only its instruction.
func stepsClaudeFresh(t *testing.T, vars []string, base, dataset string) {
	t.Run("fresh", func(t *testing.T) {
		e, m := claudeStepsEnv(t, vars)
		runs := benchSteps(t, e, dataset, base)
		for step, instruction := range map[string]string{"Step one": stepOneInstruction, "Step two": stepTwoInstruction} {
			q := m.firstRequest(t, step)
			if auth := q.Header.Get("Authorization"); auth != "Bearer tok-test" {
				t.Errorf("%s's first request came with Authorization %q; want the subscription login's token", step, auth)
			}
			conv := requestLines(q)
			if indexOf(conv, strings.TrimSpace(instruction)) < 0 || indexOf(conv, "tool_") >= 0 ||
				step == "Step two" && indexOf(conv, "Step one") >= 0 {
				t.Errorf("%s's first request: %q; want only its own instruction", step, conv)
			}
		}
		one, two := runs[0], runs[1]
		if two.ParentRunID != "" || two.SessionID == "" || two.SessionID == one.SessionID {
			t.Errorf("step two's run: parent %q, session %q (step one's %q); want a session of its own", two.ParentRunID, two.SessionID, one.SessionID)
		}
	})
}

// stepsClaudeContinue: under --step-session continue step two resumes
// step one's session.
func stepsClaudeContinue(t *testing.T, vars []string, base, dataset string) {
	t.Run("continue", func(t *testing.T) {
		e, m := claudeStepsEnv(t, vars)
		runs := benchSteps(t, e, dataset, base, "--step-session", "continue")
		conv := requestLines(m.firstRequest(t, "Step two"))
		one, result, two := indexOf(conv, "user: "+strings.TrimSpace(stepOneInstruction)), indexOf(conv, "tool_result: TULIP"),
			indexOf(conv, "user: "+strings.TrimSpace(stepTwoInstruction))
		if one < 0 || result < one || two < result || indexOf(conv[two:], "tool_") >= 0 {
			t.Errorf("step two's first request: %q; want step one's instruction, its tool result, then step two's instruction", conv)
		}
		if c := requestLines(m.firstRequest(t, "Step one")); indexOf(c, "tool_") >= 0 {
			t.Errorf("step one's first request: %q; want only its instruction", c)
		}
		one1, two1 := runs[0], runs[1]
		if two1.ParentRunID != one1.ID || two1.SessionID == "" || two1.SessionID != one1.SessionID {
			t.Errorf("step two's run: parent %q, session %q; want step one's run %s and its session %q",
				two1.ParentRunID, two1.SessionID, one1.ID, one1.SessionID)
		}
	})
}
