package main

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"time"

	"arbiter.dev/tests/differential/internal/arbiterjson"
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
	// groups are the node's resource groups in a flavored tree (tree.flavored); covered,
	// nominal and the limits above are then unused.
	groups []group
	// dropped: left out of both sides (the shrinker's doing, shrink.go).
	dropped bool
}

// group is one resource group of a node: the resources it covers (in resource order, a subset
// of its kind's) and its flavors, in the order they are tried.
type group struct {
	kind    int // index into tree.kinds
	covered []int
	flavors []flavorQuota
}

// flavorQuota is one flavor of a group, with a quota entry for each covered resource.
type flavorQuota struct {
	name         string
	nominal      quota
	hasBorrowing [numResources]bool
	borrowing    quota
	hasLending   [numResources]bool
	lending      quota
}

// groupKind is a tree-wide resource group: its resources and the flavors that may serve them.
// A node's group of that kind covers some of the resources and lists some of the flavors.
type groupKind struct {
	resources []int
	flavors   []string
}

// workload is a Kueue Workload of a ClusterQueue: one pod set (and one arbiter pod) per entry
// of pods, each of count 1. Only admitted workloads use quota.
type workload struct {
	name     string
	pods     []quota
	admitted bool
	// flavors[k][r] is the flavor pod set k of an admitted workload in a flavored tree is
	// charged for resource r ("" for a resource its ClusterQueue does not cover).
	flavors [][numResources]string
	// priority, creation and reservation times order preemption candidates; the times are
	// distinct across the tree.
	priority          int32
	created, reserved time.Time
	// evicted: left out of Kueue's cache (a preemption target of an earlier cycle).
	evicted bool
	// scheduled: the workload belongs to a flavor-assignment scenario (assign.go), whose
	// requests carry times; selectors and tolerations are its pods' (pending workload only).
	scheduled   bool
	selectors   []map[string]string
	tolerations [][]arbiterjson.Toleration
}

// epoch is the base of the generated times.
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

type tree struct {
	seed       int64
	maxNominal quota
	nodes      []node
	roots      []int // in name order
	// flavored: quotas are per flavor (node.groups) and every flavor is a ResourceFlavor;
	// otherwise each node has one flavor, Kueue's "default" and arbiter's implicit one.
	flavored bool
	kinds    []groupKind
}

// flavoredSeed says which seeds make flavored trees: two in three. The others are the legacy
// trees of one flavor, drawn exactly as before flavors existed.
func flavoredSeed(seed int64) bool { return seed%3 != 0 }

// flavorNames are the names flavors are drawn from, shuffled per tree so that the order a
// group lists its flavors in, the order of the names and the order of the groups all differ.
var flavorNames = []string{"on-demand", "spot", "reserved", "a100", "h100", "l4", "arm", "x86", "preemptible"}

// groupLayouts are the ways the resources split into resource groups.
var groupLayouts = [][][]int{
	{{cpu, memory}, {gpu}},
	{{cpu}, {memory}, {gpu}},
	{{cpu, memory, gpu}},
	{{cpu, gpu}, {memory}},
}

