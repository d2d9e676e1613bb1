package runner

import "lane/trace"

// cliTally is what lane reads from an agent CLI's accounting of a run: the
// Tally of its decoder package under runtimes/.
type cliTally interface {
	Observe(trace.Event)
	SessionID() string
	Usage() trace.Usage
	Turns() int
	ToolCalls() int
	ResultText() string
	Cost(price func(model string, u trace.Usage) (float64, bool)) (usd float64, estimate bool)
	Judge(exitCode int) trace.Verdict
}

// cliJudge judges an agent CLI's run from its decoder's tally.
type cliJudge struct {
	o     Options
	tally cliTally
}

func (j *cliJudge) Observe(ev trace.Event) { j.tally.Observe(ev) }

func (j *cliJudge) Judge(run *trace.Run, ex Exit) { applyVerdict(run, j.tally.Judge(ex.Code), ex) }

func (j *cliJudge) Account(run *trace.Run, laneTurns int) {
	if id := j.tally.SessionID(); id != "" {
		run.SessionID = id
	}
	// Turns are model turns for every runtime, for comparison (Codex
	// counts a whole exec as one turn).
	run.Usage, run.Turns, run.ToolCalls = j.tally.Usage(), max(j.tally.Turns(), laneTurns), j.tally.ToolCalls()
	run.CostUSD, run.CostEstimate = j.tally.Cost(j.o.price())
	run.ResultText = j.tally.ResultText()
}
