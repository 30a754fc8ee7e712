package kueue

import (
	"context"
	"fmt"
	"math"

	"google.golang.org/protobuf/proto"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	arbiterv1 "arbiter.dev/clients/go/arbiterv1"
	"arbiter.dev/clients/go/k8s/usage"
)

// Decision is the time-aware check's answer for one workload whose quota Kueue reserved.
type Decision struct {
	State   kueue.CheckState // Ready or Retry
	Message string
	// Rival is the ClusterQueue that deserves the quota more (Retry only).
	Rival string
}

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
		own[q.GetName()] = q.GetDeserved()
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
		for r, bl := range q.GetBorrowingLimit() {
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

// shares are one division of a tree: each queue's fair share and allocation.
type shares map[string]*arbiterv1.QueueShare

func divide(ctx context.Context, arb Arbiter, req *arbiterv1.ScheduleRequest) (shares, error) {
	resp, err := arb.ComputeFairShares(ctx, &arbiterv1.FairShareRequest{Snapshot: req.Snapshot, Policy: req.Policy})
	if err != nil {
		return nil, fmt.Errorf("compute fair shares: %w", err)
	}
	out := shares{}
	for _, q := range resp.GetQueues() {
		out[q.GetQueue()] = q
	}
	return out, nil
}

// saturation is how far q would be into its fair share holding extra more: the largest
// (allocated + extra) / fair share over the resources it holds, +∞ where its share is 0.
func (s shares) saturation(q string, extra map[string]float64) float64 {
	share := s[q]
	held := copyAmounts(share.GetAllocated())
	addTo(held, extra)
	worst := 0.0
	for _, r := range sortedKeys(held) {
		if held[r] <= 0 {
			continue
		}
		fs := share.GetFairShare()[r]
		if fs <= 0 {
			return math.Inf(1)
		}
		worst = math.Max(worst, held[r]/fs)
	}
	return worst
}

// Decide is the arbiter.dev/time-aware check for the workload key, whose quota Kueue reserved
// in ClusterQueue x. It is Ready when x, holding the workload, is within its time-aware share of
// its tree, or when no other ClusterQueue of the tree deserves the quota more. Another
// ClusterQueue y deserves it more when all of these hold:
//   - y has a pending workload h (its first in Kueue's order) that would fit in the quota the
//     workload gives back, without preempting anything (arbiter's Kueue model);
//   - with time-aware fairness (k), y holding h would be less saturated than x holding the
//     workload;
//   - without it (k = 0) it would not: the check overturns only what the usage history changes,
//     so with k = 0 it never holds back a workload Kueue admitted.
//
// Then it is Retry, with a message naming y.
func Decide(ctx context.Context, arb Arbiter, m *Model, ledger *usage.Ledger, k float64, key string) (Decision, *arbiterv1.ScheduleRequest, error) {
	w := m.Workloads[key]
	if w == nil || !w.Reserved {
		return Decision{}, nil, fmt.Errorf("workload %s has no quota reserved", key)
	}
	x, root := w.ClusterQueue, m.Root(w.ClusterQueue)
	heads := m.pendingHeads(root, x)
	req := m.TimeAwareRequest(root, ledger, k)
	if len(heads) == 0 {
		return Decision{State: kueue.CheckStateReady, Message: fmt.Sprintf(
			"no other ClusterQueue of %s has a workload waiting", treeName(m, root))}, req, nil
	}
	timeAware, err := divide(ctx, arb, req)
	if err != nil {
		return Decision{}, req, err
	}
	plain := timeAware
	if k > 0 {
		flat := proto.Clone(req).(*arbiterv1.ScheduleRequest)
		flat.Policy.KValue = 0
		if plain, err = divide(ctx, arb, flat); err != nil {
			return Decision{}, req, err
		}
	}
	satX := timeAware.saturation(x, nil)
	if satX <= 1 {
		return Decision{State: kueue.CheckStateReady, Message: fmt.Sprintf(
			"ClusterQueue %s is within its time-aware share (%s) holding this workload", x, percent(satX))}, req, nil
	}
	for _, y := range sortedKeys(heads) {
		h := heads[y]
		satY := timeAware.saturation(y, h.Requests)
		if !(satY < satX) || plain.saturation(y, h.Requests) < plain.saturation(x, nil) {
			continue
		}
		fits, err := m.fitsWithout(ctx, arb, key, h)
		if err != nil {
			return Decision{}, req, err
		}
		if !fits {
			continue
		}
		return Decision{State: kueue.CheckStateRetry, Rival: y, Message: fmt.Sprintf(
			"ClusterQueue %s deserves the quota more over time (k=%g): holding this workload %s would be at %s of its time-aware share %s, while %s holding %s would be at %s of %s",
			y, k, x, percent(satX), describe(timeAware[x].GetFairShare()), y, WorkloadKey(h.Obj), percent(satY), describe(timeAware[y].GetFairShare()))}, req, nil
	}
	return Decision{State: kueue.CheckStateReady, Message: fmt.Sprintf(
		"ClusterQueue %s is at %s of its time-aware share; no waiting ClusterQueue of %s deserves the quota more", x, percent(satX), treeName(m, root))}, req, nil
}

// pendingHeads is, for every ClusterQueue of root's tree but except, its first pending workload
// in Kueue's order.
func (m *Model) pendingHeads(root, except string) map[string]*Workload {
	heads := map[string]*Workload{}
	for _, key := range sortedKeys(m.Workloads) {
		w := m.Workloads[key]
		if w.Reserved || w.ClusterQueue == except || m.Root(w.ClusterQueue) != root {
			continue
		}
		if h, ok := heads[w.ClusterQueue]; !ok || queueOrderLess(w.Obj, h.Obj) {
			heads[w.ClusterQueue] = w
		}
	}
	return heads
}

// fitsWithout: with the workload key gone, Kueue's model admits h without preempting anything.
func (m *Model) fitsWithout(ctx context.Context, arb Arbiter, key string, h *Workload) (bool, error) {
	trial := proto.Clone(m.Request).(*arbiterv1.ScheduleRequest)
	groups := trial.Snapshot.PodGroups[:0]
	for _, g := range trial.Snapshot.PodGroups {
		if g.GetName() == WorkloadKey(h.Obj) || (g.GetAdmitted() && g.GetName() != key) {
			groups = append(groups, g)
		}
	}
	trial.Snapshot.PodGroups = groups
	resp, err := arb.Schedule(ctx, trial)
	if err != nil {
		return false, fmt.Errorf("schedule: %w", err)
	}
	if len(resp.GetEvictions()) > 0 {
		return false, nil
	}
	for _, a := range resp.GetAdmissions() {
		if a.GetPodGroup() == WorkloadKey(h.Obj) {
			return !a.GetAfterEvictions(), nil
		}
	}
	return false, nil
}

func treeName(m *Model, root string) string {
	if m.Kind[root] == KindCohort {
		return "cohort " + root
	}
	return "ClusterQueue " + root
}

func percent(f float64) string {
	if math.IsInf(f, 1) {
		return "∞ (no share)"
	}
	return fmt.Sprintf("%.0f%%", f*100)
}

func copyAmounts(m map[string]float64) map[string]float64 {
	out := make(map[string]float64, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
