package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"arbiter.dev/tests/differential/internal/arbiterjson"
	"arbiter.dev/tests/differential/internal/verdict"
)

// A decision scenario is a cohort tree (flavored or of one flavor) with admitted workloads, a
// preemption policy and a flavor fungibility per ClusterQueue, and several pending workloads in
// several ClusterQueues. Kueue's own scheduler decides it cycle by cycle (kueuesched.go); arbiter
// decides it in one Schedule call of rounds (SEMANTICS §5.4). Both answers are the admitted
// workloads (with their flavors per pod set), the evicted ones and, the rest, the pending ones.
type decision struct {
	// s holds the tree, the ResourceFlavors and the policies; its pending workload and x are
	// unused.
	s       *scenario
	pending []pendingAt
	// fungibility is each ClusterQueue's flavorFungibility (nil: Kueue's defaults).
	fungibility map[string]*kueue.FlavorFungibility
	// keepSticky leaves Kueue's sticky preempting workloads alone (kueuesched.go): the kept
	// case of that open difference; the random scenarios forget the stickiness.
	keepSticky bool
	// keepTreeRequeue keeps Kueue's requeue, after an eviction, of the inadmissible workloads
	// of the evicted workload's cohort tree only (kueuesched.go): the kept case of that open
	// difference; the random scenarios requeue every tree's, as SEMANTICS §5.4 step 6 does.
	keepTreeRequeue bool
}

// pendingAt is a pending workload and its ClusterQueue (an index into the tree's nodes).
type pendingAt struct {
	cq int
	w  workload
}

// generateDecision draws the decision scenario of a seed: the seed's tree (flavored two times
// in three, as for the shares), or the next one of its stream when no ClusterQueue in a cohort
// has quota; flavors and policies as for the flavor-assignment scenarios; then one to four
// ClusterQueues in a cohort with one to three pending workloads each (two to eight in all).
func generateDecision(seed int64) *decision {
	t := generate(seed)
	for !hasQuotaCQInCohort(t) {
		seed += 1 << 32
		t = generate(seed)
	}
	g := &generator{rng: rand.New(rand.NewPCG(uint64(seed), 0x6465636973)), tree: t}
	s := &scenario{t: t, flavors: map[string]flavorSpec{}, within: map[string]kueue.PreemptionPolicy{}, reclaim: map[string]kueue.PreemptionPolicy{}}
	g.drawFlavors(s)
	var cqs []int
	for _, i := range g.drawPolicies(s) {
		// Kueue v0.17.0 panics for a preemptor without a cohort (assign.go).
		if hasQuota(&t.nodes[i]) {
			cqs = append(cqs, i)
		}
	}
	d := &decision{s: s, fungibility: map[string]*kueue.FlavorFungibility{}}
	g.rng.Shuffle(len(cqs), func(a, b int) { cqs[a], cqs[b] = cqs[b], cqs[a] })
	cqs = cqs[:1+g.rng.IntN(min(4, len(cqs)))]
	slices.Sort(cqs)
	for _, i := range cqs {
		n := &t.nodes[i]
		if t.flavored && g.chance(0.4) {
			g.fill(i)
		}
		if f := g.fungibility(); f != nil {
			// PreemptionOverBorrowing ranks flavors as SEMANTICS §5.8.6 does not (open
			// difference (a) of docs/conformance.md): left out here.
			if f.Preference != nil && *f.Preference == kueue.PreemptionOverBorrowing {
				f.Preference = ptrTo(kueue.BorrowingOverPreemption)
			}
			d.fungibility[n.name] = f
		}
		for range 1 + g.rng.IntN(3) {
			d.addPending(g, i)
		}
	}
	for len(d.pending) < 2 {
		d.addPending(g, cqs[g.rng.IntN(len(cqs))])
	}
	return d
}

// addPending adds a pending workload to ClusterQueue i, drawn as the flavor-assignment
// scenarios' one, named <cq>-p<k>, with a creation time no other workload has.
func (d *decision) addPending(g *generator, i int) {
	n := &d.s.t.nodes[i]
	w := g.pendingWorkload(n)
	k := 0
	for _, p := range d.pending {
		if p.cq == i {
			k++
		}
	}
	w.name = fmt.Sprintf("%s-p%d", n.name, k)
	w.created = w.created.Add(time.Duration(len(d.pending)+1) * time.Millisecond)
	d.pending = append(d.pending, pendingAt{cq: i, w: w})
}

// hasQuota reports whether ClusterQueue n covers some resource.
func hasQuota(n *node) bool {
	for r := range numResources {
		if n.covers(r) {
			return true
		}
	}
	return false
}

