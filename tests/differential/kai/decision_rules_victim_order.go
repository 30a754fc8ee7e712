package main

import (
	"maps"
	"reflect"
	"slices"
	"unsafe"

	"github.com/NVIDIA/KAI-scheduler/pkg/scheduler/actions/utils"
	"github.com/NVIDIA/KAI-scheduler/pkg/scheduler/api/common_info"
	"github.com/NVIDIA/KAI-scheduler/pkg/scheduler/api/podgroup_info"
	"github.com/NVIDIA/KAI-scheduler/pkg/scheduler/api/queue_info"
	"github.com/NVIDIA/KAI-scheduler/pkg/scheduler/api/resource_info"
	"github.com/NVIDIA/KAI-scheduler/pkg/scheduler/framework"
)

// ruleVictimQueueOrder, spec question (l): SEMANTICS §4.7 draws victims with every §4.3
// comparison reversed, each queue carrying its next victim and that victim's eviction unit
// (rules 2, 4 and 5 add the unit), and rule 5 lowers a queue's allocation by the units already
// drawn from its subtree. KAI's victim queue (actions/utils/job_order_by_queue.go,
// buildFuncOrderBetweenQueuesWithJobs and buildFuncOrderBetweenDepartmentsWithJobs with
// VictimQueue) hands the proportion plugin's queue order no job, so rules 2, 4 and 5 add nothing,
// and as victims it hands the jobs popped so far from the queue (for a department, from its best
// queue only) and the queue's next candidate, each with its whole allocation
// (queue_order.go, calculateDominantResourceShareWithJob). The cluster is scheduled once more by
// KAI with its reclaim and preempt rebuilt (as for kai-eviction-once) and its queue order handed,
// for every comparison of a victim queue, what SEMANTICS compares: as the job, the next victim's
// eviction unit (podgroup_info.GetTasksToEvict); as the victims, the eviction unit of every job
// popped so far from every leaf of the queue's subtree. Everything else, rules and attributes,
// is the proportion plugin's own. Arbiter's answer is accepted when it is that run's.
const ruleVictimQueueOrder = "kai-victim-queue-order"

// The same rule covers spec question (n): KAI's JobsOrderByQueues.PushJob re-creates a queue that
// its last pop emptied and pushes it into its department's heap before the pushed-back job is in
// it, so the heap's comparator finds the queue empty and ranks it below the top; before a pop only
// the top queue is re-ranked, and only when its own flag is set (getNextQueue). A victim job is
// pushed back by the scenario builder right after its tasks to evict are chosen
// (podgroup_info.GetTasksToEvict, which orders them with the session's task order), so the rule's
// run also marks, whenever the session orders tasks while a victim queue is drawn from, every
// queue and department of that victim queue for re-ranking (markForReranking): the next pop then
// re-ranks the top against its children with the pushed-back job in its queue, and draws in the
// order §4.7 gives.

// rerankingOff leaves markForReranking out (a test shows what it decides).
var rerankingOff = false

// drawingFrom records order as the victim queue being drawn from and returns it.
func (c *cluster) drawingFrom(order *utils.JobsOrderByQueues) *utils.JobsOrderByQueues {
	c.victimOrder = order
	return order
}

// drawingFromBuilt returns the victim queue build makes, registered as the one drawn from; while
// build runs, an empty victim queue stands in for it, so that the spec's order answers the
// comparisons of the build as well (nothing is popped before the build ends, and that is all the
// order reads of the queue it is registered with).
func (c *cluster) drawingFromBuilt(ssn *framework.Session, build func() *utils.JobsOrderByQueues) *utils.JobsOrderByQueues {
	building := utils.NewJobsOrderByQueues(ssn, utils.JobsOrderInitOptions{VictimQueue: true})
	c.drawingFrom(&building)
	return c.drawingFrom(build())
}

