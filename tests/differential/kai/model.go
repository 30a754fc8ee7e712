package main

import (
	"math"
	"sort"
)

// remainderModel selects the two behaviours in which arbiter deliberately departs from KAI's
// remainder phase (SEMANTICS §2.2).
type remainderModel struct {
	// tolerantTies compares remainder fractions as arbiter does: within
	// 1e-9·max(1,|a|,|b|) they are equal and creation time, then name, decide. Otherwise
	// they compare exactly, as KAI's code does.
	tolerantTies bool
	// capUnit hands a remainder queue min(1, left, req' - fs) as arbiter does, instead of
	// KAI's min(1, left).
	capUnit bool
	// noRemainder skips the remainder phase (the tests use it to see that the phase matters).
	noRemainder bool
}

var (
	kaiBehaviour     = remainderModel{}
	arbiterBehaviour = remainderModel{tolerantTies: true, capUnit: true}
)

// model divides total among the siblings in members on resource r following SEMANTICS §2.2,
// with the remainder phase chosen by m, floating sums in name order. The program uses it only
// to decide whether a difference between arbiter and KAI is one of the two documented
// deviations: with kaiBehaviour it must reproduce one of KAI's own answers and with
// arbiterBehaviour arbiter's answer (see compare). The result is aligned with members.
func (t *tree) model(members []int, r int, total float64, m remainderModel) []float64 {
	n := len(members)
	fs := make([]float64, n)
	req := make([]float64, n)
	q := func(j int) *queue { return &t.queues[members[j]] }
	left := total
	for j := range n {
		req[j] = q(j).requestable(r)
		d := q(j).deserved[r]
		if d == -1 {
			d = total
		}
		fs[j] = min(d, req[j])
		left -= fs[j]
	}
	if left <= 0 {
		return fs
	}

	// Priority groups, highest first; members are in name order, and so is each group.
	var priorities []int
	groups := map[int][]int{}
	for j := range n {
		p := q(j).priority
		if _, ok := groups[p]; !ok {
			priorities = append(priorities, p)
		}
		groups[p] = append(groups[p], j)
	}
	sort.Sort(sort.Reverse(sort.IntSlice(priorities)))

	fractions := map[int]map[int]float64{}
	for _, p := range priorities {
		group := groups[p]
		frac := map[int]float64{}
		fractions[p] = frac
		for {
			var weights float64
			for _, j := range group {
				if req[j]-fs[j] > 0 {
					weights += q(j).weight[r]
				}
			}
			if weights == 0 {
				break
			}
			share := map[int]float64{}
			var shares float64
			for _, j := range group {
				if req[j]-fs[j] > 0 {
					w := q(j).weight[r] / weights
					share[j] = math.Max(0, w+t.k*(w-t.normalisedUsage(members[j], r)))
					shares += share[j]
				}
			}
			if shares == 0 {
				break
			}
			round := left
			again := false
			for _, j := range group {
				if left == 0 {
					break
				}
				need := req[j] - fs[j]
				if need <= 0 || q(j).weight[r] == 0 {
					continue
				}
				s := round * (share[j] / shares)
				if need <= s {
					fs[j] += need
					left -= need
					delete(frac, j)
					again = again || need < s
					continue
				}
				x := math.Floor(s)
				fs[j] += x
				left -= x
				if s-x > 0 {
					frac[j] = s - x
				}
			}
			if !again || left == 0 {
				break
			}
		}
	}

	for _, p := range priorities {
		if left <= 0 || m.noRemainder {
			break
		}
		var order []int
		for j := range fractions[p] {
			order = append(order, j)
		}
		sort.Slice(order, func(a, b int) bool {
			fa, fb := fractions[p][order[a]], fractions[p][order[b]]
			qa, qb := q(order[a]), q(order[b])
			if !m.tolerantTies || math.Abs(fa-fb) > 1e-9*math.Max(1, math.Max(math.Abs(fa), math.Abs(fb))) {
				if fa != fb {
					return fa > fb
				}
			}
			if !qa.created.Equal(qb.created) {
				return qa.created.Before(qb.created)
			}
			return qa.name < qb.name
		})
		for _, j := range order {
			if left <= 0 {
				break
			}
			x := math.Min(1, left)
			if m.capUnit {
				x = math.Min(x, req[j]-fs[j])
			}
			if x > 0 {
				fs[j] += x
				left -= x
			}
		}
	}
	return fs
}