func hasQuotaCQInCohort(t *tree) bool {
	for i := range t.nodes {
		if n := &t.nodes[i]; n.cq && n.parent >= 0 && hasQuota(n) {
			return true
		}
	}
	return false
}

// livePending lists the pending workloads whose ClusterQueue is not dropped (shrink.go).
func (d *decision) livePending() []pendingAt {
	var out []pendingAt
	for _, p := range d.pending {
		if !d.s.t.nodes[p.cq].dropped {
			out = append(out, p)
		}
	}
	return out
}

// request writes the decision scenario as an arbiter ScheduleRequest under the Kueue model.
func (d *decision) request() *arbiterjson.ScheduleRequest {
	t := d.s.t
	saved := make([][]workload, len(t.nodes))
	for i := range t.nodes {
		saved[i] = t.nodes[i].workloads
	}
	for _, p := range d.livePending() {
		n := &t.nodes[p.cq]
		n.workloads = append(slices.Clip(n.workloads), p.w)
	}
	defer func() {
		for i := range t.nodes {
			t.nodes[i].workloads = saved[i]
		}
	}()
	var flavors []arbiterjson.ResourceFlavor
	if t.flavored {
		flavors = d.s.resourceFlavors()
	}
	snap := t.snapshot(flavors, func(n *node, q *arbiterjson.Queue) {
		if !n.cq {
			return
		}
		q.KueuePreemption = kueuePreemption(d.s.within[n.name], d.s.reclaim[n.name])
		q.FlavorFungibility = flavorFungibility(d.fungibility[n.name])
	})
	snap.Now = arbiterjson.Timestamp(epoch.Add(24 * time.Hour))
	return &arbiterjson.ScheduleRequest{Snapshot: snap, Policy: arbiterjson.Policy{FairnessModel: "FAIRNESS_MODEL_KUEUE"}}
}

// verdictOf is what a decision came to on one side.
type verdictOf struct {
	// admitted: workload -> pod set -> resource -> flavor (empty maps in a tree of one flavor).
	admitted map[string]map[string]map[string]string
	evicted  []string // sorted
	pending  []string // sorted
	// afterEvictions lists the admitted workloads admitted after evictions (arbiter only).
	afterEvictions []string
	reasons        map[string]string // pending workload -> reason (arbiter only)
}

// arbiterVerdict reads arbiter's Schedule response.
func (d *decision) arbiterVerdict(resp *arbiterjson.ScheduleResponse) *verdictOf {
	v := &verdictOf{admitted: map[string]map[string]map[string]string{}, reasons: map[string]string{}}
	seen := map[string]bool{}
	for _, e := range resp.Evictions {
		if !seen[e.PodGroup] {
			seen[e.PodGroup] = true
			v.evicted = append(v.evicted, e.PodGroup)
		}
	}
	sort.Strings(v.evicted)
	for _, a := range resp.Admissions {
		m := map[string]map[string]string{}
		if d.s.t.flavored {
			for _, ps := range a.PodSets {
				m[ps.PodSet] = ps.Flavors
			}
		}
		v.admitted[a.PodGroup] = m
		if a.AfterEvictions {
			v.afterEvictions = append(v.afterEvictions, a.PodGroup)
		}
	}
	for _, p := range resp.Pending {
		v.pending = append(v.pending, p.PodGroup)
		v.reasons[p.PodGroup] = p.Reason
	}
	sort.Strings(v.pending)
	return v
}

// sameVerdict reports whether two verdicts agree: the same admitted workloads with the same
// flavor for every requested resource of every pod set, the same evicted and pending ones.
func sameVerdict(a, b *verdictOf) bool {
	if len(a.admitted) != len(b.admitted) || !slices.Equal(a.evicted, b.evicted) || !slices.Equal(a.pending, b.pending) {
		return false
	}
	for name, f := range a.admitted {
		g, ok := b.admitted[name]
		if !ok || !sameFlavors(f, g) {
			return false
		}
	}
	return true
}

