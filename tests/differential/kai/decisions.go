package main

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"arbiter.dev/tests/differential/internal/arbiterjson"
	"arbiter.dev/tests/differential/internal/verdict"
)

// The decision comparison: per seed, a generated cluster (cluster.go) is scheduled by KAI's own
// actions (topology.go) and by `arbiter schedule`, and every pod's outcome is compared: pending,
// bound now or pipelined and on which node, moved, or evicted and by which action.

// kaiRuns is how many times KAI schedules each cluster: its answer may depend on Go map order.
const kaiRuns = 4

// decisionNow is the snapshot's clock on arbiter's side; test_utils' clock is time.Now(), and
// only differences between times matter.
var decisionNow = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

// request writes the cluster as an arbiter ScheduleRequest under the KAI model, with the
// settings of KAI's test session (test_utils.CreateFakeSession: consolidation with no cap on
// preemptees, consolidating reclaim) and KAI's default actions.
func (c *cluster) request() *arbiterjson.ScheduleRequest {
	rng := rand.New(rand.NewPCG(uint64(c.seed), 0x73687566))
	unlimited := int32(-1)
	yes := true
	req := &arbiterjson.ScheduleRequest{Policy: arbiterjson.Policy{
		Actions:                    []string{"ACTION_ALLOCATE", "ACTION_CONSOLIDATE", "ACTION_RECLAIM", "ACTION_PREEMPT"},
		MaxConsolidationPreemptees: &unlimited,
		ConsolidatingReclaim:       &yes,
	}}
	s := &req.Snapshot
	s.Now = arbiterjson.Timestamp(decisionNow)
	for _, i := range rng.Perm(len(c.nodes)) {
		n := &c.nodes[i]
		s.Nodes = append(s.Nodes, arbiterjson.Node{
			Name:        n.name,
			Allocatable: map[string]float64{"cpu": n.cpu, "memory": nodeMemory, "nvidia.com/gpu": float64(n.gpus)},
			Labels:      map[string]string{poolLabel: n.label()},
			Taints:      n.arbiterTaints(),
		})
	}
	// KAI's test queues: GPU quotas as given, cpu and memory -1 (deserved, limit) with weight 1;
	// a limit of 0 means none; a department's GPU over-quota weight is its deserved GPUs.
	queue := func(q *cqueue, weight float64) arbiterjson.Queue {
		limit := q.limit
		if limit == 0 {
			limit = -1
		}
		return arbiterjson.Queue{
			Name:            q.name,
			Parent:          q.parent,
			Deserved:        map[string]float64{"cpu": -1, "memory": -1, "nvidia.com/gpu": q.deserved},
			Limit:           map[string]float64{"cpu": -1, "memory": -1, "nvidia.com/gpu": limit},
			OverQuotaWeight: map[string]float64{"cpu": 1, "memory": 1, "nvidia.com/gpu": weight},
			Priority:        int32(q.priority),
			CreationTime:    arbiterjson.Timestamp(decisionNow.Add(time.Duration(q.index) * time.Minute)),
		}
	}
	for _, i := range rng.Perm(len(c.departments)) {
		s.Queues = append(s.Queues, queue(&c.departments[i], c.departments[i].deserved))
	}
	for _, i := range rng.Perm(len(c.queues)) {
		s.Queues = append(s.Queues, queue(&c.queues[i], c.queues[i].weight))
	}
	for _, i := range rng.Perm(len(c.jobs)) {
		j := &c.jobs[i]
		g := arbiterjson.PodGroup{
			Name:         j.name,
			Queue:        j.queue,
			Priority:     j.priority,
			MinMember:    int32(j.gang()),
			CreationTime: arbiterjson.Timestamp(decisionNow.Add(-time.Duration(j.age) * time.Minute)),
		}
		for t, task := range j.tasks {
			p := arbiterjson.Pod{
				Name:     fmt.Sprintf("%s-%d", j.name, t),
				Requests: map[string]float64{"cpu": j.milliCPU(), "memory": podMemory, "nvidia.com/gpu": j.gpus},
				NodeName: task.node,
			}
			switch task.state {
			case "Running":
				p.Phase = "POD_PHASE_RUNNING"
			case "Releasing":
				p.Phase = "POD_PHASE_RELEASING"
			}
			if j.pool != "" {
				p.NodeSelector = map[string]string{poolLabel: j.pool}
			}
			p.Tolerations = j.arbiterTolerations()
			g.Pods = append(g.Pods, p)
		}
		s.PodGroups = append(s.PodGroups, g)
	}
	c.minRuntimesToRequest(req)
	return req
}

