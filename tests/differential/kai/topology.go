package main

import (
	"fmt"
	"maps"
	"runtime/debug"
	"slices"
	"sync"

	"go.uber.org/mock/gomock"

	enginev2alpha2 "github.com/NVIDIA/KAI-scheduler/pkg/apis/scheduling/v2alpha2"
	"github.com/NVIDIA/KAI-scheduler/pkg/scheduler/actions/allocate"
	"github.com/NVIDIA/KAI-scheduler/pkg/scheduler/actions/common"
	"github.com/NVIDIA/KAI-scheduler/pkg/scheduler/actions/consolidation"
	"github.com/NVIDIA/KAI-scheduler/pkg/scheduler/actions/preempt"
	"github.com/NVIDIA/KAI-scheduler/pkg/scheduler/actions/reclaim"
	"github.com/NVIDIA/KAI-scheduler/pkg/scheduler/actions/utils"
	"github.com/NVIDIA/KAI-scheduler/pkg/scheduler/api/common_info"
	"github.com/NVIDIA/KAI-scheduler/pkg/scheduler/api/pod_status"
	"github.com/NVIDIA/KAI-scheduler/pkg/scheduler/api/podgroup_info"
	"github.com/NVIDIA/KAI-scheduler/pkg/scheduler/framework"
	"github.com/NVIDIA/KAI-scheduler/pkg/scheduler/test_utils"
	"github.com/NVIDIA/KAI-scheduler/pkg/scheduler/test_utils/jobs_fake"
	"github.com/NVIDIA/KAI-scheduler/pkg/scheduler/test_utils/nodes_fake"
	"github.com/NVIDIA/KAI-scheduler/pkg/scheduler/test_utils/tasks_fake"
)

// KAI's side of the decision comparison: the cluster as a test_utils.TestTopologyBasic, a
// session built from it by test_utils.BuildSession (KAI's default plugins and configuration,
// binding and eviction mocked), and KAI's default actions run on it in the order of its default
// scheduler configuration (conf_util: "allocate, consolidation, reclaim, preempt,
// stalegangeviction"). stalegangeviction is not run: arbiter does not model it (SEMANTICS
// §4.12), and no generated job is stale (test_utils marks a job stale only when asked to).

// kaiActions are the actions, with the names the outcomes use.
var kaiActions = []struct {
	name string
	make func() framework.Action
}{
	{"allocate", func() framework.Action { return allocate.New() }},
	{"consolidation", func() framework.Action { return consolidation.New() }},
	{"reclaim", func() framework.Action { return reclaim.New() }},
	{"preempt", func() framework.Action { return preempt.New() }},
}

// topology writes the cluster as KAI's test topology.
func (c *cluster) topology() test_utils.TestTopologyBasic {
	topo := test_utils.TestTopologyBasic{
		Name:  fmt.Sprintf("seed %d", c.seed),
		Nodes: map[string]nodes_fake.TestNodeBasic{},
		Mocks: &test_utils.TestMock{CacheRequirements: &test_utils.CacheMocking{
			NumberOfCacheBinds: 1 << 20, NumberOfCacheEvictions: 1 << 20, NumberOfPipelineActions: 1 << 20,
		}},
	}
	for _, n := range c.nodes {
		topo.Nodes[n.name] = nodes_fake.TestNodeBasic{
			GPUs:      n.gpus,
			CPUMillis: n.cpu / 1000, // a quantity in cpus, despite the field's name
			Labels:    map[string]string{poolLabel: n.label()},
		}
	}
	// Departments and queues go in creation order: test_utils creates the i-th one i minutes
	// after the first.
	for _, d := range c.departments {
		topo.Departments = append(topo.Departments, test_utils.TestDepartmentBasic{
			Name: d.name, DeservedGPUs: d.deserved, MaxAllowedGPUs: d.limit,
		})
	}
	for _, q := range c.queues {
		prio := q.priority
		topo.Queues = append(topo.Queues, test_utils.TestQueueBasic{
			Name: q.name, ParentQueue: q.parent, DeservedGPUs: q.deserved, MaxAllowedGPUs: q.limit,
			GPUOverQuotaWeight: q.weight, Priority: &prio,
		})
	}
	for _, j := range c.jobs {
		tj := &jobs_fake.TestJobBasic{
			Name:                j.name,
			Namespace:           "default",
			QueueName:           j.queue,
			RequiredGPUsPerTask: j.gpus,
			RequiredCPUsPerTask: j.cpu / 1000,
			Priority:            j.priority,
			Preemptibility:      enginev2alpha2.Preemptibility(""),
			JobAgeInMinutes:     j.age,
		}
		if j.minAvailable > 0 {
			tj.RootSubGroupSet = jobs_fake.DefaultSubGroup(int32(j.minAvailable))
		}
		for _, t := range j.tasks {
			tt := &tasks_fake.TestTaskBasic{NodeName: t.node}
			switch t.state {
			case "Running":
				tt.State = pod_status.Running
			case "Releasing":
				tt.State = pod_status.Releasing
			default:
				tt.State = pod_status.Pending
			}
			if j.pool != "" {
				tt.NodeAffinityNames = []string{j.pool}
			}
			tj.Tasks = append(tj.Tasks, tt)
		}
		topo.Jobs = append(topo.Jobs, tj)
	}
	return topo
}

