package main

import "testing"

// admittedNames lists the admitted workloads of the live (not dropped) ClusterQueues.
func admittedNames(t *tree) map[string]int {
	out := map[string]int{}
	for i := range t.nodes {
		n := &t.nodes[i]
		if n.dropped {
			continue
		}
		for _, w := range n.workloads {
			if w.admitted {
				out[w.name] = len(w.pods)
			}
		}
	}
	return out
}

// firstAdmitted finds a seed whose tree has an admitted workload in a live ClusterQueue and
// returns its name.
func firstAdmitted(t *tree) string {
	for i := range t.nodes {
		for _, w := range t.nodes[i].workloads {
			if w.admitted && !t.nodes[i].dropped {
				return w.name
			}
		}
	}
	return ""
}

// Both shrinkers keep what the failure needs (one admitted workload) and drop every other
// admitted workload and every ClusterQueue they may drop.
func TestShrinkKeepsOnlyWhatFails(t *testing.T) {
	for seed := int64(1); seed <= 40; seed++ {
		s := generateScenario(seed)
		keep := firstAdmitted(s.t)
		if keep == "" {
			continue
		}
		s.shrink(func(s *scenario) bool { _, ok := admittedNames(s.t)[keep]; return ok })
		if got := admittedNames(s.t); len(got) != 1 || got[keep] != 1 {
			t.Fatalf("seed %d: flavor-assignment shrink kept %v, want only %s with one pod set", seed, got, keep)
		}

		d := generateDecision(seed)
		keep = firstAdmitted(d.s.t)
		if keep == "" {
			continue
		}
		d.shrink(func(d *decision) bool { _, ok := admittedNames(d.s.t)[keep]; return ok })
		if got := admittedNames(d.s.t); len(got) != 1 || got[keep] != 1 {
			t.Fatalf("seed %d: decision shrink kept %v, want only %s with one pod set", seed, got, keep)
		}
		if len(d.pending) != 1 {
			t.Fatalf("seed %d: decision shrink kept %d pending workloads, want 1", seed, len(d.pending))
		}
	}
}