// arbiterOutcome reads arbiter's response as pod outcomes (see podOutcome).
func (c *cluster) arbiterOutcome(resp *arbiterjson.ScheduleResponse) (outcome, error) {
	out := outcome{}
	phase := map[string]string{}
	for _, j := range c.jobs {
		for t, task := range j.tasks {
			key := fmt.Sprintf("%s/%s-%d", j.name, j.name, t)
			phase[key] = task.state
			out[key] = podOutcome(strings.ToLower(task.state))
		}
	}
	bound := map[string]arbiterjson.Binding{}
	for _, b := range resp.Bindings {
		key := b.PodGroup + "/" + b.Pod
		if _, ok := phase[key]; !ok {
			return nil, fmt.Errorf("arbiter bound an unknown pod %s", key)
		}
		bound[key] = b
		if b.AfterEvictions {
			out[key] = podOutcome("pipelined@" + b.Node)
		} else {
			out[key] = podOutcome("bound@" + b.Node)
		}
	}
	for _, e := range resp.Evictions {
		key := e.PodGroup + "/" + e.Pod
		if phase[key] != "Running" {
			return nil, fmt.Errorf("arbiter evicted %s, which is not RUNNING", key)
		}
		switch e.Reason {
		case "CONSOLIDATION":
			b, ok := bound[key]
			if !ok {
				return nil, fmt.Errorf("arbiter moved %s without binding it", key)
			}
			out[key] = podOutcome("moved@" + b.Node)
		case "FAIR_SHARE_RECLAIM", "QUOTA_RECLAIM":
			out[key] = "evicted:reclaim"
		case "PRIORITY_PREEMPTION":
			out[key] = "evicted:preempt"
		default:
			return nil, fmt.Errorf("arbiter evicted %s for %s", key, e.Reason)
		}
	}
	return out, nil
}

// withoutNodes is the outcome with node names dropped.
func (o outcome) withoutNodes() outcome {
	m := outcome{}
	for k, v := range o {
		if i := strings.IndexByte(string(v), '@'); i >= 0 {
			v = v[:i]
		}
		m[k] = v
	}
	return m
}

func sameOutcome(a, b outcome) bool { return maps.Equal(a, b) }

// diffOutcome lists the pods on which a (KAI) and b (arbiter) differ.
func diffOutcome(a, b outcome) []string {
	keys := slices.Sorted(maps.Keys(a))
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	var out []string
	for _, k := range keys {
		if a[k] != b[k] {
			out = append(out, fmt.Sprintf("%s: KAI %s, arbiter %s", k, a[k], b[k]))
		}
	}
	return out
}

// decisionCounts are the decision comparison's finer counts.
type decisionCounts struct {
	podsBound map[string]int // KAI's first run, by kind of outcome
	classes   map[string]int // failures, by class
}

func newDecisionCounts() *decisionCounts {
	return &decisionCounts{classes: map[string]int{}, podsBound: map[string]int{}}
}

// add adds other's counts to c's.
func (c *decisionCounts) add(other *decisionCounts) {
	for k, n := range other.podsBound {
		c.podsBound[k] += n
	}
	for k, n := range other.classes {
		c.classes[k] += n
	}
}

// A seed's cluster, checked.
type checkedSeed struct {
	cluster *cluster
	outcome verdict.Outcome
	counts  *decisionCounts
}

// seedsAtOnce is how many seeds runDecisions checks at once: a check mostly waits (for KAI's
// session informers and for the arbiter process), so a few overlap on two cores.
const seedsAtOnce = 4

// checkSeedsConcurrently checks the clusters of the run's seeds, seedsAtOnce at a time, and
// returns one channel per seed, in seed order, that receives its result. The results are read in
// seed order, so the summary, the kept requests and the shrinking (done by the reader, one seed at
// a time) are those of a run one seed after another.
func checkSeedsConcurrently(flags verdict.Flags, feat features) []chan checkedSeed {
	if flags.Seeds > inProcessSeeds {
		return checkSeedsInChildren(flags, feat)
	}
	return checkSeedsInProcess(flags, feat)
}

// checkSeedsInProcess is checkSeedsConcurrently in this process.
func checkSeedsInProcess(flags verdict.Flags, feat features) []chan checkedSeed {
	out := make([]chan checkedSeed, flags.Seeds)
	slots := make(chan struct{}, seedsAtOnce)
	for i := range out {
		out[i] = make(chan checkedSeed, 1)
	}
	go func() {
		for i := range out {
			slots <- struct{}{}
			go func() {
				defer func() { <-slots }()
				c := generateCluster(flags.First+int64(i), feat)
				counts := newDecisionCounts()
				out[i] <- checkedSeed{c, c.checkDecisions(flags.CLI, counts), counts}
			}()
		}
	}()
	return out
}

