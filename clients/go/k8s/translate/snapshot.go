package translate

import (
	"fmt"
	"sort"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	resourcehelper "k8s.io/component-helpers/resource"

	arbiterv1 "arbiter.dev/clients/go/arbiterv1"
)

// Reasons a pod of this scheduler is left out of the snapshot. They are written to the pod's
// PodScheduled condition like arbiter's own pending reasons.
const (
	ReasonNoQueue                 = "no-queue"
	ReasonUnknownQueue            = "unknown-queue"
	ReasonQueueNotLeaf            = "queue-not-leaf"
	ReasonInvalidPodGroup         = "invalid-pod-group"
	ReasonUnsupportedNodeAffinity = "unsupported-node-affinity"
	ReasonUnknownNode             = "unknown-node"
)

// Input is the cluster state the snapshot is built from.
type Input struct {
	Now time.Time
	// SchedulerName selects the pods arbiter schedules (spec.schedulerName).
	SchedulerName string
	// DefaultQueue is the queue of pods that name none; "" leaves such pods unscheduled.
	DefaultQueue string
	Queues       []*arbiterv1.Queue
	Nodes        []*corev1.Node
	Pods         []*corev1.Pod
	// IgnoredResources are left out of every map (e.g. "pods", which no pod requests).
	IgnoredResources map[string]bool
	// Assumed holds the pods this adapter bound whose binding the cache does not show yet, by UID,
	// with the node: they count as RUNNING there, so capacity is never handed out twice.
	Assumed map[types.UID]string
	// Evicting holds the pods this adapter evicted whose termination the cache does not show
	// yet: they count as RELEASING.
	Evicting map[types.UID]bool
}

// PodKey names a pod as the snapshot does.
type PodKey struct{ Group, Pod string }

// Excluded is a pod of this scheduler that the snapshot leaves out, and why.
type Excluded struct {
	Pod     *corev1.Pod
	Reason  string
	Message string
}

// Result is a snapshot plus what the adapter needs to act on arbiter's answer.
type Result struct {
	Snapshot *arbiterv1.Snapshot
	// Pods maps every pod in the snapshot back to its Kubernetes object.
	Pods map[PodKey]*corev1.Pod
	// Excluded lists this scheduler's non-terminal pods that are not in the snapshot.
	Excluded []Excluded
	// Allocated is, per queue, the requests of its subtree's RUNNING pods (time-aware usage).
	Allocated map[string]map[string]float64
	// Capacity is the total that arbiter divides: Σ allocatable over schedulable nodes.
	Capacity map[string]float64
}

type groupAcc struct {
	attrs groupAttributes
	pods  []*corev1.Pod
}

