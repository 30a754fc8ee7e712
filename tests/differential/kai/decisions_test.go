package main

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"arbiter.dev/tests/differential/internal/arbiterjson"
)

// knownCluster: two nodes, one department over two queues; q0 has a running gang and a pending
// job, q1 a pending elastic job that selects pool-a.
func knownCluster() *cluster {
	return &cluster{
		seed: 7,
		feat: allFeatures,
		nodes: []cnode{
			{name: "n0", gpus: 4, cpu: nodeMilliCPU, pool: "pool-a"},
			{name: "n1", gpus: 2, cpu: 8000},
		},
		departments: []cqueue{{name: "d0", deserved: 6, priority: departmentPrio}},
		queues: []cqueue{
			{name: "q0", parent: "d0", deserved: 2, limit: 5, weight: 2, priority: 100, index: 0},
			{name: "q1", parent: "d0", deserved: 4, weight: 1, priority: 50, index: 1},
		},
		jobs: []cjob{
			{name: "j00", queue: "q0", gpus: 1, priority: 50, age: 30, tasks: []ctask{{"Running", "n1"}, {"Releasing", "n1"}}},
			{name: "j01", queue: "q0", gpus: 2, cpu: 3000, priority: 125, age: 20, tasks: []ctask{{state: "Pending"}}},
			{name: "j02", queue: "q1", gpus: 1, priority: 50, age: 10, minAvailable: 1, pool: "pool-a",
				tasks: []ctask{{state: "Pending"}, {state: "Pending"}, {state: "Pending"}}},
		},
	}
}

// The cluster is written the same way on both sides: KAI's test topology and arbiter's request.
func TestDecisionClusterConvertsToBothSides(t *testing.T) {
	c := knownCluster()
	topo := c.topology()
	if n := topo.Nodes["n0"]; n.GPUs != 4 || n.Labels[poolLabel] != "pool-a" || n.CPUMillis != 20000 {
		t.Errorf("KAI node n0: %+v", n)
	}
	if n := topo.Nodes["n1"]; n.CPUMillis != 8 || n.Labels[poolLabel] != "n1" {
		t.Errorf("KAI node n1 (cpu in cpus, label its own name): %+v", n)
	}
	if len(topo.Departments) != 1 || topo.Departments[0].DeservedGPUs != 6 || len(topo.Queues) != 2 || topo.Queues[0].MaxAllowedGPUs != 5 {
		t.Errorf("KAI queues: %+v %+v", topo.Departments, topo.Queues)
	}
	if j := topo.Jobs[2]; j.RootSubGroupSet == nil || len(j.Tasks) != 3 || j.Tasks[0].NodeAffinityNames[0] != "pool-a" {
		t.Errorf("KAI job j02: %+v", j)
	}

	req := c.request()
	queues := map[string]int{}
	for i, q := range req.Snapshot.Queues {
		queues[q.Name] = i
	}
	d0 := req.Snapshot.Queues[queues["d0"]]
	if d0.Parent != "" || d0.OverQuotaWeight["nvidia.com/gpu"] != 6 || d0.Deserved["cpu"] != -1 || d0.Limit["nvidia.com/gpu"] != -1 || d0.Priority != 100 {
		t.Errorf("department d0: %+v (weight = deserved GPUs, cpu -1, no limit)", d0)
	}
	q0 := req.Snapshot.Queues[queues["q0"]]
	if q0.Parent != "d0" || q0.Limit["nvidia.com/gpu"] != 5 || q0.OverQuotaWeight["nvidia.com/gpu"] != 2 || q0.Deserved["nvidia.com/gpu"] != 2 {
		t.Errorf("queue q0: %+v", q0)
	}
	q1 := req.Snapshot.Queues[queues["q1"]]
	if q1.Limit["nvidia.com/gpu"] != -1 || q1.CreationTime <= q0.CreationTime {
		t.Errorf("queue q1: %+v (no limit, created after q0)", q1)
	}
	groups := map[string]int{}
	for i, g := range req.Snapshot.PodGroups {
		groups[g.Name] = i
	}
	j00 := req.Snapshot.PodGroups[groups["j00"]]
	if j00.MinMember != 2 || j00.Pods[0].Phase != "POD_PHASE_RUNNING" || j00.Pods[1].Phase != "POD_PHASE_RELEASING" || j00.Pods[1].NodeName != "n1" {
		t.Errorf("group j00: %+v", j00)
	}
	j01 := req.Snapshot.PodGroups[groups["j01"]]
	if j01.Priority != 125 || j01.Pods[0].Requests["cpu"] != 3000 || j01.Pods[0].Requests["memory"] != podMemory || j01.Pods[0].Requests["nvidia.com/gpu"] != 2 {
		t.Errorf("group j01: %+v", j01)
	}
	j02 := req.Snapshot.PodGroups[groups["j02"]]
	if j02.MinMember != 1 || j02.Pods[2].Name != "j02-2" || j02.Pods[2].NodeSelector[poolLabel] != "pool-a" || j02.CreationTime <= j01.CreationTime {
		t.Errorf("group j02: %+v", j02)
	}
	if n := req.Snapshot.Nodes; len(n) != 2 {
		t.Errorf("nodes: %+v", n)
	}
}

