package main

import (
	"testing"
	"time"

	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"arbiter.dev/tests/differential/internal/arbiterjson"
)

// legacyDecision builds a decision scenario on trees of one flavor: cohorts (org unless cohort
// says otherwise, each a root) over the given ClusterQueues with their quotas, their admitted
// workloads and the pending ones, with the given preemption policies.
type legacyCQ struct {
	name, cohort    string
	nominal         quota
	covered         [numResources]bool
	hasLending      [numResources]bool
	lending         quota
	within, reclaim kueue.PreemptionPolicy
	admitted        []workload
	pending         []workload
}

func legacyDecision(cqs ...legacyCQ) *decision {
	tr := &tree{seed: 1}
	s := &scenario{t: tr, within: map[string]kueue.PreemptionPolicy{}, reclaim: map[string]kueue.PreemptionPolicy{}}
	d := &decision{s: s, fungibility: map[string]*kueue.FlavorFungibility{}}
	cohorts := map[string]int{}
	for _, c := range cqs {
		if c.cohort == "" {
			c.cohort = "org"
		}
		parent, ok := cohorts[c.cohort]
		if !ok {
			parent = len(tr.nodes)
			cohorts[c.cohort] = parent
			tr.nodes = append(tr.nodes, node{name: c.cohort, parent: -1, explicit: true})
			tr.roots = append(tr.roots, parent)
		}
		i := len(tr.nodes)
		n := node{name: c.name, parent: parent, cq: true, explicit: true, covered: c.covered, nominal: c.nominal,
			hasLending: c.hasLending, lending: c.lending}
		for _, w := range c.admitted {
			w.admitted, w.scheduled = true, true
			n.workloads = append(n.workloads, w)
		}
		tr.nodes = append(tr.nodes, n)
		tr.nodes[parent].children = append(tr.nodes[parent].children, i)
		s.within[c.name], s.reclaim[c.name] = c.within, c.reclaim
		for _, w := range c.pending {
			w.scheduled = true
			w.selectors = make([]map[string]string, len(w.pods))
			w.tolerations = make([][]arbiterjson.Toleration, len(w.pods))
			d.pending = append(d.pending, pendingAt{cq: i, w: w})
		}
	}
	return d
}

// at is the n-th second of the generated times.
func at(n int) time.Time { return epoch.Add(time.Duration(n) * time.Second) }

var gpuOnly = [numResources]bool{gpu: true}

// stickyPreemptor is the smallest decision of open difference (c) (docs/conformance.md): org
// holds a and b, 4 GPUs nominal each; a holds v (priority 0, 4 GPUs), b holds b-w (priority 5,
// 4 GPUs). a's pending a-high (priority 2) asks for cpu, which a does not cover; a-low
// (priority 1) needs v's GPUs; b's pending b-q (priority 0) needs 4 GPUs more than b's nominal
// quota, and b may preempt nothing. Both sides set a-high aside and evict v for a-low. Kueue
// then keeps a-low at the head of a (sticky) and admits it before b-q can borrow a's free GPUs.
// SEMANTICS §5.4 takes a-high as a's head in the next round (it sorts first and the eviction
// cleared the set-aside list), so only b-q is processed and borrows the GPUs; a-low, a round
// later, finds no candidate (b-q was admitted in the call).
func stickyPreemptor() *decision {
	lower, never := kueue.PreemptionPolicyLowerPriority, kueue.PreemptionPolicyNever
	return legacyDecision(
		legacyCQ{name: "a", nominal: quota{gpu: 4}, covered: gpuOnly, within: lower, reclaim: lower,
			admitted: []workload{{name: "v", pods: []quota{{gpu: 4}}, priority: 0, created: at(1), reserved: at(3601)}},
			pending: []workload{
				{name: "a-high", pods: []quota{{cpu: 1000, gpu: 1}}, priority: 2, created: at(10)},
				{name: "a-low", pods: []quota{{gpu: 4}}, priority: 1, created: at(11)},
			}},
		legacyCQ{name: "b", nominal: quota{gpu: 4}, covered: gpuOnly, within: never, reclaim: never,
			admitted: []workload{{name: "b-w", pods: []quota{{gpu: 4}}, priority: 5, created: at(2), reserved: at(3602)}},
			pending:  []workload{{name: "b-q", pods: []quota{{gpu: 4}}, priority: 0, created: at(12)}}},
	)
}

