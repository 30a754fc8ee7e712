package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	config "sigs.k8s.io/kueue/apis/config/v1beta2"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	schedcache "sigs.k8s.io/kueue/pkg/cache/scheduler"
	"sigs.k8s.io/kueue/pkg/scheduler/flavorassigner"
	"sigs.k8s.io/kueue/pkg/scheduler/preemption"
	kueueworkload "sigs.k8s.io/kueue/pkg/workload"

	"arbiter.dev/tests/differential/internal/arbiterjson"
)

// A flavor-assignment scenario (SEMANTICS §5.8.6, §5.8.7) is a flavored cohort tree whose
// admitted workloads hold flavors, ResourceFlavors with node labels and taints, a preemption
// policy per ClusterQueue, and exactly one pending workload, in ClusterQueue x, of one or two
// pod sets of one pod each, with node selectors, tolerations and x's flavor fungibility.
//
// One arbiter Schedule call runs rounds until nothing changes (§5.4). With a single pending
// workload every round has one head, so the tournament, the reservation and re-nomination
// never come into play, and the call is the sequence of Kueue cycles this harness runs: assign
// flavors (Kueue's FlavorAssigner, with the preemption oracle wired as Kueue's scheduler wires
// it); Fit admits; Preempt asks the preemptor for targets, evicts them and starts a new cycle
// on a cache without them (no targets: the workload stays pending); NoFit leaves it pending.
// Each cycle starts at each group's first flavor: the workload carries no LastAssignment,
// which is arbiter's rule (deviation 1 of §5.8.10, avoided rather than excluded).
type scenario struct {
	t       *tree
	x       int // the pending workload's ClusterQueue
	pending workload
	// flavors are the ResourceFlavors, by name.
	flavors map[string]flavorSpec
	// within and reclaim are each ClusterQueue's preemption policy (Kueue's names); fungibility
	// is x's.
	within, reclaim map[string]kueue.PreemptionPolicy
	fungibility     *kueue.FlavorFungibility
}

type flavorSpec struct {
	labels      map[string]string
	taints      []corev1.Taint
	tolerations []corev1.Toleration
}

// The label keys every flavor carries. Kueue matches a pod's node selector only on the keys
// some flavor of the resource group labels, and then requires them of every flavor of the
// group; arbiter ignores a key a flavor does not label (§5.8.5). Every flavor labels every key
// here, so the two rules agree.
var labelValues = map[string][]string{"zone": {"zone-a", "zone-b"}, "arch": {"amd64", "arm64"}}

// generateScenario draws the scenario of a seed: a flavored tree as for the fair-share
// comparison, without its pending workloads; random flavor constraints, priorities and
// policies; then the pending workload in a ClusterQueue with resource groups.
func generateScenario(seed int64) *scenario {
	t := generate(seed)
	for !t.flavored || !hasFlavoredCQ(t) {
		seed += 1 << 32 // another tree of the same stream of seeds
		t = generate(seed)
	}
	g := &generator{rng: rand.New(rand.NewPCG(uint64(seed), 0x666c61766f72)), tree: t}
	s := &scenario{t: t, flavors: map[string]flavorSpec{}, within: map[string]kueue.PreemptionPolicy{}, reclaim: map[string]kueue.PreemptionPolicy{}}
	g.drawFlavors(s)
	var cqs []int
	for _, i := range g.drawPolicies(s) {
		// Kueue v0.17.0's fair-sharing preemption dereferences the cohort of the preemptor's
		// ClusterQueue once its own candidates are exhausted, and crashes for one without a
		// cohort: the pending workload goes to a ClusterQueue in a cohort.
		if len(t.nodes[i].groups) > 0 {
			cqs = append(cqs, i)
		}
	}
	s.x = cqs[g.rng.IntN(len(cqs))]
	// Half the time x and a sibling hold more: flavors near or above their nominal quota make
	// preemption and reclamation common.
	if g.chance(0.5) {
		g.fill(s.x)
		siblings := t.nodes[t.nodes[s.x].parent].children
		if y := siblings[g.rng.IntN(len(siblings))]; y != s.x && t.nodes[y].cq && len(t.nodes[y].groups) > 0 {
			g.fill(y)
		}
	}
	s.fungibility = g.fungibility()
	s.pending = g.pendingWorkload(&t.nodes[s.x])
	return s
}