// KAI packs a small cluster as SEMANTICS §4.5's binpack does: the gang of two 1-GPU pods goes
// to n1 (2 GPUs free, the fuller node that fits), then the 3-GPU job to n0.
func TestDecisionKAIBinpacks(t *testing.T) {
	c := &cluster{
		seed:        1,
		nodes:       []cnode{{name: "n0", gpus: 4, cpu: nodeMilliCPU}, {name: "n1", gpus: 2, cpu: nodeMilliCPU}},
		departments: []cqueue{{name: "d0", deserved: 6, priority: departmentPrio}},
		queues:      []cqueue{{name: "q0", parent: "d0", deserved: 6, weight: 1, priority: 100}},
		jobs: []cjob{
			{name: "j00", queue: "q0", gpus: 1, priority: 50, age: 30, tasks: []ctask{{state: "Pending"}, {state: "Pending"}}},
			{name: "j01", queue: "q0", gpus: 3, priority: 50, age: 20, tasks: []ctask{{state: "Pending"}}},
		},
	}
	out, taken, err := c.runKAI(false)
	if err != nil {
		t.Fatal(err)
	}
	want := outcome{"j00/j00-0": "bound@n1", "j00/j00-1": "bound@n1", "j01/j01-0": "bound@n0"}
	if !sameOutcome(out, want) || len(taken) != 0 {
		t.Errorf("KAI: %v (taken %v), want %v", out, taken, want)
	}
	if got, _, err := c.runKAI(true); err != nil || !sameOutcome(got, want) {
		t.Errorf("KAI with eager allocate: %v, %v", got, err)
	}
}

// A planted difference fails; an answer equal to every run agrees; an answer equal to one of
// KAI's differing runs agrees under map-order.
func TestDecisionJudgeCatchesAPlantedDifference(t *testing.T) {
	c := knownCluster()
	kai := outcome{"j01/j01-0": "bound@n0", "j02/j02-0": "pending"}
	if o := judge(c, kai, []outcome{kai, kai}); o.Failure != "" || len(o.Rules) != 0 {
		t.Errorf("the same answer: %+v", o)
	}
	planted := outcome{"j01/j01-0": "pipelined@n0", "j02/j02-0": "pending"}
	o := judge(c, planted, []outcome{kai, kai})
	if !isFailure(o) || !strings.Contains(o.Failure, "KAI bound@n0, arbiter pipelined@n0") {
		t.Errorf("a planted difference: %+v", o)
	}
	other := outcome{"j01/j01-0": "bound@n1", "j02/j02-0": "pending"}
	if o := judge(c, other, []outcome{kai, other}); len(o.Rules) != 1 || o.Rules[0] != ruleDecisionMapOrder {
		t.Errorf("one of KAI's answers: %+v", o)
	}
}