func TestStickyPreemptor(t *testing.T) {
	d := stickyPreemptor()
	d.keepSticky = true
	got, err := d.kueueDecide()
	if err != nil {
		t.Fatal(err)
	}
	want := &verdictOf{admitted: map[string]map[string]map[string]string{"a-low": {}}, evicted: []string{"v"}, pending: []string{"a-high", "b-q"}}
	if !sameVerdict(got.verdict, want) {
		t.Errorf("Kueue with sticky heads: %v; want %v", got.verdict, want)
	}
	d.keepSticky = false
	got, err = d.kueueDecide()
	if err != nil {
		t.Fatal(err)
	}
	want = &verdictOf{admitted: map[string]map[string]map[string]string{"b-q": {}}, evicted: []string{"v"}, pending: []string{"a-high", "a-low"}}
	if !sameVerdict(got.verdict, want) || got.stickyCleared == 0 {
		t.Errorf("Kueue without sticky heads: %v (%d cleared); want %v, SEMANTICS §5.4's answer", got.verdict, got.stickyCleared, want)
	}
	keepDecisionCase(t, "kueue-sticky-preemptor.json", d)
}

// overlapNotRenominated is the smallest decision of open difference (d) (docs/conformance.md),
// seed 1602 shrunk: org holds a, b and c (cpu, memory, GPUs), memory over-committed. In the
// first cycle (b lends at most 3 cpu) b-p1 reclaims a-w3 and a-p0's targets (a-w3, c-w0) overlap it. Kueue skips a-p0
// for that cycle; the next one it nominates it with c-w0 as target after b-p1 is admitted, and
// a-p0 no longer fits; the one after, a-p0 preempts a-w0 and b-p0 reclaims c-w0. SEMANTICS §5.4
// step 5.1 nominates a-p0 again at once without a-w3: it preempts a-w0 in the first round, and
// the memory a-w0 releases lets b-p0 in later without evicting c-w0.
func overlapNotRenominated() *decision {
	all := [numResources]bool{true, true, true}
	lower, lowerNewer := kueue.PreemptionPolicyLowerPriority, kueue.PreemptionPolicyLowerOrNewerEqualPriority
	w := func(name string, priority int32, n int, usage quota) workload {
		return workload{name: name, pods: []quota{usage}, priority: priority, created: at(n), reserved: at(3600 + n)}
	}
	return legacyDecision(
		legacyCQ{name: "a", nominal: quota{6, 8, 4}, covered: all, within: lowerNewer, reclaim: lower,
			admitted: []workload{w("a-w0", 1, 1, quota{1, 3, 2}), w("a-w2", 2, 3, quota{1, 6, 0}), w("a-w3", 1, 4, quota{3, 4, 1})},
			pending:  []workload{{name: "a-p0", pods: []quota{{gpu: 1}, {memory: 2}}, priority: 2, created: at(39)}}},
		legacyCQ{name: "b", nominal: quota{7, 7, 8}, covered: all, hasLending: [numResources]bool{cpu: true}, lending: quota{cpu: 3},
			within: lower, reclaim: lower,
			admitted: []workload{w("b-w0", 2, 5, quota{2, 2, 1})},
			pending: []workload{
				{name: "b-p0", pods: []quota{{memory: 1, gpu: 1}}, priority: 1, created: at(43)},
				{name: "b-p1", pods: []quota{{gpu: 1}, {memory: 1}}, priority: 3, created: at(41)},
			}},
		legacyCQ{name: "c", nominal: quota{5, 7, 0}, covered: all, within: lower, reclaim: lower,
			admitted: []workload{w("c-w0", 0, 8, quota{2, 1, 0}), w("c-w1", 1, 9, quota{2, 5, 0}), w("c-w2", 2, 10, quota{5, 4, 0})}},
	)
}

