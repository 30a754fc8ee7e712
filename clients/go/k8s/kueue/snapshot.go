package kueue

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"google.golang.org/protobuf/types/known/timestamppb"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/component-helpers/resource"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	arbiterv1 "arbiter.dev/clients/go/arbiterv1"
	"arbiter.dev/clients/go/k8s/translate"
)

// Kinds of the queues of a Model.
const (
	KindClusterQueue = "ClusterQueue"
	KindCohort       = "Cohort"
)

// releasingNode is the node the snapshot puts the pods of evicted workloads that still hold
// their quota on (a RELEASING pod must name one). The Kueue model ignores nodes otherwise.
const releasingNode = "kueue-quota"

// Options shape the model.
type Options struct {
	// Strategies are Kueue's fairSharing.preemptionStrategies; nil = Kueue's default.
	Strategies []arbiterv1.KueuePreemptionStrategy
}

// Workload is one Workload as the model sees it.
type Workload struct {
	Obj *kueue.Workload
	// ClusterQueue is where its quota is reserved, or where its LocalQueue sends it.
	ClusterQueue string
	// Reserved: Kueue has reserved its quota.
	Reserved bool
	// Requests is its usage: Σ over pod sets of count × per-pod requests (for a reserved workload,
	// the usage recorded in its admission that Kueue charges to a flavor).
	Requests map[string]float64
	// Flavors are the flavors Kueue assigned to a reserved workload (its admission's
	// podSetAssignments[].flavors): pod set → resource → flavor. Nil for a pending one.
	Flavors map[string]map[string]string
}

