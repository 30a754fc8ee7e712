// Command kueue compares arbiter's Kueue dominant resource shares with Kueue's own code
// (the scheduler cache and Snapshot of sigs.k8s.io/kueue v0.17.0, pkg/cache/scheduler) on
// random cohort trees, one per seed. See docs/conformance.md.
//
//	kueue -cli build/bin/arbiter [-first 1] [-seeds 300] [-keep DIR] [-v]
package main

import (
	"fmt"
	"math"
	"os"
	"strings"
	"time"

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
			if body, err := arbiterjson.Encode(req); err == nil {
				if path := verdict.Keep(flags.KeepDir, fmt.Sprintf("kueue-seed-%d.json", seed), body); path != "" {
					tally.Failures[len(tally.Failures)-1] += "\n(request: " + path + ")"
				}
			}
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
	tally.Print(os.Stdout)
	fmt.Printf("  seeds %d..%d in %.1fs\n", flags.First, flags.First+flags.Seeds-1, time.Since(start).Seconds())
	if len(tally.Failures) > 0 {
		os.Exit(1)
	}
}

type shareCounts struct{ compared, borrowing, positive, infinite, borrowingAtZero int }

// check asks Kueue and arbiter for the shares of the tree and compares them.
func (t *tree) check(cli string, req *arbiterjson.FairShareRequest, counts *shareCounts) verdict.Outcome {
	want, err := t.kueueShares()
	if err != nil {
		return verdict.Outcome{Failure: "Kueue: " + err.Error()}
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
	}
	if len(diffs) > 0 {
		return verdict.Outcome{Failure: strings.Join(diffs, "\n") + "\n" + t.describe()}
	}
	return verdict.Outcome{}
}

// describe writes the tree: each node's quota entries, limits, weight and admitted usage.
func (t *tree) describe() string {
	var b strings.Builder
	var walk func(i int, indent string)
	walk = func(i int, indent string) {
		n := &t.nodes[i]
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
