// Command kueue compares arbiter's Kueue model with Kueue's own code (sigs.k8s.io/kueue
// v0.17.0), one random cohort tree per seed and comparison: the dominant resource shares and
// flavor-resource rows (the scheduler cache and Snapshot, pkg/cache/scheduler), and the flavor
// assignment of one pending workload (pkg/scheduler/flavorassigner with the preemptor of
// pkg/scheduler/preemption) against arbiter's Schedule, and the decisions of whole cycles with
// several pending workloads (Kueue's scheduler, pkg/scheduler, with its queue manager) against
// arbiter's Schedule. See docs/conformance.md.
//
//	kueue -cli build/bin/arbiter [-first 1] [-seeds 300] [-keep DIR] [-v]
package main

import (
	"fmt"
	"math"
	"os"
	"sort"
	"strings"
	"time"

	"sigs.k8s.io/kueue/pkg/resources"

	"arbiter.dev/tests/differential/internal/arbiterjson"
	"arbiter.dev/tests/differential/internal/verdict"
)

func main() {
	flags := verdict.ParseFlags("kueue")
	tally := verdict.NewTally("Kueue dominant resource share vs sigs.k8s.io/kueue v0.17.0")
	var counts shareCounts
	start := time.Now()
	for seed := flags.First; seed < flags.First+flags.Seeds; seed++ {
		t := generate(seed)
		req := t.request()
		outcome := t.check(flags.CLI, req, &counts)
		tally.Add(seed, outcome)
		if outcome.Failure != "" {
			body, err := arbiterjson.Encode(req)
			tally.KeepRequest(flags.KeepDir, fmt.Sprintf("kueue-seed-%d.json", seed), body, err, true)
		}
		if flags.Verbose {
			result := "agree"
			if outcome.Failure != "" {
				result = "FAIL"
			}
			fmt.Printf("seed %d: %d queues: %s\n", seed, len(t.nodes), result)
		}
	}
	tally.Units["queues compared"] = counts.compared
	tally.Units["queues borrowing (Kueue)"] = counts.borrowing
	tally.Units["queues with weighted share > 0 (Kueue)"] = counts.positive
	tally.Units["queues with weighted share +Inf (Kueue)"] = counts.infinite
	tally.Units["queues borrowing with nothing lendable"] = counts.borrowingAtZero
	tally.Units["requests with flavors"] = counts.flavoredRequests
	tally.Units["flavor-resource rows compared"] = counts.flavorResources
	tally.Units["flavor-resource rows borrowed (Kueue)"] = counts.flavorResourcesBorrowed
	tally.Print(os.Stdout)
	fmt.Printf("  seeds %d..%d in %.1fs\n", flags.First, flags.First+flags.Seeds-1, time.Since(start).Seconds())
	assignTally := runAssignments(flags)
	decisionTally := runDecisions(flags)
	if len(tally.Failures) > 0 || len(assignTally.Failures) > 0 || len(decisionTally.Failures) > 0 {
		os.Exit(1)
	}
}