// podOutcome is where one pod ends a scheduling cycle, in a form both sides can be written in:
//
//	running             RUNNING before and after (also: moved back onto its own node)
//	releasing           RELEASING before and after
//	pending             PENDING before and after
//	bound@n             bound to n now
//	pipelined@n         bound to n once the pods releasing there are gone
//	moved@n             a RUNNING pod evicted and re-placed on n (consolidation), pipelined
//	evicted:<action>    a RUNNING pod evicted by reclaim or preempt
type podOutcome string

// outcome maps "job/pod" to the pod's outcome.
type outcome map[string]podOutcome

// failReporter turns a gomock failure into a panic the caller recovers from.
type failReporter struct{}

func (failReporter) Errorf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }
func (failReporter) Fatalf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }

var initKAI sync.Once

// eagerAllocate is KAI's allocate action with its job order re-evaluated before every attempt,
// as SEMANTICS §4.3 specifies: KAI's own action keeps its queues in heaps and re-sorts only the
// top entry (utils.JobsOrderByQueues), so a department or queue can be compared on a job or an
// allocation that is no longer current. Each attempt here builds a fresh order of the jobs not
// yet failed (KAI's own order functions and filters) and takes its first job; the attempt itself
// is KAI's (common.AllocateJob, pipelining of the whole job, commit or discard), written again
// around those calls. Used only by rule kai-lazy-order.
func eagerAllocate(ssn *framework.Session) {
	failed := map[common_info.PodGroupID]bool{}
	for {
		candidates := map[common_info.PodGroupID]*podgroup_info.PodGroupInfo{}
		for id, job := range ssn.PodGroupInfos {
			if !failed[id] {
				candidates[id] = job
			}
		}
		order := utils.NewJobsOrderByQueues(ssn, utils.JobsOrderInitOptions{
			FilterNonPending: true, FilterUnready: true, MaxJobsQueueDepth: ssn.GetJobsDepth(framework.Allocate),
		})
		order.InitializeWithJobs(candidates)
		if order.IsEmpty() {
			return
		}
		job := order.PopNextJob()
		if job == nil {
			return
		}
		stmt := ssn.Statement()
		ok := common.AllocateJob(ssn, stmt, slices.Collect(maps.Values(ssn.Nodes)), job, false)
		if ok && job.ShouldPipelineJob() {
			ok = stmt.ConvertAllAllocatedToPipelined(job.UID) == nil
		}
		if !ok {
			stmt.Discard()
			failed[job.UID] = true
			continue
		}
		if stmt.Commit() != nil || !podgroup_info.HasTasksToAllocate(job, true) {
			failed[job.UID] = true // done: not a candidate any more
		}
	}
}

