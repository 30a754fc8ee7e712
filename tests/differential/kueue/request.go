package main

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"arbiter.dev/tests/differential/internal/arbiterjson"
)

// request writes the tree as an arbiter FairShareRequest under the Kueue model (SEMANTICS
// §5.1): ClusterQueues are leaves, Cohorts non-leaves, a nominal quota is deserved (a present
// key is a covered resource), workloads are pod groups, admitted ones with admitted set.
// Queues and pod groups go in a shuffled order.
// A flavored tree's queues give their quotas as resource groups, every flavor is a
// ResourceFlavor, and admitted workloads carry their flavors per pod set (pod i is pod set
// "psi", as in Kueue's Workload).
func (t *tree) request() *arbiterjson.FairShareRequest {
	s := t.snapshot(nil, nil)
	return &arbiterjson.FairShareRequest{
		Snapshot: s,
		Policy:   arbiterjson.Policy{FairnessModel: "FAIRNESS_MODEL_KUEUE"},
	}
}

// snapshot writes the tree as an arbiter Snapshot. flavors are the ResourceFlavors of a
// flavored tree (nil: plain ones); queue, when set, completes each queue (preemption policy,
// flavor fungibility). Pending workloads and the fields a Schedule request needs (priorities,
// times) are written too.
func (t *tree) snapshot(flavors []arbiterjson.ResourceFlavor, queue func(n *node, q *arbiterjson.Queue)) arbiterjson.Snapshot {
	rng := rand.New(rand.NewPCG(uint64(t.seed), 0x6f72646572))
	var s arbiterjson.Snapshot
	for _, i := range rng.Perm(len(t.nodes)) {
		n := &t.nodes[i]
		if n.dropped {
			continue
		}
		q := arbiterjson.Queue{Name: n.name, FairSharingWeight: n.weight}
		if t.flavored {
			q.ResourceGroups = groupsOf(n)
		} else {
			q.Deserved = present(n.nominal, n.covered)
			q.BorrowingLimit = present(n.borrowing, n.hasBorrowing)
			q.LendingLimit = present(n.lending, n.hasLending)
		}
		if n.parent >= 0 {
			q.Parent = t.nodes[n.parent].name
		}
		if queue != nil {
			queue(n, &q)
		}
		s.Queues = append(s.Queues, q)
		for _, w := range n.workloads {
			s.PodGroups = append(s.PodGroups, t.podGroup(n, &w))
		}
	}
	rng.Shuffle(len(s.PodGroups), func(a, b int) { s.PodGroups[a], s.PodGroups[b] = s.PodGroups[b], s.PodGroups[a] })
	if t.flavored {
		if flavors == nil {
			for _, name := range t.flavorNamesOf() {
				flavors = append(flavors, arbiterjson.ResourceFlavor{Name: name})
			}
		}
		s.ResourceFlavors = slices.Clone(flavors)
		rng.Shuffle(len(s.ResourceFlavors), func(a, b int) {
			s.ResourceFlavors[a], s.ResourceFlavors[b] = s.ResourceFlavors[b], s.ResourceFlavors[a]
		})
	}
	return s
}

// podGroup writes workload w of ClusterQueue n. Times and priorities are written only when set
// (the fair-share trees leave them out, as before flavors).
func (t *tree) podGroup(n *node, w *workload) arbiterjson.PodGroup {
	pg := arbiterjson.PodGroup{Name: w.name, Queue: n.name, Admitted: w.admitted, Priority: w.priority}
	if w.scheduled {
		pg.CreationTime = arbiterjson.Timestamp(w.created)
		if w.admitted {
			pg.AdmissionTime = arbiterjson.Timestamp(w.reserved)
		}
	}
	for k, p := range w.pods {
		pod := arbiterjson.Pod{Name: fmt.Sprintf("p%d", k), Requests: requests(p, n.covered)}
		if w.scheduled && !w.admitted {
			pod.Requests = requests(p, [numResources]bool{true, true, true})
			for r := range numResources {
				if p[r] == 0 {
					delete(pod.Requests, resourceNames[r])
				}
			}
		}
		if t.flavored {
			pod.PodSet = fmt.Sprintf("ps%d", k)
			if w.admitted {
				pod.Requests = requests(p, coveredOf(n))
			}
			if w.admitted {
				psf := arbiterjson.PodSetFlavors{PodSet: pod.PodSet, Flavors: map[string]string{}}
				for r := range numResources {
					if f := w.flavors[k][r]; f != "" {
						psf.Flavors[resourceNames[r]] = f
					}
				}
				pg.Flavors = append(pg.Flavors, psf)
			}
		}
		if k < len(w.selectors) {
			pod.NodeSelector = w.selectors[k]
			pod.Tolerations = w.tolerations[k]
		}
		pg.Pods = append(pg.Pods, pod)
	}
	return pg
}

// groupsOf writes the resource groups of a node of a flavored tree.
func groupsOf(n *node) []arbiterjson.ResourceGroup {
	var out []arbiterjson.ResourceGroup
	for _, gr := range n.groups {
		rg := arbiterjson.ResourceGroup{}
		for _, r := range gr.covered {
			rg.CoveredResources = append(rg.CoveredResources, resourceNames[r])
		}
		for _, f := range gr.flavors {
			fq := arbiterjson.FlavorQuotas{Flavor: f.name, Resources: map[string]arbiterjson.FlavorResourceQuota{}}
			for _, r := range gr.covered {
				q := arbiterjson.FlavorResourceQuota{Nominal: float64(f.nominal[r])}
				if f.hasBorrowing[r] {
					q.BorrowingLimit = ptrTo(float64(f.borrowing[r]))
				}
				if f.hasLending[r] {
					q.LendingLimit = ptrTo(float64(f.lending[r]))
				}
				fq.Resources[resourceNames[r]] = q
			}
			rg.Flavors = append(rg.Flavors, fq)
		}
		out = append(out, rg)
	}
	return out
}

// coveredOf lists the resources a node covers.
func coveredOf(n *node) [numResources]bool {
	var c [numResources]bool
	for r := range numResources {
		c[r] = n.covers(r)
	}
	return c
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