func TestParseFeatures(t *testing.T) {
	f, err := parseFeatures("all,-selectors,-cpu")
	if err != nil || !f.gangs || f.selectors || f.cpuRequests {
		t.Errorf("all,-selectors,-cpu: %+v %v", f, err)
	}
	if _, err := parseFeatures("gangs,nope"); err == nil {
		t.Error("an unknown feature is accepted")
	}
}

// boundThenTakenCluster is the smallest cluster of spec question (a) (docs/conformance.md,
// "Decisions: KAI"): j06 is bound to n5 by allocate; j07 selects pool-b (n5 only) and does not
// fit; KAI's consolidation then moves j06, a pod it bound in the same cycle, to n2 and pipelines
// j07 onto n5. SEMANTICS §4.1 never takes a pod bound in the same response: arbiter binds j06 to
// n5 and leaves j07 pending.
func boundThenTakenCluster() *cluster {
	return &cluster{
		seed:        7,
		nodes:       []cnode{{name: "n2", gpus: 8, cpu: nodeMilliCPU}, {name: "n5", gpus: 2, cpu: 15000, pool: "pool-b"}},
		departments: []cqueue{{name: "d0", priority: departmentPrio}},
		queues:      []cqueue{{name: "q1", parent: "d0", weight: 1, priority: 100, index: 1}},
		jobs: []cjob{
			{name: "j06", queue: "q1", gpus: 2, priority: 50, age: 16, tasks: []ctask{{state: "Pending"}}},
			{name: "j07", queue: "q1", gpus: 1, priority: 50, age: 1, pool: "pool-b", tasks: []ctask{{state: "Pending"}}},
		},
	}
}

func TestDecisionCaseBoundThenTaken(t *testing.T) {
	c := boundThenTakenCluster()
	out, taken, err := c.runKAI(false)
	if err != nil {
		t.Fatal(err)
	}
	want := outcome{"j06/j06-0": "pipelined@n2", "j07/j07-0": "pipelined@n5"}
	if !sameOutcome(out, want) || len(taken) != 1 || taken[0] != "j06/j06-0" {
		t.Errorf("KAI: %v, taken %v; want %v, taken [j06/j06-0]", out, taken, want)
	}
	checkCaseFile(t, c, "kai-bound-then-taken.json")
}

// The features of the eviction-feature runs (docs/conformance.md), parsed.
func evictionFeatures(t *testing.T) features {
	t.Helper()
	feat, err := parseFeatures("gangs,elastic,running,releasing,minruntime,quotas,priorities,nonpreemptible")
	if err != nil {
		t.Fatal(err)
	}
	return feat
}

// The cluster of `seed` with the eviction features, and arbiter's answer to it.
func evictionFeatureCase(t *testing.T, seed int64) (*cluster, string, *arbiterjson.ScheduleResponse, outcome) {
	t.Helper()
	cli := arbiterCLI(t)
	c := generateCluster(seed, evictionFeatures(t))
	resp, err := arbiterjson.Schedule(cli, c.request())
	if err != nil {
		t.Fatal(err)
	}
	arb, err := c.arbiterOutcome(resp)
	if err != nil {
		t.Fatal(err)
	}
	return c, cli, resp, arb
}

