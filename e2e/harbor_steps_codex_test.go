package e2e

import (
	"strings"
	"testing"

	"github.com/lanehq/lane/internal/testkit/responsestest"
)

// codexStepsModel is a scripted Responses API model that does
// claudeStepsTask's steps with Codex's shell tool, one call a step, and
// keeps the first request of each step.
type codexStepsModel struct {
	firstRequests[responsestest.Request]
}

// respond answers a step's instruction with its exec_command call, and
// the call's output with "done".
func (m *codexStepsModel) respond(q responsestest.Request) (responsestest.Turn, bool) {
	if len(q.Input) > 0 && strings.HasSuffix(q.Input[len(q.Input)-1].Type, "_output") {
		return responsestest.Text("done"), true
	}
	users := q.Texts("user")
	if len(users) == 0 {
		return responsestest.Text("I see no step to do."), true
	}
	step, cmd := stepCommand(users[len(users)-1])
	if step == "" {
		return responsestest.Text("I see no step to do."), true
	}
	m.keep(step, q)
	return responsestest.ToolCalls(responsestest.Exec("", cmd)), true
}

// inputLines is a request's input as "role: text" lines, a tool call as
// "function_call NAME" and its output as "function_call_output: OUTPUT".
func inputLines(q responsestest.Request) []string {
	var out []string
	for _, it := range q.Input {
		switch it.Type {
		case "message":
			out = append(out, it.Role+": "+it.Text)
		case "function_call", "custom_tool_call":
			out = append(out, "function_call "+it.Name)
		case "function_call_output", "custom_tool_call_output":
			out = append(out, "function_call_output: "+it.Output)
		}
	}
	return out
}

// codexStepsEnv is a lane environment whose Codex runs in a task's
// container against its own scripted model, and the lane bench flags
// that point it there.
func codexStepsEnv(t *testing.T, vars []string) (*localEnv, *codexStepsModel, []string) {
	t.Helper()
	var r rig
	for _, r = range rigs {
		if r.runtime == "codex" {
			break
		}
	}
	ce := newCLIEnv(t, r)
	ce.vars = append(ce.vars, vars...)
	m := &codexStepsModel{}
	ce.srv.(codexServer).SetResponder(m.respond)
	// A container's processes share one cgroup's turn at the CPU: on a
	// busy machine Codex can be slow to send its first byte.
	flags := []string{"--base-url", ce.srv.baseURL(), "--first-byte-timeout", "10m"}
	return &localEnv{env: ce.env}, m, flags
}

// Codex inside a multi-step task's container, against a scripted model
// that does each step's work with a shell call, as a user of lane bench
// sees it: by default each step is a session of its own (a run of its
// own whose first request carries only that step's instruction); with
// --step-session continue step two's run resumes step one's session from
// the attempt's Codex home, and its first request carries step one's
// conversation, then step two's instruction. Each step's verifier passes
// on the work, and the attempt passes with their mean. Long: Claude Code's
// is TestHarborStepsClaude, in make test.
func TestHarborStepsCodexLong(t *testing.T) {
	t.Parallel()
	vars, base := containerVars(t)
	dataset := t.TempDir()
	claudeStepsTask(t, dataset)
	const model = "codex:test-model"

	t.Run("fresh", func(t *testing.T) {
		t.Parallel()
		e, m, flags := codexStepsEnv(t, vars)
		runs := benchStepsOf(t, e, dataset, base, model, flags...)
		for step, instruction := range map[string]string{"Step one": stepOneInstruction, "Step two": stepTwoInstruction} {
			conv := inputLines(m.firstRequest(t, step))
			if indexOf(conv, strings.TrimSpace(instruction)) < 0 || indexOf(conv, "function_call") >= 0 ||
				step == "Step two" && indexOf(conv, "Step one") >= 0 {
				t.Errorf("%s's first request: %q; want only its own instruction", step, conv)
			}
		}
		one, two := runs[0], runs[1]
		if two.ParentRunID != "" || two.SessionID == "" || one.SessionID == "" || two.SessionID == one.SessionID {
			t.Errorf("step two's run: parent %q, session %q (step one's %q); want a session of its own", two.ParentRunID, two.SessionID, one.SessionID)
		}
	})

	t.Run("continue", func(t *testing.T) {
		t.Parallel()
		e, m, flags := codexStepsEnv(t, vars)
		runs := benchStepsOf(t, e, dataset, base, model, append(flags, "--step-session", "continue")...)
		conv := inputLines(m.firstRequest(t, "Step two"))
		one, result, two := indexOf(conv, "user: "+strings.TrimSpace(stepOneInstruction)), indexOf(conv, "function_call_output:"),
			indexOf(conv, "user: "+strings.TrimSpace(stepTwoInstruction))
		if one < 0 || result < one || !strings.Contains(conv[max(result, 0)], "TULIP") || two < result ||
			indexOf(conv[max(two, 0):], "function_call") >= 0 {
			t.Errorf("step two's first request: %q; want step one's instruction, its call's output, then step two's instruction", conv)
		}
		if c := inputLines(m.firstRequest(t, "Step one")); indexOf(c, "function_call") >= 0 {
			t.Errorf("step one's first request: %q; want only its instruction", c)
		}
		one1, two1 := runs[0], runs[1]
		if two1.ParentRunID != one1.ID || two1.SessionID == "" || two1.SessionID != one1.SessionID {
			t.Errorf("step two's run: parent %q, session %q; want step one's run %s and its session %q",
				two1.ParentRunID, two1.SessionID, one1.ID, one1.SessionID)
		}
	})
}
