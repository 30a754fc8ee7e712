package main

import (
	"maps"
	"slices"
	"strings"

	"github.com/NVIDIA/KAI-scheduler/pkg/scheduler/actions/common/solvers/scenario"
	"github.com/NVIDIA/KAI-scheduler/pkg/scheduler/api"
	"github.com/NVIDIA/KAI-scheduler/pkg/scheduler/api/common_info"
	"github.com/NVIDIA/KAI-scheduler/pkg/scheduler/api/pod_info"
	"github.com/NVIDIA/KAI-scheduler/pkg/scheduler/api/pod_status"
	"github.com/NVIDIA/KAI-scheduler/pkg/scheduler/framework"

	"arbiter.dev/tests/differential/internal/arbiterjson"
	"arbiter.dev/tests/differential/internal/verdict"
)

// Spec question (h), KAI's per-node victim selection by job. SEMANTICS §4.8 tries, for each node
// n of a drawn unit, the drawn units that have a pod on n, so an elastic victim drawn one pod at
// a time may give a preemptor only the pods it has on n. KAI's by-node scenario keeps its
// potential victims per node as job ids (actions/common/solvers/scenario/by_node_scenario.go,
// addPotentialVictimTask and VictimsTasksFromNodes) and, for a node, takes every drawn pod of
// every job with a drawn pod there: on any node test, a victim job gives all its drawn pods,
// wherever they run. Units are drawn from a group's last RUNNING pod in pod order backwards
// (§4.7, and KAI's GetTasksToEvict), so the pods KAI takes from one group for one preemptor are
// always the group's last RUNNING pods; arbiter's may not be.
//
// Decided in code (victimsNotLastPods): a seed whose answers differ is left out when arbiter's
// answer takes, in one attempt, pods of a group that are not its last RUNNING pods at that
// attempt (the pods earlier attempts evicted or moved left out; arbiter schedule --trace gives
// the attempts in order): a victim set KAI's solver cannot form. A victim re-placed on its own
// node is dropped from arbiter's answer but named by the trace as restored, and counts as taken
// (seed 601 of every feature: reclaim for j05 takes j08-0 and j01 on n1, evicts j01 and restores
// j08-0, while j08-1 and j08-2, drawn before, run on n0; KAI's test of n1 takes all three of j08's
// pods and fails its fair-share check). The check is a signature of the class, as for (f).

// byNodeJobOutcome is the outcome of a seed left out by spec question (h).
var byNodeJobOutcome = verdict.Outcome{Failure: "arbiter took victim pods that KAI's by-node scenario cannot take alone"}

// victimsNotLastPods reports whether some attempt of arbiter's cycle (in order) took, as victims
// evicted, moved or restored, pods of a group that are not that group's last RUNNING pods in pod
// order among those no earlier attempt evicted or moved.
func (c *cluster) victimsNotLastPods(attempts []arbiterjson.Attempt) bool {
	gone := map[string]bool{} // pods evicted or moved by earlier attempts
	for _, a := range attempts {
		taken := map[string]bool{}
		groups := map[string]bool{}
		for _, pod := range slices.Concat(a.Evicted, a.Moved, a.Restored) {
			taken[pod] = true
			if i := strings.LastIndexByte(pod, '-'); i > 0 && c.job(pod[:i]) != nil {
				groups[pod[:i]] = true // podName: job-index
			}
		}
		for name := range groups {
			j := c.job(name)
			seen := false
			for t, task := range j.tasks {
				pod := podName(j.name, t)
				if task.state != "Running" || gone[pod] {
					continue
				}
				if taken[pod] {
					seen = true
				} else if seen {
					return true
				}
			}
		}
		for _, pod := range slices.Concat(a.Evicted, a.Moved) {
			gone[pod] = true // a restored pod runs on
		}
	}
	return false
}

