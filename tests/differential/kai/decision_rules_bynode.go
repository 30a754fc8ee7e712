package main

import (
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
// answer takes, for one preemptor, pods of a group that are not its last RUNNING pods (among the
// pods no other preemptor took): a victim set KAI's solver cannot form. A pod re-placed on its
// own node is dropped from arbiter's answer, so such a pod can hide a victim set that was the
// group's last pods: the check is a signature of the class, as for (f).

// byNodeJobOutcome is the outcome of a seed left out by spec question (h).
var byNodeJobOutcome = verdict.Outcome{Failure: "arbiter took victim pods that KAI's by-node scenario cannot take alone"}

// victimsNotLastPods reports whether, for some preemptor, arbiter's evictions and moves take pods
// of a group that are not that group's last RUNNING pods in pod order, leaving out the pods
// other preemptors took.
func (c *cluster) victimsNotLastPods(resp *arbiterjson.ScheduleResponse) bool {
	type pair struct{ preemptor, group string }
	taken := map[pair]map[string]bool{}
	takenBy := map[string]string{}
	for _, e := range resp.Evictions {
		key := pair{e.PreemptorPodGroup, e.PodGroup}
		if taken[key] == nil {
			taken[key] = map[string]bool{}
		}
		taken[key][e.Pod] = true
		takenBy[e.Pod] = e.PreemptorPodGroup
	}
	for key, pods := range taken {
		j := c.job(key.group)
		if j == nil {
			continue
		}
		seen := false
		for t, task := range j.tasks {
			name := podName(j.name, t)
			if task.state != "Running" || (takenBy[name] != "" && takenBy[name] != key.preemptor) {
				continue
			}
			if pods[name] {
				seen = true
			} else if seen {
				return true
			}
		}
	}
	return false
}
