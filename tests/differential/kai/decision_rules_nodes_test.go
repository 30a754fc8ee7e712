package main

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"arbiter.dev/tests/differential/internal/arbiterjson"
)

// byNodeVictimJobCluster is cases/kai-by-node-victim-job.json (spec question (h)): reclaim for
// j03 (2 GPUs on one node) draws the elastic j00 pod by pod, on n0 and n1.
func byNodeVictimJobCluster() *cluster {
	return &cluster{
		seed:        33,
		feat:        features{minRuntime: true},
		nodes:       []cnode{{name: "n0", gpus: 2, cpu: nodeMilliCPU}, {name: "n1", gpus: 2, cpu: nodeMilliCPU}},
		departments: []cqueue{{name: "d0", deserved: 3, priority: departmentPrio, reclaimMin: 60, preemptMin: 60}},
		queues: []cqueue{
			{name: "q0", parent: "d0", deserved: 2, weight: 3, priority: 100, preemptMin: 60},
			{name: "q1", parent: "d0", weight: 1, priority: 100, index: 1},
		},
		jobs: []cjob{
			{name: "j05", queue: "q0", gpus: 1, priority: 75, minAvailable: 1, age: 16, tasks: []ctask{{state: "Pending"}}},
			{name: "j03", queue: "q0", gpus: 2, priority: 75, minAvailable: 1, age: 10, tasks: []ctask{{state: "Pending"}}},
			{name: "j00", queue: "q1", gpus: 1, priority: 50, minAvailable: 1, age: 14, started: 30,
				tasks: []ctask{{"Running", "n1"}, {"Running", "n1"}, {"Running", "n0"}}},
		},
	}
}

// KAI leaves j03 pending where arbiter evicts j00's pods on n1, and the harness ties arbiter's
// victims to spec question (h).
func TestDecisionCaseByNodeVictimJob(t *testing.T) {
	c := byNodeVictimJobCluster()
	out, _, err := c.runKAI(false)
	if err != nil {
		t.Fatal(err)
	}
	want := outcome{"j05/j05-0": "bound@n0", "j03/j03-0": "pending", "j00/j00-0": "running", "j00/j00-1": "running", "j00/j00-2": "running"}
	if !sameOutcome(out, want) {
		t.Errorf("KAI: %v\nwant %v", out, want)
	}
	reclaim := func(preemptor string, pods ...string) arbiterjson.Attempt {
		return arbiterjson.Attempt{Action: "reclaim", PodGroup: preemptor, Pods: 1, Outcome: "placed", Evicted: pods}
	}
	if !c.victimsNotLastPods([]arbiterjson.Attempt{reclaim("j03", "j00-0", "j00-1")}) {
		t.Errorf("arbiter's victims j00-0 and j00-1 (j00-2 kept) are not tied to spec question (h)")
	}
	if c.victimsNotLastPods([]arbiterjson.Attempt{reclaim("j03", "j00-1", "j00-2")}) {
		t.Errorf("j00's last two pods, a victim set KAI can form, are tied to spec question (h)")
	}
	// Seed 1463's order: pods an earlier attempt took are left out, pods a later one takes are not.
	if c.victimsNotLastPods([]arbiterjson.Attempt{reclaim("j05", "j00-2"), reclaim("j03", "j00-0", "j00-1")}) {
		t.Errorf("j00-0 and j00-1, j00's last pods once j00-2 was taken before, are tied to spec question (h)")
	}
	if !c.victimsNotLastPods([]arbiterjson.Attempt{reclaim("j03", "j00-0", "j00-1"), reclaim("j05", "j00-2")}) {
		t.Errorf("j00-0 and j00-1, taken while j00-2 still ran, are not tied to spec question (h)")
	}
	// A victim restored on its own node counts as taken (seed 601 of every feature), but runs on:
	// a later attempt may take it as one of the group's last pods.
	restoring := func(preemptor string, restored ...string) arbiterjson.Attempt {
		a := reclaim(preemptor)
		a.Restored = restored
		return a
	}
	if !c.victimsNotLastPods([]arbiterjson.Attempt{restoring("j03", "j00-0")}) {
		t.Errorf("j00-0, taken and restored while j00-1 and j00-2 ran, is not tied to spec question (h)")
	}
	if c.victimsNotLastPods([]arbiterjson.Attempt{restoring("j03", "j00-2"), reclaim("j05", "j00-1", "j00-2")}) {
		t.Errorf("j00-2, restored, then taken again with j00-1 (the last two pods), is tied to spec question (h)")
	}
	// The real trace of the case: arbiter's answer takes j00-0 and j00-1 for j03.
	_, attempts, err := arbiterjson.ScheduleTrace(arbiterCLI(t), c.request())
	if err != nil {
		t.Fatal(err)
	}
	if !c.victimsNotLastPods(attempts) {
		t.Errorf("arbiter's trace %v is not tied to spec question (h)", attempts)
	}
	checkCaseFile(t, c, "kai-by-node-victim-job.json")
}

