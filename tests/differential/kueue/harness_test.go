package main

import (
	"math"
	"testing"

	"arbiter.dev/tests/differential/internal/arbiterjson"
)

// story3 is the check of SEMANTICS §5.3 (KEP-1714 story 3): org holds cs (one ClusterQueue
// with 300 GPUs), c1 {1a, 1b, 1c with weight 3} and c2 {2a}; 1a and 1b use 30, 1c 90, 2a 150.
func story3() *tree {
	three := 3.0
	t := &tree{nodes: []node{
		{name: "org", parent: -1, children: []int{3, 6, 1}, explicit: true},
		{name: "cs", parent: 0, children: []int{2}, explicit: true},
		{name: "cs-gpus", parent: 1, cq: true, explicit: true},
		{name: "c1", parent: 0, children: []int{4, 5, 7}, explicit: true},
		{name: "1a", parent: 3, cq: true, explicit: true},
		{name: "1b", parent: 3, cq: true, explicit: true},
		{name: "c2", parent: 0, children: []int{8}, explicit: true},
		{name: "1c", parent: 3, cq: true, explicit: true, weight: &three},
		{name: "2a", parent: 6, cq: true, explicit: true},
	}, roots: []int{0}}
	for i, used := range map[int]int64{2: 0, 4: 30, 5: 30, 7: 90, 8: 150} {
		n := &t.nodes[i]
		n.covered[gpu] = true
		n.workloads = []workload{{name: n.name + "-w", pods: []quota{{gpu: used}}, admitted: true}}
	}
	t.nodes[2].nominal[gpu] = 300
	return t
}

func TestKueueGivesTheSpecifiedStory3Shares(t *testing.T) {
	tr := story3()
	shares, err := tr.kueueShares()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"org": 0, "cs": 0, "cs-gpus": 0, "c1": 500, "c2": 500, "1a": 100, "1b": 100, "1c": 100, "2a": 500}
	for i, s := range shares {
		name := tr.nodes[i].name
		if s.weighted != want[name] || s.borrowing != (want[name] > 0) {
			t.Errorf("%s: weighted share %v, borrowing %v; want %v", name, s.weighted, s.borrowing, want[name])
		}
		if want[name] > 0 && s.dominant != "nvidia.com/gpu" {
			t.Errorf("%s: dominant resource %q", name, s.dominant)
		}
		if wantUsage := map[string]int64{"org": 300, "c1": 150, "c2": 150, "1a": 30, "1b": 30, "1c": 90, "2a": 150}[name]; s.usage[gpu] != wantUsage {
			t.Errorf("%s: usage %d, want %d", name, s.usage[gpu], wantUsage)
		}
	}
}

// An answer equal to Kueue's passes; a changed weighted share (by as little as one ulp), flag or
// dominant resource fails.
func TestCompareCatchesEachField(t *testing.T) {
	tr := story3()
	want, err := tr.kueueShares()
	if err != nil {
		t.Fatal(err)
	}
	answer := func() map[string]*arbiterjson.QueueShare {
		m := map[string]*arbiterjson.QueueShare{}
		for i, s := range want {
			m[tr.nodes[i].name] = &arbiterjson.QueueShare{
				Queue:            tr.nodes[i].name,
				WeightedShare:    arbiterjson.Number(s.weighted),
				Borrowing:        s.borrowing,
				DominantResource: s.dominant,
				Allocated:        map[string]arbiterjson.Number{"nvidia.com/gpu": arbiterjson.Number(s.usage[gpu])},
			}
		}
		return m
	}
	var counts shareCounts
	if o := tr.compare(want, answer(), &counts); o.Failure != "" {
		t.Fatalf("Kueue's own answer fails: %s", o.Failure)
	}
	for name, change := range map[string]func(*arbiterjson.QueueShare){
		"weighted share": func(s *arbiterjson.QueueShare) { s.WeightedShare *= 1.001 },
		// The comparison is bit for bit: the next float64 up is a difference too.
		"weighted share by one ulp": func(s *arbiterjson.QueueShare) {
			s.WeightedShare = arbiterjson.Number(math.Nextafter(float64(s.WeightedShare), math.Inf(1)))
		},
		"borrowing": func(s *arbiterjson.QueueShare) { s.Borrowing = !s.Borrowing },
		"dominant":  func(s *arbiterjson.QueueShare) { s.DominantResource = "cpu" },
		"usage":     func(s *arbiterjson.QueueShare) { s.Allocated["nvidia.com/gpu"]++ },
	} {
		got := answer()
		change(got["1c"])
		if o := tr.compare(want, got, &counts); o.Failure == "" {
			t.Errorf("a changed %s went unnoticed", name)
		}
	}
}

// The generator must reach the cases the comparison is about.
func TestGeneratorReachesTheInterestingCases(t *testing.T) {
	var queues, borrowing, infinite, nothingLendable, limitedCohorts, deep int
	for seed := int64(1); seed <= 200; seed++ {
		tr := generate(seed)
		shares, err := tr.kueueShares()
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		for i, s := range shares {
			queues++
			n := &tr.nodes[i]
			switch {
			case s.weighted > 1e308:
				infinite++
			case s.borrowing && s.weighted == 0:
				nothingLendable++
			}
			if s.borrowing {
				borrowing++
			}
			if !n.cq && n.parent >= 0 && (n.hasBorrowing != [numResources]bool{} || n.hasLending != [numResources]bool{}) {
				limitedCohorts++
			}
			if n.cq && n.parent >= 0 && tr.nodes[n.parent].parent >= 0 {
				deep++
			}
		}
	}
	t.Logf("%d queues: %d borrowing, %d with an infinite share, %d borrowing with nothing lendable, %d inner cohorts with limits, %d ClusterQueues two cohorts deep",
		queues, borrowing, infinite, nothingLendable, limitedCohorts, deep)
	if borrowing < queues/5 || infinite < 20 || nothingLendable < 5 || limitedCohorts < 20 || deep < 100 {
		t.Errorf("the generator no longer reaches the interesting cases")
	}
}
