package main

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"time"
)

// The three resources KAI divides (it hard-codes them); arbiter's names for them.
const (
	cpu = iota
	memory
	gpu
	numResources
)

var resourceNames = [numResources]string{"cpu", "memory", "nvidia.com/gpu"}

// quota holds one value per resource.
type quota [numResources]float64

// queue is one node of a generated KAI queue tree. limit -1 means no cap, deserved -1 means
// "the total divided at this level", as in both KAI and arbiter.
type queue struct {
	name     string
	parent   int   // index into tree.queues; -1 for a top-level queue
	children []int // in name order
	deserved quota
	limit    quota
	weight   quota
	// Whether each key is written into the arbiter request. A key left out takes arbiter's
	// default (deserved 0, limit none, weight 1), and is left out only when the value is that
	// default, so both sides see the same number.
	writeDeserved, writeLimit, writeWeight [numResources]bool
	priority                               int
	created                                time.Time
	// request is the subtree's request: RUNNING and PENDING pods (RELEASING pods count in
	// neither side's request, SEMANTICS §0.7).
	request  quota
	usage    quota
	hasUsage bool
}

// requestable is req' of SEMANTICS §2.1: the request, capped by the limit when there is one.
func (q *queue) requestable(r int) float64 {
	if q.limit[r] == -1 {
		return q.request[r]
	}
	return min(q.limit[r], q.request[r])
}

// pod is one generated pod; phase is "PENDING", "RUNNING" or "RELEASING".
type pod struct {
	requests quota
	phase    string
}

type podGroup struct {
	name  string
	leaf  int
	pods  []pod
	phase string
}

// tree is one generated KAI snapshot.
type tree struct {
	seed int64
	// fractional trees use quantities on a grid of 1/4 or 1/2; the others use whole numbers,
	// where KAI's remainder cap provably cannot change a result (see rules.go).
	fractional bool
	// nodeCapacity: the request leaves Snapshot.capacity out, and the capacity is the sum of
	// the schedulable nodes' allocatable (SEMANTICS §0.2); nodeSplit[r] is the first node's
	// part of resource r, the second node has the rest, and a cordoned node adds nothing.
	nodeCapacity  bool
	nodeSplit     quota
	queues        []queue
	top           []int // top-level queues, in name order
	capacity      quota
	usageCapacity quota // 0 = absent: every U is 0 for that resource
	k             float64
	groups        []podGroup
}

// Scales of the generated quantities: the largest capacity of each resource, realistic (cpu in
// millicores, memory in bytes) or small, where whole-unit rounding and the remainder phase
// decide much of every division; and the grid of fractional trees (whole trees use 1).
var (
	realisticCapacity = quota{256000, 1 << 40, 64}
	smallCapacity     = quota{24, 24, 16}
	fractionalGrid    = quota{0.25, 0.5, 0.25}
)

type generator struct {
	rng  *rand.Rand
	tree *tree
	grid quota
}

// on returns a value on the resource's grid, uniformly in [0, hi].
func (g *generator) on(r int, hi float64) float64 {
	steps := int64(hi / g.grid[r])
	if steps <= 0 {
		return 0
	}
	return float64(g.rng.Int64N(steps+1)) * g.grid[r]
}

func (g *generator) chance(p float64) bool { return g.rng.Float64() < p }

// generate builds the tree of a seed: depth 1 to 4, one to six siblings per level, random
// deserved (-1 included), limits, over-quota weights (0 included), priorities, creation times
// with ties, pods in every phase, and historical usage with k > 0 in about half the seeds.
func generate(seed int64) *tree {
	g := &generator{rng: rand.New(rand.NewPCG(uint64(seed), 0x4b4149)), tree: &tree{seed: seed}}
	t := g.tree
	t.fractional = g.chance(0.3)
	t.nodeCapacity = g.chance(0.3)
	for r := range numResources {
		g.grid[r] = 1
		if t.fractional {
			g.grid[r] = fractionalGrid[r]
		}
	}
	maxCapacity := realisticCapacity
	if g.chance(0.4) {
		maxCapacity = smallCapacity
	}
	for r := range numResources {
		if !g.chance(0.08) {
			t.capacity[r] = g.on(r, maxCapacity[r])
		}
	}

	for r := range numResources {
		t.nodeSplit[r] = g.on(r, t.capacity[r])
	}

	depth := 1 + g.rng.IntN(4)
	names := g.rng.Perm(100)
	usePriorities := g.chance(0.4)
	base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	var add func(parent, level int, mustDescend bool) int
	add = func(parent, level int, mustDescend bool) int {
		i := len(t.queues)
		t.queues = append(t.queues, queue{name: fmt.Sprintf("q%02d", names[i]), parent: parent})
		g.quotas(i)
		q := &t.queues[i]
		if usePriorities {
			q.priority = []int{0, 50, 100}[g.rng.IntN(3)]
		}
		q.created = base.Add(time.Duration(g.rng.IntN(5)) * time.Hour)
		if level < depth && (mustDescend || g.chance(0.5)) && len(t.queues) < 40 {
			n := 1 + g.rng.IntN(min(6, 41-len(t.queues)))
			for c := range n {
				child := add(i, level+1, mustDescend && c == 0)
				t.queues[i].children = append(t.queues[i].children, child)
			}
		}
		return i
	}
	for c := range 1 + g.rng.IntN(4) {
		t.top = append(t.top, add(-1, 1, c == 0))
	}
	t.sortChildren()
	g.pods()
	g.usage()
	return t
}

