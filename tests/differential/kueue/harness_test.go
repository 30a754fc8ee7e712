package main

import (
	"math"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	"sigs.k8s.io/kueue/pkg/resources"

	"arbiter.dev/tests/differential/internal/arbiterjson"
)

// story3 is the check of SEMANTICS §5.3 (KEP-1714 story 3): org holds cs (one ClusterQueue
// with 300 GPUs), c1 {1a, 1b, 1c with weight 3} and c2 {2a}; 1a and 1b use 30, 1c 90, 2a 150.
func story3() *tree {
	three := 3.0
	t := &tree{nodes: []node{
		{name: "org", parent: -1, children: []int{3, 6, 1}, explicit: true},
		{name: "cs", parent: 0, children: []int{2}, explicit: true},
		{name: "cs-gpus", parent: 1, cq: true, explicit: true},
		{name: "c1", parent: 0, children: []int{4, 5, 7}, explicit: true},
		{name: "1a", parent: 3, cq: true, explicit: true},
		{name: "1b", parent: 3, cq: true, explicit: true},
		{name: "c2", parent: 0, children: []int{8}, explicit: true},
		{name: "1c", parent: 3, cq: true, explicit: true, weight: &three},
		{name: "2a", parent: 6, cq: true, explicit: true},
	}, roots: []int{0}}
	for i, used := range map[int]int64{2: 0, 4: 30, 5: 30, 7: 90, 8: 150} {
		n := &t.nodes[i]
		n.covered[gpu] = true
		n.workloads = []workload{{name: n.name + "-w", pods: []quota{{gpu: used}}, admitted: true}}
	}
	t.nodes[2].nominal[gpu] = 300
	return t
}

func TestKueueGivesTheSpecifiedStory3Shares(t *testing.T) {
	tr := story3()
	shares, err := tr.kueueShares()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"org": 0, "cs": 0, "cs-gpus": 0, "c1": 500, "c2": 500, "1a": 100, "1b": 100, "1c": 100, "2a": 500}
	for i, s := range shares {
		name := tr.nodes[i].name
		if s.weighted != want[name] || s.borrowing != (want[name] > 0) {
			t.Errorf("%s: weighted share %v, borrowing %v; want %v", name, s.weighted, s.borrowing, want[name])
		}
		if want[name] > 0 && s.dominant != "nvidia.com/gpu" {
			t.Errorf("%s: dominant resource %q", name, s.dominant)
		}
		if wantUsage := map[string]int64{"org": 300, "c1": 150, "c2": 150, "1a": 30, "1b": 30, "1c": 90, "2a": 150}[name]; s.usage[gpu] != wantUsage {
			t.Errorf("%s: usage %d, want %d", name, s.usage[gpu], wantUsage)
		}
	}
}

// An answer equal to Kueue's passes; a changed weighted share (by as little as one ulp), flag or
// dominant resource fails.
func TestCompareCatchesEachField(t *testing.T) {
	tr := story3()
	want, err := tr.kueueShares()
	if err != nil {
		t.Fatal(err)
	}
	answer := func() map[string]*arbiterjson.QueueShare {
		m := map[string]*arbiterjson.QueueShare{}
		for i, s := range want {
			m[tr.nodes[i].name] = &arbiterjson.QueueShare{
				Queue:            tr.nodes[i].name,
				WeightedShare:    arbiterjson.Number(s.weighted),
				Borrowing:        s.borrowing,
				DominantResource: s.dominant,
				Allocated:        map[string]arbiterjson.Number{"nvidia.com/gpu": arbiterjson.Number(s.usage[gpu])},
			}
		}
		return m
	}
	var counts shareCounts
	if o := tr.compare(want, answer(), &counts); o.Failure != "" {
		t.Fatalf("Kueue's own answer fails: %s", o.Failure)
	}
	for name, change := range map[string]func(*arbiterjson.QueueShare){
		"weighted share": func(s *arbiterjson.QueueShare) { s.WeightedShare *= 1.001 },
		// The comparison is bit for bit: the next float64 up is a difference too.
		"weighted share by one ulp": func(s *arbiterjson.QueueShare) {
			s.WeightedShare = arbiterjson.Number(math.Nextafter(float64(s.WeightedShare), math.Inf(1)))
		},
		"borrowing": func(s *arbiterjson.QueueShare) { s.Borrowing = !s.Borrowing },
		"dominant":  func(s *arbiterjson.QueueShare) { s.DominantResource = "cpu" },
		"usage":     func(s *arbiterjson.QueueShare) { s.Allocated["nvidia.com/gpu"]++ },
	} {
		got := answer()
		change(got["1c"])
		if o := tr.compare(want, got, &counts); o.Failure == "" {
			t.Errorf("a changed %s went unnoticed", name)
		}
	}
}

