package main

import (
	"github.com/NVIDIA/KAI-scheduler/pkg/scheduler/api/common_info"
	"github.com/NVIDIA/KAI-scheduler/pkg/scheduler/api/node_info"
	"github.com/NVIDIA/KAI-scheduler/pkg/scheduler/api/pod_info"
	"github.com/NVIDIA/KAI-scheduler/pkg/scheduler/api/pod_status"
	"github.com/NVIDIA/KAI-scheduler/pkg/scheduler/framework"
	"github.com/NVIDIA/KAI-scheduler/pkg/scheduler/plugins/scores"
)

// ruleOverdrawnIdle, spec question (m): SEMANTICS §4.1 lets a pod bound after evictions claim
// releasing capacity first and only the shortfall from idle, and §4.5 scores a node +100 only
// where the pod fits on idle capacity. KAI subtracts a pipelined pod's whole request from the
// node's releasing amount, which goes negative, and leaves idle as it was; its feasibility reads
// idle + releasing (right), but the nodeavailability plugin scores scores.Availability wherever
// the pod fits on idle alone (plugins/nodeavailability, NodeInfo.IsTaskAllocatable), so a node
// whose releasing capacity an earlier pipelining overdrew counts as "fits now" (seed 1057: n2 "has
// 2 idle GPUs and -2 releasing GPUs"). The cluster is scheduled once more by KAI with the
// shortfall of every pipelining tracked per node (an event handler of the session: what the
// pod took beyond the node's releasing amount when it was pipelined, given back when it is
// un-pipelined) and a node order added that takes nodeavailability's score back where the pod
// does not fit on idle less those shortfalls (SEMANTICS' idle; overdrawnIdle). arbiter's answer
// is accepted when it is that run's, with KAI's allocate or the eager one of kai-lazy-order.
const ruleOverdrawnIdle = "kai-overdrawn-idle"

// overdrawnIdle is SEMANTICS §4.1's idle capacity beside KAI's node accounting: per node, what
// pipelined pods took beyond the releasing amount they found.
type overdrawnIdle struct {
	byNode map[string][3]float64              // GPUs, millicpus, memory taken from idle
	byTask map[common_info.PodID]overdrawTake // each pipelined pod's part of it
}

type overdrawTake struct {
	node  string
	taken [3]float64
}

// installOverdrawnIdle tracks the session's pipelinings and adds the corrected score.
func installOverdrawnIdle(ssn *framework.Session) {
	o := &overdrawnIdle{byNode: map[string][3]float64{}, byTask: map[common_info.PodID]overdrawTake{}}
	ssn.AddEventHandler(&framework.EventHandler{
		AllocateFunc: func(e *framework.Event) {
			node := ssn.Nodes[e.Task.NodeName]
			if e.Task.Status != pod_status.Pipelined || node == nil {
				return
			}
			req := requestOf(e.Task)
			after := [3]float64{node.Releasing.GPUs(), node.Releasing.Cpu(), node.Releasing.Memory()}
			var take overdrawTake
			take.node = node.Name
			total := o.byNode[node.Name]
			for r := range req {
				found := max(0, after[r]+req[r]) // the releasing amount the pod found
				take.taken[r] = max(0, req[r]-found)
				total[r] += take.taken[r]
			}
			o.byNode[node.Name] = total
			o.byTask[e.Task.UID] = take
		},
		DeallocateFunc: func(e *framework.Event) {
			take, ok := o.byTask[e.Task.UID]
			if !ok {
				return
			}
			total := o.byNode[take.node]
			for r := range total {
				total[r] -= take.taken[r]
			}
			o.byNode[take.node] = total
			delete(o.byTask, e.Task.UID)
		},
	})
	ssn.AddNodeOrderFn(o.score)
}

// requestOf is a task's GPUs, millicpus and memory.
func requestOf(t *pod_info.PodInfo) [3]float64 {
	return [3]float64{t.ResReq.GetSumGPUs(), t.ResReq.Cpu(), t.ResReq.Memory()}
}

// score is -scores.Availability where nodeavailability scores the task as fitting on idle
// capacity and it does not fit on SEMANTICS' idle, else 0.
func (o *overdrawnIdle) score(task *pod_info.PodInfo, node *node_info.NodeInfo) (float64, error) {
	if !node.IsTaskAllocatable(task) {
		return 0, nil
	}
	req := requestOf(task)
	idle := [3]float64{node.Idle.GPUs(), node.Idle.Cpu(), node.Idle.Memory()}
	taken := o.byNode[node.Name]
	for r := range req {
		if req[r] > 0 && req[r] > idle[r]-taken[r] {
			return -scores.Availability, nil
		}
	}
	return 0, nil
}