// Build translates the cluster state into a Snapshot.
//
//   - Nodes: allocatable less the requests of every pod on the node that the snapshot does not
//     carry (other schedulers' pods, and this scheduler's excluded pods), never below 0; labels,
//     taints, spec.unschedulable.
//   - This scheduler's pods: grouped by KeyPodGroup (else a group of one), in the group's queue.
//     Phase: bound and terminating (or evicted by us) = RELEASING, bound = RUNNING, else PENDING.
//     Requests are the effective pod requests as kube-scheduler computes them (init containers,
//     sidecars, overhead, pod-level resources). Succeeded and Failed pods are left out.
//   - A group takes its queue, priority, preemptibility and min-member from its first pod by
//     name; its creation time is its oldest pod's.
//
// Groups whose queue is missing, unknown or not a leaf, pods with malformed group keys, and
// pending pods whose required node affinity cannot be expressed as a node selector (only
// single-value In terms can) are listed in Result.Excluded instead, so one bad pod never makes
// arbiter reject the whole request. Output order is by name throughout.
func Build(in Input) *Result {
	res := &Result{
		Pods:      map[PodKey]*corev1.Pod{},
		Allocated: map[string]map[string]float64{},
		Capacity:  map[string]float64{},
	}
	nodes := map[string]*arbiterv1.Node{}
	for _, n := range in.Nodes {
		node := &arbiterv1.Node{
			Name:          n.Name,
			Allocatable:   Amounts(n.Status.Allocatable, in.IgnoredResources),
			Labels:        copyMap(n.Labels),
			Unschedulable: n.Spec.Unschedulable,
		}
		for _, t := range n.Spec.Taints {
			node.Taints = append(node.Taints, &arbiterv1.Taint{Key: t.Key, Value: t.Value, Effect: string(t.Effect)})
		}
		nodes[n.Name] = node
	}
	// withhold removes a pod's requests from its node: the snapshot does not carry the pod.
	withhold := func(pod *corev1.Pod, node string) {
		n := nodes[node]
		if n == nil {
			return
		}
		for r, v := range requests(pod, in.IgnoredResources) {
			if left := n.Allocatable[r] - v; left > 0 {
				n.Allocatable[r] = left
			} else {
				delete(n.Allocatable, r)
			}
		}
	}
	exclude := func(pod *corev1.Pod, node, reason, msg string) {
		res.Excluded = append(res.Excluded, Excluded{Pod: pod, Reason: reason, Message: msg})
		withhold(pod, node)
	}

	groups := map[string]*groupAcc{}
	for _, pod := range sortedPods(in.Pods) {
		if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			continue
		}
		node := nodeOf(pod, in.Assumed)
		if pod.Spec.SchedulerName != in.SchedulerName {
			withhold(pod, node)
			continue
		}
		if node == "" && pod.DeletionTimestamp != nil {
			continue // deleted before it was ever placed
		}
		if node != "" && nodes[node] == nil {
			exclude(pod, node, ReasonUnknownNode, fmt.Sprintf("bound to node %q, which does not exist", node))
			continue
		}
		attrs, err := groupOf(pod, in.DefaultQueue)
		if err != nil {
			exclude(pod, node, ReasonInvalidPodGroup, err.Error())
			continue
		}
		g := groups[attrs.name]
		if g == nil {
			g = &groupAcc{attrs: attrs}
			groups[attrs.name] = g
		}
		g.pods = append(g.pods, pod)
	}

	queues := map[string]*arbiterv1.Queue{}
	hasChildren := map[string]bool{}
	for _, q := range in.Queues {
		queues[q.GetName()] = q
		if q.GetParent() != "" {
			hasChildren[q.GetParent()] = true
		}
	}

	snap := &arbiterv1.Snapshot{Now: timestamppb.New(in.Now), Queues: in.Queues}
	for _, name := range sortedKeys(groups) {
		g := groups[name]
		reason, msg := "", ""
		switch q := g.attrs.queue; {
		case q == "":
			reason, msg = ReasonNoQueue, fmt.Sprintf("the pod names no queue: set the %s label", KeyQueue)
		case queues[q] == nil:
			reason, msg = ReasonUnknownQueue, fmt.Sprintf("queue %q does not exist", q)
		case hasChildren[q]:
			reason, msg = ReasonQueueNotLeaf, fmt.Sprintf("queue %q has child queues; pods go in leaf queues", q)
		}
		pg := &arbiterv1.PodGroup{
			Name:           name,
			Queue:          g.attrs.queue,
			Priority:       g.attrs.priority,
			Preemptibility: g.attrs.preemptibility,
			MinMember:      g.attrs.minMember,
		}
		var oldest time.Time
		for _, pod := range g.pods {
			p, err := translatePod(pod, nodeOf(pod, in.Assumed), in)
			if err != nil && reason == "" {
				reason, msg = ReasonUnsupportedNodeAffinity, fmt.Sprintf("pod %s: %v", pod.Name, err)
			}
			pg.Pods = append(pg.Pods, p)
			if ts := pod.CreationTimestamp.Time; oldest.IsZero() || ts.Before(oldest) {
				oldest = ts
			}
		}
		if reason != "" {
			for _, pod := range g.pods {
				exclude(pod, nodeOf(pod, in.Assumed), reason, msg)
			}
			continue
		}
		if !oldest.IsZero() {
			pg.CreationTime = timestamppb.New(oldest)
		}
		for i, pod := range g.pods {
			res.Pods[PodKey{Group: name, Pod: pg.Pods[i].Name}] = pod
			if pg.Pods[i].Phase == arbiterv1.PodPhase_POD_PHASE_RUNNING {
				addTo(res.Allocated, g.attrs.queue, pg.Pods[i].Requests)
			}
		}
		snap.PodGroups = append(snap.PodGroups, pg)
	}
	rollUp(res.Allocated, queues)
	for _, q := range in.Queues {
		if res.Allocated[q.GetName()] == nil {
			res.Allocated[q.GetName()] = map[string]float64{}
		}
	}

	for _, name := range sortedKeys(nodes) {
		n := nodes[name]
		snap.Nodes = append(snap.Nodes, n)
		if !n.Unschedulable {
			for r, v := range n.Allocatable {
				res.Capacity[r] += v
			}
		}
	}
	res.Snapshot = snap
	return res
}