func TestOverlapNotRenominated(t *testing.T) {
	d := overlapNotRenominated()
	got, err := d.kueueDecide()
	if err != nil {
		t.Fatal(err)
	}
	all := map[string]map[string]map[string]string{"a-p0": {}, "b-p0": {}, "b-p1": {}}
	want := &verdictOf{admitted: all, evicted: []string{"a-w0", "a-w3", "c-w0"}}
	if !sameVerdict(got.verdict, want) || !got.overlapSkipped {
		t.Errorf("Kueue: %v (overlap skipped %v); want %v, after skipping a-p0", got.verdict, got.overlapSkipped, want)
	}
	keepDecisionCase(t, "kueue-overlap-not-renominated.json", d)
}

// The decision generator must reach what the comparison is about: trees of one flavor and
// flavored ones, several ClusterQueues with pending workloads, admissions, evictions, and the
// states the harness takes out of Kueue's cycles or the rules look for.
func TestDecisionGeneratorReachesTheInterestingCases(t *testing.T) {
	var flavored, legacy, severalCQs, admitted, evicted, scanResets, sticky, overlap, asCandidate, left int
	for seed := int64(1); seed <= 200; seed++ {
		d := generateDecision(seed)
		if d.s.t.flavored {
			flavored++
		} else {
			legacy++
		}
		cqs := map[int]bool{}
		for _, p := range d.pending {
			cqs[p.cq] = true
		}
		if len(cqs) > 1 {
			severalCQs++
		}
		if len(d.pending) < 2 || len(d.pending) > 12 {
			t.Errorf("seed %d: %d pending workloads", seed, len(d.pending))
		}
		r, err := d.kueueDecide()
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if r.rerun {
			left++
		}
		admitted += len(r.verdict.admitted)
		evicted += len(r.verdict.evicted)
		scanResets += r.scanResets
		sticky += r.stickyCleared
		if r.overlapSkipped {
			overlap++
		}
		if r.candidateAdmitted {
			asCandidate++
		}
	}
	t.Logf("%d flavored, %d of one flavor, %d with pending workloads in several ClusterQueues; Kueue admitted %d, evicted %d; %d scan resets, %d sticky heads cleared; %d with skipped overlapping entries, %d with admitted workloads as candidates; %d left out",
		flavored, legacy, severalCQs, admitted, evicted, scanResets, sticky, overlap, asCandidate, left)
	if flavored < 100 || legacy < 40 || severalCQs < 100 || admitted < 400 || evicted < 50 || scanResets < 5 || sticky < 10 || overlap < 2 || asCandidate < 2 {
		t.Errorf("the decision generator no longer reaches the interesting cases")
	}
}

// sameVerdict catches a changed admission, flavor, eviction or pending workload.
func TestSameVerdictCatchesEachField(t *testing.T) {
	base := func() *verdictOf {
		return &verdictOf{
			admitted: map[string]map[string]map[string]string{"x": {"ps0": {"cpu": "fa"}}, "y": {}},
			evicted:  []string{"v"},
			pending:  []string{"z"},
		}
	}
	if !sameVerdict(base(), base()) {
		t.Fatal("a verdict differs from itself")
	}
	for name, change := range map[string]func(v *verdictOf){
		"admission": func(v *verdictOf) { delete(v.admitted, "y"); v.pending = []string{"y", "z"} },
		"flavor":    func(v *verdictOf) { v.admitted["x"]["ps0"]["cpu"] = "fb" },
		"pod set":   func(v *verdictOf) { v.admitted["x"]["ps1"] = map[string]string{"cpu": "fa"} },
		"eviction":  func(v *verdictOf) { v.evicted = []string{"v", "w"} },
		"pending":   func(v *verdictOf) { v.pending = nil },
	} {
		v := base()
		change(v)
		if sameVerdict(base(), v) || sameVerdict(v, base()) {
			t.Errorf("a changed %s went unnoticed", name)
		}
	}
}