// runAssignments runs the flavor-assignment comparison on the same seeds.
func runAssignments(flags verdict.Flags) *verdict.Tally {
	tally := verdict.NewTally("Kueue flavor assignment vs sigs.k8s.io/kueue v0.17.0")
	counts := assignCounts{byMode: map[string]int{}, reasons: map[string]int{}}
	start := time.Now()
	for seed := flags.First; seed < flags.First+flags.Seeds; seed++ {
		s := generateScenario(seed)
		req := s.request()
		outcome := s.check(flags.CLI, req, &counts, flags.Verbose)
		if outcome.Failure == leftOut.Failure {
			counts.rerun++
			if flags.Verbose {
				fmt.Printf("seed %d: left out (SEMANTICS §5.5 step 6)\n", seed)
			}
			continue
		}
		tally.Add(seed, outcome)
		if outcome.Failure != "" || len(outcome.Rules) > 0 {
			body, err := arbiterjson.EncodeSchedule(req)
			tally.KeepRequest(flags.KeepDir, fmt.Sprintf("kueue-assign-seed-%d.json", seed), body, err, outcome.Failure != "")
		}
		if outcome.Failure != "" && flags.KeepDir != "" {
			// The smallest scenario that still fails, for whoever looks into it.
			s.shrink(func(s *scenario) bool {
				return s.check(flags.CLI, s.request(), &assignCounts{byMode: map[string]int{}, reasons: map[string]int{}}, false).Failure != ""
			})
			body, err := arbiterjson.EncodeSchedule(s.request())
			tally.KeepShrunk(flags.KeepDir, fmt.Sprintf("kueue-assign-seed-%d-shrunk.json", seed), body, err, func() string {
				return s.check(flags.CLI, s.request(), &assignCounts{byMode: map[string]int{}, reasons: map[string]int{}}, false).Failure
			})
		}
		if flags.Verbose {
			result := "agree"
			if outcome.Failure != "" {
				result = "FAIL"
			} else if len(outcome.Rules) > 0 {
				result = "agree under " + strings.Join(outcome.Rules, ", ")
			}
			fmt.Printf("seed %d: %d queues, %d pod sets: %s\n", seed, len(s.t.nodes), len(s.pending.pods), result)
		}
	}
	for mode, n := range counts.byMode {
		tally.Units["first mode "+mode+" (Kueue)"] = n
	}
	for reason, n := range counts.reasons {
		tally.Units["pending "+reason+" (Kueue)"] = n
	}
	tally.Units["left out: Kueue's preemption without §5.5 step 6"] = counts.rerun
	tally.Units["pod sets"] = counts.podSets
	tally.Units["workloads of two pod sets"] = counts.twoPodSets
	tally.Units["admitted after evictions (Kueue)"] = counts.preemptCycles
	tally.Units["admitted on a flavor not first in its group"] = counts.notFirst
	tally.Print(os.Stdout)
	fmt.Printf("  seeds %d..%d in %.1fs\n", flags.First, flags.First+flags.Seeds-1, time.Since(start).Seconds())
	return tally
}

// leftOut is the outcome of a scenario left out of the comparison (rerun.go).
var leftOut = verdict.Outcome{Failure: "left out: SEMANTICS §5.5 step 6"}

// check runs Kueue's cycles and arbiter's Schedule on the scenario and compares the outcomes.
func (s *scenario) check(cli string, req *arbiterjson.ScheduleRequest, counts *assignCounts, verbose bool) verdict.Outcome {
	want, err := s.kueueOutcome()
	if err != nil {
		return verdict.Outcome{Failure: "Kueue: " + err.Error()}
	}
	if want.rerun {
		return leftOut
	}
	resp, err := arbiterjson.Schedule(cli, req)
	if err != nil {
		return verdict.Outcome{Failure: err.Error()}
	}
	rules, detail := s.compareAssignment(want, s.arbiterOutcome(resp), counts)
	if len(rules) > 0 {
		if verbose {
			fmt.Printf("  excused by %v: %s\n", rules, detail)
		}
		return verdict.Outcome{Rules: rules}
	}
	return verdict.Outcome{Failure: detail}
}

type shareCounts struct {
	compared, borrowing, positive, infinite, borrowingAtZero   int
	flavoredRequests, flavorResources, flavorResourcesBorrowed int
}

// check asks Kueue and arbiter for the shares of the tree and compares them.
func (t *tree) check(cli string, req *arbiterjson.FairShareRequest, counts *shareCounts) verdict.Outcome {
	want, err := t.kueueShares()
	if err != nil {
		return verdict.Outcome{Failure: "Kueue: " + err.Error()}
	}
	if t.flavored {
		counts.flavoredRequests++
	}
	resp, err := arbiterjson.FairShare(cli, req)
	if err != nil {
		return verdict.Outcome{Failure: err.Error()}
	}
	return t.compare(want, resp.ByQueue(), counts)
}

