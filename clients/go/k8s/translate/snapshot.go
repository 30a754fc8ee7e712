package translate

import (
	"fmt"
	"sort"
	"time"

	"google.golang.org/protobuf/proto"
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
	// ReasonInvalidGPUSharing: a pod's GPU sharing annotations, or a placed sharing pod's GPU
	// group labels, cannot be sent (gpusharing.go); the message names the annotation or label.
	ReasonInvalidGPUSharing = "invalid-gpu-sharing"
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
	// IgnoredResources are left out of every map. Unless "pods" is among them, every pod asks for
	// one "pods" (PodsResource), which a node's allocatable bounds as the kubelet does, and every
	// queue that names no "pods" quota deserves -1 of it: pods are counted per node, never
	// divided between queues.
	IgnoredResources map[string]bool
	// Assumed holds the pods this adapter bound whose binding the cache does not show yet, by UID,
	// with the node: they count as RUNNING there, so capacity is never handed out twice.
	Assumed map[types.UID]string
	// Evicting holds the pods this adapter evicted whose termination the cache does not show
	// yet: they count as RELEASING.
	Evicting map[types.UID]bool
	// AssumedGroups are the GPU groups of assumed pods that share devices, by UID: the labels the
	// adapter writes may not be in the cache yet.
	AssumedGroups map[types.UID][]string
	// ReservationNamespace holds the reservation pods of GPU sharing (gpusharing.go); "" treats
	// them as any other pod.
	ReservationNamespace string
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
	// Reservations lists the reservation pods to delete and the devices that need one.
	Reservations Reservations
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
//     sidecars, overhead, pod-level resources), plus one "pods" unless ignored. Succeeded and
//     Failed pods are left out.
//   - Queues: as given, with deserved "pods" -1 where a queue sets none (unless "pods" is
//     ignored), so that the pod count bounds nodes only.
//   - A group takes its queue, priority, preemptibility and min-member from its first pod by
//     name; its creation time is its oldest pod's.
//   - GPU sharing (gpusharing.go): KAI's annotations become the pod's sharing fields, a placed
//     pod's GPU group labels its gpu_groups, a node's nvidia.com/gpu.memory label its
//     gpu_device_memory. The reservation pods in ReservationNamespace are sorted into those that
//     hold a device in use (their GPU left to the node: the device's pods count it), the stale
//     ones (withheld whole, listed for deletion) and the devices in use that lack one.
//
// Groups whose queue is missing, unknown or not a leaf, pods with malformed group keys,
// pending pods whose required node affinity cannot be expressed as a node selector (only
// single-value In terms can), and pods with invalid GPU sharing are listed in Result.Excluded
// instead, so one bad pod never makes
// arbiter reject the whole request. Output order is by name throughout.
func Build(in Input) *Result {
	if !in.IgnoredResources[PodsResource] {
		in.Queues = withPodsUnbounded(in.Queues)
	}
	b := &builder{
		in: in,
		res: &Result{
			Pods:      map[PodKey]*corev1.Pod{},
			Allocated: map[string]map[string]float64{},
			Capacity:  map[string]float64{},
		},
		nodes:       translateNodes(in),
		liveDevices: map[Device]bool{},
	}
	groups := b.groupPods()
	queues := indexQueues(in.Queues)
	snap := &arbiterv1.Snapshot{Now: timestamppb.New(in.Now), Queues: in.Queues}
	inUse := map[Device]bool{}
	for _, name := range sortedKeys(groups) {
		if pg := b.podGroup(name, groups[name], queues); pg != nil {
			snap.PodGroups = append(snap.PodGroups, pg)
			for _, p := range pg.Pods {
				for _, g := range p.GpuGroups {
					inUse[Device{Node: p.NodeName, Group: g}] = true
				}
			}
		}
	}
	b.reservations(inUse, b.liveDevices)
	b.rollUpAllocated(queues)
	snap.Nodes = b.sortedNodes()
	b.res.Snapshot = snap
	return b.res
}

// builder is Build's state between its steps: the input, the result so far, and the nodes,
// whose allocatable shrinks by every pod the snapshot does not carry.
type builder struct {
	in    Input
	res   *Result
	nodes map[string]*arbiterv1.Node
	// reservationPods are the reservation pods of GPU sharing; liveDevices the devices that the
	// placed pods of this scheduler name in their groups.
	reservationPods []*corev1.Pod
	liveDevices     map[Device]bool
}

// translateNodes is every node of in by name, with its allocatable, labels, taints and
// unschedulable flag.
func translateNodes(in Input) map[string]*arbiterv1.Node {
	nodes := map[string]*arbiterv1.Node{}
	for _, n := range in.Nodes {
		node := &arbiterv1.Node{
			Name:            n.Name,
			Allocatable:     Amounts(n.Status.Allocatable, in.IgnoredResources),
			Labels:          copyMap(n.Labels),
			Unschedulable:   n.Spec.Unschedulable,
			GpuDeviceMemory: NodeGPUMemory(n),
		}
		for _, t := range n.Spec.Taints {
			node.Taints = append(node.Taints, &arbiterv1.Taint{Key: t.Key, Value: t.Value, Effect: string(t.Effect)})
		}
		nodes[n.Name] = node
	}
	return nodes
}

// withhold removes a pod's requests from its node: the snapshot does not carry the pod.
func (b *builder) withhold(pod *corev1.Pod, node string) {
	b.withholdAmounts(node, requests(pod, b.in.IgnoredResources))
}

// withholdExcept withholds a pod's requests from its node, but for resource keep.
func (b *builder) withholdExcept(pod *corev1.Pod, node, keep string) {
	ignored := map[string]bool{keep: true}
	for r := range b.in.IgnoredResources {
		ignored[r] = true
	}
	b.withholdAmounts(node, requests(pod, ignored))
}

// withholdAmounts removes amounts from node's allocatable, never below 0.
func (b *builder) withholdAmounts(node string, amounts map[string]float64) {
	n := b.nodes[node]
	if n == nil {
		return
	}
	for r, v := range amounts {
		if left := n.Allocatable[r] - v; left > 0 {
			n.Allocatable[r] = left
		} else {
			delete(n.Allocatable, r)
		}
	}
}

// exclude leaves pod out of the snapshot, with the reason, and withholds what it holds. A placed
// pod that shares GPU devices and names no group holds as many whole devices as it shares: no
// reservation pod can say which.
func (b *builder) exclude(pod *corev1.Pod, node, reason, msg string) {
	b.res.Excluded = append(b.res.Excluded, Excluded{Pod: pod, Reason: reason, Message: msg})
	b.withhold(pod, node)
	if node == "" || b.in.IgnoredResources[GPUResource] {
		return
	}
	if s, err := parseGPUShare(pod, b.in.IgnoredResources); err == nil && s.shares() && len(b.groupsOf(pod)) == 0 {
		b.withholdAmounts(node, map[string]float64{GPUResource: float64(s.Devices())})
	}
}

// groupsOf is the GPU groups of a pod: assumed, else from its labels.
func (b *builder) groupsOf(pod *corev1.Pod) []string {
	if g, ok := b.in.AssumedGroups[pod.UID]; ok {
		return g
	}
	return GPUGroupsOf(pod)
}

// groupPods gathers the live pods of in.SchedulerName into their pod groups, in pod order. Pods
// of other schedulers only take room on their nodes; a pod on an unknown node or with invalid
// group labels is excluded.
func (b *builder) groupPods() map[string]*groupAcc {
	groups := map[string]*groupAcc{}
	for _, pod := range SortedPods(b.in.Pods) {
		if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			continue
		}
		node := nodeOf(pod, b.in.Assumed)
		if isReservation(pod, b.in.ReservationNamespace) {
			b.reservationPods = append(b.reservationPods, pod)
			continue
		}
		if pod.Spec.SchedulerName != b.in.SchedulerName {
			b.withhold(pod, node)
			continue
		}
		if node == "" && pod.DeletionTimestamp != nil {
			continue // deleted before it was ever placed
		}
		if node != "" && b.nodes[node] == nil {
			b.exclude(pod, node, ReasonUnknownNode, fmt.Sprintf("bound to node %q, which does not exist", node))
			continue
		}
		if node != "" && SharesGPU(pod) {
			for _, g := range b.groupsOf(pod) {
				b.liveDevices[Device{Node: node, Group: g}] = true
			}
		}
		attrs, err := groupOf(pod, b.in.DefaultQueue)
		if err != nil {
			b.exclude(pod, node, ReasonInvalidPodGroup, err.Error())
			continue
		}
		g := groups[attrs.name]
		if g == nil {
			g = &groupAcc{attrs: attrs}
			groups[attrs.name] = g
		}
		g.pods = append(g.pods, pod)
	}
	return groups
}