// checkDecisions schedules the cluster on both sides and compares the outcomes.
func (c *cluster) checkDecisions(cli string, counts *decisionCounts) verdict.Outcome {
	req := c.request()
	resp, err := arbiterjson.Schedule(cli, req)
	if err != nil {
		return verdict.Outcome{Failure: err.Error()}
	}
	arb, err := c.arbiterOutcome(resp)
	if err != nil {
		return verdict.Outcome{Failure: err.Error()}
	}
	// The runs go in parallel: a session spends most of its time waiting for test_utils'
	// informers to sync, not computing.
	runs := make([]outcome, kaiRuns)
	taken := make([][]string, kaiRuns)
	errs := make([]error, kaiRuns)
	var wg sync.WaitGroup
	for i := range kaiRuns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runs[i], taken[i], errs[i] = c.runKAI(false)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			if kaiSolverPanic(err) {
				return kaiPanicked
			}
			return verdict.Outcome{Failure: err.Error()}
		}
	}
	if counts != nil {
		for _, v := range runs[0] {
			kind := string(v)
			if i := strings.IndexByte(kind, '@'); i >= 0 {
				kind = kind[:i]
			}
			counts.podsBound[kind]++
		}
	}
	o := judge(c, arb, runs)
	o = c.placementOutcome(cli, resp, arb, runs, o)
	if o.Failure != "" && slices.ContainsFunc(taken, func(t []string) bool { return len(t) > 0 }) {
		return boundThenTakenOutcome
	}
	// One observed KAI run serves both signatures below ((a) within one action, (o)).
	var seen *kaiObservation
	observe := func() *kaiObservation {
		if seen == nil {
			seen = c.observeKAI()
			if seen == nil {
				seen = &kaiObservation{}
			}
		}
		return seen
	}
	if o.Failure != "" && len(observe().placedTaken) > 0 {
		return boundThenTakenOutcome
	}
	if o.Failure != "" && c.rebuiltRunTakesAndAgrees(arb) {
		return boundThenTakenOutcome
	}
	if o.Failure != "" {
		variants, subsets, free := c.victimlessVariants(cli, req, resp, arb)
		for _, v := range variants {
			if !isFailure(judge(c, v, runs)) {
				return victimlessOutcome
			}
		}
		for _, v := range subsets {
			if matchesARun(v, runs) {
				return victimlessOutcome
			}
		}
		if c.victimlessRerunAgrees(cli, resp, arb, runs, nil, free) {
			return victimlessOutcome
		}
		if victimlessVictimForm(free, arb, runs) {
			return victimlessOutcome
		}
		if c.victimlessPinnedAgrees(cli, free, arb, runs) {
			return victimlessOutcome
		}
		if c.victimlessRerunOnRebuilt(cli, resp, arb, free) {
			return victimlessOutcome
		}
	}
	if o.Failure != "" && (c.explainPartialVictim(arb, runs) || c.movesKAICannotReplace(resp, arb)) {
		return partialVictimOutcome
	}
	if o.Failure != "" && observe().deallocated.evictsTwice() {
		return doubleEvictionOutcome
	}
	if o.Failure != "" {
		if _, attempts, err := arbiterjson.ScheduleTrace(cli, c.request()); err != nil {
			return verdict.Outcome{Failure: "arbiter --trace: " + err.Error()}
		} else if c.victimsNotLastPods(attempts) {
			return byNodeJobOutcome
		}
	}
	if o.Failure != "" && counts != nil {
		counts.classes[classify(runs[0], arb)]++
	}
	return o
}

// kaiPanicked is the outcome of a cluster on which KAI's actions panic: left out and counted.
var kaiPanicked = verdict.Outcome{Failure: "KAI panicked"}

// isFailure: the outcome is a divergence, not a seed left out.
func isFailure(o verdict.Outcome) bool {
	return o.Failure != "" && o.Failure != kaiPanicked.Failure && o.Failure != boundThenTakenOutcome.Failure &&
		o.Failure != victimlessOutcome.Failure && o.Failure != partialVictimOutcome.Failure &&
		o.Failure != byNodeJobOutcome.Failure && o.Failure != doubleEvictionOutcome.Failure
}

// victimlessOutcome is the outcome of a cluster on which arbiter and KAI differ only because an
// eviction action of arbiter's placed pods without victims (SEMANTICS §4.8: try(part, R) also
// when R = ∅), which KAI's solver never does: left out and counted (docs/conformance.md,
// "Decisions: KAI", spec question (b)).
var victimlessOutcome = verdict.Outcome{Failure: "arbiter placed pods without victims in an eviction action"}

