package main

import (
	"fmt"
	"math/rand/v2"

	"arbiter.dev/tests/differential/internal/arbiterjson"
)

// request writes the tree as an arbiter FairShareRequest under the Kueue model (SEMANTICS
// §5.1): ClusterQueues are leaves, Cohorts non-leaves, a nominal quota is deserved (a present
// key is a covered resource), workloads are pod groups, admitted ones with admitted set.
// Queues and pod groups go in a shuffled order.
func (t *tree) request() *arbiterjson.FairShareRequest {
	rng := rand.New(rand.NewPCG(uint64(t.seed), 0x6f72646572))
	var s arbiterjson.Snapshot
	for _, i := range rng.Perm(len(t.nodes)) {
		n := &t.nodes[i]
		q := arbiterjson.Queue{
			Name:              n.name,
			Deserved:          present(n.nominal, n.covered),
			BorrowingLimit:    present(n.borrowing, n.hasBorrowing),
			LendingLimit:      present(n.lending, n.hasLending),
			FairSharingWeight: n.weight,
		}
		if n.parent >= 0 {
			q.Parent = t.nodes[n.parent].name
		}
		s.Queues = append(s.Queues, q)
		for _, w := range n.workloads {
			pg := arbiterjson.PodGroup{Name: w.name, Queue: n.name, Admitted: w.admitted}
			for k, p := range w.pods {
				pg.Pods = append(pg.Pods, arbiterjson.Pod{Name: fmt.Sprintf("p%d", k), Requests: requests(p, n.covered)})
			}
			s.PodGroups = append(s.PodGroups, pg)
		}
	}
	rng.Shuffle(len(s.PodGroups), func(a, b int) { s.PodGroups[a], s.PodGroups[b] = s.PodGroups[b], s.PodGroups[a] })
	return &arbiterjson.FairShareRequest{
		Snapshot: s,
		Policy:   arbiterjson.Policy{FairnessModel: "FAIRNESS_MODEL_KUEUE"},
	}
}

func present(v quota, has [numResources]bool) map[string]float64 {
	var m map[string]float64
	for r := range numResources {
		if has[r] {
			if m == nil {
				m = map[string]float64{}
			}
			m[resourceNames[r]] = float64(v[r])
		}
	}
	return m
}

func requests(p quota, covered [numResources]bool) map[string]float64 {
	m := map[string]float64{}
	for r := range numResources {
		if covered[r] {
			m[resourceNames[r]] = float64(p[r])
		}
	}
	return m
}
