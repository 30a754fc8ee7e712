package main

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"

	v1 "k8s.io/api/core/v1"

	"github.com/NVIDIA/KAI-scheduler/pkg/scheduler/api/common_info"
	"github.com/NVIDIA/KAI-scheduler/pkg/scheduler/api/podgroup_info"
	"github.com/NVIDIA/KAI-scheduler/pkg/scheduler/framework"

	"arbiter.dev/tests/differential/internal/arbiterjson"
	"arbiter.dev/tests/differential/internal/verdict"
)

// Placement features and the checks of the placement and consolidation classes of the decision
// comparison: node taints and pod tolerations (feature "taints"), and the checks that tie a
// divergence to a documented deviation or to a spec question of docs/conformance.md,
// "Decisions: KAI", by scheduling a variant of the cluster and accepting arbiter's answer only
// when the variant then agrees with KAI.

const (
	// rulePreferNoSchedule: SEMANTICS §4.5 scores a node whose PreferNoSchedule taints the pod
	// tolerates 50 higher ("arbiter's band, making that effect a preference only"); KAI's
	// taint predicate (k8s TaintToleration, k8s_internal/predicates/predicates.go:86-95) is a
	// filter only, and KAI has no score for the effect. Checked by asking arbiter again with
	// the PreferNoSchedule taints removed: the rule applies when that answer differs from the
	// first and agrees with KAI.
	rulePreferNoSchedule = "prefer-no-schedule-band"
	// ruleElasticVictimPartial, spec question (d): KAI re-places an evicted victim job with one
	// AllocateJob call (actions/common/action.go:102, TryToVirtuallyAllocatePreemptorAndGetVictims),
	// which takes GetTasksToAllocate's tasks: minAvailable minus the job's active pods, or one
	// when the gang is still whole (api/podgroup_info/allocation_info.go:132-139,
	// getNumTasksToAllocate). An elastic victim that loses more pods than that to one preemptor
	// is re-placed only in part, and consolidation's validator (every victim re-placed) rejects
	// the scenario; one below its gang that loses fewer must place its releasing pods too.
	// SEMANTICS §4.8 re-places every pod of a victim group as one unit. Checked,
	// where arbiter's consolidation moved pods of an elastic victim that KAI may not re-place in
	// full (partialVictimPreemptors), by asking arbiter again with the pods it pipelined for
	// those preemptors unplaceable: the rule applies when that answer agrees with KAI.
	ruleElasticVictimPartial = "kai-elastic-victim-partial"
	// ruleVictimlessFirstParts, spec question (b) in its victim form: SEMANTICS §4.8 tries every
	// part with the recorded victims, also when there are none, so the first parts of a unit
	// that fit on free capacity take no victim and victims are drawn for a later part only.
	// KAI's byPodSolver.solve simulates nothing for a scenario with neither recorded nor
	// potential victims (actions/common/solvers/by_pod_solver.go:77-84), and JobSolver.Solve
	// goes on to the next scenario, which draws a victim for the first part already
	// (job_solver.go:55-66; solvePartialJob, 105-117). Checked by scheduling, with KAI, the
	// cluster in which the preemptor's first k pods already run where arbiter put them (each
	// fitting there on free capacity): the rule applies when that run, the k pods read as
	// pipelined, is arbiter's answer. Where the room for those pods is made earlier in the same
	// cycle, the check is a change of KAI's rebuilt eviction actions instead
	// (solveAfterVictimlessParts): before the solver, the longest first part of the unit that
	// fits without victims is pipelined, and the solver runs for the rest (seed 1366 of every
	// feature, in consolidation).
	ruleVictimlessFirstParts = "kai-victimless-first-parts"
	// rulePreemptorRepresentative, spec question (e): SEMANTICS §4.8 re-places the preemptor and
	// the victims of a scenario in §4.3 order on the simulated state, the preemptor ranked by
	// its own active pods against its gang. KAI's solvers simulate with a representative of the
	// preemptor (getPartialJobRepresentative, actions/common/solvers/job_solver.go:122-145: a
	// clone holding only the pending pods of the part, its minAvailable set to their number),
	// which elastic.JobOrderFn (plugins/elastic/elastic.go:25-50) always ranks below its gang,
	// so an elastic preemptor that already runs its gang is placed before a victim whose pods
	// are all evicted, and takes the node that victim would have kept. Checked by scheduling
	// once more with KAI, with its job order functions comparing a representative as the job it
	// stands for (the session's PodGroupInfo of the same id): the rule applies when arbiter's
	// answer is that run's.
	rulePreemptorRepresentative = "kai-preemptor-representative-order"
)