// victimlessVariants returns arbiter's outcome with pods that an eviction action may have placed
// without victims set back to pending. The candidates are the pods that a run of ALLOCATE alone
// leaves PENDING and that the full run pipelines. The variants are: every candidate of every
// group that no eviction names as its preemptor (the unit needed none), and, per group, the last
// k candidates in pod order for each k (an elastic group that arbiter re-entered after its unit
// was placed, SEMANTICS §4.3, and that grew without victims; KAI's eviction actions try each job
// once), alone and together with the first variant. None when there are no candidates.
func (c *cluster) victimlessVariants(cli string, req *arbiterjson.ScheduleRequest, resp *arbiterjson.ScheduleResponse, arb outcome) (variants, subsets []outcome, free map[string]bool) {
	preemptors := map[string]bool{}
	for _, e := range resp.Evictions {
		preemptors[e.PreemptorPodGroup] = true
	}
	only := *req
	only.Policy.Actions = []string{"ACTION_ALLOCATE"}
	first, err := arbiterjson.Schedule(cli, &only)
	if err != nil {
		return nil, nil, nil
	}
	allocated := map[string]bool{}
	for _, b := range first.Bindings {
		allocated[b.PodGroup+"/"+b.Pod] = true
	}
	byGroup := map[string][]string{}
	for _, b := range resp.Bindings {
		key := b.PodGroup + "/" + b.Pod
		if !allocated[key] && strings.HasPrefix(string(arb[key]), "pipelined@") {
			byGroup[b.PodGroup] = append(byGroup[b.PodGroup], key)
		}
	}
	if len(byGroup) == 0 {
		return nil, nil, nil
	}
	free = map[string]bool{}
	for g := range byGroup {
		free[g] = !preemptors[g]
	}
	pending := func(keys []string, into outcome) {
		for _, k := range keys {
			into[k] = "pending"
		}
	}
	all := maps.Clone(arb)
	groups := slices.Sorted(maps.Keys(byGroup))
	for _, g := range groups {
		slices.Sort(byGroup[g])
		if !preemptors[g] {
			pending(byGroup[g], all)
		}
	}
	// Each group's growth alone, and with the other groups' victimless units: both can happen
	// in one cycle (seed 91: a unit of another queue placed on room a preemptor freed, and the
	// preemptor grown on the rest).
	variants = []outcome{all}
	for _, g := range groups {
		keys := byGroup[g]
		for k := 1; k <= len(keys); k++ {
			for _, base := range []outcome{arb, all} {
				v := maps.Clone(base)
				pending(keys[len(keys)-k:], v)
				variants = append(variants, v)
			}
		}
	}
	return variants, victimlessSubsets(arb, groups, byGroup, preemptors), free
}

// victimlessSubsets are arbiter's outcome with the candidates of some, not all, of the groups
// no eviction names as preemptor set back to pending (seed 103: KAI places one such unit, on
// room its own queue's reclaim freed, and not the others). At most 2^8 of them; they are
// matched against KAI's runs directly.
func victimlessSubsets(arb outcome, groups []string, byGroup map[string][]string, preemptors map[string]bool) []outcome {
	var free []string
	for _, g := range groups {
		if !preemptors[g] {
			free = append(free, g)
		}
	}
	if len(free) < 2 || len(free) > 8 {
		return nil
	}
	var out []outcome
	for mask := 1; mask < 1<<len(free)-1; mask++ {
		v := maps.Clone(arb)
		for i, g := range free {
			if mask&(1<<i) != 0 {
				for _, k := range byGroup[g] {
					v[k] = "pending"
				}
			}
		}
		out = append(out, v)
	}
	return out
}

// matchesARun: the outcome is one of KAI's runs, or differs from one only in nodes where KAI's
// runs differ among themselves (rule map-order's test).
func matchesARun(o outcome, runs []outcome) bool {
	for _, r := range runs {
		if sameOutcome(r, o) || sameOutcome(r.withoutNodes(), o.withoutNodes()) && !allSame(runs) {
			return true
		}
	}
	return false
}

// boundThenTakenOutcome is the outcome of a cluster on which arbiter and KAI differ and some
// KAI run moved or evicted a pod that an earlier action of the same cycle had bound or
// pipelined: left out and counted (docs/conformance.md, "Decisions: KAI", spec question (a)).
var boundThenTakenOutcome = verdict.Outcome{Failure: "KAI took a pod it bound in the same cycle"}

// judge compares arbiter's outcome with KAI's runs and applies the exclusion rules.
func judge(c *cluster, arb outcome, runs []outcome) verdict.Outcome {
	matched := 0
	for _, r := range runs {
		if sameOutcome(r, arb) {
			matched++
		}
	}
	switch {
	case matched == len(runs):
		return verdict.Outcome{}
	case matched > 0:
		return verdict.Outcome{Rules: []string{ruleDecisionMapOrder}}
	}
	// KAI's node choice may be nondeterministic where its runs disagree on nodes only.
	stripped := arb.withoutNodes()
	for _, r := range runs {
		if sameOutcome(r.withoutNodes(), stripped) && !allSame(runs) {
			return verdict.Outcome{Rules: []string{ruleDecisionMapOrder}}
		}
	}
	if names := c.explainDecision(arb, runs); len(names) > 0 {
		return verdict.Outcome{Rules: names}
	}
	if names := c.explainEviction(arb, runs); len(names) > 0 {
		return verdict.Outcome{Rules: names}
	}
	diff := diffOutcome(runs[0], arb)
	class := classify(runs[0], arb)
	return verdict.Outcome{Failure: fmt.Sprintf("[%s] %d of %d KAI runs differ from each other; KAI's first run vs arbiter:\n  %s",
		class, distinctOutcomes(runs)-1, len(runs), strings.Join(diff, "\n  "))}
}

