package main

import "testing"

// Spec question (o) (seed 1759 of the eviction features): KAI's reclaim for j16 records j00-3 and
// j00-2, and its third part's test of n2 evicts them once more; the proportion plugin lowers q1
// twice for each, and KAI's reclaim later pipelines j07-2 within q1's limit, where for SEMANTICS
// q1 holds 7 of its 7 GPUs. The deallocation count sees it; a seed without it (1057) shows none.
func TestDecisionKAIEvictsTwice(t *testing.T) {
	c, _, arb, own := evictionFeatureCaseAndKAI(t, 1759)
	if own["j07/j07-2"] != "pipelined@n2" || arb["j07/j07-2"] != "pending" {
		t.Fatalf("not the case of seed 1759: j07-2 KAI %s, arbiter %s", own["j07/j07-2"], arb["j07/j07-2"])
	}
	seen := c.observeKAI()
	if seen == nil {
		t.Fatal("KAI's observed run failed")
	}
	twice := 0
	for _, n := range seen.deallocated {
		if n >= 2 {
			twice++
		}
	}
	if twice != 2 {
		t.Errorf("pods deallocated twice: %d (%v); want 2 (j00-3 and j00-2)", twice, seen.deallocated)
	}
	if !seen.deallocated.evictsTwice() {
		t.Errorf("evictsTwice: false on seed 1759")
	}
	checkCaseFile(t, c, "kai-double-eviction.json")
	other, _, _, _ := evictionFeatureCase(t, 1057)
	if seen := other.observeKAI(); seen == nil || seen.deallocated.evictsTwice() {
		t.Errorf("evictsTwice: true (or the run failed) on seed 1057, which evicts each victim once")
	}
}

// Spec question (a) within one action (seed 1818 of the eviction features): KAI's reclaim
// pipelines j05 on n5, n6 and n1, as arbiter does, then moves all three pods to n1, n1 and n3 for
// j04 in the same action. The pods read after every action do not show it; the event handler does.
func TestDecisionKAITakesPodPlacedInTheSameAction(t *testing.T) {
	c, _, arb, own := evictionFeatureCaseAndKAI(t, 1818)
	if own["j05/j05-0"] != "pipelined@n1" || arb["j05/j05-0"] != "pipelined@n5" {
		t.Fatalf("not the case of seed 1818: j05-0 KAI %s, arbiter %s", own["j05/j05-0"], arb["j05/j05-0"])
	}
	seen := c.observeKAI()
	if seen == nil {
		t.Fatal("KAI's observed run failed")
	}
	if p := seen.placedTaken; len(p) != 3 || p["j05-0"] != "n5" || p["j05-1"] != "n6" || p["j05-2"] != "n1" {
		t.Errorf("pods placed then taken: %v; want j05-0, j05-1 and j05-2 from n5, n6 and n1", p)
	}
	if o := c.checkDecisions(arbiterCLI(t), nil); o.Failure != boundThenTakenOutcome.Failure {
		t.Errorf("outcome %+v; want the seed left out as (a)", o)
	}
	other, _, _, _ := evictionFeatureCase(t, 1057)
	if seen := other.observeKAI(); seen == nil || len(seen.placedTaken) > 0 {
		t.Errorf("pods placed then taken (or the run failed) on seed 1057, which takes no pod it placed")
	}
}
