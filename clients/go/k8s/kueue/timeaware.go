package kueue

import (
	arbiterv1 "arbiter.dev/clients/go/arbiterv1"
	"arbiter.dev/clients/go/k8s/usage"
)

// Allocated is what each queue of the model holds now, for the usage ledger: a ClusterQueue the
// usage of its admitted workloads (quota reserved and every check Ready), a Cohort the sum over
// its subtree.
func (m *Model) Allocated() map[string]map[string]float64 {
	out := map[string]map[string]float64{}
	for name := range m.Kind {
		out[name] = map[string]float64{}
	}
	for _, key := range sortedKeys(m.Workloads) {
		w := m.Workloads[key]
		if !w.Reserved || !IsAdmitted(w.Obj) {
			continue
		}
		for q := w.ClusterQueue; q != ""; q = m.Parent[q] {
			addTo(out[q], w.Requests)
		}
	}
	return out
}

// nominalByName is q's nominal quota per resource name, summed over its flavors in flavor order
// (the time-aware division, like KAI's, knows resources but not flavors).
func nominalByName(q *arbiterv1.Queue) map[string]float64 {
	out := copyAmounts(q.GetDeserved())
	for _, g := range q.GetResourceGroups() {
		for _, f := range g.GetFlavors() {
			for _, r := range sortedKeys(f.GetResources()) {
				out[r] += f.GetResources()[r].GetNominal()
			}
		}
	}
	return out
}

// borrowingLimitByName is q's borrowing limit per resource name: the sum over the flavors that
// offer it, and no limit when one of them has none.
func borrowingLimitByName(q *arbiterv1.Queue) map[string]float64 {
	out := copyAmounts(q.GetBorrowingLimit())
	unlimited := map[string]bool{}
	for _, g := range q.GetResourceGroups() {
		for _, f := range g.GetFlavors() {
			for _, r := range sortedKeys(f.GetResources()) {
				rq := f.GetResources()[r]
				if rq.BorrowingLimit == nil || rq.GetBorrowingLimit() < 0 {
					unlimited[r] = true
					continue
				}
				out[r] += rq.GetBorrowingLimit()
			}
		}
	}
	for r := range unlimited {
		delete(out, r)
	}
	return out
}

// Capacity is the quota there is to share: the subtree quota of every root, summed.
func (m *Model) Capacity() map[string]float64 {
	sq := m.subtreeQuota()
	out := map[string]float64{}
	for name, parent := range m.Parent {
		if parent == "" {
			addTo(out, sq[name])
		}
	}
	return out
}

// subtreeQuota is each queue's nominal quota plus its descendants'.
func (m *Model) subtreeQuota() map[string]map[string]float64 {
	own := map[string]map[string]float64{}
	for _, q := range m.Request.GetSnapshot().GetQueues() {
		own[q.GetName()] = nominalByName(q)
	}
	out := map[string]map[string]float64{}
	for name := range m.Kind {
		out[name] = map[string]float64{}
	}
	for _, name := range sortedKeys(m.Kind) {
		for q := name; q != ""; q = m.Parent[q] {
			addTo(out[q], own[name])
		}
	}
	return out
}

// TimeAwareRequest is the KAI-model request that divides the quota of root's tree with
// time-aware fairness (SEMANTICS §3): every Cohort and ClusterQueue of the tree is a queue whose
// deserved share is its subtree's nominal quota, whose over-quota weight is its fair-sharing
// weight and whose limit is that quota plus its borrowing limit; reserved workloads run on one
// node that holds the tree's quota; the ledger gives the usage; k is k_value.
func (m *Model) TimeAwareRequest(root string, ledger *usage.Ledger, k float64) *arbiterv1.ScheduleRequest {
	sq := m.subtreeQuota()
	capacity := sq[root]
	resources := map[string]bool{}
	inTree := map[string]bool{}
	for name := range m.Kind {
		if m.Root(name) == root {
			inTree[name] = true
		}
	}
	for _, key := range sortedKeys(m.Workloads) {
		if w := m.Workloads[key]; inTree[w.ClusterQueue] {
			for r := range w.Requests {
				resources[r] = true
			}
		}
	}
	for r := range capacity {
		resources[r] = true
	}
	snap := &arbiterv1.Snapshot{
		Now:           m.Request.GetSnapshot().GetNow(),
		Nodes:         []*arbiterv1.Node{{Name: releasingNode, Allocatable: copyAmounts(capacity)}},
		Capacity:      copyAmounts(capacity),
		UsageCapacity: ledger.UsageCapacity(),
	}
	for _, q := range m.Request.GetSnapshot().GetQueues() {
		if !inTree[q.GetName()] {
			continue
		}
		kai := &arbiterv1.Queue{Name: q.GetName(), Parent: q.GetParent(), Deserved: copyAmounts(sq[q.GetName()])}
		if q.FairSharingWeight != nil {
			kai.OverQuotaWeight = map[string]float64{}
			for r := range resources {
				kai.OverQuotaWeight[r] = q.GetFairSharingWeight()
			}
		}
		for r, bl := range borrowingLimitByName(q) {
			if kai.Limit == nil {
				kai.Limit = map[string]float64{}
			}
			kai.Limit[r] = sq[q.GetName()][r] + bl
		}
		snap.Queues = append(snap.Queues, kai)
	}
	for _, key := range sortedKeys(m.Workloads) {
		w := m.Workloads[key]
		if !inTree[w.ClusterQueue] {
			continue
		}
		pod := &arbiterv1.Pod{Name: "usage", Requests: copyAmounts(w.Requests), Phase: arbiterv1.PodPhase_POD_PHASE_PENDING}
		if w.Reserved {
			pod.Phase, pod.NodeName = arbiterv1.PodPhase_POD_PHASE_RUNNING, releasingNode
		}
		snap.PodGroups = append(snap.PodGroups, &arbiterv1.PodGroup{Name: key, Queue: w.ClusterQueue, Pods: []*arbiterv1.Pod{pod}})
	}
	for _, u := range ledger.Usage() {
		if inTree[u.GetQueue()] {
			snap.Usage = append(snap.Usage, u)
		}
	}
	return &arbiterv1.ScheduleRequest{
		Snapshot: snap,
		Policy:   &arbiterv1.Policy{FairnessModel: arbiterv1.FairnessModel_FAIRNESS_MODEL_KAI, KValue: k},
	}
}

func copyAmounts(m map[string]float64) map[string]float64 {
	out := make(map[string]float64, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
