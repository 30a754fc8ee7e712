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
	v := c.clone()
	v.deallocated = deallocations{}
	if _, _, err := v.runKAI(false); err != nil {
		t.Fatal(err)
	}
	twice := 0
	for _, n := range v.deallocated {
		if n >= 2 {
			twice++
		}
	}
	if twice != 2 {
		t.Errorf("pods deallocated twice: %d (%v); want 2 (j00-3 and j00-2)", twice, v.deallocated)
	}
	if !c.kaiEvictsTwice() {
		t.Errorf("kaiEvictsTwice: false on seed 1759")
	}
	checkCaseFile(t, c, "kai-double-eviction.json")
	other, _, _, _ := evictionFeatureCase(t, 1057)
	if other.kaiEvictsTwice() {
		t.Errorf("kaiEvictsTwice: true on seed 1057, which evicts each victim once")
	}
}