type generator struct {
	rng   *rand.Rand
	tree  *tree
	clock int // workloads drawn so far: their times
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
	if flavoredSeed(seed) {
		g.flavors()
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
	if g.tree.flavored {
		g.flavorQuotas(i)
		if g.chance(0.6) {
			w := []float64{0, 0.5, 1, 2, 3}[g.rng.IntN(5)]
			n.weight = &w
		}
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
		g.clock++
		w := workload{
			name: fmt.Sprintf("%s-w%d", n.name, k), admitted: admitted,
			created: epoch.Add(time.Duration(g.clock) * time.Second), reserved: epoch.Add(time.Hour + time.Duration(g.clock)*time.Second),
		}
		for range 1 + g.rng.IntN(3) {
			if g.tree.flavored {
				p, f := g.flavoredPod(n, load)
				w.pods = append(w.pods, p)
				w.flavors = append(w.flavors, f)
				continue
			}
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

// flavors sets up a flavored tree: a layout of resource groups, and two or three flavors for
// each group.
func (g *generator) flavors() {
	t := g.tree
	t.flavored = true
	names := slices.Clone(flavorNames)
	g.rng.Shuffle(len(names), func(a, b int) { names[a], names[b] = names[b], names[a] })
	for _, resources := range groupLayouts[g.rng.IntN(len(groupLayouts))] {
		k := groupKind{resources: resources}
		for range 2 + g.rng.IntN(2) {
			k.flavors = append(k.flavors, names[0])
			names = names[1:]
		}
		t.kinds = append(t.kinds, k)
	}
}

// flavorQuotas draws the resource groups of node i in a flavored tree: per kind, (a
// ClusterQueue mostly, a Cohort sometimes) a group covering a non-empty subset of the kind's
// resources, listing a non-empty subset of its flavors in a random order, each with a quota
// entry per covered resource drawn as for a legacy tree.
func (g *generator) flavorQuotas(i int) {
	n := &g.tree.nodes[i]
	for k, kind := range g.tree.kinds {
		if !g.chance(map[bool]float64{true: 0.85, false: 0.4}[n.cq]) {
			continue
		}
		gr := group{kind: k}
		for _, r := range kind.resources {
			if len(kind.resources) == 1 || g.chance(0.85) {
				gr.covered = append(gr.covered, r)
			}
		}
		if len(gr.covered) == 0 {
			gr.covered = []int{kind.resources[g.rng.IntN(len(kind.resources))]}
		}
		order := g.rng.Perm(len(kind.flavors))
		count := len(order)
		if g.chance(0.3) {
			count = 1 + g.rng.IntN(len(order))
		}
		for _, f := range order[:count] {
			fq := flavorQuota{name: kind.flavors[f]}
			for _, r := range gr.covered {
				switch {
				case g.chance(0.15):
					fq.nominal[r] = 0
				case n.cq:
					fq.nominal[r] = g.upTo(g.tree.maxNominal[r] / 2)
				default:
					fq.nominal[r] = g.upTo(g.tree.maxNominal[r] / 4)
				}
				if n.parent < 0 {
					continue
				}
				if g.chance(0.3) {
					fq.hasBorrowing[r] = true
					fq.borrowing[r] = g.upTo(g.tree.maxNominal[r])
				}
				if g.chance(0.3) {
					fq.hasLending[r] = true
					if n.cq {
						fq.lending[r] = g.upTo(fq.nominal[r])
					} else {
						fq.lending[r] = g.upTo(g.tree.maxNominal[r])
					}
				}
			}
			gr.flavors = append(gr.flavors, fq)
		}
		n.groups = append(n.groups, gr)
	}
}

// flavoredPod draws one pod (a pod set) of a workload of ClusterQueue n in a flavored tree:
// requests for some of the resources n covers, and for each of n's groups a flavor it lists,
// charged for the group's resources the pod requests (deviation 7 of SEMANTICS §5.8.10 is
// avoided: a requested covered resource always has a flavor). A resource requested at 0 gets no
// flavor: Kueue counts a workload with a flavor-resource in its admission as using it even at 0,
// and so as a preemption candidate for it, where SEMANTICS §5.8.8 requires a positive amount.
func (g *generator) flavoredPod(n *node, load float64) (quota, [numResources]string) {
	var p quota
	var f [numResources]string
	for _, gr := range n.groups {
		fq := &gr.flavors[g.rng.IntN(len(gr.flavors))]
		for _, r := range gr.covered {
			if !g.chance(0.8) {
				continue
			}
			scale := max(fq.nominal[r], g.tree.maxNominal[r]/16)
			p[r] = g.upTo(int64(float64(scale) * load / 2))
			if p[r] > 0 {
				f[r] = fq.name
			}
		}
	}
	return p, f
}

// covers reports whether node n covers resource r (a legacy quota entry, or a group of a
// flavored node).
func (n *node) covers(r int) bool {
	for _, gr := range n.groups {
		if slices.Contains(gr.covered, r) {
			return true
		}
	}
	return n.covered[r]
}

// flavorNamesOf lists every flavor of the tree, in name order.
func (t *tree) flavorNamesOf() []string {
	var names []string
	for _, k := range t.kinds {
		names = append(names, k.flavors...)
	}
	sort.Strings(names)
	return names
}