// Taints: one key, two values, KAI's and Kubernetes' three effects.
const taintKey = "dedicated"

var taintEffects = []string{"NoSchedule", "NoExecute", "PreferNoSchedule"}

type ctaint struct{ value, effect string }

type ctoleration struct{ key, operator, value, effect string }

// tolerates is SEMANTICS §4.5's (and Kubernetes') toleration match.
func (t ctoleration) tolerates(taint ctaint) bool {
	if t.effect != "" && t.effect != taint.effect {
		return false
	}
	if t.operator == "Exists" {
		return t.key == "" || t.key == taintKey
	}
	return t.key == taintKey && t.value == taint.value
}

func (j *cjob) tolerates(taint ctaint) bool {
	return slices.ContainsFunc(j.tolerations, func(t ctoleration) bool { return t.tolerates(taint) })
}

// addTaints taints some nodes and gives some jobs tolerations, from a random stream of its own
// (the clusters of the other features do not change). A job with a pod on a node whose
// NoSchedule or NoExecute taint it does not tolerate gets a toleration of the key: it could not
// have been placed there, or would have been evicted.
func (c *cluster) addTaints() {
	rng := rand.New(rand.NewPCG(uint64(c.seed), 0x7461696e74))
	chance := func(p float64) bool { return rng.Float64() < p }
	values := []string{"a", "b"}
	for i := range c.nodes {
		if chance(0.4) {
			c.nodes[i].taints = append(c.nodes[i].taints, ctaint{values[rng.IntN(2)], taintEffects[rng.IntN(3)]})
		}
	}
	effects := append([]string{"", ""}, taintEffects...)
	for j := range c.jobs {
		job := &c.jobs[j]
		if chance(0.4) {
			t := ctoleration{key: taintKey, operator: "Equal", value: values[rng.IntN(2)], effect: effects[rng.IntN(5)]}
			switch rng.IntN(4) {
			case 0:
				t.operator, t.value = "Exists", ""
			case 1:
				t.operator = ""
			}
			job.tolerations = append(job.tolerations, t)
		}
		for _, task := range job.tasks {
			if task.node == "" {
				continue
			}
			for _, taint := range c.nodes[c.nodeIndex(task.node)].taints {
				if taint.effect != "PreferNoSchedule" && !job.tolerates(taint) {
					job.tolerations = append(job.tolerations, ctoleration{key: taintKey, operator: "Exists"})
				}
			}
		}
	}
}

func (n *cnode) arbiterTaints() []arbiterjson.Taint {
	var out []arbiterjson.Taint
	for _, t := range n.taints {
		out = append(out, arbiterjson.Taint{Key: taintKey, Value: t.value, Effect: t.effect})
	}
	return out
}

func (j *cjob) arbiterTolerations() []arbiterjson.Toleration {
	var out []arbiterjson.Toleration
	for _, t := range j.tolerations {
		out = append(out, arbiterjson.Toleration{Key: t.key, Operator: t.operator, Value: t.value, Effect: t.effect})
	}
	return out
}