// The generator must reach the cases the comparison is about.
func TestGeneratorReachesTheInterestingCases(t *testing.T) {
	var queues, borrowing, infinite, nothingLendable, limitedCohorts, deep int
	for seed := int64(1); seed <= 200; seed++ {
		tr := generate(seed)
		shares, err := tr.kueueShares()
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		for i, s := range shares {
			queues++
			n := &tr.nodes[i]
			switch {
			case s.weighted > 1e308:
				infinite++
			case s.borrowing && s.weighted == 0:
				nothingLendable++
			}
			if s.borrowing {
				borrowing++
			}
			if !n.cq && n.parent >= 0 && (n.hasBorrowing != [numResources]bool{} || n.hasLending != [numResources]bool{}) {
				limitedCohorts++
			}
			if n.cq && n.parent >= 0 && tr.nodes[n.parent].parent >= 0 {
				deep++
			}
		}
	}
	t.Logf("%d queues: %d borrowing, %d with an infinite share, %d borrowing with nothing lendable, %d inner cohorts with limits, %d ClusterQueues two cohorts deep",
		queues, borrowing, infinite, nothingLendable, limitedCohorts, deep)
	if borrowing < queues/5 || infinite < 20 || nothingLendable < 5 || limitedCohorts < 20 || deep < 100 {
		t.Errorf("the generator no longer reaches the interesting cases")
	}
}

// flavoredPair is a cohort of two ClusterQueues, a and b, each with one resource group for GPUs
// of two flavors, fa and fb, 10 GPUs nominal each. a uses 15 fa and 5 fb; b uses nothing.
func flavoredPair() *tree {
	gpus := func(nominal int64) group {
		return group{covered: []int{gpu}, flavors: []flavorQuota{{name: "fa", nominal: quota{gpu: nominal}}, {name: "fb", nominal: quota{gpu: nominal}}}}
	}
	t := &tree{flavored: true, kinds: []groupKind{{resources: []int{gpu}, flavors: []string{"fa", "fb"}}}, nodes: []node{
		{name: "org", parent: -1, children: []int{1, 2}, explicit: true},
		{name: "a", parent: 0, cq: true, explicit: true, groups: []group{gpus(10)}},
		{name: "b", parent: 0, cq: true, explicit: true, groups: []group{gpus(10)}},
	}, roots: []int{0}}
	t.nodes[1].workloads = []workload{{name: "a-w", admitted: true, pods: []quota{{gpu: 15}, {gpu: 5}},
		flavors: [][numResources]string{{gpu: "fa"}, {gpu: "fb"}}}}
	return t
}

// Kueue adds borrowing up over flavors without offsetting one flavor's unused quota against
// another's (SEMANTICS §5.8.4): a borrows 5 fa while 5 fb lie idle, over 40 lendable GPUs.
func TestKueueSumsBorrowingOverFlavors(t *testing.T) {
	tr := flavoredPair()
	shares, err := tr.kueueShares()
	if err != nil {
		t.Fatal(err)
	}
	a := shares[1]
	if a.weighted != 125 || !a.borrowing || a.dominant != "nvidia.com/gpu" || a.usage[gpu] != 20 {
		t.Errorf("a: weighted share %v, borrowing %v, dominant %q, usage %d; want 125, true, nvidia.com/gpu, 20", a.weighted, a.borrowing, a.dominant, a.usage[gpu])
	}
	fa := resources.FlavorResource{Flavor: "fa", Resource: "nvidia.com/gpu"}
	if got := a.flavorResources[fa]; got.nominal != 10 || got.subtreeQuota != 10 || got.usage != 15 {
		t.Errorf("a's fa GPUs: %+v", got)
	}
	if got := shares[0].flavorResources[fa]; got.subtreeQuota != 20 || got.usage != 15 || got.listed {
		t.Errorf("org's fa GPUs: %+v", got)
	}
}