// ruleNodeVictimSets, spec question (h) as a check: the cluster is scheduled once more by KAI with
// the rebuilt reclaim and preempt of kai-eviction-once, their validators also rejecting every
// scenario whose node test evicted a victim set that SEMANTICS §4.8 never tries
// (nodeVictimSetCheck): the drawn units with a pod on the node tested, a node of the unit drawn
// last. KAI cannot try §4.8's smaller set in their place (that would need its scenario rebuilt),
// so the check only decides seeds where every such set fails in arbiter too (seed 1975: preempt
// for the gang j04 frees enough of q1's GPU limit only with every drawn pod of j02 and j05, on
// four nodes). arbiter's answer is accepted when it is that run's, alone or with up to two of
// the other changes (evictionVariants).
const ruleNodeVictimSets = "kai-node-victim-sets"

// nodeVictimSetCheck returns fn, or, with on, fn and the check of ruleNodeVictimSets: the
// scenario's node test evicted (or re-placed) exactly the victims §4.8 tries on one node of the
// unit drawn last, besides the recorded ones. KAI's test of node n evicts every drawn unit of
// every job with a drawn pod on n (ByNodeScenario.VictimsTasksFromNodes) and tests the nodes of
// every pod of the last drawn unit's job (by_pod_solver.go, getNodesOfJob).
func nodeVictimSetCheck(ssn *framework.Session, on bool, fn func(api.ScenarioInfo) bool) func(api.ScenarioInfo) bool {
	if !on {
		return fn
	}
	return func(s api.ScenarioInfo) bool {
		if !fn(s) {
			return false
		}
		bns, ok := s.(*scenario.ByNodeScenario)
		if !ok || len(bns.PotentialVictimsTasks()) == 0 {
			return true // recorded victims only: §4.8 tries R alone too
		}
		return testedSetIsSpecs(ssn, bns)
	}
}

// testedSetIsSpecs reports whether the victims the scenario's node test evicted or re-placed,
// recorded ones left out, are §4.8's set on some node of the unit drawn last.
func testedSetIsSpecs(ssn *framework.Session, bns *scenario.ByNodeScenario) bool {
	recorded := map[common_info.PodID]bool{}
	for _, t := range bns.RecordedVictimsTasks() {
		recorded[t.UID] = true
	}
	status := func(t *pod_info.PodInfo) pod_status.PodStatus {
		if job := ssn.PodGroupInfos[t.Job]; job != nil {
			if now := job.GetAllPodsMap()[t.UID]; now != nil {
				return now.Status
			}
		}
		return t.Status
	}
	// The drawn units, in draw order, and the tested set: the drawn pods the test evicted or
	// re-placed (Releasing or Pipelined; the pods of other drawn units stay Running).
	var units [][]*pod_info.PodInfo
	tested := map[common_info.PodID]bool{}
	seen := map[common_info.PodID]bool{}
	for _, t := range bns.PotentialVictimsTasks() {
		if recorded[t.UID] {
			continue
		}
		if st := status(t); st == pod_status.Releasing || st == pod_status.Pipelined {
			tested[t.UID] = true
		}
		if seen[t.UID] {
			continue
		}
		unit := bns.GetVictimJobRepresentativeById(t)
		if unit == nil {
			continue
		}
		var pods []*pod_info.PodInfo
		for _, p := range unit.GetAllPodsMap() {
			seen[p.UID] = true
			if !recorded[p.UID] {
				pods = append(pods, p)
			}
		}
		units = append(units, pods)
	}
	if len(units) == 0 {
		return true
	}
	// §4.8's set on node n: the drawn units with a pod on n.
	for _, node := range unitNodes(units[len(units)-1]) {
		spec := map[common_info.PodID]bool{}
		for _, unit := range units {
			if slices.Contains(unitNodes(unit), node) {
				for _, p := range unit {
					spec[p.UID] = true
				}
			}
		}
		if maps.Equal(spec, tested) {
			return true
		}
	}
	return false
}

// unitNodes lists the nodes of a unit's pods.
func unitNodes(unit []*pod_info.PodInfo) []string {
	var nodes []string
	for _, p := range unit {
		if !slices.Contains(nodes, p.NodeName) {
			nodes = append(nodes, p.NodeName)
		}
	}
	return nodes
}
