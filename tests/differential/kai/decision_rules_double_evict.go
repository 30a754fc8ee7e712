package main

import (
	"github.com/NVIDIA/KAI-scheduler/pkg/scheduler/api/common_info"
	"github.com/NVIDIA/KAI-scheduler/pkg/scheduler/api/pod_status"
	"github.com/NVIDIA/KAI-scheduler/pkg/scheduler/framework"

	"arbiter.dev/tests/differential/internal/verdict"
)

// Spec question (o), KAI's node test evicts recorded victims a second time. KAI's by-node
// scenario keeps the recorded victims' units among its jobs' units
// (scenario/base_scenario.go, appendTasksAsVictimJob), so a later part's test of a node where a
// recorded victim's job has a drawn pod takes the recorded pods again
// (ByNodeScenario.VictimsTasksFromNodes) and evicts them once more after the solver evicted the
// recorded victims (by_pod_solver.go, EvictAllPreemptees twice). Each eviction calls the
// proportion plugin's deallocate handler, so the victims' queue loses their allocation twice,
// and a committed scenario keeps the queue that much below its pods (seed 1759 of the eviction
// features: reclaim for j16 records j00-3 and j00-2, its third part's test of n2 evicts them again,
// and q1's allocation drops from 11 GPUs to 5 for four pods of one GPU; KAI's reclaim then
// pipelines j07-2 in q1 within its limit of 7, where for SEMANTICS §4.4 q1 holds 7 and j07
// stays pending). SEMANTICS counts a queue's allocation from its pods. Decided in code
// (observeKAI, deallocations.evictsTwice): a seed whose answers differ is left out when KAI's cycle, run once more with
// its deallocations counted per pod, ends with a pod deallocated more often than re-allocated by
// two or more: a queue allocation no cluster state gives.
var doubleEvictionOutcome = verdict.Outcome{Failure: "KAI evicted a victim twice and lowered its queue twice"}

// deallocations counts, per pod, the deallocations of a session's evictions net of the
// allocations that undo or re-place them.
type deallocations map[common_info.PodID]int

// installDeallocationCount adds an event handler counting into d.
func installDeallocationCount(ssn *framework.Session, d deallocations) {
	ssn.AddEventHandler(&framework.EventHandler{
		DeallocateFunc: func(e *framework.Event) {
			if e.Task.Status == pod_status.Releasing {
				d[e.Task.UID]++
			}
		},
		AllocateFunc: func(e *framework.Event) {
			if d[e.Task.UID] > 0 && e.Task.Status != pod_status.Releasing {
				d[e.Task.UID]--
			}
		},
	})
}

// evictsTwice reports whether some pod's evictions lowered its queue's allocation twice or more.
func (d deallocations) evictsTwice() bool {
	for _, n := range d {
		if n >= 2 {
			return true
		}
	}
	return false
}

// placedThenTaken records, per pod PENDING in the snapshot, the node it was on when a statement
// of KAI's evicted it (placed earlier in the cycle), until an allocation on that node undoes the
// eviction: a pod still recorded when the cycle ends was moved or evicted by a committed
// statement after KAI placed it in the same cycle, also within one action (spec question (a); seed
// 1818: reclaim pipelines j05 on n5, n6 and n1 for itself, then moves all three for j04 in the
// same action, which reading the pods after every action does not see).
type placedThenTaken map[common_info.PodID]string

// installPlacedThenTaken adds the event handler that fills p; pending names the snapshot's
// PENDING pods.
func installPlacedThenTaken(ssn *framework.Session, p placedThenTaken, pending map[common_info.PodID]bool) {
	ssn.AddEventHandler(&framework.EventHandler{
		DeallocateFunc: func(e *framework.Event) {
			if pending[e.Task.UID] && e.Task.Status == pod_status.Releasing {
				p[e.Task.UID] = e.Task.NodeName
			}
		},
		AllocateFunc: func(e *framework.Event) {
			if node, ok := p[e.Task.UID]; ok && e.Task.Status != pod_status.Releasing && e.Task.NodeName == node {
				delete(p, e.Task.UID)
			}
		},
	})
}

// kaiObservation is what the event handlers saw of one KAI cycle on the cluster: the
// deallocations per pod (spec question (o)) and the pods placed then taken (spec question (a)).
type kaiObservation struct {
	deallocated deallocations
	placedTaken placedThenTaken
}

// observeKAI runs KAI's own cycle on the cluster once with both event handlers installed; nil
// when the run fails.
func (c *cluster) observeKAI() *kaiObservation {
	v := c.clone()
	v.observed = &kaiObservation{deallocations{}, placedThenTaken{}}
	if _, _, err := v.runKAI(false); err != nil {
		return nil
	}
	return v.observed
}