// runKAI builds a session from the cluster and runs KAI's actions on it, returning each pod's
// outcome. With eager, allocate re-sorts before every attempt (eagerAllocate). boundThenTaken
// names the pods that one action bound or pipelined and a later action of the same cycle moved
// or evicted (SEMANTICS §4.1 never takes such a pod; see ruleBoundThenTaken).
func (c *cluster) runKAI(eager bool) (out outcome, boundThenTaken []string, err error) {
	initKAI.Do(test_utils.InitTestingInfrastructure)
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("KAI panicked: %v\n%s", r, debug.Stack())
		}
	}()
	controller := gomock.NewController(failReporter{})
	ssn := test_utils.BuildSession(c.topology(), controller)
	c.applyTaints(ssn)
	c.minRuntimesToSession(ssn)
	c.victimOrder = nil
	if c.rebuilt.specVictimOrder {
		c.installSpecVictimOrder(ssn)
	}
	if c.rebuilt.wholeVictims {
		c.installWholeVictimReplacement(ssn)
	}
	if c.overdrawnIdle {
		installOverdrawnIdle(ssn)
	}
	if c.rebuilt != (rebuiltActions{}) && !c.evictedTwice {
		installEvictedOnce(ssn, c.heldEvictions)
	}
	if c.observed != nil {
		installDeallocationCount(ssn, c.observed.deallocated)
		pending := map[common_info.PodID]bool{}
		for _, j := range c.jobs {
			for i, t := range j.tasks {
				if t.state == "Pending" {
					pending[common_info.PodID(podName(j.name, i))] = true
				}
			}
		}
		installPlacedThenTaken(ssn, c.observed.placedTaken, pending)
	}
	type state struct {
		status pod_status.PodStatus
		node   string
	}
	read := func() map[string]state {
		m := map[string]state{}
		for _, j := range c.jobs {
			job := ssn.PodGroupInfos[common_info.PodGroupID(j.name)]
			if job == nil {
				continue
			}
			for id, task := range job.GetAllPodsMap() {
				m[j.name+"/"+string(id)] = state{task.Status, task.NodeName}
			}
		}
		return m
	}
	before := read()
	evictedBy := map[string]string{}
	placedNow := map[string]state{}
	for _, a := range kaiActions {
		if eager && a.name == "allocate" {
			eagerAllocate(ssn)
		} else if !c.runEvictionAction(ssn, a.name) {
			a.make().Execute(ssn)
		}
		for key, s := range read() {
			if _, seen := evictedBy[key]; !seen && before[key].status == pod_status.Running && s.status == pod_status.Releasing {
				evictedBy[key] = a.name
			}
			if p, ok := placedNow[key]; ok && p != s && !slices.Contains(boundThenTaken, key) {
				boundThenTaken = append(boundThenTaken, key)
			}
			// A RUNNING pod releasing on another node was moved, then evicted: within one action
			// (seed 208: reclaim moves j03-0 for j02, then evicts it for j00), which reading after
			// every action does not see otherwise.
			if b := before[key]; b.status == pod_status.Running && s.status == pod_status.Releasing && s.node != b.node &&
				!slices.Contains(boundThenTaken, key) {
				boundThenTaken = append(boundThenTaken, key)
			}
			if _, ok := placedNow[key]; !ok && before[key].status == pod_status.Pending &&
				(s.status == pod_status.Binding || s.status == pod_status.Pipelined) {
				placedNow[key] = s
			}
		}
	}
	out = outcome{}
	for key, s := range read() {
		b := before[key]
		switch {
		case s.status == b.status && s.node == b.node &&
			(s.status == pod_status.Running || s.status == pod_status.Releasing || s.status == pod_status.Pending):
			out[key] = podOutcome(map[pod_status.PodStatus]string{
				pod_status.Running: "running", pod_status.Releasing: "releasing", pod_status.Pending: "pending",
			}[s.status])
		case b.status == pod_status.Running && s.status == pod_status.Pipelined && s.node == b.node:
			out[key] = "running"
		case b.status == pod_status.Running && s.status == pod_status.Pipelined:
			out[key] = podOutcome("moved@" + s.node)
		case b.status == pod_status.Running && s.status == pod_status.Releasing:
			out[key] = podOutcome("evicted:" + evictedBy[key])
		case b.status == pod_status.Pending && s.status == pod_status.Binding:
			out[key] = podOutcome("bound@" + s.node)
		case b.status == pod_status.Pending && s.status == pod_status.Pipelined:
			out[key] = podOutcome("pipelined@" + s.node)
		default:
			out[key] = podOutcome(fmt.Sprintf("kai-%v@%s(from %v)", s.status, s.node, b.status))
		}
	}
	slices.Sort(boundThenTaken)
	return out, boundThenTaken, nil
}