// installSpecVictimOrder puts, in front of the session's queue orders, one that answers every
// comparison of the victim queue c.victimOrder with the arguments SEMANTICS §4.7 compares, and
// leaves every other comparison to the orders after it.
func (c *cluster) installSpecVictimOrder(ssn *framework.Session) {
	ssn.TaskOrderFns = append([]common_info.CompareFn{func(l, r interface{}) int {
		if c.victimOrder != nil && !rerankingOff {
			markForReranking(c.victimOrder)
		}
		return 0
	}}, ssn.TaskOrderFns...)
	next := ssn.QueueOrderFns
	ssn.QueueOrderFns = append([]framework.CompareQueueFn{func(lQ, rQ *queue_info.QueueInfo,
		lJob, rJob *podgroup_info.PodGroupInfo, lVictims, rVictims []*podgroup_info.PodGroupInfo) int {
		if c.victimOrder == nil || len(lVictims) == 0 || len(rVictims) == 0 {
			return 0
		}
		pops := poppedJobs(c.victimOrder)
		lUnit, lDrawn := specVictimArgs(ssn, lQ, lVictims[len(lVictims)-1], pops)
		rUnit, rDrawn := specVictimArgs(ssn, rQ, rVictims[len(rVictims)-1], pops)
		for _, fn := range next {
			if j := fn(lQ, rQ, lUnit, rUnit, lDrawn, rDrawn); j != 0 {
				return j
			}
		}
		return 0
	}}, next...)
}

// specVictimArgs returns, for queue q whose next victim is next, the job and the victims that
// make KAI's queue order compare what SEMANTICS §4.7 compares: a job whose tasks to allocate
// request next's eviction unit, and one job per job popped from a leaf of q's subtree, allocating
// that job's eviction unit.
func specVictimArgs(ssn *framework.Session, q *queue_info.QueueInfo, next *podgroup_info.PodGroupInfo,
	pops map[common_info.QueueID][]*podgroup_info.PodGroupInfo) (*podgroup_info.PodGroupInfo, []*podgroup_info.PodGroupInfo) {
	unit := next.CloneWithTasks(nil)
	setTasksToAllocateResource(unit, evictionUnitRequest(ssn, next))
	drawn := []*podgroup_info.PodGroupInfo{}
	// Leaves in name order, so that the sums rule 5 makes do not follow Go's map order.
	for _, leaf := range slices.Sorted(maps.Keys(pops)) {
		if leaf != q.UID && ssn.Queues[leaf].ParentQueue != q.UID {
			continue
		}
		for _, popped := range pops[leaf] {
			d := popped.CloneWithTasks(nil)
			d.Allocated = evictionUnitRequest(ssn, popped)
			drawn = append(drawn, d)
		}
	}
	return unit, drawn
}

// evictionUnitRequest sums the requests of job's eviction unit.
func evictionUnitRequest(ssn *framework.Session, job *podgroup_info.PodGroupInfo) *resource_info.Resource {
	tasks, _ := podgroup_info.GetTasksToEvict(job, ssn.PodSetOrderFn, ssn.TaskOrderFn)
	sum := resource_info.EmptyResource()
	for _, t := range tasks {
		sum.AddResourceRequirements(t.ResReq)
	}
	return sum
}

// poppedJobs reads the jobs popped so far from a victim queue, per leaf queue (KAI keeps them in
// an unexported field, queuePopsMap).
func poppedJobs(order *utils.JobsOrderByQueues) map[common_info.QueueID][]*podgroup_info.PodGroupInfo {
	f := reflect.ValueOf(order).Elem().FieldByName("queuePopsMap")
	return *(*map[common_info.QueueID][]*podgroup_info.PodGroupInfo)(unsafe.Pointer(f.UnsafeAddr()))
}

// setTasksToAllocateResource sets the request KAI's queue order reads as job's tasks to allocate
// (GetTasksToAllocateInitResource returns it as cached, an unexported field).
func setTasksToAllocateResource(job *podgroup_info.PodGroupInfo, r *resource_info.Resource) {
	f := reflect.ValueOf(job).Elem().FieldByName("tasksToAllocateInitResource")
	*(**resource_info.Resource)(unsafe.Pointer(f.UnsafeAddr())) = r
}

// markForReranking sets the flag that makes KAI's victim queue re-rank a queue, and a department,
// when it next finds it on top of its heap (shouldUpdateQueueShare, unexported), on every queue
// and department of order.
func markForReranking(order *utils.JobsOrderByQueues) {
	v := reflect.ValueOf(order).Elem()
	for _, field := range []string{"queueIdToQueueMetadata", "departmentIdToDepartmentMetadata"} {
		m := v.FieldByName(field)
		for _, key := range m.MapKeys() {
			flag := m.MapIndex(key).Elem().FieldByName("shouldUpdateQueueShare")
			*(*bool)(unsafe.Pointer(flag.UnsafeAddr())) = true
		}
	}
}