// drawFlavors gives every flavor of the tree its node labels (every key of labelValues), and
// sometimes a taint and a toleration of it.
func (g *generator) drawFlavors(s *scenario) {
	for _, name := range s.t.flavorNamesOf() {
		f := flavorSpec{labels: map[string]string{}}
		for _, k := range []string{"arch", "zone"} {
			f.labels[k] = labelValues[k][g.rng.IntN(2)]
		}
		if g.chance(0.2) {
			taint := corev1.Taint{Key: "dedicated", Value: []string{"ml", "batch"}[g.rng.IntN(2)],
				Effect: []corev1.TaintEffect{corev1.TaintEffectNoSchedule, corev1.TaintEffectNoExecute, corev1.TaintEffectPreferNoSchedule}[g.rng.IntN(3)]}
			f.taints = append(f.taints, taint)
			if g.chance(0.2) {
				f.tolerations = append(f.tolerations, corev1.Toleration{Key: "dedicated", Operator: corev1.TolerationOpExists})
			}
		}
		s.flavors[name] = f
	}
}

// drawPolicies gives every ClusterQueue its preemption policy and its admitted workloads
// priorities (dropping the tree's pending workloads), and returns the ClusterQueues in a cohort.
func (g *generator) drawPolicies(s *scenario) []int {
	var cqs []int
	for i := range s.t.nodes {
		n := &s.t.nodes[i]
		if !n.cq {
			continue
		}
		s.within[n.name] = []kueue.PreemptionPolicy{kueue.PreemptionPolicyNever, kueue.PreemptionPolicyLowerPriority, kueue.PreemptionPolicyLowerOrNewerEqualPriority}[g.rng.IntN(3)]
		s.reclaim[n.name] = []kueue.PreemptionPolicy{kueue.PreemptionPolicyNever, kueue.PreemptionPolicyLowerPriority, kueue.PreemptionPolicyAny}[g.rng.IntN(3)]
		kept := n.workloads[:0]
		for _, w := range n.workloads {
			if w.admitted {
				w.scheduled = true
				w.priority = int32(g.rng.IntN(3))
				kept = append(kept, w)
			}
		}
		n.workloads = kept
		if n.parent >= 0 {
			cqs = append(cqs, i)
		}
	}
	return cqs
}

// fill adds to ClusterQueue i one or two admitted workloads per flavor of some of its groups,
// each of one pod set charged to that flavor for the group's resources, together about half to
// one and a half times the flavor's nominal quota.
func (g *generator) fill(i int) {
	n := &g.tree.nodes[i]
	for _, gr := range n.groups {
		for _, f := range gr.flavors {
			if !g.chance(0.7) {
				continue
			}
			for range 1 + g.rng.IntN(2) {
				g.clock++
				w := workload{
					name: fmt.Sprintf("%s-f%d", n.name, g.clock), admitted: true, scheduled: true, priority: int32(g.rng.IntN(3)),
					created:  epoch.Add(time.Duration(g.rng.IntN(120)) * time.Second),
					reserved: epoch.Add(2*time.Hour + time.Duration(g.clock)*time.Second),
				}
				var p quota
				var fl [numResources]string
				for _, r := range gr.covered {
					p[r] = g.upTo(max(f.nominal[r], 1) * 3 / 4)
					if p[r] > 0 {
						fl[r] = f.name
					}
				}
				w.pods, w.flavors = []quota{p}, [][numResources]string{fl}
				n.workloads = append(n.workloads, w)
			}
		}
	}
}

func hasFlavoredCQ(t *tree) bool {
	for i := range t.nodes {
		if t.nodes[i].cq && len(t.nodes[i].groups) > 0 && t.nodes[i].parent >= 0 {
			return true
		}
	}
	return false
}

