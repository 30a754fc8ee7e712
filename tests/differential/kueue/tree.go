package main

import (
	"fmt"
	"math/rand/v2"
	"sort"
)

// The resources the generated trees use; cpu is in millicores and memory in bytes, as Kueue
// counts them (resources.ResourceValue), so both sides see the same whole numbers.
const (
	cpu = iota
	memory
	gpu
	numResources
)

var resourceNames = [numResources]string{"cpu", "memory", "nvidia.com/gpu"}

type quota [numResources]int64

// Largest nominal quota of a generated ClusterQueue, per resource: realistic magnitudes, or
// small numbers, where ratios tie across resources and lendable amounts of 0 are common.
var (
	realisticNominal = quota{32000, 1 << 37, 16}
	smallNominal     = quota{8, 8, 8}
)

// node is a ClusterQueue (a leaf) or a Cohort (it has children).
type node struct {
	name     string
	parent   int   // index into tree.nodes; -1 for a root
	children []int // in name order
	cq       bool
	// explicit: the Cohort has an API object (quota, limits, weight, parent). Implicit cohorts
	// exist only because something names them: no quota, weight 1, always a root.
	explicit bool
	// covered[r]: r has a quota entry (a ClusterQueue's covered resource; a Cohort's own
	// resource group), with nominal[r], possibly 0.
	covered      [numResources]bool
	nominal      quota
	hasBorrowing [numResources]bool
	borrowing    quota
	hasLending   [numResources]bool
	lending      quota
	weight       *float64 // nil: the default, 1
	workloads    []workload
}

// workload is a Kueue Workload of a ClusterQueue: one pod set (and one arbiter pod) per entry
// of pods, each of count 1. Only admitted workloads use quota.
type workload struct {
	name     string
	pods     []quota
	admitted bool
}

type tree struct {
	seed       int64
	maxNominal quota
	nodes      []node
	roots      []int // in name order
}

type generator struct {
	rng  *rand.Rand
	tree *tree
}

func (g *generator) chance(p float64) bool { return g.rng.Float64() < p }

// upTo returns a whole number in [0, hi].
func (g *generator) upTo(hi int64) int64 {
	if hi <= 0 {
		return 0
	}
	return g.rng.Int64N(hi + 1)
}

// generate builds the cohort tree of a seed: one to three roots, each a Cohort tree of depth up
// to four or a lone ClusterQueue; nominal quotas (0 included) on a random subset of the
// resources, borrowing and lending limits below the roots, fair-sharing weights (0 included),
// and admitted and pending workloads sized so that borrowing is common.
func generate(seed int64) *tree {
	g := &generator{rng: rand.New(rand.NewPCG(uint64(seed), 0x4b75657565)), tree: &tree{seed: seed}}
	t := g.tree
	t.maxNominal = realisticNominal
	if g.chance(0.3) {
		t.maxNominal = smallNominal
	}
	names := g.rng.Perm(200) // more than a tree can hold: at most 30 cohorts of four children
	depth := 2 + g.rng.IntN(3)
	var add func(parent, level int) int
	add = func(parent, level int) int {
		i := len(t.nodes)
		cohort := level < depth && len(t.nodes) < 30 && (level == 1 && parent == -1 || g.chance(0.45))
		n := node{parent: parent, cq: !cohort, explicit: true}
		if cohort {
			n.name = fmt.Sprintf("cohort-%02d", names[i])
			n.explicit = parent >= 0 || g.chance(0.7)
		} else {
			n.name = fmt.Sprintf("cq-%02d", names[i])
		}
		t.nodes = append(t.nodes, n)
		g.quotas(i)
		if cohort {
			for range 1 + g.rng.IntN(4) {
				child := add(i, level+1)
				t.nodes[i].children = append(t.nodes[i].children, child)
			}
		} else {
			g.workloads(i)
		}
		return i
	}
	for range 1 + g.rng.IntN(3) {
		if g.chance(0.15) {
			t.roots = append(t.roots, add(-1, depth)) // a ClusterQueue without a cohort
		} else {
			t.roots = append(t.roots, add(-1, 1))
		}
	}
	byName := func(s []int) {
		sort.Slice(s, func(a, b int) bool { return t.nodes[s[a]].name < t.nodes[s[b]].name })
	}
	byName(t.roots)
	for i := range t.nodes {
		byName(t.nodes[i].children)
	}
	return t
}

// quotas draws node i's quota entries, limits and weight. Kueue's admission webhooks allow
// borrowing and lending limits only below a root, and a ClusterQueue's lending limit only up to
// its nominal quota; the generator keeps to that.
func (g *generator) quotas(i int) {
	n := &g.tree.nodes[i]
	if !n.explicit {
		return
	}
	for r := range numResources {
		if n.cq {
			n.covered[r] = g.chance(0.85)
		} else {
			n.covered[r] = g.chance(0.4)
		}
		if !n.covered[r] {
			continue
		}
		switch {
		case g.chance(0.15):
			n.nominal[r] = 0
		case n.cq:
			n.nominal[r] = g.upTo(g.tree.maxNominal[r])
		default:
			n.nominal[r] = g.upTo(g.tree.maxNominal[r] / 2)
		}
		if n.parent < 0 {
			continue
		}
		if g.chance(0.3) {
			n.hasBorrowing[r] = true
			n.borrowing[r] = g.upTo(g.tree.maxNominal[r] * 3 / 2)
		}
		if g.chance(0.3) {
			n.hasLending[r] = true
			if n.cq {
				n.lending[r] = g.upTo(n.nominal[r])
			} else {
				n.lending[r] = g.upTo(g.tree.maxNominal[r] * 2)
			}
		}
	}
	if g.chance(0.6) {
		w := []float64{0, 0.5, 1, 2, 3}[g.rng.IntN(5)]
		n.weight = &w
	}
}

// workloads gives ClusterQueue i zero to four admitted and zero to two pending workloads of one
// to three pod sets, using only the resources the queue covers.
func (g *generator) workloads(i int) {
	n := &g.tree.nodes[i]
	load := []float64{0.2, 0.5, 1, 2}[g.rng.IntN(4)]
	newWorkload := func(k int, admitted bool) workload {
		w := workload{name: fmt.Sprintf("%s-w%d", n.name, k), admitted: admitted}
		for range 1 + g.rng.IntN(3) {
			var p quota
			for r := range numResources {
				if n.covered[r] && g.chance(0.8) {
					scale := max(n.nominal[r], g.tree.maxNominal[r]/8)
					p[r] = g.upTo(int64(float64(scale) * load / 2))
				}
			}
			w.pods = append(w.pods, p)
		}
		return w
	}
	k := 0
	for range g.rng.IntN(5) {
		n.workloads = append(n.workloads, newWorkload(k, true))
		k++
	}
	for range g.rng.IntN(3) {
		n.workloads = append(n.workloads, newWorkload(k, false))
		k++
	}
}

// usage is a workload's total usage.
func (w *workload) usage() quota {
	var u quota
	for _, p := range w.pods {
		for r := range numResources {
			u[r] += p[r]
		}
	}
	return u
}
