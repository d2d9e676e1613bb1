package runner

import (
	"cmp"
	"errors"
	"fmt"

	"github.com/lanehq/lane/internal/record"
)

// TokenLimitError says lane stopped a run whose tokens passed its
// --token-limit.
type TokenLimitError struct {
	Limit, Used int64
	// Estimated: Used is lane's estimate from the stream, for a runtime
	// that reports its usage only at its end.
	Estimated bool
}

func (e *TokenLimitError) Error() string {
	return fmt.Sprintf("the run used %d tokens%s, past its --token-limit of %d", e.Used, estimated(e.Estimated), e.Limit)
}

// killAtOnce: a run past its budget is killed without the grace an
// interrupt gives, in which it would go on spending.
func (e *TokenLimitError) killAtOnce() bool { return true }

// CostLimitError says lane stopped a run whose cost passed its
// --cost-limit.
type CostLimitError struct {
	Limit, Used float64
	Estimated   bool // as TokenLimitError's
}

func (e *CostLimitError) Error() string {
	return fmt.Sprintf("the run cost $%.4f%s, past its --cost-limit of $%.4f", e.Used, estimated(e.Estimated), e.Limit)
}

func (e *CostLimitError) killAtOnce() bool { return true }

func estimated(yes bool) string {
	if yes {
		return " (lane's estimate from its stream)"
	}
	return ""
}

// Budget is the limits o gives each attempt, nil when it gives none.
func (o Options) Budget() *record.Budget {
	b := record.Budget{Tokens: o.TokenLimit, CostUSD: o.CostLimit, Turns: o.MaxTurns}
	if b.IsZero() {
		return nil
	}
	return &b
}

// judgeLimit judges a run that lane stopped at one of its limits; it
// reports false when cause is no limit's.
func judgeLimit(run *record.Run, cause error) bool {
	var (
		maxTurns *MaxTurnsError
		tokens   *TokenLimitError
		cost     *CostLimitError
	)
	switch {
	case errors.As(cause, &maxTurns):
		run.Status, run.ErrorKind = record.StatusFailed, record.ErrorTurnLimit
		run.ErrorMessage, run.ErrorHint = maxTurns.Error(), "raise --max-turns, or split the task"
	case errors.As(cause, &tokens):
		run.Status, run.ErrorKind = record.StatusFailed, record.ErrorTokenLimit
		run.ErrorMessage, run.ErrorHint = tokens.Error(), "raise --token-limit, or split the task"
	case errors.As(cause, &cost):
		run.Status, run.ErrorKind = record.StatusFailed, record.ErrorCostLimit
		run.ErrorMessage, run.ErrorHint = cost.Error(), "raise --cost-limit, or split the task"
	default:
		return false
	}
	return true
}

// Meter watches an attempt's tokens and cost as its events arrive, and
// names the cause to stop it on at the first event that passes its
// --token-limit or --cost-limit.
type Meter struct {
	TokenLimit int64
	CostLimit  float64
	// Account, when set, fills in a run's usage and cost as lane would
	// record them now (the attempt's judge's); nil sums the usage events
	// and prices each with Price (lane's own loop).
	Account func(run *record.Run)
	Price   func(model string, u record.Usage) (float64, bool)
	Model   string // the model a usage event that names none is priced as
	// Estimate, when set, is lane's estimate from the stream, for a runtime
	// that reports its usage only at its end; the meter goes by whichever
	// of it and the runtime's figures is higher.
	Estimate *StreamEstimate

	sum     record.Usage
	sumCost float64
	fired   bool
}

// NewMeter is the meter of an attempt of o whose judge accounts as
// account (nil: sum the usage events); atEnd: the runtime reports its
// usage only at its end. It is nil when o sets no token or cost limit.
func NewMeter(o Options, account func(*record.Run), atEnd bool) *Meter {
	if o.TokenLimit <= 0 && o.CostLimit <= 0 {
		return nil
	}
	m := &Meter{TokenLimit: o.TokenLimit, CostLimit: o.CostLimit, Account: account, Price: o.Pricer(), Model: o.PricedModel()}
	if atEnd {
		m.Estimate = NewStreamEstimate(o.PromptWithAddition())
	}
	return m
}

