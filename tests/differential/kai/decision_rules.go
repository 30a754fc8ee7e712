package main

// Exclusion rules of the decision comparison. Each is tied to a deviation that SEMANTICS §4 or
// docs/conformance.md states; a divergence none explains fails the seed.
const (
	// ruleDecisionMapOrder: KAI keeps nodes, jobs and queues in Go maps and its answer can change
	// from run to run; the cluster is scheduled kaiRuns times and arbiter's answer is accepted
	// when it is one of KAI's (SEMANTICS §0.5: arbiter fixes every order).
	ruleDecisionMapOrder = "map-order"
)

// explainDecision returns the rules that explain a divergence, or none.
func (c *cluster) explainDecision(arb outcome, runs []outcome) []string {
	return nil
}