// String writes a verdict in one line per kind.
func (v *verdictOf) String() string {
	var names []string
	for name := range v.admitted {
		names = append(names, name)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString("admitted:")
	for _, name := range names {
		fmt.Fprintf(&b, " %s", name)
		if f := v.admitted[name]; len(f) > 0 {
			fmt.Fprintf(&b, "%v", f)
		}
	}
	fmt.Fprintf(&b, "; evicted: %v; pending: %v", v.evicted, v.pending)
	if len(v.reasons) > 0 {
		var rs []string
		for _, p := range v.pending {
			rs = append(rs, p+" "+v.reasons[p])
		}
		fmt.Fprintf(&b, " (%s)", strings.Join(rs, ", "))
	}
	return b.String()
}

// describe writes the scenario: the pending workloads, the policies, the flavors and the tree.
func (d *decision) describe() string {
	var b strings.Builder
	t := d.s.t
	for _, p := range d.livePending() {
		n := &t.nodes[p.cq]
		fmt.Fprintf(&b, "pending %s in %s (priority %d, created %s):", p.w.name, n.name, p.w.priority, p.w.created.Format("15:04:05.000"))
		for k, q := range p.w.pods {
			fmt.Fprintf(&b, " ps%d {", k)
			for r := range numResources {
				if q[r] > 0 {
					fmt.Fprintf(&b, " %s %d", resourceNames[r], q[r])
				}
			}
			fmt.Fprintf(&b, " }")
			if len(p.w.selectors[k]) > 0 || len(p.w.tolerations[k]) > 0 {
				fmt.Fprintf(&b, " selector %v tolerations %v", p.w.selectors[k], p.w.tolerations[k])
			}
			b.WriteString(";")
		}
		b.WriteString("\n")
	}
	for i := range t.nodes {
		n := &t.nodes[i]
		if !n.cq || n.dropped {
			continue
		}
		fmt.Fprintf(&b, "%s: within %s, reclaim %s", n.name, d.s.within[n.name], d.s.reclaim[n.name])
		if f := d.fungibility[n.name]; f != nil {
			fmt.Fprintf(&b, ", fungibility borrow %q preempt %q preference %v", f.WhenCanBorrow, f.WhenCanPreempt, ptrValue(f.Preference))
		}
		b.WriteString("\n")
	}
	if t.flavored {
		b.WriteString("flavors:")
		for _, name := range t.flavorNamesOf() {
			f := d.s.flavors[name]
			fmt.Fprintf(&b, " %s %v taints %v tolerations %d;", name, f.labels, f.taints, len(f.tolerations))
		}
		b.WriteString("\n")
	}
	b.WriteString("admitted workloads (priority, reserved):")
	for i := range t.nodes {
		for _, w := range t.nodes[i].workloads {
			if w.admitted && !t.nodes[i].dropped {
				fmt.Fprintf(&b, " %s (%d, %s", w.name, w.priority, w.reserved.Format("15:04:05"))
				if !t.flavored {
					fmt.Fprintf(&b, ", %v", w.usage())
				}
				b.WriteString(")")
			}
		}
	}
	b.WriteString("\n")
	b.WriteString(t.describe())
	return b.String()
}

// decisionCounts are the finer counts of the decision comparison.
type decisionCounts struct {
	pending, admitted, evicted, flavored int // Kueue's, summed over the compared scenarios
	cycles                               int
	rerun                                int // scenarios left out (§5.5 step 6)
	withEvictions, withAdmissions        int
	scanResets, stickyCleared            int // Kueue's scan progress and sticky heads taken out
	overlapSkipped, candidateAdmitted    int // scenarios whose first Kueue run was in that state
}

// kueueRuns is how many times Kueue decides a scenario on which its first answer differs from
// arbiter's: its answer may depend on Go map order (ties among entries, preemption targets).
const kueueRuns = 8

// check runs Kueue's scheduler and arbiter's Schedule on the scenario and compares the verdicts.
// Kueue decides first; when arbiter's verdict differs, Kueue decides again (up to kueueRuns in
// all) and arbiter's verdict is accepted under ruleMapOrder when it is one of Kueue's. A
// remaining difference is explained only by a rule of rules.go, else it is a failure.
func (d *decision) check(cli string, counts *decisionCounts) verdict.Outcome {
	first, err := d.kueueDecide()
	if err != nil {
		return verdict.Outcome{Failure: "Kueue: " + err.Error()}
	}
	if first.rerun {
		return leftOut
	}
	resp, err := arbiterjson.Schedule(cli, d.request())
	if err != nil {
		return verdict.Outcome{Failure: err.Error()}
	}
	got := d.arbiterVerdict(resp)
	if counts != nil {
		counts.pending += len(d.livePending())
		counts.admitted += len(first.verdict.admitted)
		counts.evicted += len(first.verdict.evicted)
		counts.cycles += first.cycles
		if len(first.verdict.evicted) > 0 {
			counts.withEvictions++
		}
		if len(first.verdict.admitted) > 0 {
			counts.withAdmissions++
		}
		if d.s.t.flavored {
			counts.flavored++
		}
		counts.scanResets += first.scanResets
		counts.stickyCleared += first.stickyCleared
		if first.overlapSkipped {
			counts.overlapSkipped++
		}
		if first.candidateAdmitted {
			counts.candidateAdmitted++
		}
	}
	if sameVerdict(first.verdict, got) {
		return verdict.Outcome{}
	}
	runs := []*kueueRun{first}
	for range kueueRuns - 1 {
		again, err := d.kueueDecide()
		if err != nil {
			return verdict.Outcome{Failure: "Kueue: " + err.Error()}
		}
		if again.rerun {
			return leftOut
		}
		if sameVerdict(again.verdict, got) {
			return verdict.Outcome{Rules: []string{ruleMapOrder}}
		}
		runs = append(runs, again)
	}
	if rules := decisionRules(d, runs, got); len(rules) > 0 {
		return verdict.Outcome{Rules: rules}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Kueue (%d cycles): %s\n", first.cycles, first.verdict)
	for _, h := range first.history {
		fmt.Fprintf(&b, "  %s\n", h)
	}
	seen := map[string]bool{first.verdict.String(): true}
	for _, r := range runs[1:] {
		if s := r.verdict.String(); !seen[s] {
			seen[s] = true
			fmt.Fprintf(&b, "Kueue, another run: %s\n", s)
		}
	}
	fmt.Fprintf(&b, "arbiter: %s\n", got)
	b.WriteString(d.describe())
	return verdict.Outcome{Failure: b.String()}
}

// runDecisions runs the decision comparison on the same seeds.
func runDecisions(flags verdict.Flags) *verdict.Tally {
	tally := verdict.NewTally("Kueue decisions (several pending workloads) vs sigs.k8s.io/kueue v0.17.0 scheduler")
	var counts decisionCounts
	start := time.Now()
	for seed := flags.First; seed < flags.First+flags.Seeds; seed++ {
		d := generateDecision(seed)
		outcome := d.check(flags.CLI, &counts)
		if outcome.Failure == leftOut.Failure {
			counts.rerun++
			if flags.Verbose {
				fmt.Printf("seed %d: left out (SEMANTICS §5.5 step 6)\n", seed)
			}
			continue
		}
		tally.Add(seed, outcome)
		if outcome.Failure != "" || len(outcome.Rules) > 0 {
			body, err := arbiterjson.EncodeSchedule(d.request())
			tally.KeepRequest(flags.KeepDir, fmt.Sprintf("kueue-decision-seed-%d.json", seed), body, err, outcome.Failure != "")
		}
		if outcome.Failure != "" && flags.KeepDir != "" {
			d.shrink(func(d *decision) bool {
				f := d.check(flags.CLI, nil).Failure
				return f != "" && f != leftOut.Failure
			})
			body, err := arbiterjson.EncodeSchedule(d.request())
			tally.KeepShrunk(flags.KeepDir, fmt.Sprintf("kueue-decision-seed-%d-shrunk.json", seed), body, err,
				func() string { return d.check(flags.CLI, nil).Failure })
		}
		if flags.Verbose {
			result := "agree"
			if outcome.Failure != "" {
				result = "FAIL"
			} else if len(outcome.Rules) > 0 {
				result = "agree under " + strings.Join(outcome.Rules, ", ")
			}
			fmt.Printf("seed %d: %d queues, %d pending: %s\n", seed, len(d.s.t.nodes), len(d.pending), result)
		}
	}
	tally.Units["pending workloads"] = counts.pending
	tally.Units["admitted (Kueue)"] = counts.admitted
	tally.Units["evicted (Kueue)"] = counts.evicted
	tally.Units["scenarios with an admission (Kueue)"] = counts.withAdmissions
	tally.Units["scenarios with an eviction (Kueue)"] = counts.withEvictions
	tally.Units["flavored scenarios"] = counts.flavored
	tally.Units["Kueue cycles"] = counts.cycles
	tally.Units["scan progress reset (Kueue, §5.8.10 deviation 1)"] = counts.scanResets
	tally.Units["sticky heads cleared (Kueue, open difference (c))"] = counts.stickyCleared
	tally.Units["scenarios with an entry skipped for overlapping targets (Kueue)"] = counts.overlapSkipped
	tally.Units["scenarios with a workload admitted in the run taken as a candidate (Kueue)"] = counts.candidateAdmitted
	tally.Units["left out: Kueue's preemption without §5.5 step 6"] = counts.rerun
	tally.Print(os.Stdout)
	fmt.Printf("  seeds %d..%d in %.1fs\n", flags.First, flags.First+flags.Seeds-1, time.Since(start).Seconds())
	return tally
}
