package main

import (
	"maps"
	"slices"

	"github.com/NVIDIA/KAI-scheduler/pkg/scheduler/actions/common"
	"github.com/NVIDIA/KAI-scheduler/pkg/scheduler/actions/common/solvers"
	"github.com/NVIDIA/KAI-scheduler/pkg/scheduler/actions/utils"
	"github.com/NVIDIA/KAI-scheduler/pkg/scheduler/api"
	"github.com/NVIDIA/KAI-scheduler/pkg/scheduler/api/common_info"
	"github.com/NVIDIA/KAI-scheduler/pkg/scheduler/api/node_info"
	"github.com/NVIDIA/KAI-scheduler/pkg/scheduler/api/pod_info"
	"github.com/NVIDIA/KAI-scheduler/pkg/scheduler/api/pod_status"
	"github.com/NVIDIA/KAI-scheduler/pkg/scheduler/api/podgroup_info"
	"github.com/NVIDIA/KAI-scheduler/pkg/scheduler/framework"
)

// ruleFeasibleNodes, spec question (i): SEMANTICS §4.8 places the preemptor and re-places the
// victims of a scenario on every feasible node (§4.5). KAI's consolidation, reclaim and preempt
// hand their solver the nodes of common.FeasibleNodesForJob (actions/common/feasible_nodes.go):
// when every pod of the preemptor asks for GPUs, only the nodes that had idle or releasing GPUs
// when the attempt began; the solver adds the nodes of the victims it tests
// (by_pod_solver.go, updateFeasibleNodes). A victim that would move to a node without free GPUs
// (a cpu-only pod to a GPU-less node, seed 136) is re-placed on its own node or evicted instead.
// The cluster is scheduled once more by KAI with the three actions rebuilt around KAI's own
// calls, handing the solver every node of the session (solverNodes,
// the rebuilt consolidation, and the rebuilt reclaim and preempt of kai-eviction-once); arbiter's
// answer is accepted when it is that run's.
const ruleFeasibleNodes = "kai-feasible-nodes"

// solverNodes are the nodes an eviction action hands its solver: KAI's feasible nodes for the
// job, or, for rule kai-feasible-nodes, every node of the session.
func solverNodes(ssn *framework.Session, job *podgroup_info.PodGroupInfo, allNodes bool) []*node_info.NodeInfo {
	nodes := slices.Collect(maps.Values(ssn.Nodes))
	if allNodes {
		return nodes
	}
	return common.FeasibleNodesForJob(nodes, job)
}

// consolidate is KAI's consolidation action (consolidation.go, Execute and
// attemptToConsolidatePreemptor) as the rules change it: every node handed to the solver
// (kai-feasible-nodes), no job placed in the cycle drawn as a victim (kai-bound-not-victim), and
// the victim queue ordered as SEMANTICS §4.7 orders victims (kai-victim-queue-order: the queue is
// registered as the one drawn from, which the spec's order reads only when the rule installed it),
// and the first parts of a unit placed without victims where they fit so
// (kai-victimless-first-parts).
// Everything else is KAI's: the order of the candidates, the GPU check before an attempt, the
// victim queue, the solver and the commit. The validator and the victim filter are those of
// consolidation.go (allPodsReallocated, buildPreemptibleFilterFunc; unexported there), with no
// limit on the number of victims (KAI's test sessions set none).
func (c *cluster) consolidate(ssn *framework.Session, r rebuiltActions) {
	if ssn.GetMaxNumberConsolidationPreemptees() == 0 {
		return
	}
	order := utils.NewJobsOrderByQueues(ssn, utils.JobsOrderInitOptions{
		FilterNonPending: true, FilterUnready: true, FilterNonPreemptible: true,
		MaxJobsQueueDepth: ssn.GetJobsDepth(framework.Consolidation),
	})
	order.InitializeWithJobs(ssn.PodGroupInfos)
	failed := common.NewMinimalJobRepresentatives()
	for !order.IsEmpty() {
		job := order.PopNextJob()
		if ssn.UseSchedulingSignatures() {
			if easier, _ := failed.IsEasierToSchedule(job); !easier {
				continue
			}
		}
		if !utils.IsEnoughGPUsAllocatableForJob(job, ssn, false) {
			failed.UpdateRepresentative(job)
			continue
		}
		solver := solvers.NewJobsSolver(solverNodes(ssn, job, r.allNodes), everyVictimReplaced, func() *utils.JobsOrderByQueues {
			return c.drawingFromBuilt(ssn, func() *utils.JobsOrderByQueues {
				return utils.GetVictimsQueue(ssn, func(v *podgroup_info.PodGroupInfo) bool {
					return v.IsPreemptibleJob() && v.UID != job.UID && v.GetActiveAllocatedTasksCount() > 0 &&
						!(r.boundNotVictims && c.placedInCycle(v))
				})
			})
		}, framework.Consolidation)
		ok, stmt := solveAfterVictimlessParts(ssn, job, r.victimlessParts, solver)
		if !ok {
			failed.UpdateRepresentative(job)
			continue
		}
		_ = stmt.Commit()
	}
}

// everyVictimReplaced is consolidation's validator: no victim pod is left releasing.
func everyVictimReplaced(scenario api.ScenarioInfo) bool {
	for _, victim := range scenario.GetVictims() {
		for _, task := range victim.Tasks {
			if task.Status == pod_status.Releasing {
				return false
			}
		}
	}
	return true
}

// ruleValidatorDrawnVictims, spec question (j): SEMANTICS §4.8 validates a try with its own
// victims (validate(evicted, moved)). KAI's solver hands its validators the whole scenario
// (by_pod_solver.go, handleScenarioSolution), whose GetVictims (scenario/base_scenario.go) holds
// every victim drawn so far, not only those of the node tested: once a min-runtime-protected
// elastic group's gang is drawn (minruntime.go, validVictimForMinAvailable), or once the drawn
// victims of a queue exceed what the proportion check allows, every later scenario of the
// attempt fails, also where the node tested evicts none of them (seed 83). The cluster is
// scheduled once more by KAI with the reclaim and preempt of kai-eviction-once, their validators
// given only the victims the node test evicted or moved (releasing or pipelined in the
// simulation); arbiter's answer is accepted when it is that run's.
const ruleValidatorDrawnVictims = "kai-validator-drawn-victims"

// validator returns KAI's scenario validator, or, for rule kai-validator-drawn-victims, the
// same validator given the victims of the node tested only.
func validator(fn func(api.ScenarioInfo) bool, testedOnly bool) func(api.ScenarioInfo) bool {
	if !testedOnly {
		return fn
	}
	return func(s api.ScenarioInfo) bool { return fn(testedVictims{s}) }
}

// testedVictims is a scenario whose victims are the pods its simulation evicted or moved.
type testedVictims struct{ api.ScenarioInfo }

func (t testedVictims) GetVictims() map[common_info.PodGroupID]*api.VictimInfo {
	out := map[common_info.PodGroupID]*api.VictimInfo{}
	for id, v := range t.ScenarioInfo.GetVictims() {
		var tasks []*pod_info.PodInfo
		for _, task := range v.Tasks {
			if task.Status == pod_status.Releasing || task.Status == pod_status.Pipelined {
				tasks = append(tasks, task)
			}
		}
		if len(tasks) > 0 {
			out[id] = &api.VictimInfo{Job: v.Job, Tasks: tasks}
		}
	}
	return out
}
