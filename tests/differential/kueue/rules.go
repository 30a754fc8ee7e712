package main

import "slices"

// The deliberate deviations of arbiter's resource flavors from Kueue (SEMANTICS §5.8.10) and
// how the flavor-assignment comparison deals with each. Only one needs an exclusion rule; the
// others are kept out of the generated scenarios, or cannot arise in them.
//
//  1. Scan progress: avoided. Every Kueue cycle assigns flavors to a fresh workload.Info with
//     no LastAssignment, so each starts at each group's first flavor, as arbiter does.
//  2. Pod set order: avoided. The pending workload's pod sets are ps0, ps1 in Kueue's spec
//     order, which is also their name order.
//  3. The reservation's "would borrow": cannot arise. It matters only to a later entry of the
//     same round; the scenario has one pending workload, so every round has one entry.
//  4. A NoFit entry carrying no usage: cannot arise, for the same reason (a tournament of one).
//  5. NoFit reasons: rule ruleNoFitReason below.
//  6. Undeclared flavors: avoided. Every flavor of the tree is a ResourceFlavor on both sides.
//  7. An admitted group missing a flavor: avoided. The generator gives every requested covered
//     resource of an admitted pod set a flavor.
//  8. Pod sets of several pods: avoided. Every pod set is one pod (Kueue: count 1).
//  9. Required node affinity: avoided. Pods carry node selectors and tolerations only.

// ruleNoFitReason accepts a NoFit whose reason code alone differs (deviation 5). Kueue stops a
// pod set at the first resource group that fails, taking the resources in map order, and within
// a flavor at the first resource that does not fit, so it may name another group's failure, a
// less severe reason, or a group's failure where arbiter names a resource the queue does not
// cover (arbiter looks for uncovered resources first). The converse is not excused: a resource
// Kueue found uncovered is uncovered for arbiter too, which checks coverage before anything else.
const ruleNoFitReason = "nofit-reason"

// noFitReasonRule reports whether Kueue's and arbiter's outcomes, equal in everything else,
// differ only as deviation 5 allows.
func noFitReasonRule(want, got *outcome) bool {
	return want.firstMode == "NoFit" && got.firstMode == "NoFit" && want.reason != got.reason &&
		want.reason != "resource-not-covered"
}

// ruleMapOrder accepts a decision on which Kueue's scheduler answered differently from run to
// run (Go map order: the order of the heads, ties among entries and among preemption targets,
// which SEMANTICS §5.4 and §5.5 break by name), when arbiter's answer is one of Kueue's.
const ruleMapOrder = "kueue-map-order"

// ruleAdmittedCandidate accepts a decision on which a Kueue cycle took as a preemption
// candidate a workload an earlier cycle had admitted: in a preemption search (the flavor
// assigner's oracle, which may then rank a flavor as preemptible where arbiter tries the next
// one, or the preemptor's) or among a nomination's targets, evicted or not. SEMANTICS §5.4 step
// 6: groups admitted in a call are never preemption candidates in it (the next call may preempt
// them); Kueue's cycles know no call. The harness keeps such workloads from LowerPriority and
// LowerOrNewerEqualPriority policies (kueuesched.go); under reclaimWithinCohort Any they remain
// candidates. The rule applies only when one of Kueue's runs was seen doing so (the candidates
// and targets Kueue logs).
const ruleAdmittedCandidate = "admitted-as-candidate"

// ruleOverlapSkipped accepts a decision on which a Kueue cycle skipped an entry because its
// preemption targets overlapped those of an entry processed before it in the cycle. Kueue
// v0.17.0's scheduler (scheduler.go, "Workload has overlapping preemption targets with another
// workload") requeues it for the next cycle, where SEMANTICS §5.4 step 5.1 nominates it again
// at once without the claimed victims, so arbiter may admit it, or claim other targets for it, a
// round earlier. docs/conformance.md lists this as open difference (d); the rule applies only
// when one of Kueue's runs skipped an entry so.
const ruleOverlapSkipped = "overlap-skipped"

// decisionRules returns the rules that explain arbiter's verdict got against Kueue's runs, or
// nothing. Each rule needs the state it names to have been seen in one of Kueue's runs.
func decisionRules(_ *decision, runs []*kueueRun, _ *verdictOf) []string {
	var rules []string
	if slices.ContainsFunc(runs, func(r *kueueRun) bool { return r.candidateAdmitted }) {
		rules = append(rules, ruleAdmittedCandidate)
	}
	if slices.ContainsFunc(runs, func(r *kueueRun) bool { return r.overlapSkipped }) {
		rules = append(rules, ruleOverlapSkipped)
	}
	return rules
}
