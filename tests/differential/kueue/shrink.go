package main

import "slices"

// shrink reduces a flavor-assignment scenario that fails to a smaller one that still fails:
// greedily, until nothing more can go, it drops other ClusterQueues (and Cohorts left empty),
// admitted workloads, pod sets of admitted workloads and a pod set of the pending workload,
// keeping each removal after which fails still reports a failure. The scenario is changed in
// place.
func (s *scenario) shrink(fails func(*scenario) bool) {
	for progress := true; progress; {
		progress = false
		t := s.t
		again := func() bool { return fails(s) }
		progress = t.dropClusterQueues(func(i int) bool { return i == s.x }, again) || progress
		progress = t.dropAdmitted(again) || progress
		if w := &s.pending; len(w.pods) > 1 {
			for p := range w.pods {
				saved := *w
				w.pods = []quota{saved.pods[1-p]}
				w.selectors = []map[string]string{saved.selectors[1-p]}
				w.tolerations = saved.tolerations[1-p : 2-p]
				if fails(s) {
					progress = true
					break
				}
				*w = saved
			}
		}
	}
}

// dropEmptyCohorts drops every Cohort whose children are all dropped (on arbiter's side it would
// otherwise become a leaf), repeatedly, and returns them.
func (t *tree) dropEmptyCohorts() []int {
	var out []int
	for changed := true; changed; {
		changed = false
		for i := range t.nodes {
			n := &t.nodes[i]
			if n.cq || n.dropped || len(n.children) == 0 {
				continue
			}
			empty := true
			for _, c := range n.children {
				empty = empty && t.nodes[c].dropped
			}
			if empty {
				n.dropped = true
				out = append(out, i)
				changed = true
			}
		}
	}
	return out
}

// shrink reduces a decision scenario that fails: greedily it drops ClusterQueues without
// pending workloads (and Cohorts left empty), pending workloads, admitted workloads and their
// pod sets, keeping each removal after which fails still reports a failure.
func (d *decision) shrink(fails func(*decision) bool) {
	t := d.s.t
	for progress := true; progress; {
		progress = false
		again := func() bool { return fails(d) }
		progress = t.dropClusterQueues(func(i int) bool {
			return slices.ContainsFunc(d.pending, func(p pendingAt) bool { return p.cq == i })
		}, again) || progress
		for k := 0; len(d.pending) > 1 && k < len(d.pending); k++ {
			saved := d.pending
			d.pending = append(append([]pendingAt(nil), saved[:k]...), saved[k+1:]...)
			if fails(d) {
				progress = true
				k--
				continue
			}
			d.pending = saved
		}
		progress = t.dropAdmitted(again) || progress
	}
}

// dropClusterQueues drops, one at a time, each ClusterQueue that keep does not hold (with the
// Cohorts it leaves empty), keeping each removal after which fails still reports a failure. It
// reports whether anything was dropped.
func (t *tree) dropClusterQueues(keep func(int) bool, fails func() bool) bool {
	progress := false
	for i := range t.nodes {
		n := &t.nodes[i]
		if n.dropped || !n.cq || keep(i) {
			continue
		}
		n.dropped = true
		emptied := t.dropEmptyCohorts()
		if fails() {
			progress = true
			continue
		}
		n.dropped = false
		for _, c := range emptied {
			t.nodes[c].dropped = false
		}
	}
	return progress
}

// dropAdmitted drops admitted workloads, then pod sets of the admitted workloads left, one at a
// time, keeping each removal after which fails still reports a failure. It reports whether
// anything was dropped.
func (t *tree) dropAdmitted(fails func() bool) bool {
	progress := false
	for i := range t.nodes {
		n := &t.nodes[i]
		for k := 0; k < len(n.workloads); k++ {
			saved := n.workloads
			n.workloads = append(append([]workload(nil), saved[:k]...), saved[k+1:]...)
			if fails() {
				progress = true
				k--
				continue
			}
			n.workloads = saved
			w := &n.workloads[k]
			for p := 0; len(w.pods) > 1 && p < len(w.pods); p++ {
				pods, flavors := w.pods, w.flavors
				w.pods = append(append([]quota(nil), pods[:p]...), pods[p+1:]...)
				if len(flavors) > 0 { // a tree of one flavor has none
					w.flavors = append(append([][numResources]string(nil), flavors[:p]...), flavors[p+1:]...)
				}
				if fails() {
					progress = true
					p--
					continue
				}
				w.pods, w.flavors = pods, flavors
			}
		}
	}
	return progress
}