// Skipped is a workload the model leaves out, and why.
type Skipped struct {
	Workload string `json:"workload"`
	// Reason is a stable code: inactive, local-queue-not-found, cluster-queue-not-found,
	// namespace-not-selected.
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// Model is a Kueue installation as arbiter's Kueue model: the request, and what each of its
// names stands for.
type Model struct {
	Request *arbiterv1.ScheduleRequest
	// Workloads by pod group name ("namespace/name"); finished workloads are not in the model.
	Workloads map[string]*Workload
	Skipped   []Skipped
	// Kind of every queue name: KindClusterQueue or KindCohort.
	Kind map[string]string
	// Parent of every queue name; "" at the top.
	Parent map[string]string
	// covered are the resources of each ClusterQueue's resource groups.
	covered map[string]map[string]bool
	// localQueues maps "namespace/name" of a LocalQueue to its ClusterQueue.
	localQueues map[string]string
	// selectors are the ClusterQueues' namespace selectors (nil: no namespace).
	selectors map[string]labels.Selector
	// namespaces are State.Namespaces.
	namespaces map[string]map[string]string
}

// UnsupportedError names a Kueue configuration arbiter's Kueue model does not express, rather
// than approximating it.
type UnsupportedError struct {
	Object string // e.g. "ClusterQueue team-a"
	Reason string
}

func (e *UnsupportedError) Error() string {
	return fmt.Sprintf("%s: %s (not yet supported by arbiter's Kueue model)", e.Object, e.Reason)
}

// Root is the top of q's tree.
func (m *Model) Root(q string) string {
	for m.Parent[q] != "" {
		q = m.Parent[q]
	}
	return q
}

// Build turns s into arbiter's Kueue model (SEMANTICS §5.1): ClusterQueues are leaf queues,
// Cohorts (explicit, or implicit when only named) are non-leaf queues, Workloads are pod groups
// named "namespace/name" with one pod per pod set carrying the whole pod set's requests.
func Build(s *State, opts Options) (*Model, error) {
	m := &Model{Workloads: map[string]*Workload{}, Kind: map[string]string{}, Parent: map[string]string{},
		selectors: map[string]labels.Selector{}, namespaces: s.Namespaces, covered: map[string]map[string]bool{}}
	queues, err := m.queues(s)
	if err != nil {
		return nil, err
	}
	snap := &arbiterv1.Snapshot{Now: timestamppb.New(s.Now), Queues: queues, ResourceFlavors: resourceFlavors(s.ResourceFlavors)}
	m.localQueues = map[string]string{}
	for i := range s.LocalQueues {
		lq := &s.LocalQueues[i]
		m.localQueues[Key(lq.Namespace, lq.Name)] = string(lq.Spec.ClusterQueue)
	}
	releasing := false
	for _, w := range s.sortedWorkloads() {
		if IsFinished(w) {
			continue
		}
		group, wl, skip := m.podGroup(w, m.localQueues)
		if skip != nil {
			m.Skipped = append(m.Skipped, *skip)
			continue
		}
		m.Workloads[group.Name] = wl
		snap.PodGroups = append(snap.PodGroups, group)
		for _, p := range group.Pods {
			releasing = releasing || p.Phase == arbiterv1.PodPhase_POD_PHASE_RELEASING
		}
	}
	if releasing {
		snap.Nodes = []*arbiterv1.Node{{Name: releasingNode}}
	}
	m.Request = &arbiterv1.ScheduleRequest{
		Snapshot: snap,
		Policy: &arbiterv1.Policy{
			FairnessModel:             arbiterv1.FairnessModel_FAIRNESS_MODEL_KUEUE,
			KueuePreemptionStrategies: opts.Strategies,
		},
	}
	return m, nil
}

// queues maps ClusterQueues and Cohorts to queues, in name order.
func (m *Model) queues(s *State) ([]*arbiterv1.Queue, error) {
	byName := map[string]*arbiterv1.Queue{}
	for i := range s.ClusterQueues {
		cq := &s.ClusterQueues[i]
		q := quotaQueue(cq.Name, cq.Spec.ResourceGroups, cq.Spec.FairSharing)
		q.Parent = string(cq.Spec.CohortName)
		q.FlavorFungibility = flavorFungibility(cq.Spec.FlavorFungibility)
		m.covered[cq.Name] = map[string]bool{}
		for _, rg := range cq.Spec.ResourceGroups {
			for _, r := range rg.CoveredResources {
				m.covered[cq.Name][string(r)] = true
			}
		}
		if p := cq.Spec.Preemption; p != nil {
			q.KueuePreemption = &arbiterv1.KueuePreemption{
				WithinClusterQueue:  withinClusterQueue(p.WithinClusterQueue),
				ReclaimWithinCohort: reclaimWithinCohort(p.ReclaimWithinCohort),
			}
		}
		byName[cq.Name] = q
		m.Kind[cq.Name] = KindClusterQueue
		if sel := cq.Spec.NamespaceSelector; sel != nil {
			selector, err := metav1.LabelSelectorAsSelector(sel)
			if err != nil {
				return nil, fmt.Errorf("ClusterQueue %s: spec.namespaceSelector: %w", cq.Name, err)
			}
			m.selectors[cq.Name] = selector
		}
	}
	for i := range s.Cohorts {
		c := &s.Cohorts[i]
		if m.Kind[c.Name] == KindClusterQueue {
			return nil, &UnsupportedError{Object: "Cohort " + c.Name, Reason: "a ClusterQueue has the same name"}
		}
		q := quotaQueue(c.Name, c.Spec.ResourceGroups, c.Spec.FairSharing)
		q.Parent = string(c.Spec.ParentName)
		byName[c.Name] = q
		m.Kind[c.Name] = KindCohort
	}
	// Cohorts that are only named (by a ClusterQueue or as a parent) exist implicitly, with no
	// quota of their own, at the top.
	for _, name := range sortedKeys(byName) {
		parent := byName[name].Parent
		if parent == "" {
			continue
		}
		if m.Kind[parent] == KindClusterQueue {
			return nil, &UnsupportedError{Object: m.Kind[name] + " " + name, Reason: fmt.Sprintf("its cohort %q is the name of a ClusterQueue", parent)}
		}
		if _, ok := byName[parent]; !ok {
			byName[parent] = &arbiterv1.Queue{Name: parent}
			m.Kind[parent] = KindCohort
		}
	}
	out := make([]*arbiterv1.Queue, 0, len(byName))
	for _, name := range sortedKeys(byName) {
		m.Parent[name] = byName[name].Parent
		out = append(out, byName[name])
	}
	for _, name := range sortedKeys(byName) {
		seen := map[string]bool{}
		for q := name; q != ""; q = m.Parent[q] {
			if seen[q] {
				return nil, &UnsupportedError{Object: "Cohort " + q, Reason: "its parents form a cycle (Kueue leaves such cohorts inactive)"}
			}
			seen[q] = true
		}
	}
	return out, nil
}

// quotaQueue is one queue's quota (SEMANTICS §5.8.2): every resource group as it is, with its
// covered resources and its flavors in Kueue's order, each flavor's nominal quota, borrowing and
// lending limits in arbiter's units. A queue with resource groups is a flavored queue, even with
// one flavor, so that the answer names Kueue's flavors; one without (a Cohort that only pools its
// children) has no quota of its own.
func quotaQueue(name string, groups []kueue.ResourceGroup, fs *kueue.FairSharing) *arbiterv1.Queue {
	q := &arbiterv1.Queue{Name: name}
	for _, rg := range groups {
		g := &arbiterv1.ResourceGroup{}
		for _, r := range rg.CoveredResources {
			g.CoveredResources = append(g.CoveredResources, string(r))
		}
		for _, f := range rg.Flavors {
			fq := &arbiterv1.FlavorQuotas{Flavor: string(f.Name), Resources: map[string]*arbiterv1.FlavorResourceQuota{}}
			for _, rq := range f.Resources {
				quota := &arbiterv1.FlavorResourceQuota{Nominal: translate.Amount(rq.Name, rq.NominalQuota)}
				if rq.BorrowingLimit != nil {
					quota.BorrowingLimit = ptrTo(translate.Amount(rq.Name, *rq.BorrowingLimit))
				}
				if rq.LendingLimit != nil {
					quota.LendingLimit = ptrTo(translate.Amount(rq.Name, *rq.LendingLimit))
				}
				fq.Resources[string(rq.Name)] = quota
			}
			g.Flavors = append(g.Flavors, fq)
		}
		q.ResourceGroups = append(q.ResourceGroups, g)
	}
	if fs != nil && fs.Weight != nil {
		w := fs.Weight.AsApproximateFloat64()
		q.FairSharingWeight = &w
	}
	return q
}

// flavorFungibility is Kueue's spec.flavorFungibility; nil when unset (Kueue's defaults, which
// are arbiter's).
func flavorFungibility(ff *kueue.FlavorFungibility) *arbiterv1.FlavorFungibility {
	if ff == nil {
		return nil
	}
	out := &arbiterv1.FlavorFungibility{}
	switch ff.WhenCanBorrow {
	case kueue.MayStopSearch:
		out.WhenCanBorrow = arbiterv1.FlavorFungibility_WHEN_CAN_BORROW_MAY_STOP_SEARCH
	case kueue.TryNextFlavor:
		out.WhenCanBorrow = arbiterv1.FlavorFungibility_WHEN_CAN_BORROW_TRY_NEXT_FLAVOR
	}
	switch ff.WhenCanPreempt {
	case kueue.MayStopSearch:
		out.WhenCanPreempt = arbiterv1.FlavorFungibility_WHEN_CAN_PREEMPT_MAY_STOP_SEARCH
	case kueue.TryNextFlavor:
		out.WhenCanPreempt = arbiterv1.FlavorFungibility_WHEN_CAN_PREEMPT_TRY_NEXT_FLAVOR
	}
	if ff.Preference != nil {
		switch *ff.Preference {
		case kueue.BorrowingOverPreemption:
			out.Preference = arbiterv1.FlavorFungibility_PREFERENCE_BORROWING_OVER_PREEMPTION
		case kueue.PreemptionOverBorrowing:
			out.Preference = arbiterv1.FlavorFungibility_PREFERENCE_PREEMPTION_OVER_BORROWING
		}
	}
	return out
}

// resourceFlavors are the ResourceFlavors in name order, with their node labels, node taints and
// tolerations (SEMANTICS §5.8.5: what makes a flavor compatible with a pod set).
func resourceFlavors(rfs []kueue.ResourceFlavor) []*arbiterv1.ResourceFlavor {
	out := make([]*arbiterv1.ResourceFlavor, 0, len(rfs))
	for i := range rfs {
		rf := &rfs[i]
		f := &arbiterv1.ResourceFlavor{Name: rf.Name, NodeLabels: copyLabels(rf.Spec.NodeLabels)}
		for _, t := range rf.Spec.NodeTaints {
			f.NodeTaints = append(f.NodeTaints, &arbiterv1.Taint{Key: t.Key, Value: t.Value, Effect: string(t.Effect)})
		}
		f.Tolerations = tolerations(rf.Spec.Tolerations)
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func tolerations(ts []corev1.Toleration) []*arbiterv1.Toleration {
	var out []*arbiterv1.Toleration
	for _, t := range ts {
		out = append(out, &arbiterv1.Toleration{Key: t.Key, Operator: string(t.Operator), Value: t.Value, Effect: string(t.Effect)})
	}
	return out
}

func copyLabels(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func ptrTo[T any](v T) *T { return &v }

// PodGroup is w, a workload not yet in the model, as the model's snapshot would hold it, or why
// Build would leave it out.
func (m *Model) PodGroup(w *kueue.Workload) (*arbiterv1.PodGroup, *Workload, *Skipped) {
	return m.podGroup(w, m.localQueues)
}

// AsPending is the workload key, whose quota Kueue reserved, as the pending pod group it was
// before: its pod sets as the spec gives them, queued in the ClusterQueue that holds its quota.
// Nil when key is not a reserved workload of the model.
func (m *Model) AsPending(key string) *arbiterv1.PodGroup {
	wl := m.Workloads[key]
	if wl == nil || !wl.Reserved {
		return nil
	}
	return &arbiterv1.PodGroup{
		Name: key, Queue: wl.ClusterQueue, Priority: priorityOf(wl.Obj),
		CreationTime: timestamppb.New(queueOrderTime(wl.Obj)), Pods: pendingPods(wl.Obj),
	}
}

// Choices are the resources for which ClusterQueue cq offers more than one flavor.
func (m *Model) Choices(cq string) map[string]bool {
	out := map[string]bool{}
	for _, q := range m.Request.GetSnapshot().GetQueues() {
		if q.GetName() != cq {
			continue
		}
		for _, g := range q.GetResourceGroups() {
			if len(g.GetFlavors()) > 1 {
				for _, r := range g.GetCoveredResources() {
					out[r] = true
				}
			}
		}
	}
	return out
}

// podGroup is w as a pod group, or why it is left out.
func (m *Model) podGroup(w *kueue.Workload, localQueues map[string]string) (*arbiterv1.PodGroup, *Workload, *Skipped) {
	key := WorkloadKey(w)
	group := &arbiterv1.PodGroup{
		Name:         key,
		Priority:     priorityOf(w),
		CreationTime: timestamppb.New(queueOrderTime(w)),
	}
	wl := &Workload{Obj: w, Requests: map[string]float64{}}
	if HasQuotaReservation(w) {
		wl.Reserved = true
		wl.ClusterQueue = string(w.Status.Admission.ClusterQueue)
		if m.Kind[wl.ClusterQueue] != KindClusterQueue {
			return nil, nil, &Skipped{Workload: key, Reason: "cluster-queue-not-found",
				Message: fmt.Sprintf("its quota is reserved in ClusterQueue %q, which does not exist", wl.ClusterQueue)}
		}
		group.Admitted = true
		group.AdmissionTime = timestamppb.New(reservationTime(w))
		releasing := apimeta.IsStatusConditionTrue(w.Status.Conditions, kueue.WorkloadEvicted)
		wl.Flavors = map[string]map[string]string{}
		for _, psa := range w.Status.Admission.PodSetAssignments {
			pod := &arbiterv1.Pod{Name: string(psa.Name), PodSet: string(psa.Name), Requests: translate.Amounts(psa.ResourceUsage, nil)}
			flavors := map[string]string{}
			for r, f := range psa.Flavors {
				flavors[string(r)] = string(f)
			}
			// Kueue charges a pod set's amount of a resource to the flavor its admission names;
			// one its ClusterQueue covers but the admission names no flavor for (the queue's
			// groups changed since) is charged nowhere, and left out here as well.
			for r := range pod.Requests {
				if _, ok := flavors[r]; !ok && m.covered[wl.ClusterQueue][r] {
					delete(pod.Requests, r)
				}
			}
			wl.Flavors[pod.PodSet] = flavors
			if len(flavors) > 0 {
				group.Flavors = append(group.Flavors, &arbiterv1.PodSetFlavors{PodSet: pod.PodSet, Flavors: flavors})
			}
			if releasing {
				pod.Phase, pod.NodeName = arbiterv1.PodPhase_POD_PHASE_RELEASING, releasingNode
			}
			addTo(wl.Requests, pod.Requests)
			group.Pods = append(group.Pods, pod)
		}
	} else {
		if !IsActive(w) {
			return nil, nil, &Skipped{Workload: key, Reason: "inactive", Message: "spec.active is false"}
		}
		cq, ok := localQueues[Key(w.Namespace, string(w.Spec.QueueName))]
		if !ok {
			return nil, nil, &Skipped{Workload: key, Reason: "local-queue-not-found",
				Message: fmt.Sprintf("LocalQueue %q does not exist in namespace %s", w.Spec.QueueName, w.Namespace)}
		}
		if m.Kind[cq] != KindClusterQueue {
			return nil, nil, &Skipped{Workload: key, Reason: "cluster-queue-not-found",
				Message: fmt.Sprintf("LocalQueue %s points at ClusterQueue %q, which does not exist", w.Spec.QueueName, cq)}
		}
		if skip := m.namespaceSelected(key, w.Namespace, cq); skip != nil {
			return nil, nil, skip
		}
		wl.ClusterQueue = cq
		for _, pod := range pendingPods(w) {
			addTo(wl.Requests, pod.Requests)
			group.Pods = append(group.Pods, pod)
		}
	}
	group.Queue = wl.ClusterQueue
	return group, wl, nil
}

// namespaceSelected: ClusterQueue cq admits workloads of namespace ns (its namespaceSelector
// matches the namespace's labels; without a selector, Kueue admits from no namespace).
func (m *Model) namespaceSelected(key, ns, cq string) *Skipped {
	if m.namespaces == nil {
		return nil
	}
	selector, ok := m.selectors[cq]
	if !ok {
		return &Skipped{Workload: key, Reason: "namespace-not-selected",
			Message: fmt.Sprintf("ClusterQueue %s has no namespaceSelector: Kueue admits from no namespace", cq)}
	}
	if !selector.Matches(labels.Set(m.namespaces[ns])) {
		return &Skipped{Workload: key, Reason: "namespace-not-selected",
			Message: fmt.Sprintf("namespace %s does not match the namespaceSelector of ClusterQueue %s", ns, cq)}
	}
	return nil
}

// pendingPods are w's pod sets as Kueue counts a pending workload: per-pod requests (as
// kube-scheduler computes them) times the count left after reclaimable pods, with the template's
// node selector and tolerations, which decide the flavors the pod set may take (SEMANTICS §5.8.5).
func pendingPods(w *kueue.Workload) []*arbiterv1.Pod {
	reclaimable := map[kueue.PodSetReference]int32{}
	for _, rp := range w.Status.ReclaimablePods {
		reclaimable[rp.Name] = rp.Count
	}
	out := make([]*arbiterv1.Pod, 0, len(w.Spec.PodSets))
	for _, ps := range w.Spec.PodSets {
		count := float64(ps.Count - reclaimable[ps.Name])
		perPod := translate.Amounts(resource.PodRequests(&corev1.Pod{Spec: ps.Template.Spec}, resource.PodResourcesOptions{}), nil)
		requests := make(map[string]float64, len(perPod))
		for r, v := range perPod {
			if count > 0 {
				requests[r] = v * count
			}
		}
		out = append(out, &arbiterv1.Pod{
			Name: string(ps.Name), PodSet: string(ps.Name), Requests: requests,
			NodeSelector: nodeSelector(&ps.Template.Spec), Tolerations: tolerations(ps.Template.Spec.Tolerations),
		})
	}
	return out
}

// nodeSelector is what a pod set selects of a flavor's node labels: its node selector, with a
// required node affinity folded in when that is one term of single-value In expressions that
// agree with it (what a node selector can say). Another required node affinity is left out:
// arbiter's Kueue model matches node selectors only (SEMANTICS §5.8.10 item 9).
func nodeSelector(spec *corev1.PodSpec) map[string]string {
	out := copyLabels(spec.NodeSelector)
	aff := spec.Affinity
	if aff == nil || aff.NodeAffinity == nil || aff.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return out
	}
	terms := aff.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	if len(terms) != 1 || len(terms[0].MatchFields) != 0 {
		return out
	}
	folded := map[string]string{}
	for _, e := range terms[0].MatchExpressions {
		if e.Operator != corev1.NodeSelectorOpIn || len(e.Values) != 1 {
			return out
		}
		if v, ok := out[e.Key]; ok && v != e.Values[0] {
			return out
		}
		folded[e.Key] = e.Values[0]
	}
	if len(folded) == 0 {
		return out
	}
	if out == nil {
		out = map[string]string{}
	}
	for k, v := range folded {
		out[k] = v
	}
	return out
}

func withinClusterQueue(p kueue.PreemptionPolicy) arbiterv1.KueuePreemption_WithinClusterQueue {
	switch p {
	case kueue.PreemptionPolicyLowerPriority:
		return arbiterv1.KueuePreemption_WITHIN_CLUSTER_QUEUE_LOWER_PRIORITY
	case kueue.PreemptionPolicyLowerOrNewerEqualPriority:
		return arbiterv1.KueuePreemption_WITHIN_CLUSTER_QUEUE_LOWER_OR_NEWER_EQUAL_PRIORITY
	}
	return arbiterv1.KueuePreemption_WITHIN_CLUSTER_QUEUE_NEVER
}

func reclaimWithinCohort(p kueue.PreemptionPolicy) arbiterv1.KueuePreemption_ReclaimWithinCohort {
	switch p {
	case kueue.PreemptionPolicyLowerPriority:
		return arbiterv1.KueuePreemption_RECLAIM_WITHIN_COHORT_LOWER_PRIORITY
	case kueue.PreemptionPolicyAny:
		return arbiterv1.KueuePreemption_RECLAIM_WITHIN_COHORT_ANY
	}
	return arbiterv1.KueuePreemption_RECLAIM_WITHIN_COHORT_NEVER
}

func addTo(total, amounts map[string]float64) {
	for r, v := range amounts {
		total[r] += v
	}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Describe formats amounts as "cpu=2000, memory=274877906944, nvidia.com/gpu=4" in name order,
// every number in full.
func Describe(amounts map[string]float64) string {
	parts := make([]string, 0, len(amounts))
	for _, r := range sortedKeys(amounts) {
		parts = append(parts, r+"="+strconv.FormatFloat(amounts[r], 'f', -1, 64))
	}
	return strings.Join(parts, ", ")
}