// Observe sees one event and returns the cause to stop the run on, once,
// when its tokens or cost have passed a limit.
func (m *Meter) Observe(ev record.Event) error {
	if m == nil || m.fired {
		return nil
	}
	grew := m.Estimate != nil && m.Estimate.Observe(ev)
	if ev.Kind == record.KindUsage && ev.Usage != nil && m.Account == nil {
		m.sum = m.sum.Add(*ev.Usage)
		if usd, ok := m.Price(cmp.Or(ev.Model, m.Model), *ev.Usage); ok {
			m.sumCost += usd
		}
	}
	if !grew && ev.Kind != record.KindUsage && ev.Kind != record.KindResult {
		return nil
	}
	tokens, cost, estTokens, estCost := m.figures()
	switch {
	case m.TokenLimit > 0 && max(tokens, estTokens) > m.TokenLimit:
		m.fired = true
		return &TokenLimitError{Limit: m.TokenLimit, Used: max(tokens, estTokens), Estimated: estTokens > tokens}
	case m.CostLimit > 0 && max(cost, estCost) > m.CostLimit:
		m.fired = true
		return &CostLimitError{Limit: m.CostLimit, Used: max(cost, estCost), Estimated: estCost > cost}
	}
	return nil
}

// figures are the run's tokens and cost so far as lane counts them, and
// its estimate's.
func (m *Meter) figures() (tokens int64, cost float64, estTokens int64, estCost float64) {
	if m.Account != nil {
		var now record.Run
		m.Account(&now)
		tokens, cost = now.Usage.Total(), now.CostUSD
	} else {
		tokens, cost = m.sum.Total(), m.sumCost
	}
	if m.Estimate != nil {
		estTokens = m.Estimate.Usage.Total()
		estCost, _ = m.Price(m.Model, m.Estimate.Usage)
	}
	return tokens, cost, estTokens, estCost
}

// bytesPerToken is how many bytes of text make a token, roughly, in
// English and code; the estimate undercounts rather than overcounts.
const bytesPerToken = 4

// StreamEstimate is lane's estimate of a run's tokens from its stream, for
// a runtime that reports its usage only at its end (Codex's exec, Gemini
// CLI): each model turn sent the conversation so far (the task, the
// model's output, the tool results) and wrote its own output, a token
// every four bytes. It leaves out the runtime's system prompt and tool
// definitions, which lane does not see, so it is low: a limit acts no
// sooner than the real figures would make it.
type StreamEstimate struct {
	Usage   record.Usage
	context int64 // bytes of the conversation so far
	output  int64 // bytes the model wrote
	turns   TurnCounter
}

// NewStreamEstimate is the estimate of a run whose task is prompt.
func NewStreamEstimate(prompt string) *StreamEstimate {
	return &StreamEstimate{context: int64(len(prompt))}
}

// Observe counts one event of the main agent in, and reports whether the
// estimate grew.
func (s *StreamEstimate) Observe(ev record.Event) bool {
	if ev.ParentToolUseID != "" {
		return false
	}
	before := s.turns.turns
	_ = s.turns.Observe(ev) // no limit: it only counts
	grew := false
	if s.turns.turns > before {
		s.Usage.InputTokens += s.context / bytesPerToken // the request of the turn that began
		grew = true
	}
	var n int64
	switch ev.Kind {
	case record.KindText, record.KindThinking:
		n = int64(len(ev.Text))
	case record.KindToolCall:
		n = int64(len(ev.ToolName) + len(ev.Input))
	case record.KindToolResult:
		// A result cut short (CapOutput) went to the model whole.
		s.context += max(int64(len(ev.Output)), ev.OutputSize)
		return grew
	default:
		return grew
	}
	s.context += n
	s.output += n
	wrote := s.Usage.OutputTokens
	s.Usage.OutputTokens = s.output / bytesPerToken
	return grew || s.Usage.OutputTokens > wrote
}