// runRebuilt runs KAI once on c with its eviction actions rebuilt as variant, after set (when
// not nil) has adjusted the copy it runs.
func runRebuilt(t *testing.T, c *cluster, variant rebuiltActions, set func(*cluster)) outcome {
	t.Helper()
	v := c.clone()
	v.rebuilt = variant
	if set != nil {
		set(v)
	}
	out, _, err := v.runKAI(false)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// evictionFeatureCaseAndKAI is evictionFeatureCase with KAI's own run of the cluster.
func evictionFeatureCaseAndKAI(t *testing.T, seed int64) (c *cluster, cli string, arb, own outcome) {
	t.Helper()
	c, cli, _, arb = evictionFeatureCase(t, seed)
	own, _, err := c.runKAI(false)
	if err != nil {
		t.Fatal(err)
	}
	return c, cli, arb, own
}

// (b)'s two forms in one cycle (seed 31 of the eviction features): arbiter's preempt places j06,
// j09 and j18 on room j11's preemption freed, without victims; KAI's solver leaves j09 and j18
// pending (no victim to simulate) and moves j10 to place j06 (a victim drawn, then re-placed
// elsewhere). Asked again with j09 and j18 unplaceable, arbiter's answer differs from KAI's only
// in that victim form, which the check accepts; without it, it does not.
func TestDecisionVictimlessBothForms(t *testing.T) {
	c, cli, resp, arb := evictionFeatureCase(t, 31)
	run, _, err := c.runKAI(false)
	if err != nil {
		t.Fatal(err)
	}
	runs := []outcome{run}
	if run["j10/j10-0"] != "moved@n4" || run["j09/j09-0"] != "pending" || run["j18/j18-0"] != "pending" ||
		!strings.HasPrefix(string(arb["j09/j09-0"]), "pipelined@") || arb["j10/j10-0"] != "running" {
		t.Fatalf("not the case of seed 31: KAI %v, arbiter %v", run, arb)
	}
	free := map[string]bool{"j06": true, "j09": true, "j18": true}
	if c.victimlessRerunAgrees(cli, resp, arb, runs, nil, nil) {
		t.Error("accepted without the victim form")
	}
	if !c.victimlessRerunAgrees(cli, resp, arb, runs, nil, free) {
		t.Error("both forms of (b) not accepted")
	}
	if victimlessVictimForm(free, arb, runs) {
		t.Error("the victim form alone accepts arbiter's first answer")
	}
}

// Spec question (a) for a moved pod (seed 208 of the eviction features): KAI's reclaim moves
// j03-0 from n0 to n1 for j02, then, later in the same action, evicts it for j00. The run names
// j03-0 among the pods taken after the cycle placed them.
func TestDecisionMovedThenTaken(t *testing.T) {
	c := generateCluster(208, evictionFeatures(t))
	out, taken, err := c.runKAI(false)
	if err != nil {
		t.Fatal(err)
	}
	if out["j03/j03-0"] != "evicted:reclaim" || out["j00/j00-0"] != "pipelined@n1" {
		t.Fatalf("not the case of seed 208: %v", out)
	}
	if !slices.Contains(taken, "j03/j03-0") {
		t.Errorf("taken %v; want j03/j03-0 (moved, then evicted)", taken)
	}
}

// Spec question (a) inside the rebuilt eviction actions (seed 243 of the eviction features):
// KAI's own runs take no pod they placed, but with re-entry its reclaim moves j04-1 to n0 and
// evicts it there for j08; that run differs from arbiter's answer only in nodes. A planted change
// of one pod's fate is not accepted.
func TestDecisionRebuiltRunTakesAndAgrees(t *testing.T) {
	c, _, _, arb := evictionFeatureCase(t, 243)
	if _, taken, err := c.runKAI(false); err != nil || len(taken) != 0 {
		t.Fatalf("not the case of seed 243: KAI's own run took %v (%v)", taken, err)
	}
	if !c.rebuiltRunTakesAndAgrees(arb) {
		t.Error("seed 243 not recognised")
	}
	planted := maps.Clone(arb)
	planted["j15/j15-0"] = "evicted:reclaim"
	if c.rebuiltRunTakesAndAgrees(planted) {
		t.Error("a planted eviction is accepted")
	}
}

// (b), (c) and (f) in one cycle (seed 265 of the eviction features): with re-entry, KAI's preempt
// places j12 by evicting j00-2 and j00-3 and moving j00-1; arbiter first places j11's and then
// j10's units without victims, which KAI leaves pending; with those unplaceable arbiter evicts
// j00's drawn pods as one unit where KAI re-places one (spec question (f)). The check accepts it
// against the re-entering run, not against KAI's own, and not without j00 among the partial
// groups.
func TestDecisionVictimlessWithReentryAndPartialVictim(t *testing.T) {
	c, cli, resp, arb := evictionFeatureCase(t, 265)
	req := c.request()
	_, _, free := c.victimlessVariants(cli, req, resp, arb)
	partial, err := c.partialVictims()
	if err != nil || !free["j11"] || !partial["j00"] {
		t.Fatalf("not the case of seed 265: free %v, partial %v (%v)", free, partial, err)
	}
	own, _, err := c.runKAI(false)
	if err != nil {
		t.Fatal(err)
	}
	v := c.clone()
	v.rebuilt = rebuiltActions{reenter: true}
	reentering, _, err := v.runKAI(false)
	if err != nil {
		t.Fatal(err)
	}
	if c.victimlessRerunAgreesWith(cli, resp, arb, own, free, partial) {
		t.Error("accepted against KAI's own run")
	}
	if c.victimlessRerunAgreesWith(cli, resp, arb, reentering, free, map[string]bool{}) {
		t.Error("accepted without the partial victim")
	}
	if !c.victimlessRerunAgreesWith(cli, resp, arb, reentering, free, partial) {
		t.Error("not accepted against the re-entering run")
	}
}

// Spec question (n), seed 1372 of the eviction features (cases/kai-victim-queue-pushed-empty.json):
// reclaim for j12 (q1, two 1-GPU pods) records j02-2 (q2) for its first part. For the second,
// KAI's scenario builder pops j02, finds its unit recorded and pushes the rest of j02 back
// (pod_scenario_builder.go, addNextPotentialVictims); q2 had no other victim, so PushJob
// (actions/utils/job_order_by_queue.go) re-creates q2 and pushes it into d0's queue heap before
// the job is in it: the comparator finds q2 empty and ranks it below q0, and only the top queue
// is re-ranked before the next pop. KAI draws q0's j00-0, where SEMANTICS §4.7 draws j02-1 (q2
// holds 8 GPUs against a fair share of 4, q0 1 against 2): KAI evicts j00-0, arbiter keeps it.
// KAI's rebuilt reclaim and preempt with re-entry, the min-runtime check on active pods and the
// victim queue of kai-victim-queue-order, which re-ranks the queues before every pop
// (markForReranking), give arbiter's answer; without the re-ranking they do not. (The part-two
// node test also evicts the recorded j02-2 a second time: counted as KAI counts, re-entry and
// the victim queue alone gave arbiter's answer; held to one count per pod, as every rebuilt run
// is, they need the min-runtime change too.)
func TestDecisionCasePushedVictimQueueRankedEmpty(t *testing.T) {
	c, _, arb, run := evictionFeatureCaseAndKAI(t, 1372)
	if run["j00/j00-0"] != "evicted:reclaim" || arb["j00/j00-0"] != "running" {
		t.Errorf("j00-0: KAI %s, arbiter %s; want KAI evicted:reclaim, arbiter running", run["j00/j00-0"], arb["j00/j00-0"])
	}
	if arb["j02/j02-1"] != "evicted:reclaim" {
		t.Errorf("j02-1: arbiter %s, want evicted:reclaim (drawn before q0's j00)", arb["j02/j02-1"])
	}
	v := c.clone()
	v.rebuilt = rebuiltActions{reenter: true, activeGang: true, specVictimOrder: true}
	fixed, _, err := v.runKAI(false)
	if err != nil {
		t.Fatal(err)
	}
	if !sameOutcome(fixed, arb) {
		t.Errorf("KAI with %v differs from arbiter: %v", v.rebuilt.rules(), diffKeys(fixed, arb))
	}
	rerankingOff = true
	defer func() { rerankingOff = false }()
	unfixed, _, err := v.runKAI(false)
	if err != nil {
		t.Fatal(err)
	}
	if unfixed["j00/j00-0"] != "evicted:reclaim" {
		t.Errorf("without the re-ranking, KAI's rebuilt run leaves j00-0 %s; want evicted:reclaim", unfixed["j00/j00-0"])
	}
	checkCaseFile(t, c, "kai-victim-queue-pushed-empty.json")
}

// kai-victim-queue-order must answer the comparisons KAI's victim queue makes while it builds its
// heaps, not only those of later pops (seed 923 of the eviction features). Reclaim for j14 (q1)
// may draw from q0 (j00, 4 of its 2 fair-share GPUs), q2 and q3 (j09, 7 of 6); §4.7 draws j00
// first, KAI's own order j09 (it subtracts each queue's candidate job from its allocation, spec
// question (l)). With the spec's order answering only the pops, the heap built by KAI's order
// kept q3 on top, and the rule's run placed j14 on n1 by evicting j09, as KAI's own run does.
func TestDecisionSpecVictimOrderBuildsTheHeap(t *testing.T) {
	c, _, arb, own := evictionFeatureCaseAndKAI(t, 923)
	if own["j14/j14-0"] != "pipelined@n1" || own["j09/j09-0"] != "evicted:reclaim" {
		t.Fatalf("not the case of seed 923: KAI j14-0 %s, j09-0 %s", own["j14/j14-0"], own["j09/j09-0"])
	}
	variant := rebuiltActions{specVictimOrder: true}
	run := runRebuilt(t, c, variant, nil)
	for _, pod := range []string{"j14/j14-0", "j14/j14-1", "j00/j00-0", "j00/j00-3"} {
		if run[pod] != arb[pod] {
			t.Errorf("%s: KAI with %v %s, arbiter %s", pod, variant.rules(), run[pod], arb[pod])
		}
	}
	if arb["j14/j14-0"] != "pipelined@n7" || arb["j00/j00-0"] != "evicted:reclaim" {
		t.Errorf("arbiter: j14-0 %s, j00-0 %s; want pipelined@n7, evicted:reclaim", arb["j14/j14-0"], arb["j00/j00-0"])
	}
}

// kai-victimless-placement (spec question (b) for a whole unit; seed 1490 of the eviction
// features): reclaim evicts j17-2 on n3 for j07; arbiter's preempt then places j04-1 on n3's freed
// GPU without victims (§4.8 tries R = ∅ first) and evicts j18-0 for j07's next pod. KAI's solver
// simulates nothing without a victim: j04-1 stays pending, and for j07 KAI draws j18-0 and moves it
// to n3. Three forms of (b) in one cycle, which the checks that ask arbiter again do not follow;
// KAI with its reclaim and preempt placing a unit that fits without victims first gives arbiter's
// answer.
func TestDecisionCaseVictimlessPlacement(t *testing.T) {
	c, cli, arb, own := evictionFeatureCaseAndKAI(t, 1490)
	if own["j04/j04-1"] != "pending" || own["j18/j18-0"] != "moved@n3" ||
		arb["j04/j04-1"] != "pipelined@n3" || arb["j18/j18-0"] != "evicted:preempt" {
		t.Fatalf("not the case of seed 1490: KAI j04-1 %s, j18-0 %s; arbiter %s, %s",
			own["j04/j04-1"], own["j18/j18-0"], arb["j04/j04-1"], arb["j18/j18-0"])
	}
	if run := runRebuilt(t, c, rebuiltActions{victimless: true}, nil); !sameOutcome(run, arb) {
		t.Errorf("KAI placing victimless units differs from arbiter: %v", diffKeys(run, arb))
	}
	if run := runRebuilt(t, c, rebuiltActions{reenter: true}, nil); sameOutcome(run, arb) {
		t.Errorf("KAI with re-entry alone agrees; want a difference")
	}
	if o := c.checkDecisions(cli, nil); o.Failure != "" || !slices.Equal(o.Rules, []string{ruleVictimlessPlacement}) {
		t.Errorf("outcome %+v; want rule %s", o, ruleVictimlessPlacement)
	}
	checkCaseFile(t, c, "kai-victimless-placement.json")
}
