package main

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/NVIDIA/KAI-scheduler/pkg/scheduler/api/common_info"
	"github.com/NVIDIA/KAI-scheduler/pkg/scheduler/metrics"
	"github.com/NVIDIA/KAI-scheduler/pkg/scheduler/plugins/proportion/resource_division"
	rs "github.com/NVIDIA/KAI-scheduler/pkg/scheduler/plugins/proportion/resource_share"
)

// KAI's names for the three resources, indexed like resourceNames.
var kaiResources = [numResources]rs.ResourceName{rs.CpuResource, rs.MemoryResource, rs.GpuResource}

func init() {
	// The division reports every queue's fair share to KAI's Prometheus gauges, which exist
	// only once the scheduler's metrics are initialised.
	metrics.InitMetrics("arbiter_differential")
}

// attributes is queue i as KAI's proportion plugin sees it: quota, limit and over-quota weight
// per resource, the subtree's request, usage already normalised to the usage capacity (KAI's
// usage client hands the plugin usage / capacity), priority, creation time; the UID is the name.
func (t *tree) attributes(i int) *rs.QueueAttributes {
	q := &t.queues[i]
	a := &rs.QueueAttributes{
		UID:               common_info.QueueID(q.name),
		Name:              q.name,
		CreationTimestamp: metav1.NewTime(q.created),
		Priority:          q.priority,
	}
	if q.parent >= 0 {
		a.ParentQueue = common_info.QueueID(t.queues[q.parent].name)
	}
	for _, c := range q.children {
		a.ChildQueues = append(a.ChildQueues, common_info.QueueID(t.queues[c].name))
	}
	for r := range numResources {
		a.SetQuotaResources(kaiResources[r], q.deserved[r], q.limit[r], q.weight[r])
		share := a.ResourceShare(kaiResources[r])
		share.Request = q.request[r]
		share.Usage = t.normalisedUsage(i, r)
	}
	return a
}

// level builds the map KAI's division takes for the queues in members, inserted in name order.
func (t *tree) level(members []int, attrs []*rs.QueueAttributes) map[common_info.QueueID]*rs.QueueAttributes {
	m := make(map[common_info.QueueID]*rs.QueueAttributes, len(members))
	for _, i := range members {
		m[attrs[i].UID] = attrs[i]
	}
	return m
}

func quantities(v quota) rs.ResourceQuantities {
	return rs.NewResourceQuantities(v[cpu], v[memory], v[gpu])
}

// kaiTree is KAI's fair share of every queue, divided the way the proportion plugin composes
// the division: SetResourcesShare over the top-level queues with the capacity, then, for each
// queue, over its children with the queue's fair share, down to the leaves. The result is
// indexed like tree.queues.
func (t *tree) kaiTree() []quota {
	attrs := make([]*rs.QueueAttributes, len(t.queues))
	for i := range t.queues {
		attrs[i] = t.attributes(i)
	}
	var divide func(total rs.ResourceQuantities, members []int)
	divide = func(total rs.ResourceQuantities, members []int) {
		if len(members) == 0 {
			return
		}
		resource_division.SetResourcesShare(total, t.k, t.level(members, attrs))
		for _, i := range members {
			divide(attrs[i].GetFairShare(), t.queues[i].children)
		}
	}
	divide(quantities(t.capacity), t.top)
	out := make([]quota, len(t.queues))
	for i := range t.queues {
		for r := range numResources {
			out[i][r] = attrs[i].ResourceShare(kaiResources[r]).FairShare
		}
	}
	return out
}

// kaiLevel is KAI's division of total among the siblings in members alone (fresh queue
// attributes, the same call as one step of kaiTree). The result is aligned with members.
func (t *tree) kaiLevel(members []int, total quota) []quota {
	attrs := make([]*rs.QueueAttributes, len(t.queues))
	for _, i := range members {
		attrs[i] = t.attributes(i)
	}
	resource_division.SetResourcesShare(quantities(total), t.k, t.level(members, attrs))
	out := make([]quota, len(members))
	for j, i := range members {
		for r := range numResources {
			out[j][r] = attrs[i].ResourceShare(kaiResources[r]).FairShare
		}
	}
	return out
}