// fungibility draws a flavorFungibility: each policy unset or either value, and a preference
// only where Kueue's validation allows one (both policies TryNextFlavor).
func (g *generator) fungibility() *kueue.FlavorFungibility {
	if g.chance(0.2) {
		return nil
	}
	policies := []kueue.FlavorFungibilityPolicy{"", kueue.MayStopSearch, kueue.TryNextFlavor}
	f := &kueue.FlavorFungibility{WhenCanBorrow: policies[g.rng.IntN(3)], WhenCanPreempt: policies[g.rng.IntN(3)]}
	if f.WhenCanBorrow == kueue.TryNextFlavor && f.WhenCanPreempt != kueue.MayStopSearch && g.chance(0.7) {
		f.WhenCanPreempt = kueue.TryNextFlavor
		f.Preference = ptrTo([]kueue.FlavorFungibilityPreference{kueue.BorrowingOverPreemption, kueue.PreemptionOverBorrowing}[g.rng.IntN(2)])
	}
	return f
}

// pendingWorkload draws the pending workload of ClusterQueue n: one or two pod sets of one pod
// each (deviation 8 of §5.8.10 is avoided), named in Kueue's spec order so that the name order
// is the same (deviation 2 avoided); requests for a few resources, rarely one n does not cover,
// sized against n's quotas so that fitting, borrowing, preempting and not fitting are all
// common; node selectors and tolerations on some pods. No node affinity (deviation 9).
func (g *generator) pendingWorkload(n *node) workload {
	// Created between the admitted workloads (whole seconds), so that some are newer.
	w := workload{name: n.name + "-pending", scheduled: true, priority: int32(g.rng.IntN(4)),
		created: epoch.Add(time.Duration(g.rng.IntN(120))*time.Second + 500*time.Millisecond)}
	var covered []int
	for r := range numResources {
		if n.covers(r) {
			covered = append(covered, r)
		}
	}
	factor := []float64{0.2, 0.5, 0.8, 1.2}[g.rng.IntN(4)]
	for range 1 + g.rng.IntN(2) {
		var p quota
		for _, r := range covered {
			if g.chance(0.6) {
				p[r] = 1 + g.upTo(int64(float64(g.largestNominal(n, r))*factor))
			}
		}
		if p == (quota{}) {
			r := covered[g.rng.IntN(len(covered))]
			p[r] = 1 + g.upTo(int64(float64(g.largestNominal(n, r))*factor))
		}
		if len(covered) < numResources && g.chance(0.08) {
			for r := range numResources {
				if !n.covers(r) {
					p[r] = 1 + g.upTo(g.tree.maxNominal[r]/8)
					break
				}
			}
		}
		w.pods = append(w.pods, p)
		sel := map[string]string{}
		if g.chance(0.15) {
			sel["zone"] = labelValues["zone"][g.rng.IntN(2)]
		}
		if g.chance(0.1) {
			sel["arch"] = labelValues["arch"][g.rng.IntN(2)]
		}
		if g.chance(0.1) {
			sel["disk"] = "ssd" // no flavor labels it: ignored by both
		}
		var tols []arbiterjson.Toleration
		if g.chance(0.4) {
			switch g.rng.IntN(4) {
			case 0:
				tols = append(tols, arbiterjson.Toleration{Key: "dedicated", Operator: "Exists"})
			case 1:
				tols = append(tols, arbiterjson.Toleration{Key: "dedicated", Operator: "Equal", Value: "ml"})
			case 2:
				tols = append(tols, arbiterjson.Toleration{Key: "dedicated", Operator: "Equal", Value: "batch", Effect: "NoSchedule"})
			default:
				tols = append(tols, arbiterjson.Toleration{Operator: "Exists"})
			}
		}
		w.selectors = append(w.selectors, sel)
		w.tolerations = append(w.tolerations, tols)
	}
	return w
}

// largestNominal is the largest nominal quota of resource r over n's flavors, or an eighth of
// the tree's scale when all are small.
func (g *generator) largestNominal(n *node, r int) int64 {
	m := g.tree.maxNominal[r] / 8
	for _, gr := range n.groups {
		for _, f := range gr.flavors {
			m = max(m, f.nominal[r])
		}
	}
	return m
}

