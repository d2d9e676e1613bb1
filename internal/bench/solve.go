package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/lanehq/lane/internal/bench/stats"
	"github.com/lanehq/lane/internal/record"
)

// OracleModel is the model that is no model: each attempt runs the task's
// own reference solution (its Oracle commands) instead of an agent, which
// proves the task and the harness. A task whose oracle fails is broken.
// Package stats, which leaves it out of the paired comparisons, names it.
const OracleModel = stats.OracleModel

// Failure kinds of an errored attempt: the task or its environment failed.
const (
	FailEnvironment = "environment_error" // the check could not get what it needs
	FailNoOracle    = "no_oracle"         // the oracle ran a task without a reference solution
	FailOracle      = "oracle_failed"     // the reference solution's commands failed
)

// shipped is the fixture of an attempt as shipped, hidden paths included:
// what Protect puts back and Oracle reads. The suite's own fixture folder
// is used as it is; a stored fixture (on a worker) is unpacked beside the
// attempt's folder, and cleanup removes it.
func shipped(ctx context.Context, env AttemptEnv, task *Task, dir string) (src string, cleanup func(), err error) {
	cleanup = func() {}
	switch {
	case task.FixtureBlob != "" && env.Blob != nil:
		src = dir + ".shipped"
		if err := os.Mkdir(src, 0o700); err != nil {
			return "", cleanup, err
		}
		cleanup = func() { _ = removeTree(src) }
		if err := unpackStored(ctx, env, task.FixtureBlob, src); err != nil {
			cleanup()
			return "", func() {}, fmt.Errorf("fixture: %w", err)
		}
		return src, cleanup, nil
	case task.Fixture != "":
		return fixturePath(env.SuiteDir, task.Fixture), cleanup, nil
	}
	return "", cleanup, nil
}

// needsShipped says whether an attempt of task with model reads its
// fixture as shipped after the folder is filled.
func needsShipped(task *Task, model string) bool {
	return len(task.Protect) > 0 || model == OracleModel && len(task.Oracle) > 0
}

// hide removes the task's hidden paths from the attempt's folder dir.
func hide(task *Task, dir string) error {
	for _, p := range task.Hide {
		if err := os.RemoveAll(filepath.Join(dir, filepath.FromSlash(p))); err != nil {
			return fmt.Errorf("hide %s: %w", p, err)
		}
	}
	return nil
}

// restore puts the task's protected paths back in dir as src has them; a
// path src does not have is removed.
func restore(task *Task, src, dir string) error {
	for _, p := range task.Protect {
		from, to := filepath.Join(src, filepath.FromSlash(p)), filepath.Join(dir, filepath.FromSlash(p))
		if err := os.RemoveAll(to); err != nil {
			return fmt.Errorf("put back %s: %w", p, err)
		}
		info, err := os.Lstat(from)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("put back %s: %w", p, err)
		}
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			return fmt.Errorf("put back %s: %w", p, err)
		}
		if info.IsDir() {
			err = os.Mkdir(to, 0o755)
			if err == nil {
				err = copyTree(from, to)
			}
		} else {
			err = copyFile(from, to, info.Mode())
		}
		if err != nil {
			return fmt.Errorf("put back %s: %w", p, err)
		}
	}
	return nil
}

// runOracle runs the task's reference solution in dir, in place of an
// agent's run. It returns false, with a errored, when there is none or it
// failed.
func runOracle(ctx context.Context, task *Task, src, dir string, a *record.Attempt) bool {
	if len(task.Oracle) == 0 {
		a.Status, a.FailureKind = record.AttemptErrored, FailNoOracle
		a.CheckOutput = "the task has no reference solution for the oracle to run"
		return false
	}
	env := append(commandEnv(), "LANE_FIXTURE="+src)
	for _, c := range task.Oracle {
		res := runCmd(ctx, dir, task.SetupTimeout, env, "sh", "-c", c)
		if !res.ok() {
			a.Status, a.FailureKind, a.CheckExitCode = record.AttemptErrored, FailOracle, res.exitCode
			a.CheckOutput = fmt.Sprintf("oracle %q: %s", c, describeFailure(res))
			return false
		}
	}
	return true
}

// environmentFault marks a, whose check failed, errored when the check's
// output matches one of the task's environment errors, or env's
// classifier says it is one; the reason goes after the output.
func environmentFault(env AttemptEnv, task *Task, a *record.Attempt) {
	if a.Status != record.AttemptFailed || a.FailureKind != FailCheck {
		return
	}
	reason, ok := "", false
	if env.EnvironmentError != nil {
		reason, ok = env.EnvironmentError(task, a.CheckOutput)
	}
	for _, p := range task.Check.EnvironmentErrors {
		if ok {
			break
		}
		if re, err := regexp.Compile(p); err == nil && re.MatchString(a.CheckOutput) {
			reason, ok = "the check's output matches "+p, true
		}
	}
	if ok {
		a.Status, a.FailureKind = record.AttemptErrored, FailEnvironment
		a.CheckOutput += "\n[lane: an error of the environment, not the agent's: " + reason + "]\n"
	}
}

// retryPrompt is what the agent is asked after a try failed its check:
// the task's RetryPrompt with the output, cleaned as env's format says.
func retryPrompt(env AttemptEnv, task *Task, checkOutput string) string {
	if env.CleanOutput != nil {
		checkOutput = env.CleanOutput(task, checkOutput)
	}
	if task.RetryPrompt == "" {
		return "The check failed:\n\n" + checkOutput + "\n\nFix the code so that it passes."
	}
	return strings.ReplaceAll(task.RetryPrompt, "{output}", checkOutput)
}