// Seed 986's decision is one where a later Kueue cycle preempts a workload an earlier one
// admitted (reclaimWithinCohort Any), which a Schedule call never does; the kept sticky case
// has none. (A change to the generator may move it to another seed.)
func TestAdmittedCandidateDetector(t *testing.T) {
	got, err := generateDecision(986).kueueDecide()
	if err != nil {
		t.Fatal(err)
	}
	if !got.candidateAdmitted {
		t.Errorf("seed 986: a preemption target admitted in an earlier cycle went unnoticed")
	}
	if got, err := stickyPreemptor().kueueDecide(); err != nil || got.candidateAdmitted || got.overlapSkipped {
		t.Errorf("the sticky case is taken for an admitted candidate or a skipped overlap (%v)", err)
	}
}

// requeueOtherTrees is the smallest decision of open difference (e) (docs/conformance.md): two
// cohort trees. In org1, a-p preempts v within a. In org2, b (2 GPUs nominal) has b-high
// (priority 3, asks for cpu, which b does not cover) and b-low (priority 2, 2 GPUs); c (cpu only
// nominal) has c-first (priority 1, 1 cpu) and c-q (priority 0, 2 GPUs, borrowed). The first
// cycle evicts v, sets b-high aside and admits c-first. Kueue puts back only org1's inadmissible
// workloads, so b-low heads b next cycle, within its nominal quota, and is admitted before c-q.
// SEMANTICS §5.4 step 6 clears the whole set-aside list: b-high heads b again (NoFit again), c-q
// borrows b's GPUs, and b-low, a round later, finds no candidate (c-q was admitted in the call).
func requeueOtherTrees() *decision {
	lower, never := kueue.PreemptionPolicyLowerPriority, kueue.PreemptionPolicyNever
	cpuGPU := [numResources]bool{cpu: true, gpu: true}
	return legacyDecision(
		legacyCQ{name: "a", cohort: "org1", nominal: quota{gpu: 4}, covered: gpuOnly, within: lower, reclaim: lower,
			admitted: []workload{{name: "v", pods: []quota{{gpu: 4}}, priority: 0, created: at(1), reserved: at(3601)}},
			pending:  []workload{{name: "a-p", pods: []quota{{gpu: 4}}, priority: 1, created: at(10)}}},
		legacyCQ{name: "b", cohort: "org2", nominal: quota{gpu: 2}, covered: gpuOnly, within: never, reclaim: lower,
			pending: []workload{
				{name: "b-high", pods: []quota{{cpu: 1000, gpu: 1}}, priority: 3, created: at(11)},
				{name: "b-low", pods: []quota{{gpu: 2}}, priority: 2, created: at(12)},
			}},
		legacyCQ{name: "c", cohort: "org2", nominal: quota{cpu: 4000}, covered: cpuGPU, within: never, reclaim: never,
			pending: []workload{
				{name: "c-first", pods: []quota{{cpu: 1000}}, priority: 1, created: at(13)},
				{name: "c-q", pods: []quota{{gpu: 2}}, priority: 0, created: at(14)},
			}},
	)
}

func TestRequeueOtherTrees(t *testing.T) {
	d := requeueOtherTrees()
	d.keepTreeRequeue = true
	got, err := d.kueueDecide()
	if err != nil {
		t.Fatal(err)
	}
	admitted := func(names ...string) map[string]map[string]map[string]string {
		m := map[string]map[string]map[string]string{}
		for _, n := range names {
			m[n] = map[string]map[string]string{}
		}
		return m
	}
	want := &verdictOf{admitted: admitted("a-p", "b-low", "c-first"), evicted: []string{"v"}, pending: []string{"b-high", "c-q"}}
	if !sameVerdict(got.verdict, want) {
		t.Errorf("Kueue requeueing one tree: %v; want %v", got.verdict, want)
	}
	d.keepTreeRequeue = false
	got, err = d.kueueDecide()
	if err != nil {
		t.Fatal(err)
	}
	want = &verdictOf{admitted: admitted("a-p", "c-first", "c-q"), evicted: []string{"v"}, pending: []string{"b-high", "b-low"}}
	if !sameVerdict(got.verdict, want) {
		t.Errorf("Kueue requeueing every tree: %v; want %v, SEMANTICS §5.4's answer", got.verdict, want)
	}
	keepDecisionCase(t, "kueue-requeue-other-trees.json", d)
}