// outcome is what one pending workload came to: the mode and flavors of the first nomination,
// and the end state (admitted with its flavors, or pending with a reason) after the cycles.
type outcome struct {
	firstMode string // "Fit", "Preempt" or "NoFit"
	// flavors of the admission: pod set -> resource -> flavor.
	flavors        map[string]map[string]string
	admitted       bool
	afterEvictions bool
	victims        []string // sorted
	reason         string   // pending: the reason code
	detail         string   // Kueue's status message, or arbiter's pending message
	cycles         int
	history        []string               // Kueue: the cycles that evicted
	evictions      []arbiterjson.Eviction // arbiter
	// rerun: Kueue's fair preemption ended a first pass in the state where SEMANTICS §5.5
	// step 6 reruns it (rerun.go); the scenario is left out.
	rerun bool
}

// flavorsOf lists an assignment's flavors: pod set -> resource -> flavor.
func flavorsOf(a *flavorassigner.Assignment) map[string]map[string]string {
	out := map[string]map[string]string{}
	for _, ps := range a.PodSets {
		m := map[string]string{}
		for r, f := range ps.Flavors {
			m[string(r)] = string(f.Name)
		}
		out[string(ps.Name)] = m
	}
	return out
}

// fairSharingConfig is Kueue's fair-sharing configuration: enabled, with the default
// preemption strategies (arbiter's default too: both, in order).
var fairSharingConfig = &config.FairSharing{}

// kueueOutcome runs Kueue's cycles for the scenario's pending workload.
func (s *scenario) kueueOutcome() (*outcome, error) {
	ctx := context.Background()
	rerun := &rerunDetector{x: s.t.nodes[s.x].name + "-"}
	log := rerun.logger()
	now := epoch.Add(24 * time.Hour)
	preemptor := preemption.New(nil, kueueworkload.Ordering{}, nil, fairSharingConfig, false, clocktesting.NewFakeClock(now), nil, nil, nil)
	rfs := map[string]*kueue.ResourceFlavor{}
	for name, f := range s.flavors {
		rfs[name] = &kueue.ResourceFlavor{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: kueue.ResourceFlavorSpec{NodeLabels: f.labels, NodeTaints: f.taints, Tolerations: f.tolerations}}
	}
	cqSpec := func(n *node, spec *kueue.ClusterQueueSpec) {
		spec.Preemption = &kueue.ClusterQueuePreemption{WithinClusterQueue: s.within[n.name], ReclaimWithinCohort: s.reclaim[n.name]}
		if n == &s.t.nodes[s.x] {
			spec.FlavorFungibility = s.fungibility
		}
	}
	xName := kueue.ClusterQueueReference(s.t.nodes[s.x].name)
	out := &outcome{}
	defer s.restore()
	defer func() { out.rerun = rerun.hit }()
	for cycle := 0; ; cycle++ {
		if cycle == 20 {
			return nil, fmt.Errorf("no decision after %d cycles", cycle)
		}
		out.cycles = cycle + 1
		cache := schedcache.New(noObjects{}, schedcache.WithFairSharing(true))
		snap, err := s.t.kueueSnapshot(ctx, cache, rfs, cqSpec)
		if err != nil {
			return nil, err
		}
		cq := snap.ClusterQueue(xName)
		if cq == nil {
			return nil, fmt.Errorf("cluster queue %s is not in Kueue's snapshot (inactive?)", xName)
		}
		info := kueueworkload.NewInfo(s.pendingWorkload())
		info.ClusterQueue = xName
		assigner := flavorassigner.New(info, cq, snap.ResourceFlavors, true, preemption.NewOracle(preemptor, snap), nil)
		a := assigner.Assign(log, nil)
		mode := a.RepresentativeMode()
		if cycle == 0 {
			out.firstMode = mode.String()
		}
		switch mode {
		case flavorassigner.Fit:
			// Kueue's scheduler checks the usage again before admitting (scheduler.go, fits):
			// a Fit nomination that does not fit is skipped and stays pending.
			if !cq.Fits(a.Usage) {
				out.reason, out.detail = "no-longer-fits", "Kueue's scheduler: Workload no longer fits after processing another workload"
				return out, nil
			}
			out.admitted, out.afterEvictions = true, cycle > 0
			out.flavors = flavorsOf(&a)
			return out, nil
		case flavorassigner.Preempt:
			targets := preemptor.GetTargets(log, *info, a, snap)
			if len(targets) == 0 {
				out.reason, out.detail = "no-preemption-candidates", a.Message()
				return out, nil
			}
			var names []string
			for _, target := range targets {
				names = append(names, target.WorkloadInfo.Obj.Name+" ("+target.Reason+")")
				out.victims = append(out.victims, target.WorkloadInfo.Obj.Name)
				s.evict(target.WorkloadInfo.Obj.Name)
			}
			sort.Strings(out.victims)
			out.history = append(out.history, fmt.Sprintf("cycle %d: Preempt on %v, evicting %s", cycle+1, flavorsOf(&a), strings.Join(names, ", ")))
		default:
			out.reason, out.detail = kueueNoFitReason(&a), a.Message()
			return out, nil
		}
	}
}