func allSame(runs []outcome) bool {
	for _, r := range runs[1:] {
		if !sameOutcome(r, runs[0]) {
			return false
		}
	}
	return true
}

func distinctOutcomes(runs []outcome) int {
	seen := map[string]bool{}
	for _, r := range runs {
		seen[fmt.Sprint(r)] = true
	}
	return len(seen)
}

// classify names a divergence by the kinds of outcome that differ, e.g.
// "KAI bound / arbiter pending".
func classify(kai, arb outcome) string {
	kinds := map[string]bool{}
	strip := func(v podOutcome) string {
		s := string(v)
		if i := strings.IndexByte(s, '@'); i >= 0 {
			s = s[:i]
		}
		return s
	}
	for k, v := range kai {
		if arb[k] != v {
			a, b := strip(v), strip(arb[k])
			if a == b {
				kinds["node of "+a] = true
			} else {
				kinds["KAI "+a+" / arbiter "+b] = true
			}
		}
	}
	names := slices.Sorted(maps.Keys(kinds))
	return strings.Join(names, ", ")
}

// runDecisions runs the decision comparison on the flags' seeds.
func runDecisions(flags verdict.Flags, feat features) *verdict.Tally {
	tally := verdict.NewTally("KAI decisions vs github.com/NVIDIA/KAI-scheduler v0.12.0 actions")
	counts := newDecisionCounts()
	start := time.Now()
	jobs, pods, leftOut, leftOutTaken, leftOutVictimless, leftOutPartial, leftOutByNode, leftOutTwice := 0, 0, 0, 0, 0, 0, 0, 0
	checked := checkSeedsConcurrently(flags, feat)
	for seed := flags.First; seed < flags.First+flags.Seeds; seed++ {
		done := <-checked[seed-flags.First]
		c, outcome := done.cluster, done.outcome
		counts.add(done.counts)
		jobs += len(c.jobs)
		for _, j := range c.jobs {
			pods += len(j.tasks)
		}
		if outcome.Failure == kaiPanicked.Failure {
			leftOut++
			if flags.Verbose {
				fmt.Printf("seed %d: left out (KAI panics)\n", seed)
			}
			continue
		}
		if outcome.Failure == victimlessOutcome.Failure {
			leftOutVictimless++
			if flags.Verbose {
				fmt.Printf("seed %d: left out (arbiter placed pods without victims in an eviction action)\n", seed)
			}
			continue
		}
		if outcome.Failure == partialVictimOutcome.Failure {
			leftOutPartial++
			if flags.Verbose {
				fmt.Printf("seed %d: left out (KAI re-places only part of a victim's evicted pods)\n", seed)
			}
			continue
		}
		if outcome.Failure == byNodeJobOutcome.Failure {
			leftOutByNode++
			if flags.Verbose {
				fmt.Printf("seed %d: left out (KAI's by-node scenario takes every drawn pod of a victim job)\n", seed)
			}
			continue
		}
		if outcome.Failure == doubleEvictionOutcome.Failure {
			leftOutTwice++
			if flags.Verbose {
				fmt.Printf("seed %d: left out (KAI evicts a victim twice and lowers its queue twice)\n", seed)
			}
			continue
		}
		if outcome.Failure == boundThenTakenOutcome.Failure {
			leftOutTaken++
			if flags.Verbose {
				fmt.Printf("seed %d: left out (KAI takes a pod it bound in the same cycle)\n", seed)
			}
			continue
		}
		tally.Add(seed, outcome)
		if outcome.Failure != "" || len(outcome.Rules) > 0 {
			body, err := arbiterjson.EncodeSchedule(c.request())
			tally.KeepRequest(flags.KeepDir, fmt.Sprintf("kai-decisions-seed-%d.json", seed), body, err, outcome.Failure != "")
		}
		if outcome.Failure != "" && flags.KeepDir != "" {
			small := c.shrink(func(s *cluster) bool { return isFailure(s.checkDecisions(flags.CLI, nil)) })
			body, err := arbiterjson.EncodeSchedule(small.request())
			tally.KeepShrunk(flags.KeepDir, fmt.Sprintf("kai-decisions-seed-%d-shrunk.json", seed), body, err,
				func() string { return small.checkDecisions(flags.CLI, nil).Failure })
		}
		if flags.Verbose {
			fmt.Printf("seed %d: %d nodes, %d queues, %d jobs: %s\n", seed, len(c.nodes), len(c.queues), len(c.jobs), describeOutcome(outcome))
		}
	}
	tally.Units["left out: KAI panics (nil scenario in its solver)"] = leftOut
	tally.Units["left out: KAI moves or evicts a pod it bound in the same cycle"] = leftOutTaken
	tally.Units["left out: arbiter places pods without victims in an eviction action"] = leftOutVictimless
	tally.Units["left out: KAI re-places only part of a victim's evicted pods"] = leftOutPartial
	tally.Units["left out: arbiter's victims of a group are not its last pods (KAI's by-node scenario)"] = leftOutByNode
	tally.Units["left out: KAI evicts a victim twice and lowers its queue twice"] = leftOutTwice
	tally.Units["jobs compared"] = jobs
	tally.Units["pods compared"] = pods
	for kind, n := range counts.podsBound {
		tally.Units["pods "+kind+" (KAI)"] = n
	}
	for class, n := range counts.classes {
		tally.Units["failed: "+class] = n
	}
	tally.Print(stdout)
	fmt.Fprintf(stdout, "  seeds %d..%d in %.1fs\n", flags.First, flags.First+flags.Seeds-1, time.Since(start).Seconds())
	return tally
}

