package harbor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/lanehq/lane/internal/container"
)

// Where the verifier writes its reward, in the container.
const (
	VerifierLogsDir = "/logs/verifier"
	RewardText      = "reward.txt"
	RewardJSON      = "reward.json"
)

// RewardKey is the key of a reward file that holds the reward: reward.txt's
// one number is it, and it is the key reward.json names it by.
const RewardKey = "reward"

// Reward is what the verifier wrote.
type Reward struct {
	// Value is the RewardKey's number: reward.txt's, or reward.json's
	// "reward" key; 0 when reward.json has no such key (Values says which
	// keys it has, and Key whether one is there).
	Value float64
	// Values are every key the verifier wrote: reward.txt's number under
	// RewardKey, reward.json's named numbers as they are.
	Values map[string]float64
	// File is the file it came from: RewardText or RewardJSON.
	File string
}

// Key is the number the verifier wrote under key, and whether it wrote one.
func (r Reward) Key(key string) (float64, bool) {
	v, ok := r.Values[key]
	return v, ok
}

// ParseReward reads the content of a reward file, RewardText (one number)
// or RewardJSON (a flat object of named numbers; a boolean counts as 0 or
// 1, as Harbor's own reading of the file coerces it). An error matches
// ErrBadReward.
func ParseReward(file string, data []byte) (Reward, error) {
	bad := func(format string, args ...any) (Reward, error) {
		return Reward{}, fmt.Errorf("%w: %s: %s", ErrBadReward, file, fmt.Sprintf(format, args...))
	}
	switch file {
	case RewardText:
		s := strings.TrimSpace(string(data))
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return bad("%q is not a number", clip(s))
		}
		return Reward{Value: v, Values: map[string]float64{RewardKey: v}, File: file}, nil
	case RewardJSON:
		var raw map[string]json.RawMessage
		if err := json.Unmarshal(data, &raw); err != nil {
			return bad("not a JSON object: %v", err)
		}
		if len(raw) == 0 {
			return bad("an empty object")
		}
		r := Reward{Values: map[string]float64{}, File: file}
		for _, k := range slices.Sorted(maps.Keys(raw)) {
			v, ok := rewardNumber(raw[k])
			if !ok {
				return bad("%q is %s, not a number", k, clip(string(raw[k])))
			}
			r.Values[k] = v
		}
		r.Value = r.Values[RewardKey]
		return r, nil
	}
	return Reward{}, fmt.Errorf("harbor: %s is no reward file (want %s or %s)", file, RewardText, RewardJSON)
}

// rewardNumber is a reward.json value as a number: a finite number, or a
// boolean as 0 or 1. A string, an object, an array or null is none.
func rewardNumber(raw json.RawMessage) (float64, bool) {
	if string(raw) == "null" { // which Unmarshal leaves a number's zero
		return 0, false
	}
	var v float64
	if err := json.Unmarshal(raw, &v); err == nil {
		return v, true
	}
	var b bool
	if err := json.Unmarshal(raw, &b); err != nil {
		return 0, false
	}
	if b {
		return 1, true
	}
	return 0, true
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// ReadReward reads the reward the verifier wrote in c:
// /logs/verifier/reward.json, else reward.txt (reward.json wins when both
// exist: it holds every key). Without either the error matches
// ErrNoReward: an error of the task, not a failure of the agent; a file
// that is empty, unreadable or holds no number matches ErrBadReward.
func ReadReward(ctx context.Context, c *container.Container) (Reward, error) {
	name, data, err := c.ReadFirst(ctx, VerifierLogsDir+"/"+RewardJSON, VerifierLogsDir+"/"+RewardText)
	if errors.Is(err, fs.ErrNotExist) {
		return Reward{}, fmt.Errorf("%w: neither %s/%s nor %s exists", ErrNoReward, VerifierLogsDir, RewardText, RewardJSON)
	}
	if err != nil {
		return Reward{}, fmt.Errorf("harbor: read the reward: %w", err)
	}
	return ParseReward(path.Base(name), data)
}
