package bench

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/lanehq/lane/internal/bench/harbor"
	"github.com/lanehq/lane/internal/record"
)

// FailNoPassKey is the failure kind of an attempt whose verifier wrote no
// key to decide its pass on: reward.json without "reward" and no
// --pass-key, or without the --pass-key named. An error of the task (or of
// how the bench was asked), counted apart, never a pass or a fail.
const FailNoPassKey = "no_pass_key"

// score records the verifier's reward on a, every key of it, and decides
// a's pass on the task's pass key: at least its PassReward passes.
func score(a *record.Attempt, ct *ContainerTask, r harbor.Reward) {
	a.Rewards = r.Values
	key := cmp.Or(ct.PassKey, harbor.RewardKey)
	v, ok := r.Key(key)
	if !ok {
		msg := fmt.Sprintf("%s has no key %q to decide the pass on (it has %s)", r.File, key,
			strings.Join(slices.Sorted(maps.Keys(r.Values)), ", "))
		if ct.PassKey == "" {
			msg += "; name the key with lane bench --pass-key KEY"
		}
		errorAttempt(a, FailNoPassKey, strings.TrimRight(a.CheckOutput, "\n")+"\n[lane: "+msg+"]")
		return
	}
	a.Reward = &v
	a.Status = record.AttemptPassed
	if v < ct.PassReward {
		a.Status, a.FailureKind = record.AttemptFailed, FailCheck
	}
}

// scoreStep records a step's reward on st and decides its pass as score
// does an attempt's: without the pass key the step is an error of the
// task, not a fail.
func scoreStep(st *record.AttemptStep, ct *ContainerTask, r harbor.Reward) {
	st.Rewards = r.Values
	v, ok := r.Key(cmp.Or(ct.PassKey, harbor.RewardKey))
	if !ok {
		st.Status, st.FailureKind = record.AttemptErrored, FailNoPassKey
		return
	}
	st.Reward = &v
	st.Status, st.FailureKind = record.AttemptPassed, ""
	if v < ct.PassReward {
		st.Status, st.FailureKind = record.AttemptFailed, FailCheck
	}
}