// applyTaints sets the taints on KAI's node objects and the tolerations on its pod objects,
// which test_utils cannot express. KAI's taint predicate reads them at every check (the
// predicates plugin hands node_info.Node and the task's Pod to k8s' TaintToleration filter).
func (c *cluster) applyTaints(ssn *framework.Session) {
	if hook, ok := sessionHooks.Load(c); ok {
		hook.(func(*framework.Session))(ssn)
	}
	for _, n := range c.nodes {
		node := ssn.Nodes[n.name]
		if node == nil || len(n.taints) == 0 {
			continue
		}
		node.Node = node.Node.DeepCopy()
		for _, t := range n.taints {
			node.Node.Spec.Taints = append(node.Node.Spec.Taints, v1.Taint{Key: taintKey, Value: t.value, Effect: v1.TaintEffect(t.effect)})
		}
	}
	for _, j := range c.jobs {
		job := ssn.PodGroupInfos[common_info.PodGroupID(j.name)]
		if job == nil || len(j.tolerations) == 0 {
			continue
		}
		var tols []v1.Toleration
		for _, t := range j.tolerations {
			tols = append(tols, v1.Toleration{Key: t.key, Operator: v1.TolerationOperator(t.operator), Value: t.value, Effect: v1.TaintEffect(t.effect)})
		}
		for _, task := range job.GetAllPodsMap() {
			task.Pod = task.Pod.DeepCopy()
			task.Pod.Spec.Tolerations = tols
		}
	}
}

// sessionHooks holds, per cluster of a variant run, a change to KAI's session made after
// BuildSession (applyTaints runs it).
var sessionHooks sync.Map

// orderRepresentativesAsJobs makes KAI's job order functions compare a job representative (a
// PodGroupInfo that is not the session's own of that id, as the solvers' partial preemptor) as
// the session's job of the same id (see rulePreemptorRepresentative).
func orderRepresentativesAsJobs(ssn *framework.Session) {
	real := func(x any) any {
		if j, ok := x.(*podgroup_info.PodGroupInfo); ok {
			if s := ssn.PodGroupInfos[j.UID]; s != nil {
				return s
			}
		}
		return x
	}
	for i, fn := range ssn.JobOrderFns {
		ssn.JobOrderFns[i] = func(l, r any) int { return fn(real(l), real(r)) }
	}
}

// explainPlacement returns the rules of this file that explain a divergence, or none.
func (c *cluster) explainPlacement(cli string, resp *arbiterjson.ScheduleResponse, arb outcome, runs []outcome) []string {
	if c.victimlessFirstParts(resp, arb) {
		return []string{ruleVictimlessFirstParts}
	}
	// KAI with representatives ordered as their jobs (rulePreemptorRepresentative).
	var rep outcome
	if len(resp.Evictions) > 0 {
		v := c.clone()
		sessionHooks.Store(v, orderRepresentativesAsJobs)
		out, _, err := v.runKAI(false)
		sessionHooks.Delete(v)
		if err == nil {
			rep = out
		}
		if rep != nil && sameOutcome(rep, arb) {
			return []string{rulePreemptorRepresentative}
		}
	}
	var rules []string
	var edits []func(*arbiterjson.ScheduleRequest)
	if slices.ContainsFunc(c.nodes, func(n cnode) bool {
		return slices.ContainsFunc(n.taints, func(t ctaint) bool { return t.effect == "PreferNoSchedule" })
	}) {
		rules = append(rules, rulePreferNoSchedule)
		edits = append(edits, dropPreferNoSchedule)
	}
	if pods := c.partialVictimPods(cli, resp, arb, runs[0]); len(pods) > 0 {
		rules = append(rules, ruleElasticVictimPartial)
		edits = append(edits, func(req *arbiterjson.ScheduleRequest) { unplaceable(req, pods) })
	}
	// An arbiter variant: its rules apply when it differs from arbiter's first answer and agrees
	// with KAI, or with KAI's representative-order run (then that rule applies as well).
	try := func(names []string, edit func(*arbiterjson.ScheduleRequest)) []string {
		req := c.request()
		edit(req)
		r, err := arbiterjson.Schedule(cli, req)
		if err != nil {
			return nil
		}
		o, err := c.arbiterOutcome(r)
		if err != nil || sameOutcome(o, arb) {
			return nil
		}
		if v := judge(c, o, runs); !isFailure(v) {
			return append(slices.Clone(names), v.Rules...)
		}
		if rep != nil && sameOutcome(o, rep) {
			return append(slices.Clone(names), rulePreemptorRepresentative)
		}
		return nil
	}
	// Each variant alone, then both together.
	for i := range edits {
		if names := try(rules[i:i+1], edits[i]); names != nil {
			return names
		}
	}
	if len(edits) == 2 {
		return try(rules, func(r *arbiterjson.ScheduleRequest) { edits[0](r); edits[1](r) })
	}
	return nil
}