func (s *scenario) evict(name string) {
	for i := range s.t.nodes {
		for k := range s.t.nodes[i].workloads {
			if s.t.nodes[i].workloads[k].name == name {
				s.t.nodes[i].workloads[k].evicted = true
			}
		}
	}
}

// restore puts the evicted workloads back, so that the arbiter request shows the scenario.
func (s *scenario) restore() {
	for i := range s.t.nodes {
		for k := range s.t.nodes[i].workloads {
			s.t.nodes[i].workloads[k].evicted = false
		}
	}
}

// pendingWorkload is the pending workload as a Kueue Workload: one pod set of count 1 per pod,
// named ps0, ps1, ...
func (s *scenario) pendingWorkload() *kueue.Workload {
	w := &s.pending
	wl := &kueue.Workload{ObjectMeta: metav1.ObjectMeta{
		Name: w.name, Namespace: "default", UID: types.UID(w.name), CreationTimestamp: metav1.NewTime(w.created),
	}}
	wl.Spec.Priority = ptrTo(w.priority)
	for k, p := range w.pods {
		tmpl := corev1.PodTemplateSpec{}
		c := corev1.Container{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{}}}
		for r := range numResources {
			if p[r] > 0 {
				c.Resources.Requests[corev1.ResourceName(resourceNames[r])] = quantity(r, p[r])
			}
		}
		tmpl.Spec.Containers = []corev1.Container{c}
		if len(w.selectors[k]) > 0 {
			tmpl.Spec.NodeSelector = w.selectors[k]
		}
		for _, t := range w.tolerations[k] {
			tmpl.Spec.Tolerations = append(tmpl.Spec.Tolerations, corev1.Toleration{
				Key: t.Key, Operator: corev1.TolerationOperator(t.Operator), Value: t.Value, Effect: corev1.TaintEffect(t.Effect)})
		}
		wl.Spec.PodSets = append(wl.Spec.PodSets, kueue.PodSet{Name: kueue.PodSetReference(fmt.Sprintf("ps%d", k)), Count: 1, Template: tmpl})
	}
	return wl
}

// kueueNoFitReason reads arbiter's reason code off the failing pod set's status in Kueue's
// NoFit assignment: a resource the ClusterQueue does not cover, else the least severe outcome
// over the flavors Kueue names, each flavor's outcome being the most severe of its reasons
// (incompatible: no-matching-flavor; over the maximum capacity: exceeds-max-quota; not enough
// unused quota and no preemption allowed: insufficient-quota). Kueue stops looking at a
// flavor's resources at the first NoFit one, in map order, so this may be less severe than
// arbiter's rule over all of them; the comparison treats a difference in the code alone under
// the NoFit-reason rule (§5.8.10 deviation 5).
func kueueNoFitReason(a *flavorassigner.Assignment) string {
	severity := map[string]int{"no-matching-flavor": 3, "exceeds-max-quota": 2, "insufficient-quota": 1}
	for _, ps := range a.PodSets {
		if ps.RepresentativeMode() != flavorassigner.NoFit {
			continue
		}
		msg := ps.Status.Message()
		if notCovered.MatchString(msg) {
			return "resource-not-covered"
		}
		byFlavor := map[string]string{}
		for _, fr := range flavorReasons {
			for _, m := range fr.re.FindAllStringSubmatch(msg, -1) {
				if severity[fr.code] > severity[byFlavor[m[1]]] {
					byFlavor[m[1]] = fr.code
				}
			}
		}
		best := ""
		for _, code := range byFlavor {
			if best == "" || severity[code] < severity[best] {
				best = code
			}
		}
		if best != "" {
			return best
		}
	}
	return "unknown"
}

