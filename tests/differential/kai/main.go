// Command kai compares arbiter's KAI fair share with KAI Scheduler's own division code
// (pkg/scheduler/plugins/proportion/resource_division of github.com/NVIDIA/KAI-scheduler) on
// random queue trees, one per seed, and then arbiter's KAI decisions (Schedule) with KAI's own
// actions on random clusters from the same seeds. See docs/conformance.md.
//
//	kai -cli build/bin/arbiter [-first 1] [-seeds 300] [-keep DIR] [-v] [-decisions-only] [-features LIST]
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/NVIDIA/KAI-scheduler/pkg/scheduler/log"

	"arbiter.dev/tests/differential/internal/arbiterjson"
	"arbiter.dev/tests/differential/internal/verdict"
)

// stdout is where the summaries go.
var stdout = os.Stdout

func main() {
	var decisionsOnly bool
	var featureList string
	var kaiLog int
	var worker bool
	flags := verdict.ParseFlagsWith("kai", func(fs *flag.FlagSet) {
		fs.BoolVar(&worker, decisionWorkerOn, false, "check the decisions of the seeds and write one JSON line per seed (a run of many seeds starts such child processes)")
		fs.BoolVar(&decisionsOnly, "decisions-only", false, "run the decision comparison only, not the fair shares")
		fs.IntVar(&kaiLog, "kai-log", 0, "KAI's log level for its sessions (0 = silent; 5 shows every scenario its solvers try): for reading one seed's divergence")
		fs.StringVar(&featureList, "features", defaultFeatures, "the decision clusters' features: all, or a comma-separated list of "+strings.Join(featureNames, ", ")+", each optionally prefixed with - (e.g. all,-selectors)")
	})
	featureArg = featureList
	feat, err := parseFeatures(featureList)
	if err != nil {
		fmt.Fprintln(os.Stderr, "kai:", err)
		os.Exit(2)
	}
	if kaiLog > 0 {
		if err := log.InitLoggers(kaiLog); err != nil {
			fmt.Fprintln(os.Stderr, "kai:", err)
			os.Exit(2)
		}
	}
	if worker {
		if err := runDecisionWorker(flags, feat); err != nil {
			fmt.Fprintln(os.Stderr, "kai:", err)
			os.Exit(1)
		}
		return
	}
	if decisionsOnly {
		if len(runDecisions(flags, feat).Failures) > 0 {
			os.Exit(1)
		}
		return
	}
	tally := verdict.NewTally("KAI fair share vs github.com/NVIDIA/KAI-scheduler v0.12.0")
	units := unitCounts{byRule: map[string]int{}}
	start := time.Now()
	for seed := flags.First; seed < flags.First+flags.Seeds; seed++ {
		t := generate(seed)
		req := t.request()
		outcome := t.check(flags.CLI, req, &units)
		tally.Add(seed, outcome)
		if outcome.Failure != "" || len(outcome.Rules) > 0 {
			body, err := arbiterjson.Encode(req)
			tally.KeepRequest(flags.KeepDir, fmt.Sprintf("kai-seed-%d.json", seed), body, err, outcome.Failure != "")
		}
		if flags.Verbose {
			fmt.Printf("seed %d: %d queues, fractional %v, k %v: %s\n", seed, len(t.queues), t.fractional, t.k, describeOutcome(outcome))
		}
	}
	tally.Units["divisions compared (set x resource)"] = units.compared
	tally.Units["divisions agree"] = units.agree
	for _, name := range []string{ruleMapOrder, ruleNearTie, ruleRemainderCap} {
		tally.Units["divisions under "+name] = units.byRule[name]
	}
	tally.Units["divisions failed"] = units.failed
	tally.Failures = append(tally.Failures, units.overBounds()...)
	tally.Print(os.Stdout)
	fmt.Printf("  seeds %d..%d in %.1fs\n", flags.First, flags.First+flags.Seeds-1, time.Since(start).Seconds())
	decisions := runDecisions(flags, feat)
	if len(tally.Failures) > 0 || len(decisions.Failures) > 0 {
		os.Exit(1)
	}
}

// check asks arbiter for the fair shares of the tree and compares them with KAI's.
func (t *tree) check(cli string, req *arbiterjson.FairShareRequest, units *unitCounts) verdict.Outcome {
	resp, err := arbiterjson.FairShare(cli, req)
	if err != nil {
		return verdict.Outcome{Failure: err.Error()}
	}
	shares := resp.ByQueue()
	if len(shares) != len(t.queues) {
		return verdict.Outcome{Failure: fmt.Sprintf("arbiter answered for %d queues, the tree has %d", len(shares), len(t.queues))}
	}
	arb := make([]quota, len(t.queues))
	for i := range t.queues {
		s, ok := shares[t.queues[i].name]
		if !ok {
			return verdict.Outcome{Failure: "arbiter did not answer for queue " + t.queues[i].name}
		}
		for r := range numResources {
			v, ok := s.FairShare[resourceNames[r]]
			if !ok {
				return verdict.Outcome{Failure: fmt.Sprintf("arbiter's fair share of %s has no %s", t.queues[i].name, resourceNames[r])}
			}
			arb[i][r] = float64(v)
		}
	}
	return t.compare(arb, units)
}

func describeOutcome(o verdict.Outcome) string {
	switch {
	case o.Failure != "":
		return "FAIL"
	case len(o.Rules) > 0:
		return fmt.Sprintf("agree under %v", o.Rules)
	default:
		return "agree"
	}
}