// shrink returns the smallest cluster it finds that still fails: greedily, until nothing more
// can go, it drops jobs, pending tasks of jobs, nodes no pod is on, leaf queues without jobs and
// departments without queues.
func (c *cluster) shrink(fails func(*cluster) bool) *cluster {
	cur := c.clone()
	try := func(next *cluster) bool {
		if fails(next) {
			cur = next
			return true
		}
		return false
	}
	for progress := true; progress; {
		progress = false
		for i := 0; i < len(cur.jobs); i++ {
			next := cur.clone()
			next.jobs = slices.Delete(next.jobs, i, i+1)
			if try(next) {
				progress = true
				i--
			}
		}
		for i := 0; i < len(cur.jobs); i++ {
			for t := len(cur.jobs[i].tasks) - 1; t >= 0 && len(cur.jobs[i].tasks) > 1; t-- {
				if cur.jobs[i].tasks[t].state != "Pending" {
					continue
				}
				next := cur.clone()
				j := &next.jobs[i]
				j.tasks = slices.Delete(j.tasks, t, t+1)
				if j.minAvailable >= len(j.tasks) {
					j.minAvailable = 0
				}
				if try(next) {
					progress = true
				}
			}
		}
		for i := 0; i < len(cur.nodes); i++ {
			if cur.nodeUsed(cur.nodes[i].name) || len(cur.nodes) == 1 {
				continue
			}
			next := cur.clone()
			next.nodes = slices.Delete(next.nodes, i, i+1)
			if try(next) {
				progress = true
				i--
			}
		}
		for i := 0; i < len(cur.queues); i++ {
			if cur.queueUsed(cur.queues[i].name) || len(cur.queues) == 1 {
				continue
			}
			next := cur.clone()
			next.queues = slices.Delete(next.queues, i, i+1)
			if try(next) {
				progress = true
				i--
			}
		}
		for i := 0; i < len(cur.departments); i++ {
			if cur.departmentUsed(cur.departments[i].name) {
				continue
			}
			next := cur.clone()
			next.departments = slices.Delete(next.departments, i, i+1)
			if try(next) {
				progress = true
				i--
			}
		}
	}
	return cur
}

func (c *cluster) nodeUsed(name string) bool {
	for _, j := range c.jobs {
		for _, t := range j.tasks {
			if t.node == name {
				return true
			}
		}
	}
	return false
}

func (c *cluster) queueUsed(name string) bool {
	for _, j := range c.jobs {
		if j.queue == name {
			return true
		}
	}
	return false
}

func (c *cluster) departmentUsed(name string) bool {
	for _, q := range c.queues {
		if q.parent == name {
			return true
		}
	}
	return false
}

// victimlessRerunAgrees: arbiter, asked again with the pods an eviction action placed without
// victims made unplaceable, agrees with KAI (seed 210: a victimless unit of one queue takes the
// room another queue's unit, placed in KAI through a restored victim, needs). The pods are the
// ones arbiter pipelines and KAI's first run leaves pending, of groups no eviction names as
// preemptor or of which KAI places some pod; they grow with each answer while new ones appear.
// With free (the groups of arbiter's victimless units, see victimlessVictimForm), an answer also
// agrees when what is left is (b)'s victim form: both forms in one cycle (seed 31: KAI leaves
// j09 and j18 pending, no victim to simulate, and moves j10 to place j06, which arbiter places
// on room j11's preemption freed).
func (c *cluster) victimlessRerunAgrees(cli string, resp *arbiterjson.ScheduleResponse, arb outcome, runs []outcome, pins map[string]string, free map[string]bool) bool {
	return c.victimlessRerun(cli, resp, arb, runs, pins, func(o outcome) bool {
		return matchesARun(o, runs) || free != nil && victimlessVictimForm(free, o, runs)
	})
}