// The reasons of Kueue's flavor assigner (flavorassigner.go), by arbiter's code; the group is
// the flavor.
var (
	notCovered    = regexp.MustCompile(`resource \S+ unavailable in ClusterQueue`)
	flavorReasons = []struct {
		code string
		re   *regexp.Regexp
	}{
		{"no-matching-flavor", regexp.MustCompile(`untolerated taint \{[^}]*\} in flavor ([^,\s]+)`)},
		{"no-matching-flavor", regexp.MustCompile(`flavor ([^,\s]+) doesn't match node affinity`)},
		{"exceeds-max-quota", regexp.MustCompile(`insufficient quota for \S+ in flavor ([^,\s]+), previously considered`)},
		{"insufficient-quota", regexp.MustCompile(`insufficient unused quota for \S+ in flavor ([^,\s]+),`)},
	}
)

// request writes the scenario as an arbiter ScheduleRequest under the Kueue model.
func (s *scenario) request() *arbiterjson.ScheduleRequest {
	x := &s.t.nodes[s.x]
	x.workloads = append(x.workloads, s.pending)
	defer func() { x.workloads = x.workloads[:len(x.workloads)-1] }()
	snap := s.t.snapshot(s.resourceFlavors(), func(n *node, q *arbiterjson.Queue) {
		if !n.cq {
			return
		}
		q.KueuePreemption = kueuePreemption(s.within[n.name], s.reclaim[n.name])
		if n == x {
			q.FlavorFungibility = flavorFungibility(s.fungibility)
		}
	})
	snap.Now = arbiterjson.Timestamp(epoch.Add(24 * time.Hour))
	return &arbiterjson.ScheduleRequest{Snapshot: snap, Policy: arbiterjson.Policy{FairnessModel: "FAIRNESS_MODEL_KUEUE"}}
}

// resourceFlavors writes the scenario's ResourceFlavors.
func (s *scenario) resourceFlavors() []arbiterjson.ResourceFlavor {
	var flavors []arbiterjson.ResourceFlavor
	for _, name := range s.t.flavorNamesOf() {
		f := s.flavors[name]
		rf := arbiterjson.ResourceFlavor{Name: name, NodeLabels: f.labels}
		for _, t := range f.taints {
			rf.NodeTaints = append(rf.NodeTaints, arbiterjson.Taint{Key: t.Key, Value: t.Value, Effect: string(t.Effect)})
		}
		for _, t := range f.tolerations {
			rf.Tolerations = append(rf.Tolerations, arbiterjson.Toleration{Key: t.Key, Operator: string(t.Operator), Value: t.Value, Effect: string(t.Effect)})
		}
		flavors = append(flavors, rf)
	}
	return flavors
}

// kueuePreemption writes a ClusterQueue's preemption policy (Kueue's names) as arbiter's.
func kueuePreemption(within, reclaim kueue.PreemptionPolicy) *arbiterjson.KueuePreemption {
	return &arbiterjson.KueuePreemption{
		WithinClusterQueue:  map[kueue.PreemptionPolicy]string{kueue.PreemptionPolicyNever: "WITHIN_CLUSTER_QUEUE_NEVER", kueue.PreemptionPolicyLowerPriority: "WITHIN_CLUSTER_QUEUE_LOWER_PRIORITY", kueue.PreemptionPolicyLowerOrNewerEqualPriority: "WITHIN_CLUSTER_QUEUE_LOWER_OR_NEWER_EQUAL_PRIORITY"}[within],
		ReclaimWithinCohort: map[kueue.PreemptionPolicy]string{kueue.PreemptionPolicyNever: "RECLAIM_WITHIN_COHORT_NEVER", kueue.PreemptionPolicyLowerPriority: "RECLAIM_WITHIN_COHORT_LOWER_PRIORITY", kueue.PreemptionPolicyAny: "RECLAIM_WITHIN_COHORT_ANY"}[reclaim],
	}
}