// compare holds arbiter's answer against Kueue's DominantResourceShare for every ClusterQueue
// and Cohort: the unrounded weighted share (bit for bit: arbiter's JSON numbers read back as the
// same float64), the borrowing flag and the dominant resource; and arbiter's allocated amounts
// against the node's usage in Kueue's quota tree (whole numbers, compared exactly). No exclusion rule applies: Kueue's computation is deterministic and
// SEMANTICS §5.3 documents no deviation from it.
func (t *tree) compare(want []share, got map[string]*arbiterjson.QueueShare, counts *shareCounts) verdict.Outcome {
	if len(got) != len(t.nodes) {
		return verdict.Outcome{Failure: fmt.Sprintf("arbiter answered for %d queues, the tree has %d", len(got), len(t.nodes))}
	}
	var diffs []string
	for i := range t.nodes {
		n := &t.nodes[i]
		g, ok := got[n.name]
		if !ok {
			return verdict.Outcome{Failure: "arbiter did not answer for queue " + n.name}
		}
		w := want[i]
		counts.compared++
		switch {
		case math.IsInf(w.weighted, 1):
			counts.infinite++
		case w.weighted > 0:
			counts.positive++
		case w.borrowing:
			counts.borrowingAtZero++
		}
		if w.borrowing {
			counts.borrowing++
		}
		if float64(g.WeightedShare) != w.weighted || g.Borrowing != w.borrowing || g.DominantResource != w.dominant {
			diffs = append(diffs, fmt.Sprintf("%s: Kueue weighted share %v, borrowing %v, dominant %q; arbiter %v, %v, %q",
				n.name, w.weighted, w.borrowing, w.dominant, float64(g.WeightedShare), g.Borrowing, g.DominantResource))
		}
		for r := range numResources {
			if a := float64(g.Allocated[resourceNames[r]]); a != float64(w.usage[r]) {
				diffs = append(diffs, fmt.Sprintf("%s: Kueue usage of %s %d; arbiter allocated %v", n.name, resourceNames[r], w.usage[r], a))
			}
		}
		if t.flavored {
			diffs = append(diffs, compareFlavorResources(n, w.flavorResources, g.FlavorResources, counts)...)
		} else if len(g.FlavorResources) > 0 {
			diffs = append(diffs, fmt.Sprintf("%s: %d flavor_resources rows in a request without flavors", n.name, len(g.FlavorResources)))
		}
	}
	if len(diffs) > 0 {
		return verdict.Outcome{Failure: strings.Join(diffs, "\n") + "\n" + t.describe()}
	}
	return verdict.Outcome{}
}