// A flavored tree is written with resource groups, ResourceFlavors and each admitted pod set's
// flavors, under the proto3 JSON names arbiter reads; a legacy tree with none of them.
func TestFlavoredRequestJSON(t *testing.T) {
	body, err := arbiterjson.Encode(flavoredPair().request())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"resource_groups"`, `"covered_resources"`, `"flavor": "fa"`, `"resource_flavors"`, `"pod_set": "ps1"`, `"nvidia.com/gpu": "fb"`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("the request lacks %s:\n%s", want, body)
		}
	}
	if strings.Contains(string(body), `"deserved"`) {
		t.Errorf("a flavored queue also has legacy quotas:\n%s", body)
	}
	legacy, err := arbiterjson.Encode(story3().request())
	if err != nil {
		t.Fatal(err)
	}
	for _, field := range []string{"resource_groups", "resource_flavors", "pod_set", `"flavors"`} {
		if strings.Contains(string(legacy), field) {
			t.Errorf("a legacy request has %s", field)
		}
	}
}

// assignPair is a flavor-assignment scenario on a copy of flavoredPair where b has no quota, a
// holds all of fa (one workload of priority 0) and nothing of fb, and a pending workload of
// priority 1 in a asks for 2 GPUs.
func assignPair(within kueue.PreemptionPolicy, whenCanPreempt kueue.FlavorFungibilityPolicy) *scenario {
	tr := flavoredPair()
	for k := range tr.nodes[2].groups[0].flavors {
		tr.nodes[2].groups[0].flavors[k].nominal = quota{}
	}
	tr.nodes[1].workloads = []workload{{name: "a-w", admitted: true, scheduled: true, pods: []quota{{gpu: 10}},
		flavors: [][numResources]string{{gpu: "fa"}}, created: epoch, reserved: epoch.Add(time.Hour)}}
	s := &scenario{t: tr, x: 1,
		pending: workload{name: "a-pending", scheduled: true, priority: 1, created: epoch.Add(time.Second),
			pods: []quota{{gpu: 2}}, selectors: []map[string]string{nil}, tolerations: [][]arbiterjson.Toleration{nil}},
		flavors: map[string]flavorSpec{"fa": {}, "fb": {}},
		within:  map[string]kueue.PreemptionPolicy{"a": within, "b": kueue.PreemptionPolicyNever},
		reclaim: map[string]kueue.PreemptionPolicy{"a": kueue.PreemptionPolicyNever, "b": kueue.PreemptionPolicyNever},
	}
	if whenCanPreempt != "" {
		s.fungibility = &kueue.FlavorFungibility{WhenCanPreempt: whenCanPreempt}
	}
	return s
}

// Kueue's assigner, driven as the harness drives it: with no preemption allowed, fa has no
// candidates and fb fits; allowed to preempt in a and told to stop at a flavor that can
// preempt, Kueue preempts a-w and admits on fa in the next cycle.
func TestKueueAssignerAsDriven(t *testing.T) {
	got, err := assignPair(kueue.PreemptionPolicyNever, "").kueueOutcome()
	if err != nil {
		t.Fatal(err)
	}
	if got.firstMode != "Fit" || !got.admitted || got.afterEvictions || got.flavors["ps0"]["nvidia.com/gpu"] != "fb" {
		t.Errorf("no preemption: %+v; want Fit on fb", got)
	}
	got, err = assignPair(kueue.PreemptionPolicyLowerPriority, kueue.MayStopSearch).kueueOutcome()
	if err != nil {
		t.Fatal(err)
	}
	if got.firstMode != "Preempt" || !got.admitted || !got.afterEvictions || got.flavors["ps0"]["nvidia.com/gpu"] != "fa" ||
		!slices.Equal(got.victims, []string{"a-w"}) || got.cycles != 2 {
		t.Errorf("preemption: %+v; want Preempt, a-w evicted, then Fit on fa", got)
	}
	// The cycles leave the scenario as it was.
	if w := assignPair(kueue.PreemptionPolicyLowerPriority, kueue.MayStopSearch); w.t.nodes[1].workloads[0].evicted {
		t.Errorf("the victim is still marked evicted")
	}
}

// An outcome equal to Kueue's agrees; each changed field fails, except a NoFit reason alone,
// which agrees under its rule.
func TestCompareAssignmentCatchesEachField(t *testing.T) {
	s := assignPair(kueue.PreemptionPolicyLowerPriority, kueue.MayStopSearch)
	want, err := s.kueueOutcome()
	if err != nil {
		t.Fatal(err)
	}
	counts := assignCounts{byMode: map[string]int{}, reasons: map[string]int{}}
	clone := func() *outcome {
		o := *want
		o.victims = slices.Clone(want.victims)
		o.flavors = map[string]map[string]string{"ps0": {"nvidia.com/gpu": "fa"}}
		return &o
	}
	if rules, failure := s.compareAssignment(want, clone(), &counts); failure != "" || len(rules) > 0 {
		t.Fatalf("Kueue's own outcome: rules %v, failure %s", rules, failure)
	}
	for name, change := range map[string]func(*outcome){
		"flavor":          func(o *outcome) { o.flavors["ps0"]["nvidia.com/gpu"] = "fb" },
		"extra resource":  func(o *outcome) { o.flavors["ps0"]["cpu"] = "fa" },
		"mode":            func(o *outcome) { o.firstMode = "Fit" },
		"after evictions": func(o *outcome) { o.afterEvictions = false },
		"victims":         func(o *outcome) { o.victims = nil },
		"admission":       func(o *outcome) { o.admitted, o.reason = false, "no-preemption-candidates" },
	} {
		got := clone()
		change(got)
		if _, failure := s.compareAssignment(want, got, &counts); failure == "" {
			t.Errorf("a changed %s went unnoticed", name)
		}
	}
	noFit := &outcome{firstMode: "NoFit", reason: "exceeds-max-quota"}
	if rules, _ := s.compareAssignment(noFit, &outcome{firstMode: "NoFit", reason: "no-matching-flavor"}, &counts); !slices.Equal(rules, []string{"nofit-reason"}) {
		t.Errorf("a NoFit reason alone: rules %v", rules)
	}
	uncovered := &outcome{firstMode: "NoFit", reason: "resource-not-covered"}
	if rules, failure := s.compareAssignment(uncovered, &outcome{firstMode: "NoFit", reason: "insufficient-quota"}, &counts); failure == "" || len(rules) > 0 {
		t.Errorf("a resource Kueue finds uncovered and arbiter does not went unnoticed")
	}
}

// The scenario generator must reach every mode, reason and path the comparison is about.
func TestScenarioGeneratorReachesTheInterestingCases(t *testing.T) {
	counts := assignCounts{byMode: map[string]int{}, reasons: map[string]int{}}
	var afterEvictions, notFirst, twoPodSets, policies int
	for seed := int64(1); seed <= 300; seed++ {
		s := generateScenario(seed)
		got, err := s.kueueOutcome()
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		counts.byMode[got.firstMode]++
		if got.reason != "" {
			counts.reasons[got.reason]++
		}
		if got.afterEvictions {
			afterEvictions++
		}
		if got.admitted && s.notFirstFlavor(got.flavors) {
			notFirst++
		}
		if len(s.pending.pods) > 1 {
			twoPodSets++
		}
		if f := s.fungibility; f != nil && f.Preference != nil {
			policies++
		}
	}
	t.Logf("first modes %v; pending reasons %v; %d admitted after evictions, %d on a flavor not first, %d with two pod sets, %d with a preference",
		counts.byMode, counts.reasons, afterEvictions, notFirst, twoPodSets, policies)
	if counts.byMode["Fit"] < 100 || counts.byMode["Preempt"] < 20 || counts.byMode["NoFit"] < 50 || afterEvictions < 5 || notFirst < 30 || twoPodSets < 60 || policies < 10 {
		t.Errorf("the scenario generator no longer reaches the interesting cases")
	}
	for _, reason := range []string{"exceeds-max-quota", "insufficient-quota", "no-matching-flavor", "no-preemption-candidates", "resource-not-covered"} {
		if counts.reasons[reason] < 1 {
			t.Errorf("pending reason %s reached %d times", reason, counts.reasons[reason])
		}
	}
}

// noCandidatesUnderPreemptionOverBorrowing is the smallest scenario of an open divergence
// (docs/conformance.md): org holds c1 {x, y} and z, one flavor f of cpu and GPUs. x has 10 cpu
// nominal, all borrowed by y's workload; z has the 10 GPUs. The pending workload of x asks for
// 5 cpu and 1 GPU, x may preempt nothing, and x's fungibility prefers preemption over borrowing.
// On f, cpu needs preemption with no candidates at borrowing level 0 and the GPU fits at level
// 2. Kueue v0.17.0 ranks the level first (isPreferred), so f's worst mode is the GPU's Fit and
// the pod set is Fit, which its scheduler's second check then skips. SEMANTICS §5.8.6 ranks
// NO_CANDIDATES below everything: a Preempt without targets.
func noCandidatesUnderPreemptionOverBorrowing() *scenario {
	f := func(cpuNominal, gpuNominal int64) []group {
		return []group{{covered: []int{cpu, gpu}, flavors: []flavorQuota{{name: "f", nominal: quota{cpu: cpuNominal, gpu: gpuNominal}}}}}
	}
	tr := &tree{seed: 1, flavored: true, kinds: []groupKind{{resources: []int{cpu, gpu}, flavors: []string{"f"}}}, nodes: []node{
		{name: "org", parent: -1, children: []int{1, 4}, explicit: true},
		{name: "c1", parent: 0, children: []int{2, 3}, explicit: true},
		{name: "x", parent: 1, cq: true, explicit: true, groups: f(10, 0)},
		{name: "y", parent: 1, cq: true, explicit: true, groups: f(0, 0)},
		{name: "z", parent: 0, cq: true, explicit: true, groups: f(0, 10)},
	}, roots: []int{0}}
	tr.nodes[3].workloads = []workload{{name: "y-w", admitted: true, scheduled: true, pods: []quota{{cpu: 10}},
		flavors: [][numResources]string{{cpu: "f"}}, created: epoch, reserved: epoch.Add(time.Hour)}}
	never := kueue.PreemptionPolicyNever
	return &scenario{t: tr, x: 2,
		pending: workload{name: "x-pending", scheduled: true, created: epoch.Add(time.Second),
			pods: []quota{{cpu: 5, gpu: 1}}, selectors: []map[string]string{nil}, tolerations: [][]arbiterjson.Toleration{nil}},
		flavors: map[string]flavorSpec{"f": {}},
		within:  map[string]kueue.PreemptionPolicy{"x": never, "y": never, "z": never},
		reclaim: map[string]kueue.PreemptionPolicy{"x": never, "y": never, "z": never},
		fungibility: &kueue.FlavorFungibility{WhenCanBorrow: kueue.TryNextFlavor, WhenCanPreempt: kueue.TryNextFlavor,
			Preference: ptrTo(kueue.PreemptionOverBorrowing)},
	}
}

// The kept case is this scenario's request, and Kueue decides it as described.
func TestNoCandidatesUnderPreemptionOverBorrowing(t *testing.T) {
	s := noCandidatesUnderPreemptionOverBorrowing()
	got, err := s.kueueOutcome()
	if err != nil {
		t.Fatal(err)
	}
	if got.firstMode != "Fit" || got.admitted || got.reason != "no-longer-fits" {
		t.Errorf("Kueue: %+v; want a Fit nomination its scheduler skips", got)
	}
	keepCase(t, "kueue-no-candidates-preemption-over-borrowing.json", s)
}

// unlabelledFlavor is the smallest scenario of the other open divergence (docs/conformance.md):
// ClusterQueue x lists flavors fa (zone=zone-a) and fb (no labels) for cpu; the pending
// workload's pod selects zone=zone-b. Kueue matches the selector on the keys some flavor of the
// group labels and requires them of every flavor, so fb does not match either: NoFit. SEMANTICS
// §5.8.5 ignores a key the flavor does not label, so fb is compatible: Fit on fb.
func unlabelledFlavor() *scenario {
	tr := &tree{seed: 1, flavored: true, kinds: []groupKind{{resources: []int{cpu}, flavors: []string{"fa", "fb"}}}, nodes: []node{
		{name: "org", parent: -1, children: []int{1}, explicit: true},
		{name: "x", parent: 0, cq: true, explicit: true, groups: []group{{covered: []int{cpu},
			flavors: []flavorQuota{{name: "fa", nominal: quota{cpu: 10}}, {name: "fb", nominal: quota{cpu: 10}}}}}},
	}, roots: []int{0}}
	never := kueue.PreemptionPolicyNever
	return &scenario{t: tr, x: 1,
		pending: workload{name: "x-pending", scheduled: true, created: epoch,
			pods: []quota{{cpu: 5}}, selectors: []map[string]string{{"zone": "zone-b"}}, tolerations: [][]arbiterjson.Toleration{nil}},
		flavors: map[string]flavorSpec{"fa": {labels: map[string]string{"zone": "zone-a"}}, "fb": {}},
		within:  map[string]kueue.PreemptionPolicy{"x": never},
		reclaim: map[string]kueue.PreemptionPolicy{"x": never},
	}
}

func TestUnlabelledFlavor(t *testing.T) {
	s := unlabelledFlavor()
	got, err := s.kueueOutcome()
	if err != nil {
		t.Fatal(err)
	}
	if got.firstMode != "NoFit" || got.reason != "no-matching-flavor" {
		t.Errorf("Kueue: %+v; want NoFit, no-matching-flavor", got)
	}
	keepCase(t, "kueue-unlabelled-flavor.json", s)
}

// keepCase checks that tests/differential/cases/NAME is the scenario's request;
// ARBITER_DIFFERENTIAL_WRITE_CASES=1 rewrites it.
func keepCase(t *testing.T, name string, s *scenario) {
	t.Helper()
	keepRequest(t, name, s.request())
}

// keepDecisionCase is keepCase for a decision scenario.
func keepDecisionCase(t *testing.T, name string, d *decision) {
	t.Helper()
	keepRequest(t, name, d.request())
}

func keepRequest(t *testing.T, name string, req *arbiterjson.ScheduleRequest) {
	t.Helper()
	body, err := arbiterjson.EncodeSchedule(req)
	if err != nil {
		t.Fatal(err)
	}
	kept := "../cases/" + name
	if os.Getenv("ARBITER_DIFFERENTIAL_WRITE_CASES") != "" {
		if err := os.WriteFile(kept, append(body, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if want, err := os.ReadFile(kept); err != nil || string(want) != string(body)+"\n" {
		t.Errorf("%s is not this scenario's request (ARBITER_DIFFERENTIAL_WRITE_CASES=1 rewrites it): %v", kept, err)
	}
}

// Seed 1460's scenario is one where Kueue's first fair-sharing pass evicts from x, leaves the
// workload unfit and puts another ClusterQueue's workload on the retry list: SEMANTICS §5.5
// step 6 would rerun the pass, Kueue v0.17.0 does not, and the scenario is left out. (A change
// to the generator may move it to another seed.)
func TestRerunDetector(t *testing.T) {
	got, err := generateScenario(1460).kueueOutcome()
	if err != nil {
		t.Fatal(err)
	}
	if !got.rerun {
		t.Errorf("seed 1460: the first pass's state of §5.5 step 6 went unnoticed")
	}
	if got, err := assignPair(kueue.PreemptionPolicyLowerPriority, kueue.MayStopSearch).kueueOutcome(); err != nil || got.rerun {
		t.Errorf("a preemption within x that fits is taken for a rerun (%v)", err)
	}
}
