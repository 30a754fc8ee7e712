package main

import (
	"slices"
	"testing"
)

// Spec question (m) (seed 1057 of the eviction features): allocate pipelines j04's four pods on n2,
// one GPU more than n2 releases; preempt then evicts j10 for j14, and KAI pipelines j14-0 on n2,
// whose overdrawn releasing amount leaves its idle GPUs looking free (nodeavailability's +100),
// and j14-1 on n0. For SEMANTICS §4.1 neither node fits now: arbiter binpacks j14-0 onto n0 and
// j14-1 onto n2. KAI with its idle corrected by the shortfalls of its pipelinings gives
// arbiter's answer.
func TestDecisionCaseOverdrawnIdle(t *testing.T) {
	c, cli, arb, own := evictionFeatureCaseAndKAI(t, 1057)
	if own["j14/j14-0"] != "pipelined@n2" || arb["j14/j14-0"] != "pipelined@n0" {
		t.Fatalf("not the case of seed 1057: j14-0 KAI %s, arbiter %s", own["j14/j14-0"], arb["j14/j14-0"])
	}
	v := c.clone()
	v.overdrawnIdle = true
	fixed, _, err := v.runKAI(false)
	if err != nil {
		t.Fatal(err)
	}
	if !sameOutcome(fixed, arb) {
		t.Errorf("KAI with its idle corrected differs from arbiter: %v", diffKeys(fixed, arb))
	}
	o := c.checkDecisions(cli, nil)
	if o.Failure != "" || !slices.Contains(o.Rules, ruleOverdrawnIdle) {
		t.Errorf("outcome %+v; want rule %s", o, ruleOverdrawnIdle)
	}
	checkCaseFile(t, c, "kai-overdrawn-idle.json")
}

// (m) with (a) as a draw (seed 1963 of the eviction features): allocate pipelines j12-0 on n3 past
// its releasing amount, and reclaim for j19 draws j15, pipelined by allocate, as a recorded victim.
// KAI pipelines j19-0 on n3 ("fits now" on KAI's idle) and j19-1 on n2, arbiter the other way
// round. Neither change alone gives arbiter's answer; both together do.
func TestDecisionOverdrawnIdleWithBoundNotVictim(t *testing.T) {
	c, cli, _, arb := evictionFeatureCase(t, 1963)
	if arb["j19/j19-0"] != "pipelined@n2" || arb["j19/j19-1"] != "pipelined@n3" {
		t.Fatalf("not the case of seed 1963: arbiter %v", arb)
	}
	for _, r := range []struct {
		variant   rebuiltActions
		overdrawn bool
		agrees    bool
	}{
		{rebuiltActions{}, true, false},
		{rebuiltActions{boundNotVictims: true}, false, false},
		{rebuiltActions{boundNotVictims: true}, true, true},
	} {
		v := c.clone()
		v.rebuilt, v.overdrawnIdle = r.variant, r.overdrawn
		out, _, err := v.runKAI(false)
		if agrees := err == nil && sameOutcome(out, arb); agrees != r.agrees {
			t.Errorf("KAI rebuilt as %v, idle corrected %v, agrees: %v, want %v (%v)", r.variant.rules(), r.overdrawn, agrees, r.agrees, err)
		}
	}
	o := c.checkDecisions(cli, nil)
	if o.Failure != "" || !slices.Contains(o.Rules, ruleOverdrawnIdle) || !slices.Contains(o.Rules, ruleBoundNotVictim) {
		t.Errorf("outcome %+v; want rules %s and %s", o, ruleOverdrawnIdle, ruleBoundNotVictim)
	}
}