// quotas draws deserved, limit and over-quota weight of queue i.
func (g *generator) quotas(i int) {
	q := &g.tree.queues[i]
	for r := range numResources {
		scale := max(g.tree.capacity[r], g.grid[r]*8)
		switch x := g.rng.Float64(); {
		case x < 0.35:
			q.deserved[r] = 0
		case x < 0.45:
			q.deserved[r] = -1
		default:
			q.deserved[r] = g.on(r, scale*0.6)
		}
		switch x := g.rng.Float64(); {
		case x < 0.55:
			q.limit[r] = -1
		case x < 0.60:
			q.limit[r] = 0
		default:
			q.limit[r] = g.on(r, scale)
		}
		q.weight[r] = []float64{0, 0.5, 1, 1, 2, 3, 4}[g.rng.IntN(7)]
		q.writeDeserved[r] = q.deserved[r] != 0 || g.chance(0.5)
		q.writeLimit[r] = q.limit[r] != -1 || g.chance(0.5)
		q.writeWeight[r] = q.weight[r] != 1 || g.chance(0.5)
	}
}

// pods gives every leaf zero to three pod groups of one to three pods, mostly PENDING, some
// RUNNING and some RELEASING, and sums the requests of the non-releasing ones up the tree.
func (g *generator) pods() {
	t := g.tree
	for i := range t.queues {
		if len(t.queues[i].children) > 0 {
			continue
		}
		// Each leaf asks for little or much of the capacity, so that some queues are
		// satisfied within a round while their siblings are not.
		demand := []float64{0.05, 0.15, 0.3, 0.6, 1.5}[g.rng.IntN(5)]
		for n := range g.rng.IntN(4) {
			pg := podGroup{name: fmt.Sprintf("%s-g%d", t.queues[i].name, n), leaf: i}
			for range 1 + g.rng.IntN(3) {
				var p pod
				switch x := g.rng.Float64(); {
				case x < 0.7:
					p.phase = "PENDING"
				case x < 0.9:
					p.phase = "RUNNING"
				default:
					p.phase = "RELEASING"
				}
				for r := range numResources {
					if g.chance(0.75) {
						p.requests[r] = g.on(r, max(t.capacity[r], g.grid[r]*8)*demand)
					}
				}
				pg.pods = append(pg.pods, p)
				if p.phase == "RELEASING" {
					continue
				}
				for a := i; a != -1; a = t.queues[a].parent {
					for r := range numResources {
						t.queues[a].request[r] += p.requests[r]
					}
				}
			}
			t.groups = append(t.groups, pg)
		}
	}
}

// usage turns time-aware fairness on in about half the seeds: k > 0, a usage capacity per
// resource (sometimes absent), and a usage entry for most queues, parents included.
func (g *generator) usage() {
	t := g.tree
	if !g.chance(0.5) {
		return
	}
	t.k = []float64{0.5, 1, 2, 5}[g.rng.IntN(4)]
	for r := range numResources {
		if g.chance(0.85) {
			t.usageCapacity[r] = float64(1+g.rng.IntN(1000)) * max(t.capacity[r], 1)
		}
	}
	for i := range t.queues {
		q := &t.queues[i]
		if !g.chance(0.7) {
			continue
		}
		q.hasUsage = true
		for r := range numResources {
			if g.chance(0.8) {
				// Now and then above the usage capacity, so U > 1 (not an error).
				q.usage[r] = t.usageCapacity[r] * g.rng.Float64() * []float64{1, 1, 1, 1.5}[g.rng.IntN(4)]
			}
		}
	}
}

func (t *tree) sortChildren() {
	byName := func(s []int) {
		sort.Slice(s, func(a, b int) bool { return t.queues[s[a]].name < t.queues[s[b]].name })
	}
	byName(t.top)
	for i := range t.queues {
		byName(t.queues[i].children)
	}
}

// normalisedUsage is U of SEMANTICS §3: usage / usage_capacity, 0 when either is absent.
func (t *tree) normalisedUsage(i, r int) float64 {
	q := &t.queues[i]
	if !q.hasUsage || t.usageCapacity[r] == 0 {
		return 0
	}
	return q.usage[r] / t.usageCapacity[r]
}