// victimlessRerunAgreesWith is victimlessRerunAgrees against one run of the rebuilt eviction
// actions, an answer also accepted when every pod on which it differs from that run belongs to
// a group of partial (see victimlessRerunOnRebuilt).
func (c *cluster) victimlessRerunAgreesWith(cli string, resp *arbiterjson.ScheduleResponse, arb, run outcome, free, partial map[string]bool) bool {
	runs := []outcome{run}
	return c.victimlessRerun(cli, resp, arb, runs, nil, func(o outcome) bool {
		if matchesARun(o, runs) || victimlessVictimForm(free, o, runs) {
			return true
		}
		keys := diffKeys(run, o)
		for _, key := range keys {
			if !partial[key[:strings.IndexByte(key, '/')]] {
				return false
			}
		}
		return len(keys) > 0
	})
}

// victimlessRerun is the loop of victimlessRerunAgrees: arbiter asked again, with the pods it
// pipelines and runs[0] leaves pending (of groups no eviction names as preemptor or of which
// runs[0] places some pod) made unplaceable, while new ones appear, until accept takes an answer.
func (c *cluster) victimlessRerun(cli string, resp *arbiterjson.ScheduleResponse, arb outcome, runs []outcome, pins map[string]string, accept func(outcome) bool) bool {
	pods := map[string]bool{}
	add := func(r *arbiterjson.ScheduleResponse, o outcome) bool {
		preemptors := map[string]bool{}
		for _, e := range r.Evictions {
			preemptors[e.PreemptorPodGroup] = true
		}
		// A preemptor's pods count when KAI places some pod of the group: the unit is placed on
		// both sides and arbiter grew the group further in the action (spec question (c)).
		placedByKAI := map[string]bool{}
		for key, v := range runs[0] {
			if strings.HasPrefix(string(v), "pipelined@") || strings.HasPrefix(string(v), "bound@") {
				placedByKAI[key[:strings.IndexByte(key, '/')]] = true
			}
		}
		grew := false
		for key, v := range o {
			group := key[:strings.IndexByte(key, '/')]
			victimless := !preemptors[group] || placedByKAI[group]
			if victimless && strings.HasPrefix(string(v), "pipelined@") && runs[0][key] == "pending" && !pods[key] {
				pods[key], grew = true, true
			}
		}
		return grew
	}
	if !add(resp, arb) {
		return false
	}
	for range len(c.jobs) {
		req := c.request()
		pin(req, pins)
		unplaceable(req, pods)
		r, err := arbiterjson.Schedule(cli, req)
		if err != nil {
			return false
		}
		o, err := c.arbiterOutcome(r)
		if err != nil {
			return false
		}
		if accept(o) {
			return true
		}
		if !add(r, o) {
			return false
		}
	}
	return false
}

// victimlessVictimForm: the divergence is (b)'s victim form for whole units. arbiter placed
// units of some groups without victims in an eviction action (free: pipelined, pending after
// ALLOCATE alone, no eviction naming the group); KAI's solver, simulating nothing without a
// victim, drew one for them and placed them too (seed 243: KAI moves j04-1 to place j08-0 on
// its node, arbiter pipelines j08-0 on room freed earlier). True when, in some KAI run, every
// pod on which it and arbiter differ is a pod of such a group placed on both sides, or a pod
// KAI moved or evicted that arbiter leaves running, and there is at least one of the latter.
func victimlessVictimForm(free map[string]bool, arb outcome, runs []outcome) bool {
	placed := func(v podOutcome) bool {
		return strings.HasPrefix(string(v), "pipelined@") || strings.HasPrefix(string(v), "bound@")
	}
	for _, r := range runs {
		taken, ok := 0, true
		for _, key := range diffKeys(r, arb) {
			group := key[:strings.IndexByte(key, '/')]
			switch {
			case free[group] && placed(r[key]) && placed(arb[key]):
			case arb[key] == "running" && (strings.HasPrefix(string(r[key]), "moved@") || strings.HasPrefix(string(r[key]), "evicted:")):
				taken++
			default:
				ok = false
			}
		}
		if ok && taken > 0 {
			return true
		}
	}
	return false
}