// queueIndex is the queues by name, and which of them are parents.
type queueIndex struct {
	byName      map[string]*arbiterv1.Queue
	hasChildren map[string]bool
}

func indexQueues(qs []*arbiterv1.Queue) queueIndex {
	ix := queueIndex{byName: map[string]*arbiterv1.Queue{}, hasChildren: map[string]bool{}}
	for _, q := range qs {
		ix.byName[q.GetName()] = q
		if q.GetParent() != "" {
			ix.hasChildren[q.GetParent()] = true
		}
	}
	return ix
}

// queueProblem is why no pod of a group in queue q can be scheduled ("" when it can).
func (ix queueIndex) queueProblem(q string) (reason, msg string) {
	switch {
	case q == "":
		return ReasonNoQueue, fmt.Sprintf("the pod names no queue: set the %s label", KeyQueue)
	case ix.byName[q] == nil:
		return ReasonUnknownQueue, fmt.Sprintf("queue %q does not exist", q)
	case ix.hasChildren[q]:
		return ReasonQueueNotLeaf, fmt.Sprintf("queue %q has child queues; pods go in leaf queues", q)
	}
	return "", ""
}

// podGroup is group name as the snapshot carries it, its pods recorded in the result and the
// running ones counted in their queue's allocation; or nil, with every pod excluded, when its
// queue or a pod's node affinity cannot be modelled.
func (b *builder) podGroup(name string, g *groupAcc, queues queueIndex) *arbiterv1.PodGroup {
	reason, msg := queues.queueProblem(g.attrs.queue)
	pg := &arbiterv1.PodGroup{
		Name:           name,
		Queue:          g.attrs.queue,
		Priority:       g.attrs.priority,
		Preemptibility: g.attrs.preemptibility,
		MinMember:      g.attrs.minMember,
	}
	var oldest time.Time
	for _, pod := range g.pods {
		node := nodeOf(pod, b.in.Assumed)
		p, err := translatePod(pod, node, b.in)
		if err != nil && reason == "" {
			reason, msg = ReasonUnsupportedNodeAffinity, fmt.Sprintf("pod %s: %v", pod.Name, err)
		}
		if !b.in.IgnoredResources[GPUResource] {
			if err := applyGPUShare(pod, p, b.nodes[node], b.in); err != nil && reason == "" {
				reason, msg = ReasonInvalidGPUSharing, fmt.Sprintf("pod %s: %v", pod.Name, err)
			}
		}
		pg.Pods = append(pg.Pods, p)
		if ts := pod.CreationTimestamp.Time; oldest.IsZero() || ts.Before(oldest) {
			oldest = ts
		}
	}
	if reason != "" {
		for _, pod := range g.pods {
			b.exclude(pod, nodeOf(pod, b.in.Assumed), reason, msg)
		}
		return nil
	}
	if !oldest.IsZero() {
		pg.CreationTime = timestamppb.New(oldest)
	}
	for i, pod := range g.pods {
		b.res.Pods[PodKey{Group: name, Pod: pg.Pods[i].Name}] = pod
		if p := pg.Pods[i]; p.Phase == arbiterv1.PodPhase_POD_PHASE_RUNNING {
			addTo(b.res.Allocated, g.attrs.queue, p.Requests)
			if amt := gpuAmount(p, b.nodes[p.NodeName]); amt > 0 {
				addTo(b.res.Allocated, g.attrs.queue, map[string]float64{GPUResource: amt})
			}
		}
	}
	return pg
}

