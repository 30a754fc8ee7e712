package main

// Exclusion rules of the decision comparison. Each is tied to a deviation that SEMANTICS §4 or
// docs/conformance.md states; a divergence none explains fails the seed.
const (
	// ruleDecisionMapOrder: KAI keeps nodes, jobs and queues in Go maps and its answer can change
	// from run to run; the cluster is scheduled kaiRuns times and arbiter's answer is accepted
	// when it is one of KAI's (SEMANTICS §0.5: arbiter fixes every order).
	ruleDecisionMapOrder = "map-order"
	// ruleLazyOrder: SEMANTICS §4.3 re-evaluates the candidate order after every attempt
	// ("eagerly; KAI re-sorts lazily"). KAI's allocate keeps departments and queues in heaps and
	// fixes only the top entry, so it may compare a department on a stale job or allocation. The
	// cluster is scheduled once more by KAI with allocate re-sorting before every attempt
	// (eagerAllocate: KAI's own order functions, filters and allocation); arbiter's answer is
	// accepted when it is that run's.
	ruleLazyOrder = "kai-lazy-order"
)

// explainDecision returns the rules that explain a divergence, or none.
func (c *cluster) explainDecision(arb outcome, runs []outcome) []string {
	agrees := func(out outcome, err error) bool {
		return err == nil && (sameOutcome(out, arb) || sameOutcome(out.withoutNodes(), arb.withoutNodes()) && !allSame(runs))
	}
	eager, _, err := c.runKAI(true)
	if agrees(eager, err) {
		return []string{ruleLazyOrder}
	}
	v := c.clone()
	v.overdrawnIdle = true
	for _, withEager := range []bool{false, true} {
		if out, _, err := v.runKAI(withEager); agrees(out, err) {
			if withEager {
				return []string{ruleOverdrawnIdle, ruleLazyOrder}
			}
			return []string{ruleOverdrawnIdle}
		}
	}
	return nil
}
