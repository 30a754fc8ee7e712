package timeaware

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"

	"google.golang.org/protobuf/proto"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	arbiterv1 "arbiter.dev/clients/go/arbiterv1"
	kueuemodel "arbiter.dev/clients/go/k8s/kueue"
	"arbiter.dev/clients/go/k8s/usage"
)

// Decision is the time-aware check's answer for one workload whose quota Kueue reserved.
type Decision struct {
	State   kueue.CheckState // Ready or Retry
	Message string
	// Rival is the ClusterQueue that deserves the quota more (Retry only).
	Rival string
	// RivalHead is the rival's first pending workload, the one the quota is given back for
	// (Retry only).
	RivalHead string
}

// shares are one division of a tree: each queue's fair share and allocation.
type shares map[string]*arbiterv1.QueueShare

func divide(ctx context.Context, arb kueuemodel.Arbiter, req *arbiterv1.ScheduleRequest) (shares, error) {
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
	held := maps.Clone(share.GetAllocated())
	if held == nil {
		held = map[string]float64{}
	}
	for r, v := range extra {
		held[r] += v
	}
	worst := 0.0
	for _, r := range slices.Sorted(maps.Keys(held)) {
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
func Decide(ctx context.Context, arb kueuemodel.Arbiter, m *kueuemodel.Model, ledger *usage.Ledger, k float64, key string) (Decision, *arbiterv1.ScheduleRequest, error) {
	w := m.Workloads[key]
	if w == nil || !w.Reserved {
		return Decision{}, nil, fmt.Errorf("workload %s has no quota reserved", key)
	}
	x, root := w.ClusterQueue, m.Root(w.ClusterQueue)
	heads := pendingHeads(m, root, x)
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
	for _, y := range slices.Sorted(maps.Keys(heads)) {
		h := heads[y]
		satY := timeAware.saturation(y, h.Requests)
		if !(satY < satX) || plain.saturation(y, h.Requests) < plain.saturation(x, nil) {
			continue
		}
		fits, err := fitsWithout(ctx, arb, m, key, h)
		if err != nil {
			return Decision{}, req, err
		}
		if !fits {
			continue
		}
		return Decision{State: kueue.CheckStateRetry, Rival: y, RivalHead: kueuemodel.WorkloadKey(h.Obj), Message: fmt.Sprintf(
			"ClusterQueue %s deserves the quota more over time (k=%g): holding this workload %s would be at %s of its time-aware share %s, while %s holding %s would be at %s of %s",
			y, k, x, percent(satX), kueuemodel.Describe(timeAware[x].GetFairShare()), y, kueuemodel.WorkloadKey(h.Obj), percent(satY), kueuemodel.Describe(timeAware[y].GetFairShare()))}, req, nil
	}
	return Decision{State: kueue.CheckStateReady, Message: fmt.Sprintf(
		"ClusterQueue %s is at %s of its time-aware share; no waiting ClusterQueue of %s deserves the quota more", x, percent(satX), treeName(m, root))}, req, nil
}

// pendingHeads is, for every ClusterQueue of root's tree but except, its first pending workload
// in Kueue's order.
func pendingHeads(m *kueuemodel.Model, root, except string) map[string]*kueuemodel.Workload {
	heads := map[string]*kueuemodel.Workload{}
	for _, key := range slices.Sorted(maps.Keys(m.Workloads)) {
		w := m.Workloads[key]
		if w.Reserved || w.ClusterQueue == except || m.Root(w.ClusterQueue) != root {
			continue
		}
		if h, ok := heads[w.ClusterQueue]; !ok || kueuemodel.QueueOrderLess(w.Obj, h.Obj) {
			heads[w.ClusterQueue] = w
		}
	}
	return heads
}

// fitsWithout: with the workload key gone, Kueue's model admits h without preempting anything.
func fitsWithout(ctx context.Context, arb kueuemodel.Arbiter, m *kueuemodel.Model, key string, h *kueuemodel.Workload) (bool, error) {
	trial := proto.Clone(m.Request).(*arbiterv1.ScheduleRequest)
	groups := trial.Snapshot.PodGroups[:0]
	for _, g := range trial.Snapshot.PodGroups {
		if g.GetName() == kueuemodel.WorkloadKey(h.Obj) || (g.GetAdmitted() && g.GetName() != key) {
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
		if a.GetPodGroup() == kueuemodel.WorkloadKey(h.Obj) {
			return !a.GetAfterEvictions(), nil
		}
	}
	return false, nil
}

func treeName(m *kueuemodel.Model, root string) string {
	if m.Kind[root] == kueuemodel.KindCohort {
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