// rollUpAllocated adds every queue's allocation to its ancestors' and gives every queue an
// entry, empty when it holds nothing.
func (b *builder) rollUpAllocated(queues queueIndex) {
	rollUp(b.res.Allocated, queues.byName)
	for _, q := range b.in.Queues {
		if b.res.Allocated[q.GetName()] == nil {
			b.res.Allocated[q.GetName()] = map[string]float64{}
		}
	}
}

// sortedNodes is the nodes in name order, once every pod has been withheld; the schedulable
// ones' allocatable is added to the result's capacity.
func (b *builder) sortedNodes() []*arbiterv1.Node {
	var out []*arbiterv1.Node
	for _, name := range sortedKeys(b.nodes) {
		n := b.nodes[name]
		out = append(out, n)
		if !n.Unschedulable {
			for r, v := range n.Allocatable {
				b.res.Capacity[r] += v
			}
		}
	}
	return out
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

// PodsResource is the node allocatable that bounds how many pods a node runs. Each pod asks for
// one, as kube-scheduler and the kubelet count it.
const PodsResource = "pods"

// requests are a pod's effective requests, as kube-scheduler counts them, one "pods" included
// unless ignored.
func requests(pod *corev1.Pod, ignored map[string]bool) map[string]float64 {
	out := Amounts(resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{}), ignored)
	if !ignored[PodsResource] {
		out[PodsResource] = 1
	}
	return out
}

// withPodsUnbounded is queues with deserved "pods" -1 in each queue that sets no "pods" quota of
// its own (copies; the input is left as it is): like cpu and memory at -1, the pod count then
// takes part in node fit only, and never makes a queue look above its deserved share
// (SEMANTICS.md §0.2, adapters).
func withPodsUnbounded(queues []*arbiterv1.Queue) []*arbiterv1.Queue {
	out := make([]*arbiterv1.Queue, len(queues))
	for i, q := range queues {
		if _, set := q.GetDeserved()[PodsResource]; set {
			out[i] = q
			continue
		}
		c := proto.Clone(q).(*arbiterv1.Queue)
		if c.Deserved == nil {
			c.Deserved = map[string]float64{}
		}
		c.Deserved[PodsResource] = -1
		out[i] = c
	}
	return out
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

// SortedPods is pods by namespace and name: the stable order in which the snapshot lists them
// and the shim writes their conditions.
func SortedPods(pods []*corev1.Pod) []*corev1.Pod {
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