// translatePod converts one pod of a group. The error reports a required node affinity that
// has no node-selector equivalent; it matters only for a pod still to be placed.
func translatePod(pod *corev1.Pod, node string, in Input) (*arbiterv1.Pod, error) {
	p := &arbiterv1.Pod{
		Name:         pod.Name,
		Requests:     requests(pod, in.IgnoredResources),
		NodeName:     node,
		NodeSelector: copyMap(pod.Spec.NodeSelector),
	}
	switch {
	case node == "":
		p.Phase = arbiterv1.PodPhase_POD_PHASE_PENDING
	case pod.DeletionTimestamp != nil || in.Evicting[pod.UID]:
		p.Phase = arbiterv1.PodPhase_POD_PHASE_RELEASING
	default:
		p.Phase = arbiterv1.PodPhase_POD_PHASE_RUNNING
	}
	if pod.Status.StartTime != nil && p.Phase != arbiterv1.PodPhase_POD_PHASE_PENDING {
		p.StartTime = timestamppb.New(pod.Status.StartTime.Time)
	}
	for _, t := range pod.Spec.Tolerations {
		p.Tolerations = append(p.Tolerations, &arbiterv1.Toleration{
			Key: t.Key, Operator: string(t.Operator), Value: t.Value, Effect: string(t.Effect),
		})
	}
	err := addRequiredNodeAffinity(pod, p)
	if p.Phase != arbiterv1.PodPhase_POD_PHASE_PENDING {
		err = nil // already placed; kept for re-placement hints only
	}
	return p, err
}

// addRequiredNodeAffinity folds a required node affinity into the pod's node selector when it is
// one term of single-value In expressions (what a node selector can say), and fails otherwise.
func addRequiredNodeAffinity(pod *corev1.Pod, p *arbiterv1.Pod) error {
	aff := pod.Spec.Affinity
	if aff == nil || aff.NodeAffinity == nil || aff.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return nil
	}
	terms := aff.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	if len(terms) != 1 || len(terms[0].MatchFields) != 0 {
		return fmt.Errorf("required node affinity with %d terms or field matches has no node-selector form", len(terms))
	}
	for _, e := range terms[0].MatchExpressions {
		if e.Operator != corev1.NodeSelectorOpIn || len(e.Values) != 1 {
			return fmt.Errorf("required node affinity %s %s %v has no node-selector form", e.Key, e.Operator, e.Values)
		}
		if old, ok := p.NodeSelector[e.Key]; ok && old != e.Values[0] {
			return fmt.Errorf("node affinity %s=%s contradicts the node selector %s=%s", e.Key, e.Values[0], e.Key, old)
		}
		if p.NodeSelector == nil {
			p.NodeSelector = map[string]string{}
		}
		p.NodeSelector[e.Key] = e.Values[0]
	}
	return nil
}

// requests are a pod's effective requests, as kube-scheduler counts them.
func requests(pod *corev1.Pod, ignored map[string]bool) map[string]float64 {
	return Amounts(resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{}), ignored)
}

func nodeOf(pod *corev1.Pod, assumed map[types.UID]string) string {
	if pod.Spec.NodeName != "" {
		return pod.Spec.NodeName
	}
	return assumed[pod.UID]
}

// rollUp adds every queue's own amounts to each of its ancestors, so a parent's entry covers its
// subtree. A parent cycle (which arbiter rejects anyway) stops the walk.
func rollUp(allocated map[string]map[string]float64, queues map[string]*arbiterv1.Queue) {
	own := map[string]map[string]float64{}
	for q, m := range allocated {
		own[q] = copyFloats(m)
	}
	for _, q := range sortedKeys(own) {
		seen := map[string]bool{q: true}
		for p := queues[q].GetParent(); p != "" && !seen[p]; p = queues[p].GetParent() {
			seen[p] = true
			addTo(allocated, p, own[q])
		}
	}
}

func addTo(m map[string]map[string]float64, key string, amounts map[string]float64) {
	dst := m[key]
	if dst == nil {
		dst = map[string]float64{}
		m[key] = dst
	}
	for r, v := range amounts {
		dst[r] += v
	}
}

func sortedPods(pods []*corev1.Pod) []*corev1.Pod {
	out := append([]*corev1.Pod(nil), pods...)
	sort.Slice(out, func(i, j int) bool {
		if out[i].Namespace != out[j].Namespace {
			return out[i].Namespace < out[j].Namespace
		}
		return out[i].Name < out[j].Name
	})
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func copyMap(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func copyFloats(m map[string]float64) map[string]float64 {
	out := make(map[string]float64, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
