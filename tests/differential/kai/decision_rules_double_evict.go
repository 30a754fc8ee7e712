package main

import (
	"reflect"
	"runtime"
	"slices"
	"strings"
	"unsafe"

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

// deallocations holds, per pod a session event touched, what the proportion plugin's queue
// allocation counts of it: 1 for a pod allocated when its first event came (a deallocation:
// KAI deallocates only what it counts), 0 for one that was not (an allocation), plus every
// allocation and less every deallocation since. Rollbacks call the handlers too (an undone
// eviction allocates, whatever status it restores), so the count follows every statement.
type deallocations map[common_info.PodID]int

// add counts one event of pod, +1 for an allocation, -1 for a deallocation, and returns the
// pod's count before and after it.
func (d deallocations) add(pod common_info.PodID, delta int) (before, after int) {
	before, seen := d[pod]
	if !seen && delta < 0 {
		before = 1
	}
	d[pod] = before + delta
	return before, before + delta
}

// installDeallocationCount adds an event handler counting into d.
func installDeallocationCount(ssn *framework.Session, d deallocations) {
	ssn.AddEventHandler(&framework.EventHandler{
		DeallocateFunc: func(e *framework.Event) { d.add(e.Task.UID, -1) },
		AllocateFunc:   func(e *framework.Event) { d.add(e.Task.UID, +1) },
	})
}

// lowered names the pods whose queue counts less than nothing of them: deallocated more often
// than allocated, beyond the allocation they started with.
func (d deallocations) lowered() []common_info.PodID {
	var pods []common_info.PodID
	for pod, n := range d {
		if n < 0 {
			pods = append(pods, pod)
		}
	}
	slices.Sort(pods)
	return pods
}

// evictsTwice reports whether some pod's evictions lowered its queue's allocation twice or more.
func (d deallocations) evictsTwice() bool { return len(d.lowered()) > 0 }

// ruleEvictsTwice: spec question (o) in the rebuilt runs. Every rebuilt eviction action
// (decision_rules_evict.go) runs with the proportion plugin's event handlers held to what SEMANTICS
// counts, a queue allocation made of its pods: each pod counts between zero and once, whatever
// KAI's node tests evict a second time (installEvictedOnce). An agreement of a rebuilt run in
// which the hold changed the plugin's count, and which without the hold does not agree, is
// reported with this rule too (seed 406 of the
// eviction features: reclaim for the gang j10 records j03-3 and j03-2, its third part's test of
// n0 evicts them again, q0 drops to 2 GPUs against its 4 pods', and j03 is then ordered before
// j10 and re-placed, where for SEMANTICS q0 holds 4 and j10 is placed first).
const ruleEvictsTwice = "kai-evicts-twice"

// installEvictedOnce wraps the proportion plugin's allocate and deallocate handlers so that the
// plugin sees each pod counted at most once and never below zero: the handlers are called only
// when that clamped count changes. held, when not nil, is set when a call was held back.
func installEvictedOnce(ssn *framework.Session, held *bool) {
	handlers := *(*[]*framework.EventHandler)(unsafe.Pointer(reflect.ValueOf(ssn).Elem().FieldByName("eventHandlers").UnsafeAddr()))
	counts := deallocations{}
	clamp := func(n int) int { return max(0, min(1, n)) }
	found := false
	for _, eh := range handlers {
		if eh.AllocateFunc == nil || !strings.Contains(runtime.FuncForPC(reflect.ValueOf(eh.AllocateFunc).Pointer()).Name(), "/plugins/proportion.") {
			continue
		}
		allocate, deallocate := eh.AllocateFunc, eh.DeallocateFunc
		step := func(e *framework.Event, delta int) {
			switch before, after := counts.add(e.Task.UID, delta); {
			case clamp(after) > clamp(before):
				allocate(e)
			case clamp(after) < clamp(before):
				deallocate(e)
			case held != nil:
				*held = true
			}
		}
		eh.AllocateFunc = func(e *framework.Event) { step(e, +1) }
		eh.DeallocateFunc = func(e *framework.Event) { step(e, -1) }
		found = true
	}
	if !found {
		panic("installEvictedOnce: no event handler of the proportion plugin in the session")
	}
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