func dropPreferNoSchedule(req *arbiterjson.ScheduleRequest) {
	for i := range req.Snapshot.Nodes {
		n := &req.Snapshot.Nodes[i]
		n.Taints = slices.DeleteFunc(n.Taints, func(t arbiterjson.Taint) bool { return t.Effect == "PreferNoSchedule" })
	}
}

// unplaceable makes the given pods ("group/pod") select a node label no node has.
func unplaceable(req *arbiterjson.ScheduleRequest, pods map[string]bool) {
	labels := map[string]string{}
	for key := range pods {
		labels[key] = "none"
	}
	pin(req, labels)
}

// partialVictimPreemptors returns the groups for which arbiter's consolidation moved pods of an
// elastic victim that KAI's re-placement may not take back as they are (see
// ruleElasticVictimPartial): with a the victim's pods still running after the action and g its
// gang size, KAI re-places g - a pods when a < g (its releasing pods among them), else one; so
// either arbiter moved another number of pods, or the victim runs
// more than g pods (arbiter's S may also have held pods it re-placed on their own nodes, which
// the response drops, SEMANTICS §4.8, while KAI, evicting them too, re-places g at most).
func (c *cluster) partialVictimPreemptors(resp *arbiterjson.ScheduleResponse, arb outcome) []string {
	return c.victimMoves(resp, arb, true)
}

// movesKAICannotReplace: spec question (d) by its signature, for a divergence no variant ties
// to it (seed 12 of -features all: arbiter moves both pods of the elastic j01, minAvailable 1,
// for j04; KAI, re-placing one of them, fails that scenario and moves j01-1 and j07-2 instead).
// True when arbiter moved, for one preemptor, another number of an elastic victim's pods than
// KAI's re-placement takes (g - a when the victim keeps a < g active pods, else one), a
// consolidation KAI's validator rejects. A pod restored on its own node is not in arbiter's
// answer, so, as for (f) and (h), this is a signature of the class, not a proof.
func (c *cluster) movesKAICannotReplace(resp *arbiterjson.ScheduleResponse, arb outcome) bool {
	return len(c.victimMoves(resp, arb, false)) > 0
}

// victimMoves returns the preemptors for which arbiter moved another number of an elastic
// victim's pods than KAI re-places, or also, with larger, those whose victim runs more pods
// than its gang.
func (c *cluster) victimMoves(resp *arbiterjson.ScheduleResponse, arb outcome, larger bool) []string {
	moved := map[[2]string]int{}
	for _, e := range resp.Evictions {
		if e.Reason == "CONSOLIDATION" {
			moved[[2]string{e.PodGroup, e.PreemptorPodGroup}]++
		}
	}
	var out []string
	for key, n := range moved {
		victim := c.job(key[0])
		if victim == nil || victim.minAvailable == 0 {
			continue
		}
		active := 0
		for t := range victim.tasks {
			if arb[victim.name+"/"+podName(victim.name, t)] == "running" {
				active++
			}
		}
		take := 1
		if active < victim.gang() {
			take = victim.gang() - active
		}
		running := 0
		for _, t := range victim.tasks {
			if t.state == "Running" {
				running++
			}
		}
		if (n != take || larger && running > victim.gang()) && !slices.Contains(out, key[1]) {
			out = append(out, key[1])
		}
	}
	slices.Sort(out)
	return out
}