// feasibleNodesCluster is cases/kai-feasible-nodes.json (spec question (i)): preempt for j09
// (1 GPU) draws the elastic cpu-only j12 and the gang j00; n0 has no GPUs, n1 and n2 are full
// (j19 runs in another queue).
func feasibleNodesCluster() *cluster {
	running := func(nodes ...string) []ctask {
		var t []ctask
		for _, n := range nodes {
			t = append(t, ctask{"Running", n})
		}
		return t
	}
	return &cluster{
		seed: 136,
		feat: features{minRuntime: true},
		nodes: []cnode{
			{name: "n0", gpus: 0, cpu: nodeMilliCPU}, {name: "n1", gpus: 4, cpu: nodeMilliCPU}, {name: "n2", gpus: 1, cpu: nodeMilliCPU},
		},
		departments: []cqueue{
			{name: "d0", deserved: 4, priority: departmentPrio, reclaimMin: 10, preemptMin: 60},
			{name: "d1", deserved: 4, priority: departmentPrio, index: 1},
		},
		queues: []cqueue{
			{name: "q0", parent: "d0", deserved: 1, weight: 1, priority: 150, preemptMin: 60},
			{name: "q1", parent: "d1", deserved: 2, weight: 1, priority: 100, index: 1},
		},
		jobs: []cjob{
			{name: "j00", queue: "q0", gpus: 1, priority: 25, age: 35, started: 120, tasks: running("n2", "n1", "n1", "n1")},
			{name: "j19", queue: "q1", gpus: 1, priority: 25, minAvailable: 1, age: 37, started: 120, tasks: running("n1")},
			{name: "j12", queue: "q0", gpus: 0, priority: 25, minAvailable: 2, age: 44, started: 120, tasks: running("n1", "n1", "n1")},
			{name: "j09", queue: "q0", gpus: 1, priority: 100, minAvailable: 1, age: 30, tasks: []ctask{{state: "Pending"}}},
		},
	}
}

// KAI keeps j12-2 on n1 where arbiter moves it to n0, and KAI handing its solver every node
// gives arbiter's answer (rule kai-feasible-nodes).
func TestDecisionCaseFeasibleNodes(t *testing.T) {
	c := feasibleNodesCluster()
	out, _, err := c.runKAI(false)
	if err != nil {
		t.Fatal(err)
	}
	if out["j12/j12-2"] != "running" || out["j00/j00-0"] != "evicted:preempt" || out["j09/j09-0"] != "pipelined@n2" {
		t.Errorf("KAI: %v; want j12-2 running, j00 evicted, j09-0 pipelined on n2", out)
	}
	arb := outcome{}
	for k, v := range out {
		arb[k] = v
	}
	arb["j12/j12-2"] = "moved@n0"
	if names := c.explainEviction(arb, []outcome{out}); !onlyRule(names, ruleFeasibleNodes) {
		t.Errorf("rules %v; want [%s]", names, ruleFeasibleNodes)
	}
	arb["j12/j12-2"] = "moved@n2"
	if names := c.explainEviction(arb, []outcome{out}); len(names) != 0 {
		t.Errorf("a move no variant makes is explained by %v", names)
	}
	checkCaseFile(t, c, "kai-feasible-nodes.json")
}

