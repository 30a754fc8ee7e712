package main

import (
	"slices"
	"testing"

	"github.com/NVIDIA/KAI-scheduler/pkg/scheduler/api/common_info"
)

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
	if got := seen.deallocated.lowered(); !slices.Equal(got, []common_info.PodID{"j00-2", "j00-3"}) {
		t.Errorf("pods deallocated twice: %v; want j00-2 and j00-3", got)
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
	// KAI with its eviction actions trying the unit without victims first, as §4.8 does, places
	// j04-0 on n1 with no victim and never takes j05: the seed is decided by that rule before
	// the signature of (a) is read.
	if o := c.checkDecisions(arbiterCLI(t), nil); o.Failure != "" || !slices.Equal(o.Rules, []string{ruleVictimlessPlacement}) {
		t.Errorf("outcome %+v; want rule %s", o, ruleVictimlessPlacement)
	}
	other, _, _, _ := evictionFeatureCase(t, 1057)
	if seen := other.observeKAI(); seen == nil || len(seen.placedTaken) > 0 {
		t.Errorf("pods placed then taken (or the run failed) on seed 1057, which takes no pod it placed")
	}
}

// The count ends where KAI's cycle leaves the queues (seed 406 of the eviction features): KAI's
// reclaim for j10 tries scenarios whose node test of n0 evicts the recorded j03-3 and j03-2 a
// second time, and rolls them back (every undone eviction calls the allocate handlers, whatever
// status it restores). KAI's own cycle commits none of them, so no pod ends lowered twice, and
// j03-3, running throughout, counts once.
func TestDecisionDeallocationCountFollowsRollbacks(t *testing.T) {
	c, _, _, _ := evictionFeatureCase(t, 406)
	seen := c.observeKAI()
	if seen == nil {
		t.Fatal("KAI's observed run failed")
	}
	if got := seen.deallocated.lowered(); len(got) > 0 {
		t.Errorf("pods lowered twice on seed 406: %v; want none (the double evictions are rolled back)", got)
	}
	if seen.deallocated["j03-3"] != 1 {
		t.Errorf("j03-3 (running, never evicted in a committed statement) counts %d; want 1", seen.deallocated["j03-3"])
	}
}

// kai-evicts-twice (seed 406 of the eviction features): with j08, placed by allocate, no victim
// (kai-bound-not-victim), KAI's reclaim for the gang j10 records j03-3 and j03-2, and its third
// part's node test of n0 evicts them again: q0 drops to 2 GPUs against the 4 its pods hold, q0
// becomes starved, and j03 is ordered before j10 and re-placed on n0, so j10 stays pending. Held
// to one count per pod, the same rebuilt run places j10 on n0 by evicting j03-3, j03-2 and
// j03-1, arbiter's answer.
func TestDecisionCaseEvictedOnce(t *testing.T) {
	c, _, arb, own := evictionFeatureCaseAndKAI(t, 406)
	if own["j10/j10-0"] != "pending" || arb["j10/j10-0"] != "pipelined@n0" {
		t.Fatalf("not the case of seed 406: j10-0 KAI %s, arbiter %s", own["j10/j10-0"], arb["j10/j10-0"])
	}
	variant := rebuiltActions{boundNotVictims: true}
	held := false
	if run := runRebuilt(t, c, variant, func(v *cluster) { v.heldEvictions = &held }); !sameOutcome(run, arb) {
		t.Errorf("KAI with %v held to one count per pod differs from arbiter: %v", variant.rules(), diffKeys(run, arb))
	}
	if !held {
		t.Errorf("the hold never held back a handler call")
	}
	unheld := runRebuilt(t, c, variant, func(v *cluster) { v.evictedTwice = true })
	if unheld["j10/j10-0"] != "pending" || unheld["j03/j03-1"] != "running" {
		t.Errorf("without the hold: j10-0 %s, j03-1 %s; want pending, running", unheld["j10/j10-0"], unheld["j03/j03-1"])
	}
	checkCaseFile(t, c, "kai-evicted-once.json")
}
