package bench

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/lanehq/lane/internal/record"
)

// RetryPolicy is which failed attempts a bench runs again at once, and how
// many times (lane bench --retries, --retry-include, --retry-exclude), as
// Harbor's job retries: a retry replaces the failed attempt, which counts
// it (record.Attempt.Retries).
type RetryPolicy struct {
	// Max is how many times an attempt may be run again; 0: never.
	Max int `json:"max"`
	// Include, when set, are the only failure kinds retried.
	Include []string `json:"include,omitempty"`
	// Exclude are the failure kinds never retried; they win over Include.
	// DefaultRetryExclude unless the bench was given its own.
	Exclude []string `json:"exclude,omitempty"`
}

// DefaultRetryExclude are the failure kinds a bench does not retry unless
// told otherwise: Harbor's default exclusions, in lane's kinds, and the
// per-attempt limits. A retry would not change them (the agent ran out of
// time, the verifier did, the reward file is missing or bad), would only
// repeat them (a usage limit, refused credentials, a model lane cannot
// resolve), or would spend again what a limit was set to cap (the agent
// ran out of its tokens, cost or turns, as of its time). docs/bench.md
// maps each of Harbor's exception types to these.
var DefaultRetryExclude = []string{
	string(record.ErrorTimeout), FailVerifierTime, FailCheckTimeout, FailNoReward, FailBadReward, FailNoPassKey,
	FailRateLimited, string(record.ErrorAuth), string(record.ErrorUsage),
	string(record.ErrorTokenLimit), string(record.ErrorCostLimit), string(record.ErrorTurnLimit),
}

// AgentTimeout is what a user may call the kind of an attempt whose agent
// ran out of time (Harbor's AgentTimeoutError); lane records it timeout.
const AgentTimeout = "agent_timeout"

// FailureKinds are every failure kind lane records on an attempt, in the
// order docs/bench.md lists them.
func FailureKinds() []string {
	return []string{
		FailCheck, FailCheckTimeout, FailSetup, FailAgent, FailCancelled, FailLane,
		FailEnvironment, FailNoOracle, FailOracle,
		FailNoEngine, FailImage, FailStart, FailVerifierTime, FailNoReward, FailBadReward, FailNoPassKey, FailTaskFormat,
		FailRateLimited,
		string(record.ErrorAuth), string(record.ErrorRuntimeMissing), string(record.ErrorTimeout),
		string(record.ErrorCrash), string(record.ErrorTurnLimit), string(record.ErrorTokenLimit), string(record.ErrorCostLimit),
		string(record.ErrorAPI),
		string(record.ErrorPermission), string(record.ErrorContradiction), string(record.ErrorUsage),
		string(record.StatusInterrupted),
	}
}

// neverRetried are the kinds no policy retries: a score (the check, or
// the verifier, said the work is wrong: Harbor retries exceptions, never
// a reward), and the bench's own end.
var neverRetried = []string{FailCheck, FailCancelled}

// RetryableKinds are the failure kinds --retry-include and --retry-exclude
// take: FailureKinds but those no policy retries.
func RetryableKinds() []string {
	return slices.DeleteFunc(FailureKinds(), func(k string) bool { return slices.Contains(neverRetried, k) })
}

// oldTurnLimit is what the turn limit's kind was called before
// turn_limit; a user's lists may still say it.
const oldTurnLimit = "max_turns"

// ParseKinds checks kinds against valid, with agent_timeout read as
// timeout and max_turns as turn_limit; the error names the valid kinds.
// flag names the flag for it.
func ParseKinds(flag string, kinds, valid []string) ([]string, error) {
	var out []string
	for _, k := range kinds {
		k = strings.TrimSpace(k)
		switch k {
		case AgentTimeout:
			k = string(record.ErrorTimeout)
		case oldTurnLimit:
			k = string(record.ErrorTurnLimit)
		}
		if !slices.Contains(valid, k) {
			return nil, fmt.Errorf("%s: unknown failure kind %q (valid: %s, and %s for timeout)",
				flag, k, strings.Join(valid, ", "), AgentTimeout)
		}
		if !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out, nil
}

// Retries says whether an attempt that ended as a did is to run again
// under p, whatever its count so far.
func (p *RetryPolicy) Retries(a *record.Attempt) bool {
	if p == nil || p.Max <= 0 || a.Status == record.AttemptPassed || a.FailureKind == "" {
		return false
	}
	k := a.FailureKind
	switch {
	case slices.Contains(neverRetried, k), slices.Contains(p.Exclude, k):
		return false
	case len(p.Include) > 0:
		return slices.Contains(p.Include, k)
	}
	return true
}

// RunAttempt runs attempt a of task, and runs it again while the task's
// retry policy says so: each run starts afresh from a as it was given, and
// the last one's outcome is a's, with the count of the runs before it in
// a.Retries. It is one attempt of a bench, whether run by the bench's own
// process or by a lane worker (which holds its lease throughout).
func RunAttempt(ctx context.Context, env AttemptEnv, task *Task, a *record.Attempt) {
	first := *a
	for n := 0; ; n++ {
		*a = first
		a.Retries = n
		runAttempt(ctx, env, task, a)
		if ctx.Err() != nil || n >= task.Retry.max() || !task.Retry.Retries(a) {
			return
		}
	}
}

func (p *RetryPolicy) max() int {
	if p == nil {
		return 0
	}
	return p.Max
}

// setRetry gives every task of s the bench's retry policy, which the
// stored suite keeps for a resume and for workers.
func setRetry(s *Suite, p *RetryPolicy) {
	if p == nil || p.Max <= 0 {
		return
	}
	for i := range s.Tasks {
		s.Tasks[i].Retry = p
	}
}

// rerun says whether a finished attempt is to run again because its kind
// is one of kinds (lane bench --resume --rerun).
func rerun(a record.Attempt, kinds []string) bool {
	return a.Status.Done() && a.FailureKind != "" && slices.Contains(kinds, a.FailureKind)
}