// victimlessPinnedAgrees: arbiter, asked again with the pods of its victimless units (free) that
// KAI placed on another node pinned to KAI's node (a node selector on the node's own label),
// agrees with that KAI run. (b)'s victim form can change the rest of the cycle: where KAI drew
// a victim to place such a unit, the room the unit took elsewhere in arbiter stays free for
// another job (seed 172). Only nodes whose label no other node shares can be pinned.
func (c *cluster) victimlessPinnedAgrees(cli string, free map[string]bool, arb outcome, runs []outcome) bool {
	labels := map[string]int{}
	for _, n := range c.nodes {
		labels[n.label()]++
	}
	for _, r := range runs {
		pins := map[string]string{}
		for key, v := range arb {
			group := key[:strings.IndexByte(key, '/')]
			node, onKAI := strings.CutPrefix(string(r[key]), "pipelined@")
			if !free[group] || !onKAI || !strings.HasPrefix(string(v), "pipelined@") || string(v) == string(r[key]) {
				continue
			}
			if labels[node] != 1 {
				pins = nil
				break
			}
			pins[key] = node
		}
		if len(pins) == 0 {
			continue
		}
		req := c.request()
		pin(req, pins)
		resp, err := arbiterjson.Schedule(cli, req)
		if err != nil {
			continue
		}
		o, err := c.arbiterOutcome(resp)
		if err != nil {
			continue
		}
		// Pinned, and with the victimless pods KAI leaves pending unplaceable (seed 172).
		if matchesARun(o, []outcome{r}) || c.victimlessRerunAgrees(cli, resp, o, []outcome{r}, pins, nil) {
			return true
		}
	}
	return false
}

// pin makes the given pods ("group/pod") select the given value of the pool label (a node's own
// label pins the pod to that node).
func pin(req *arbiterjson.ScheduleRequest, pins map[string]string) {
	if len(pins) == 0 {
		return
	}
	for i := range req.Snapshot.PodGroups {
		g := &req.Snapshot.PodGroups[i]
		for p := range g.Pods {
			if node, ok := pins[g.Name+"/"+g.Pods[p].Name]; ok {
				g.Pods[p].NodeSelector = map[string]string{poolLabel: node}
			}
		}
	}
}

// rebuiltRunTakesAndAgrees: spec question (a) inside the rebuilt eviction actions. A KAI run with
// reclaim and preempt rebuilt as in decision_rules_evict.go took a pod it moved or bound earlier
// in the cycle, and its answer differs from arbiter's only in the nodes of pods both place
// (seed 243: with re-entry, reclaim moves j04-1 from n1 to n0 to place j06-2 on n1, then evicts
// it from n0 for j08; arbiter places j06-2 on n0 and j08-0 on n1, every pod's fate the same).
func (c *cluster) rebuiltRunTakesAndAgrees(arb outcome) bool {
	return anyInBatches(2*len(evictionVariants), func(i int) bool {
		v := c.clone()
		v.rebuilt = evictionVariants[i/2]
		out, taken, err := v.runKAI(i%2 == 1)
		return err == nil && len(taken) > 0 && sameOutcome(out.withoutNodes(), arb.withoutNodes())
	})
}

// anyInBatches reports whether check holds for some i in [0, n), checking explainBatch at a
// time concurrently (each check mostly waits for a KAI session's informers) and stopping after
// the first batch where one holds.
func anyInBatches(n int, check func(i int) bool) bool {
	for first := 0; first < n; first += explainBatch {
		last := min(first+explainBatch, n)
		held := make([]bool, last-first)
		var wg sync.WaitGroup
		for i := first; i < last; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				held[i-first] = check(i)
			}()
		}
		wg.Wait()
		if slices.Contains(held, true) {
			return true
		}
	}
	return false
}

// victimlessRerunOnRebuilt: (b) with (c) and (f) in one cycle. The check of
// victimlessRerunAgrees against the runs of KAI's rebuilt eviction actions (decision_rules_evict.go,
// each change alone and in every combination, with KAI's allocate) that re-enter jobs, accepting also an answer that
// differs from that run only in pods of groups one of KAI's eviction actions both re-placed and
// evicted (spec question (f), partialVictims). Seed 265 of the eviction features: with re-entry,
// KAI's preempt places j12 by evicting j00-2 and j00-3 and moving j00-1 to n1; arbiter places the
// victimless units of j11 and then j10 first (KAI, with no victim to simulate, leaves them
// pending); with those unplaceable, arbiter evicts j00's three drawn pods as one unit, KAI
// re-places one of them.
func (c *cluster) victimlessRerunOnRebuilt(cli string, resp *arbiterjson.ScheduleResponse, arb outcome, free map[string]bool) bool {
	if len(free) == 0 {
		return false
	}
	partial, err := c.partialVictims()
	if err != nil {
		return false
	}
	var variants []rebuiltActions
	for _, variant := range evictionVariants {
		if variant.reenter {
			variants = append(variants, variant)
		}
	}
	return anyInBatches(len(variants), func(i int) bool {
		v := c.clone()
		v.rebuilt = variants[i]
		out, _, err := v.runKAI(false)
		return err == nil && c.victimlessRerunAgreesWith(cli, resp, arb, out, free, partial)
	})
}
