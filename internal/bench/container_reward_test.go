package bench

import (
	"strings"
	"testing"

	"github.com/lanehq/lane/internal/bench/harbor"
	"github.com/lanehq/lane/internal/record"
)

// The pass is decided on the "reward" key, or on the --pass-key named;
// without that key the attempt is an error of the task that says which
// keys there are, never a pass or a fail. Every key is recorded. A step of
// a multi-step task is decided the same way.
func TestScoreOnThePassKey(t *testing.T) {
	t.Parallel()
	keys := harbor.Reward{File: harbor.RewardJSON, Values: map[string]float64{"accuracy": 0.8, "style": 0.5}}
	withReward := harbor.Reward{File: harbor.RewardJSON, Value: 1, Values: map[string]float64{"reward": 1, "style": 0}}
	txt := harbor.Reward{File: harbor.RewardText, Value: 0.5, Values: map[string]float64{"reward": 0.5}}
	for _, tc := range []struct {
		name    string
		key     string
		pass    float64
		r       harbor.Reward
		status  record.AttemptStatus
		kind    string
		reward  float64
		message string
	}{
		{name: "reward key", pass: 1, r: withReward, status: record.AttemptPassed, reward: 1},
		{name: "reward.txt below", pass: 1, r: txt, status: record.AttemptFailed, kind: FailCheck, reward: 0.5},
		{name: "pass key", key: "accuracy", pass: 0.75, r: keys, status: record.AttemptPassed, reward: 0.8},
		{name: "pass key below", key: "style", pass: 0.75, r: keys, status: record.AttemptFailed, kind: FailCheck, reward: 0.5},
		{name: "no reward key", pass: 1, r: keys, status: record.AttemptErrored, kind: FailNoPassKey,
			message: `reward.json has no key "reward" to decide the pass on (it has accuracy, style); name the key with lane bench --pass-key KEY`},
		{name: "no such pass key", key: "speed", pass: 1, r: keys, status: record.AttemptErrored, kind: FailNoPassKey,
			message: `reward.json has no key "speed" to decide the pass on (it has accuracy, style)]`},
	} {
		a := &record.Attempt{CheckOutput: "verifier said so\n"}
		score(a, &ContainerTask{PassKey: tc.key, PassReward: tc.pass}, tc.r)
		if a.Status != tc.status || a.FailureKind != tc.kind {
			t.Errorf("%s: %s %s, want %s %s", tc.name, a.Status, a.FailureKind, tc.status, tc.kind)
		}
		if len(a.Rewards) != len(tc.r.Values) {
			t.Errorf("%s: rewards %v, want every key of %v", tc.name, a.Rewards, tc.r.Values)
		}
		var st record.AttemptStep
		scoreStep(&st, &ContainerTask{PassKey: tc.key, PassReward: tc.pass}, tc.r)
		if st.Status != tc.status || st.FailureKind != tc.kind || len(st.Rewards) != len(tc.r.Values) || (st.Reward == nil) != (tc.message != "") {
			t.Errorf("%s: the step %s %s, reward %v, rewards %v; want %s %s as the attempt", tc.name, st.Status, st.FailureKind, st.Reward, st.Rewards, tc.status, tc.kind)
		}
		if tc.message != "" {
			if a.Reward != nil || !strings.Contains(a.CheckOutput, tc.message) || !strings.HasPrefix(a.CheckOutput, "verifier said so") {
				t.Errorf("%s: reward %v, output %q; want none and %q", tc.name, a.Reward, a.CheckOutput, tc.message)
			}
			continue
		}
		if a.Reward == nil || *a.Reward != tc.reward {
			t.Errorf("%s: reward %v, want %v", tc.name, a.Reward, tc.reward)
		}
	}
}