// partialVictimPods returns the pods that arbiter pipelined for the groups
// partialVictimPreemptors names, closed under the variant: once those pods are unplaceable,
// arbiter may give the capacity to another preemptor whose consolidation again moves pods of an
// elastic victim that KAI may not re-place (KAI leaves that one pending too); its pipelined pods
// are added until there is none. Only pods that KAI leaves pending are taken (kai: KAI's first
// run), so pods of those groups bound by ALLOCATE are left.
func (c *cluster) partialVictimPods(cli string, resp *arbiterjson.ScheduleResponse, arb, kai outcome) map[string]bool {
	pods := map[string]bool{}
	add := func(groups []string, o outcome) bool {
		grew := false
		for _, g := range groups {
			for t := range c.job(g).tasks {
				key := g + "/" + podName(g, t)
				if strings.HasPrefix(string(o[key]), "pipelined@") && kai[key] == "pending" && !pods[key] {
					pods[key], grew = true, true
				}
			}
		}
		return grew
	}
	if !add(c.partialVictimPreemptors(resp, arb), arb) {
		return nil
	}
	for range len(c.jobs) {
		req := c.request()
		unplaceable(req, pods)
		r, err := arbiterjson.Schedule(cli, req)
		if err != nil {
			break
		}
		o, err := c.arbiterOutcome(r)
		if err != nil || !add(c.partialVictimPreemptors(r, o), o) {
			break
		}
	}
	return pods
}

func (c *cluster) job(name string) *cjob {
	for i := range c.jobs {
		if c.jobs[i].name == name {
			return &c.jobs[i]
		}
	}
	return nil
}

// placementOutcome applies explainPlacement to a failed comparison.
func (c *cluster) placementOutcome(cli string, resp *arbiterjson.ScheduleResponse, arb outcome, runs []outcome, o verdict.Outcome) verdict.Outcome {
	if !isFailure(o) {
		return o
	}
	if rules := c.explainPlacement(cli, resp, arb, runs); len(rules) > 0 {
		return verdict.Outcome{Rules: rules}
	}
	return o
}

func podName(job string, t int) string { return fmt.Sprintf("%s-%d", job, t) }

// victimlessFirstParts reports whether, for some preemptor P of arbiter's evictions whose pods
// were all pending, KAI agrees with arbiter once P's first k pods (k below P's pod count) run
// on the nodes arbiter pipelined them to, where they fit on free capacity (see
// ruleVictimlessFirstParts).
func (c *cluster) victimlessFirstParts(resp *arbiterjson.ScheduleResponse, arb outcome) bool {
	var preemptors []string
	for _, e := range resp.Evictions {
		if !slices.Contains(preemptors, e.PreemptorPodGroup) {
			preemptors = append(preemptors, e.PreemptorPodGroup)
		}
	}
	slices.Sort(preemptors)
	for _, name := range preemptors {
		p := c.job(name)
		if p == nil || len(p.tasks) < 2 || slices.ContainsFunc(p.tasks, func(t ctask) bool { return t.state != "Pending" }) {
			continue
		}
		nodes := make([]string, len(p.tasks))
		for t := range p.tasks {
			v, ok := strings.CutPrefix(string(arb[p.name+"/"+podName(p.name, t)]), "pipelined@")
			if !ok {
				break
			}
			nodes[t] = v
		}
		for k := 1; k < len(p.tasks) && nodes[k-1] != ""; k++ {
			v := c.clone()
			vp := v.job(name)
			for t := range k {
				vp.tasks[t] = ctask{state: "Running", node: nodes[t]}
			}
			if !v.fitsOnFreeCapacity() {
				break
			}
			out, _, err := v.runKAI(false)
			if err != nil {
				continue
			}
			for t := range k {
				key := p.name + "/" + podName(p.name, t)
				if out[key] == "running" {
					out[key] = podOutcome("pipelined@" + nodes[t])
				}
			}
			if sameOutcome(out, arb) {
				return true
			}
		}
	}
	return false
}

// fitsOnFreeCapacity: the running and releasing pods fit on their nodes.
func (c *cluster) fitsOnFreeCapacity() bool {
	gpus := map[string]float64{}
	cpu := map[string]float64{}
	for _, j := range c.jobs {
		for _, t := range j.tasks {
			if t.node != "" {
				gpus[t.node] += j.gpus
				cpu[t.node] += j.milliCPU()
			}
		}
	}
	for _, n := range c.nodes {
		if gpus[n.name] > float64(n.gpus) || cpu[n.name] > n.cpu {
			return false
		}
	}
	return true
}