// compareFlavorResources holds a queue's flavor_resources rows against the node's
// flavor-resources in Kueue's quota tree (SEMANTICS §5.8.9): one row per key of Kueue's
// SubtreeQuota and per flavor-resource with a positive usage, in (flavor, resource) order, with
// Kueue's own nominal quota (0 when the node lists none), subtree quota and usage, and the
// amount above the subtree quota for a node with a parent. Whole numbers, compared exactly.
func compareFlavorResources(n *node, want map[resources.FlavorResource]frShare, got []arbiterjson.FlavorResourceShare, counts *shareCounts) []string {
	var keys []resources.FlavorResource
	for fr, s := range want {
		if s.inSubtree || s.usage > 0 {
			keys = append(keys, fr)
		}
	}
	sort.Slice(keys, func(a, b int) bool {
		if keys[a].Flavor != keys[b].Flavor {
			return keys[a].Flavor < keys[b].Flavor
		}
		return keys[a].Resource < keys[b].Resource
	})
	var diffs []string
	if len(got) != len(keys) {
		var names []string
		for _, g := range got {
			names = append(names, g.Flavor+"/"+g.Resource)
		}
		return []string{fmt.Sprintf("%s: Kueue has flavor-resources %v; arbiter's rows %v", n.name, keys, names)}
	}
	for k, fr := range keys {
		s, g := want[fr], got[k]
		counts.flavorResources++
		if s.usage > s.subtreeQuota && n.parent >= 0 {
			counts.flavorResourcesBorrowed++
		}
		borrowed := int64(0)
		if n.parent >= 0 {
			borrowed = max(0, s.usage-s.subtreeQuota)
		}
		if g.Flavor != string(fr.Flavor) || g.Resource != string(fr.Resource) ||
			float64(g.Nominal) != float64(s.nominal) || float64(g.SubtreeQuota) != float64(s.subtreeQuota) ||
			float64(g.Usage) != float64(s.usage) || float64(g.Borrowed) != float64(borrowed) {
			diffs = append(diffs, fmt.Sprintf("%s: %s/%s: Kueue nominal %d, subtree quota %d, usage %d, borrowed %d; arbiter row %s/%s %v, %v, %v, %v",
				n.name, fr.Flavor, fr.Resource, s.nominal, s.subtreeQuota, s.usage, borrowed,
				g.Flavor, g.Resource, float64(g.Nominal), float64(g.SubtreeQuota), float64(g.Usage), float64(g.Borrowed)))
		}
	}
	return diffs
}

// describe writes the tree: each node's quota entries, limits, weight and admitted usage.
func (t *tree) describe() string {
	var b strings.Builder
	var walk func(i int, indent string)
	walk = func(i int, indent string) {
		n := &t.nodes[i]
		if n.dropped {
			return
		}
		kind := "cohort"
		if n.cq {
			kind = "cq"
		} else if !n.explicit {
			kind = "cohort (implicit)"
		}
		weight := "1 (default)"
		if n.weight != nil {
			weight = fmt.Sprint(*n.weight)
		}
		fmt.Fprintf(&b, "%s%s %s weight %s", indent, kind, n.name, weight)
		var used quota
		for _, w := range n.workloads {
			if w.admitted {
				u := w.usage()
				for r := range numResources {
					used[r] += u[r]
				}
			}
		}
		for _, gr := range n.groups {
			for _, f := range gr.flavors {
				fmt.Fprintf(&b, "; %s:", f.name)
				for _, r := range gr.covered {
					fmt.Fprintf(&b, " %s nominal %d", resourceNames[r], f.nominal[r])
					if f.hasBorrowing[r] {
						fmt.Fprintf(&b, " BL %d", f.borrowing[r])
					}
					if f.hasLending[r] {
						fmt.Fprintf(&b, " LL %d", f.lending[r])
					}
				}
			}
		}
		if len(n.groups) > 0 && n.cq {
			for _, w := range n.workloads {
				if !w.admitted || w.evicted {
					continue
				}
				for k, p := range w.pods {
					fmt.Fprintf(&b, "; %s/ps%d", w.name, k)
					for r := range numResources {
						if w.flavors[k][r] != "" {
							fmt.Fprintf(&b, " %s %d@%s", resourceNames[r], p[r], w.flavors[k][r])
						}
					}
				}
			}
		}
		for r := range numResources {
			if !n.covered[r] {
				continue
			}
			fmt.Fprintf(&b, "; %s nominal %d", resourceNames[r], n.nominal[r])
			if n.hasBorrowing[r] {
				fmt.Fprintf(&b, " BL %d", n.borrowing[r])
			}
			if n.hasLending[r] {
				fmt.Fprintf(&b, " LL %d", n.lending[r])
			}
			if n.cq {
				fmt.Fprintf(&b, " used %d", used[r])
			}
		}
		b.WriteString("\n")
		for _, c := range n.children {
			walk(c, indent+"  ")
		}
	}
	for _, r := range t.roots {
		walk(r, "  ")
	}
	return strings.TrimRight(b.String(), "\n")
}