// flavorFungibility writes a flavorFungibility (nil: none) as arbiter's.
func flavorFungibility(f *kueue.FlavorFungibility) *arbiterjson.FlavorFungibility {
	if f == nil {
		return nil
	}
	out := &arbiterjson.FlavorFungibility{
		WhenCanBorrow:  map[kueue.FlavorFungibilityPolicy]string{kueue.MayStopSearch: "WHEN_CAN_BORROW_MAY_STOP_SEARCH", kueue.TryNextFlavor: "WHEN_CAN_BORROW_TRY_NEXT_FLAVOR"}[f.WhenCanBorrow],
		WhenCanPreempt: map[kueue.FlavorFungibilityPolicy]string{kueue.MayStopSearch: "WHEN_CAN_PREEMPT_MAY_STOP_SEARCH", kueue.TryNextFlavor: "WHEN_CAN_PREEMPT_TRY_NEXT_FLAVOR"}[f.WhenCanPreempt],
	}
	if f.Preference != nil {
		out.Preference = map[kueue.FlavorFungibilityPreference]string{kueue.BorrowingOverPreemption: "PREFERENCE_BORROWING_OVER_PREEMPTION", kueue.PreemptionOverBorrowing: "PREFERENCE_PREEMPTION_OVER_BORROWING"}[*f.Preference]
	}
	return out
}

// arbiterOutcome reads the pending workload's fate off arbiter's Schedule response.
func (s *scenario) arbiterOutcome(resp *arbiterjson.ScheduleResponse) *outcome {
	out := &outcome{evictions: resp.Evictions}
	victims := map[string]bool{}
	for _, e := range resp.Evictions {
		victims[e.PodGroup] = true
	}
	for v := range victims {
		out.victims = append(out.victims, v)
	}
	sort.Strings(out.victims)
	for _, a := range resp.Admissions {
		if a.PodGroup != s.pending.name {
			continue
		}
		out.admitted, out.afterEvictions = true, a.AfterEvictions
		out.flavors = map[string]map[string]string{}
		for _, ps := range a.PodSets {
			out.flavors[ps.PodSet] = ps.Flavors
		}
	}
	for _, p := range resp.Pending {
		if p.PodGroup == s.pending.name {
			out.reason, out.detail = p.Reason, p.Message
		}
	}
	switch {
	case out.admitted && !out.afterEvictions:
		out.firstMode = "Fit"
	case len(out.victims) > 0 || out.afterEvictions || out.reason == "no-preemption-candidates" || out.reason == "waiting-for-preemptions":
		out.firstMode = "Preempt"
	default:
		out.firstMode = "NoFit"
	}
	return out
}

// assignCounts are the finer counts of the flavor-assignment comparison.
type assignCounts struct {
	byMode        map[string]int // Kueue's first mode
	podSets       int
	twoPodSets    int
	preemptCycles int // scenarios admitted after evictions (Kueue)
	notFirst      int // admissions with some flavor other than its group's first
	reasons       map[string]int
	rerun         int // scenarios left out (rerun.go)
}