// checkCaseFile checks that the kept case is the cluster's request
// (ARBITER_DIFFERENTIAL_WRITE_CASES=1 writes it).
func checkCaseFile(t *testing.T, c *cluster, name string) {
	t.Helper()
	body, err := arbiterjson.EncodeSchedule(c.request())
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("..", "cases", name)
	if os.Getenv("ARBITER_DIFFERENTIAL_WRITE_CASES") == "1" {
		if err := os.WriteFile(path, body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if kept, err := os.ReadFile(path); err != nil || string(kept) != string(body) {
		t.Errorf("%s is not the case's request (ARBITER_DIFFERENTIAL_WRITE_CASES=1 rewrites it): %v", path, err)
	}
}

// drawnVictimsCluster is cases/kai-validator-drawn-victims.json (spec question (j)): reclaim for
// j01 (q1, 2 GPUs) draws j06-2, then the gang of the elastic j06 (min-runtime protected), then
// the gang j03.
func drawnVictimsCluster() *cluster {
	on := func(nodes ...string) []ctask {
		var t []ctask
		for _, n := range nodes {
			if n == "" {
				t = append(t, ctask{state: "Pending"})
			} else {
				t = append(t, ctask{"Running", n})
			}
		}
		return t
	}
	return &cluster{
		seed: 83,
		feat: features{minRuntime: true},
		nodes: []cnode{
			{name: "n0", gpus: 2, cpu: nodeMilliCPU}, {name: "n1", gpus: 4, cpu: nodeMilliCPU},
			{name: "n3", gpus: 8, cpu: nodeMilliCPU}, {name: "n4", gpus: 8, cpu: nodeMilliCPU},
		},
		departments: []cqueue{
			{name: "d0", deserved: 9, limit: 4, priority: departmentPrio, reclaimMin: 10, preemptMin: 60},
			{name: "d1", deserved: 6, priority: departmentPrio, index: 1, reclaimMin: 10, preemptMin: 10},
		},
		queues: []cqueue{
			{name: "q0", parent: "d0", deserved: 1, weight: 1, priority: 100, reclaimMin: 10, preemptMin: 60},
			{name: "q1", parent: "d1", deserved: 11, weight: 1, priority: 100, index: 1, preemptMin: 60},
		},
		jobs: []cjob{
			{name: "j16", queue: "q1", gpus: 1, priority: 125, minAvailable: 1, age: 54, tasks: on("")},
			{name: "j03", queue: "q0", gpus: 2, priority: 75, age: 52, started: 120, tasks: on("n4", "n4")},
			{name: "j05", queue: "q1", gpus: 1, priority: 50, minAvailable: 2, age: 51, started: 5, tasks: on("n1", "n1", "n1")},
			{name: "j14", queue: "q0", gpus: 1, priority: 100, age: 12, started: 120, tasks: on("n0", "n0")},
			{name: "j01", queue: "q1", gpus: 1, priority: 25, age: 15, tasks: on("", "")},
			{name: "j09", queue: "q1", gpus: 1, priority: 50, age: 36, tasks: on("", "", "")},
			{name: "j06", queue: "q0", gpus: 1, priority: 50, minAvailable: 2, age: 17, started: 5, tasks: on("n3", "n3", "n3")},
			{name: "j12", queue: "q1", gpus: 1, priority: 25, age: 38, tasks: on("", "")},
			{name: "j00", queue: "q1", gpus: 1, priority: 25, minAvailable: 1, age: 6, started: 30, tasks: on("n4", "n4")},
			{name: "j10", queue: "q1", gpus: 1, priority: 50, minAvailable: 1, age: 37, started: 120, tasks: on("n1", "")},
		},
	}
}

// KAI leaves j01 pending where arbiter reclaims j03 and j06-2 for it, and KAI with validators
// that see the victims of the node tested gives arbiter's answer.
func TestDecisionCaseValidatorDrawnVictims(t *testing.T) {
	c := drawnVictimsCluster()
	cli := arbiterCLI(t)
	resp, err := arbiterjson.Schedule(cli, c.request())
	if err != nil {
		t.Fatal(err)
	}
	arb, err := c.arbiterOutcome(resp)
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := c.runKAI(false)
	if err != nil {
		t.Fatal(err)
	}
	if out["j01/j01-0"] != "pending" || out["j03/j03-0"] != "running" || arb["j03/j03-0"] != "evicted:reclaim" {
		t.Errorf("KAI %v\narbiter %v\nwant j01 pending and j03 running in KAI, j03 reclaimed by arbiter", out, arb)
	}
	if names := c.explainEviction(arb, []outcome{out}); !onlyRule(names, ruleValidatorDrawnVictims) {
		t.Errorf("rules %v; want [%s]", names, ruleValidatorDrawnVictims)
	}
	checkCaseFile(t, c, "kai-validator-drawn-victims.json")
}

// onlyRule: the rules hold want, and otherwise only rules of KAI's map order or of the other
// changes to its rebuilt eviction actions: KAI's node tests run in Go map order, so from one run
// to the next the plain rebuilt run may differ where the eager one, or one with a second change,
// agrees.
func onlyRule(names []string, want string) bool {
	allowed := []string{want, ruleLazyOrder, ruleEvictionOnce, ruleReplacementOrder, ruleFeasibleNodes, ruleValidatorDrawnVictims}
	return slices.Contains(names, want) && !slices.ContainsFunc(names, func(n string) bool { return !slices.Contains(allowed, n) })
}

// Spec question (h) in a quota form (seed 1975 of the eviction features): preempt for the gang
// j04 (q1, two pods of 2 GPUs) must bring q1 from 10 GPUs under its limit of 9. KAI's node tests
// take every drawn pod of j02 and j05, on four nodes, and pipeline j04; §4.8's tries take the
// drawn units on one node, never lift the limit, and j04 stays pending. KAI with its node tests
// held to §4.8's sets (ruleNodeVictimSets) gives arbiter's answer; re-entry alone does not.
func TestDecisionCaseNodeVictimSets(t *testing.T) {
	c, cli, arb, own := evictionFeatureCaseAndKAI(t, 1975)
	for _, pod := range []string{"j02/j02-0", "j02/j02-2", "j05/j05-0", "j05/j05-2"} {
		if own[pod] != "evicted:preempt" || arb[pod] != "running" {
			t.Errorf("%s: KAI %s, arbiter %s; want evicted:preempt and running", pod, own[pod], arb[pod])
		}
	}
	if arb["j04/j04-0"] != "pending" || own["j04/j04-0"] == "pending" {
		t.Errorf("j04-0: KAI %s, arbiter %s; want KAI placed, arbiter pending", own["j04/j04-0"], arb["j04/j04-0"])
	}
	checkRebuiltRuns(t, c, cli, arb, ruleNodeVictimSets, []rebuiltRun{
		{rebuiltActions{reenter: true}, false},
		{rebuiltActions{nodeVictimSets: true}, true},
	})
	checkCaseFile(t, c, "kai-node-victim-sets.json")
}

// Spec question (h) hidden by a restored victim (seed 601 of every feature): reclaim for j05 (q2,
// three pods of 1 GPU) tries n1 with the drawn units there, j08-0 and the gang j01, evicts j01
// and restores j08-0 on n1, so the answer names only j01, the group's last pods. j08-1 and j08-2,
// drawn before on n0, run on. KAI's test of n1 takes every drawn pod of j08 as well, and its
// fair-share check fails once q1 is at its share, so j05 stays pending. The trace names j08-0 as
// restored, and the signature ties the seed to (h).
func TestDecisionCaseByNodeRestoredVictim(t *testing.T) {
	c := generateCluster(601, allFeatures)
	cli := arbiterCLI(t)
	resp, attempts, err := arbiterjson.ScheduleTrace(cli, c.request())
	if err != nil {
		t.Fatal(err)
	}
	arb, err := c.arbiterOutcome(resp)
	if err != nil {
		t.Fatal(err)
	}
	own, _, err := c.runKAI(false)
	if err != nil {
		t.Fatal(err)
	}
	for _, pod := range []string{"j01/j01-0", "j01/j01-1", "j01/j01-2"} {
		if arb[pod] != "evicted:reclaim" || own[pod] != "running" {
			t.Errorf("%s: KAI %s, arbiter %s; want running and evicted:reclaim", pod, own[pod], arb[pod])
		}
	}
	if arb["j08/j08-0"] != "running" || own["j05/j05-0"] != "pending" {
		t.Errorf("j08-0 arbiter %s, j05-0 KAI %s; want running and pending", arb["j08/j08-0"], own["j05/j05-0"])
	}
	var restored []string
	for _, a := range attempts {
		if a.PodGroup == "j05" && a.Action == "reclaim" && len(a.Evicted) > 0 {
			restored = a.Restored
		}
	}
	if !slices.Equal(restored, []string{"j08-0"}) {
		t.Errorf("reclaim for j05 restored %v, want [j08-0]", restored)
	}
	if !c.victimsNotLastPods(attempts) {
		t.Errorf("arbiter's trace %v is not tied to spec question (h)", attempts)
	}
	checkCaseFile(t, c, "kai-by-node-restored-victim.json")
}
