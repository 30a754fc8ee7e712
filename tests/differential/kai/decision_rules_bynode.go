package main

import (
	"strings"

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
// the attempts in order): a victim set KAI's solver cannot form. A pod re-placed on its own node
// is dropped from arbiter's answer, so such a pod can hide a victim set that was the group's
// last pods: the check is a signature of the class, as for (f).

// byNodeJobOutcome is the outcome of a seed left out by spec question (h).
var byNodeJobOutcome = verdict.Outcome{Failure: "arbiter took victim pods that KAI's by-node scenario cannot take alone"}

// victimsNotLastPods reports whether some attempt of arbiter's cycle (in order) evicted or moved
// pods of a group that are not that group's last RUNNING pods in pod order among those no
// earlier attempt took.
func (c *cluster) victimsNotLastPods(attempts []arbiterjson.Attempt) bool {
	gone := map[string]bool{} // pods evicted or moved by earlier attempts
	for _, a := range attempts {
		taken := map[string]bool{}
		groups := map[string]bool{}
		for _, pod := range append(append([]string{}, a.Evicted...), a.Moved...) {
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
		for pod := range taken {
			gone[pod] = true
		}
	}
	return false
}