// compareAssignment holds arbiter's outcome against Kueue's. It returns the rules an agreement
// needed, with what they excused, or else the failure ("" when the outcomes agree). Agreement:
// the same first mode; the same end state, admitted (with after_evictions exactly when Kueue
// evicted first) with the same flavor for every requested resource of every pod set, or pending
// with the same reason; and the same set of evicted workloads. A NoFit whose reason code alone
// differs agrees under ruleNoFitReason (rules.go).
func (s *scenario) compareAssignment(want, got *outcome, counts *assignCounts) (rules []string, failure string) {
	counts.byMode[want.firstMode]++
	counts.podSets += len(s.pending.pods)
	if len(s.pending.pods) > 1 {
		counts.twoPodSets++
	}
	if want.admitted && want.afterEvictions {
		counts.preemptCycles++
	}
	if want.reason != "" {
		counts.reasons[want.reason]++
	}
	var diffs []string
	if want.firstMode != got.firstMode {
		diffs = append(diffs, fmt.Sprintf("first mode: Kueue %s, arbiter %s", want.firstMode, got.firstMode))
	}
	if want.admitted != got.admitted || want.afterEvictions != got.afterEvictions {
		diffs = append(diffs, fmt.Sprintf("admitted: Kueue %v (after evictions %v), arbiter %v (after evictions %v)",
			want.admitted, want.afterEvictions, got.admitted, got.afterEvictions))
	} else if want.admitted && !sameFlavors(want.flavors, got.flavors) {
		diffs = append(diffs, fmt.Sprintf("flavors: Kueue %v, arbiter %v", want.flavors, got.flavors))
	}
	if !slices.Equal(want.victims, got.victims) {
		diffs = append(diffs, fmt.Sprintf("evicted: Kueue %v, arbiter %v", want.victims, got.victims))
	}
	if want.admitted && s.notFirstFlavor(want.flavors) {
		counts.notFirst++
	}
	if len(diffs) == 0 && !want.admitted && want.reason != got.reason {
		diff := fmt.Sprintf("pending reason: Kueue %s (%s), arbiter %s (%s)", want.reason, want.detail, got.reason, got.detail)
		if noFitReasonRule(want, got) {
			return []string{ruleNoFitReason}, diff
		}
		diffs = append(diffs, diff)
	}
	if len(diffs) > 0 {
		history := strings.Join(append(want.history, want.detail), "; ")
		var evictions []string
		for _, e := range got.evictions {
			evictions = append(evictions, fmt.Sprintf("%s/%s (%s)", e.PodGroup, e.Pod, e.Reason))
		}
		return nil, strings.Join(diffs, "\n") + fmt.Sprintf("\nKueue (%d cycles): %s\narbiter: evictions %v; %s: %s\n",
			want.cycles, history, evictions, got.reason, got.detail) + s.describe()
	}
	return nil, ""
}

func sameFlavors(a, b map[string]map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for ps, m := range a {
		n := b[ps]
		if len(m) != len(n) {
			return false
		}
		for r, f := range m {
			if n[r] != f {
				return false
			}
		}
	}
	return true
}

// notFirstFlavor reports whether some resource got a flavor other than its group's first in x.
func (s *scenario) notFirstFlavor(flavors map[string]map[string]string) bool {
	x := &s.t.nodes[s.x]
	for _, m := range flavors {
		for r, f := range m {
			for _, gr := range x.groups {
				for _, c := range gr.covered {
					if resourceNames[c] == r && gr.flavors[0].name != f {
						return true
					}
				}
			}
		}
	}
	return false
}

// describe writes the scenario: the tree, the flavors, the policies and the pending workload.
func (s *scenario) describe() string {
	var b strings.Builder
	x := &s.t.nodes[s.x]
	fmt.Fprintf(&b, "pending %s in %s (priority %d):", s.pending.name, x.name, s.pending.priority)
	for k, p := range s.pending.pods {
		fmt.Fprintf(&b, " ps%d {", k)
		for r := range numResources {
			if p[r] > 0 {
				fmt.Fprintf(&b, " %s %d", resourceNames[r], p[r])
			}
		}
		fmt.Fprintf(&b, " } selector %v tolerations %v;", s.pending.selectors[k], s.pending.tolerations[k])
	}
	if f := s.fungibility; f != nil {
		fmt.Fprintf(&b, "\nfungibility borrow %q preempt %q preference %v", f.WhenCanBorrow, f.WhenCanPreempt, ptrValue(f.Preference))
	}
	fmt.Fprintf(&b, "\npreemption of %s: within %s, reclaim %s\nflavors:", x.name, s.within[x.name], s.reclaim[x.name])
	for _, name := range s.t.flavorNamesOf() {
		f := s.flavors[name]
		fmt.Fprintf(&b, " %s %v taints %v tolerations %d;", name, f.labels, f.taints, len(f.tolerations))
	}
	b.WriteString("\n")
	b.WriteString(s.t.describe())
	return b.String()
}

func ptrValue[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}
