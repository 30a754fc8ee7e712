package translate

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/timestamppb"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	arbiterv1 "arbiter.dev/clients/go/arbiterv1"
)

var (
	t0  = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	now = t0.Add(time.Hour)
)

type podOpt func(*corev1.Pod)

func newPod(ns, name string, opts ...podOpt) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(ns + "-" + name),
			CreationTimestamp: metav1.NewTime(t0)},
		Spec: corev1.PodSpec{SchedulerName: "arbiter", Containers: []corev1.Container{{Name: "main",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func requesting(name corev1.ResourceName, q string) podOpt {
	return func(p *corev1.Pod) { p.Spec.Containers[0].Resources.Requests[name] = resource.MustParse(q) }
}

func label(k, v string) podOpt {
	return func(p *corev1.Pod) {
		if p.Labels == nil {
			p.Labels = map[string]string{}
		}
		p.Labels[k] = v
	}
}

func annotation(k, v string) podOpt {
	return func(p *corev1.Pod) {
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[k] = v
	}
}

func onNode(n string, started time.Time) podOpt {
	return func(p *corev1.Pod) {
		p.Spec.NodeName = n
		p.Status.Phase = corev1.PodRunning
		st := metav1.NewTime(started)
		p.Status.StartTime = &st
	}
}

func terminating(p *corev1.Pod) {
	ts := metav1.NewTime(now)
	p.DeletionTimestamp = &ts
}

func phase(ph corev1.PodPhase) podOpt { return func(p *corev1.Pod) { p.Status.Phase = ph } }

func scheduler(name string) podOpt { return func(p *corev1.Pod) { p.Spec.SchedulerName = name } }

func createdAt(ts time.Time) podOpt {
	return func(p *corev1.Pod) { p.CreationTimestamp = metav1.NewTime(ts) }
}

func priority(v int32) podOpt { return func(p *corev1.Pod) { p.Spec.Priority = &v } }

func requiredAffinity(terms ...corev1.NodeSelectorTerm) podOpt {
	return func(p *corev1.Pod) {
		p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: terms}}}
	}
}

func newNode(name string, cpu, mem string, gpus int64) *corev1.Node {
	alloc := corev1.ResourceList{"cpu": resource.MustParse(cpu), "memory": resource.MustParse(mem),
		"pods": resource.MustParse("110")}
	if gpus > 0 {
		alloc["nvidia.com/gpu"] = *resource.NewQuantity(gpus, resource.DecimalSI)
	}
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{Allocatable: alloc}}
}

var defaultQueues = []*arbiterv1.Queue{
	{Name: "research"},
	{Name: "team-a", Parent: "research"},
	{Name: "team-b", Parent: "research"},
}

func ts(t time.Time) *timestamppb.Timestamp { return timestamppb.New(t) }

const pending = arbiterv1.PodPhase_POD_PHASE_PENDING
const running = arbiterv1.PodPhase_POD_PHASE_RUNNING
const releasing = arbiterv1.PodPhase_POD_PHASE_RELEASING

func TestBuildPodGroups(t *testing.T) {
	inA := label(KeyQueue, "team-a")
	tests := []struct {
		name         string
		pods         []*corev1.Pod
		defaultQueue string
		assumed      map[types.UID]string
		evicting     map[types.UID]bool
		want         []*arbiterv1.PodGroup
		wantExcluded map[string]string // pod name -> reason
	}{
		{
			name: "PodWithoutGroupIsAGroupOfOne",
			pods: []*corev1.Pod{newPod("ml", "solo", inA, requesting("cpu", "500m"), requesting("memory", "1Gi"))},
			want: []*arbiterv1.PodGroup{{Name: "ml/solo", Queue: "team-a", CreationTime: ts(t0), Pods: []*arbiterv1.Pod{
				{Name: "solo", Phase: pending, Requests: map[string]float64{"cpu": 500, "memory": 1 << 30}}}}},
		},
		{
			name: "GroupLabelGathersPodsWithGangSettingsFromTheFirstPod",
			pods: []*corev1.Pod{
				newPod("ml", "train-1", inA, label(KeyPodGroup, "train"), annotation(KeyMinMember, "2"),
					annotation(KeyPreemptibility, "non-preemptible"), annotation(KeyPriority, "150"),
					requesting("nvidia.com/gpu", "4"), createdAt(t0.Add(time.Minute))),
				newPod("ml", "train-0", inA, label(KeyPodGroup, "train"), annotation(KeyMinMember, "2"),
					annotation(KeyPreemptibility, "non-preemptible"), annotation(KeyPriority, "150"),
					requesting("nvidia.com/gpu", "4")),
			},
			want: []*arbiterv1.PodGroup{{Name: "ml/train", Queue: "team-a", MinMember: 2, Priority: 150,
				Preemptibility: arbiterv1.Preemptibility_NON_PREEMPTIBLE, CreationTime: ts(t0), Pods: []*arbiterv1.Pod{
					{Name: "train-0", Phase: pending, Requests: map[string]float64{"nvidia.com/gpu": 4}},
					{Name: "train-1", Phase: pending, Requests: map[string]float64{"nvidia.com/gpu": 4}}}}},
		},
		{
			name: "SameGroupNameInTwoNamespacesIsTwoGroups",
			pods: []*corev1.Pod{newPod("a", "p", inA, label(KeyPodGroup, "g")), newPod("b", "p", inA, label(KeyPodGroup, "g"))},
			want: []*arbiterv1.PodGroup{
				{Name: "a/g", Queue: "team-a", CreationTime: ts(t0), Pods: []*arbiterv1.Pod{{Name: "p", Phase: pending}}},
				{Name: "b/g", Queue: "team-a", CreationTime: ts(t0), Pods: []*arbiterv1.Pod{{Name: "p", Phase: pending}}}},
		},
		{
			name: "KAIQueueLabelIsAccepted",
			pods: []*corev1.Pod{newPod("ml", "p", label(KAIQueueLabel, "team-b"))},
			want: []*arbiterv1.PodGroup{{Name: "ml/p", Queue: "team-b", CreationTime: ts(t0), Pods: []*arbiterv1.Pod{{Name: "p", Phase: pending}}}},
		},
		{
			name: "ArbiterQueueLabelWinsOverKAIs",
			pods: []*corev1.Pod{newPod("ml", "p", inA, label(KAIQueueLabel, "team-b"))},
			want: []*arbiterv1.PodGroup{{Name: "ml/p", Queue: "team-a", CreationTime: ts(t0), Pods: []*arbiterv1.Pod{{Name: "p", Phase: pending}}}},
		},
		{
			name:         "DefaultQueueAppliesToPodsNamingNone",
			pods:         []*corev1.Pod{newPod("ml", "p")},
			defaultQueue: "team-b",
			want:         []*arbiterv1.PodGroup{{Name: "ml/p", Queue: "team-b", CreationTime: ts(t0), Pods: []*arbiterv1.Pod{{Name: "p", Phase: pending}}}},
		},
		{
			name: "PriorityClassValueIsTheDefaultPriority",
			pods: []*corev1.Pod{newPod("ml", "p", inA, priority(1000))},
			want: []*arbiterv1.PodGroup{{Name: "ml/p", Queue: "team-a", Priority: 1000, CreationTime: ts(t0), Pods: []*arbiterv1.Pod{{Name: "p", Phase: pending}}}},
		},
		{
			name: "BoundPodIsRunningWithItsStartTime",
			pods: []*corev1.Pod{newPod("ml", "p", inA, onNode("n1", t0), requesting("cpu", "1"))},
			want: []*arbiterv1.PodGroup{{Name: "ml/p", Queue: "team-a", CreationTime: ts(t0), Pods: []*arbiterv1.Pod{
				{Name: "p", Phase: running, NodeName: "n1", StartTime: ts(t0), Requests: map[string]float64{"cpu": 1000}}}}},
		},
		{
			name: "TerminatingPodIsReleasing",
			pods: []*corev1.Pod{newPod("ml", "p", inA, onNode("n1", t0), terminating)},
			want: []*arbiterv1.PodGroup{{Name: "ml/p", Queue: "team-a", CreationTime: ts(t0), Pods: []*arbiterv1.Pod{
				{Name: "p", Phase: releasing, NodeName: "n1", StartTime: ts(t0)}}}},
		},
		{
			name:     "EvictedPodIsReleasingBeforeTheCacheShowsIt",
			pods:     []*corev1.Pod{newPod("ml", "p", inA, onNode("n1", t0))},
			evicting: map[types.UID]bool{"ml-p": true},
			want: []*arbiterv1.PodGroup{{Name: "ml/p", Queue: "team-a", CreationTime: ts(t0), Pods: []*arbiterv1.Pod{
				{Name: "p", Phase: releasing, NodeName: "n1", StartTime: ts(t0)}}}},
		},
		{
			name:    "AssumedBindingCountsAsRunning",
			pods:    []*corev1.Pod{newPod("ml", "p", inA)},
			assumed: map[types.UID]string{"ml-p": "n1"},
			want: []*arbiterv1.PodGroup{{Name: "ml/p", Queue: "team-a", CreationTime: ts(t0), Pods: []*arbiterv1.Pod{
				{Name: "p", Phase: running, NodeName: "n1"}}}},
		},
		{
			name: "FinishedAndOtherSchedulersPodsAreNotGroups",
			pods: []*corev1.Pod{
				newPod("ml", "done", inA, onNode("n1", t0), phase(corev1.PodSucceeded)),
				newPod("ml", "failed", inA, phase(corev1.PodFailed)),
				newPod("ml", "theirs", inA, scheduler("default-scheduler")),
				newPod("ml", "deleted-while-pending", inA, terminating),
			},
		},
		{
			name: "NodeSelectorTolerationsAndSingleValueAffinityAreKept",
			pods: []*corev1.Pod{newPod("ml", "p", inA, func(p *corev1.Pod) {
				p.Spec.NodeSelector = map[string]string{"pool": "gpu"}
				p.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "ml", Effect: corev1.TaintEffectNoSchedule}}
			}, requiredAffinity(corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
				{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"z1"}}}}))},
			want: []*arbiterv1.PodGroup{{Name: "ml/p", Queue: "team-a", CreationTime: ts(t0), Pods: []*arbiterv1.Pod{{
				Name: "p", Phase: pending, NodeSelector: map[string]string{"pool": "gpu", "zone": "z1"},
				Tolerations: []*arbiterv1.Toleration{{Key: "dedicated", Operator: "Equal", Value: "ml", Effect: "NoSchedule"}}}}}},
		},
		{
			name: "UnknownQueueExcludesTheWholeGroup",
			pods: []*corev1.Pod{
				newPod("ml", "g-0", label(KeyQueue, "nope"), label(KeyPodGroup, "g")),
				newPod("ml", "g-1", label(KeyQueue, "nope"), label(KeyPodGroup, "g"), onNode("n1", t0)),
			},
			wantExcluded: map[string]string{"g-0": ReasonUnknownQueue, "g-1": ReasonUnknownQueue},
		},
		{
			name:         "NonLeafQueueIsExcluded",
			pods:         []*corev1.Pod{newPod("ml", "p", label(KeyQueue, "research"))},
			wantExcluded: map[string]string{"p": ReasonQueueNotLeaf},
		},
		{
			name:         "PodNamingNoQueueWithoutDefaultIsExcluded",
			pods:         []*corev1.Pod{newPod("ml", "p")},
			wantExcluded: map[string]string{"p": ReasonNoQueue},
		},
		{
			name: "MalformedGroupKeysExcludeOnlyThatPod",
			pods: []*corev1.Pod{
				newPod("ml", "bad-min", inA, annotation(KeyMinMember, "two")),
				newPod("ml", "bad-pre", inA, annotation(KeyPreemptibility, "maybe")),
				newPod("ml", "bad-prio", inA, annotation(KeyPriority, "high")),
				newPod("ml", "good", inA),
			},
			want: []*arbiterv1.PodGroup{{Name: "ml/good", Queue: "team-a", CreationTime: ts(t0), Pods: []*arbiterv1.Pod{{Name: "good", Phase: pending}}}},
			wantExcluded: map[string]string{"bad-min": ReasonInvalidPodGroup, "bad-pre": ReasonInvalidPodGroup,
				"bad-prio": ReasonInvalidPodGroup},
		},
		{
			name: "PendingPodWithInexpressibleAffinityIsExcluded",
			pods: []*corev1.Pod{newPod("ml", "p", inA, requiredAffinity(corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
				{Key: "zone", Operator: corev1.NodeSelectorOpNotIn, Values: []string{"z1"}}}}))},
			wantExcluded: map[string]string{"p": ReasonUnsupportedNodeAffinity},
		},
		{
			name:         "PodOnAVanishedNodeIsExcluded",
			pods:         []*corev1.Pod{newPod("ml", "p", inA, onNode("gone", t0))},
			wantExcluded: map[string]string{"p": ReasonUnknownNode},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := Build(Input{
				Now: now, SchedulerName: "arbiter", DefaultQueue: tc.defaultQueue, Queues: defaultQueues,
				Nodes: []*corev1.Node{newNode("n1", "64", "256Gi", 8)}, Pods: tc.pods,
				IgnoredResources: map[string]bool{"pods": true}, Assumed: tc.assumed, Evicting: tc.evicting,
			})
			if diff := cmp.Diff(tc.want, res.Snapshot.PodGroups, protocmp.Transform()); diff != "" {
				t.Errorf("pod groups (-want +got):\n%s", diff)
			}
			gotExcluded := map[string]string{}
			for _, e := range res.Excluded {
				gotExcluded[e.Pod.Name] = e.Reason
			}
			if tc.wantExcluded == nil {
				tc.wantExcluded = map[string]string{}
			}
			if diff := cmp.Diff(tc.wantExcluded, gotExcluded); diff != "" {
				t.Errorf("excluded (-want +got):\n%s", diff)
			}
			for _, g := range res.Snapshot.PodGroups {
				for _, p := range g.Pods {
					if res.Pods[PodKey{Group: g.Name, Pod: p.Name}] == nil {
						t.Errorf("pod %s/%s has no Kubernetes object in Result.Pods", g.Name, p.Name)
					}
				}
			}
		})
	}
}

func TestBuildNodes(t *testing.T) {
	tainted := newNode("n2", "16", "64Gi", 0)
	tainted.Labels = map[string]string{"pool": "cpu"}
	tainted.Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "batch", Effect: corev1.TaintEffectNoSchedule}}
	cordoned := newNode("n3", "8", "32Gi", 0)
	cordoned.Spec.Unschedulable = true

	inA := label(KeyQueue, "team-a")
	res := Build(Input{
		Now: now, SchedulerName: "arbiter", Queues: defaultQueues,
		Nodes: []*corev1.Node{tainted, newNode("n1", "64", "256Gi", 8), cordoned},
		Pods: []*corev1.Pod{
			// Another scheduler's pod and an excluded pod hold capacity the snapshot cannot see.
			newPod("kube-system", "dns", scheduler("default-scheduler"), onNode("n1", t0), requesting("cpu", "2"), requesting("memory", "1Gi")),
			newPod("ml", "orphan", label(KeyQueue, "nope"), onNode("n1", t0), requesting("nvidia.com/gpu", "8")),
			// A finished pod of another scheduler holds nothing.
			newPod("ml", "job", scheduler("default-scheduler"), onNode("n2", t0), phase(corev1.PodSucceeded), requesting("cpu", "16")),
			newPod("ml", "mine", inA, onNode("n2", t0), requesting("cpu", "4")),
		},
		IgnoredResources: map[string]bool{"pods": true},
	})
	want := []*arbiterv1.Node{
		{Name: "n1", Allocatable: map[string]float64{"cpu": 62000, "memory": 255 << 30}},
		{Name: "n2", Allocatable: map[string]float64{"cpu": 16000, "memory": 64 << 30}, Labels: map[string]string{"pool": "cpu"},
			Taints: []*arbiterv1.Taint{{Key: "dedicated", Value: "batch", Effect: "NoSchedule"}}},
		{Name: "n3", Allocatable: map[string]float64{"cpu": 8000, "memory": 32 << 30}, Unschedulable: true},
	}
	if diff := cmp.Diff(want, res.Snapshot.Nodes, protocmp.Transform()); diff != "" {
		t.Errorf("nodes (-want +got):\n%s", diff)
	}
	wantCapacity := map[string]float64{"cpu": 78000, "memory": 319 << 30}
	if diff := cmp.Diff(wantCapacity, res.Capacity); diff != "" {
		t.Errorf("capacity (-want +got):\n%s", diff)
	}
	if got := res.Snapshot.Now.AsTime(); !got.Equal(now) {
		t.Errorf("now = %v, want %v", got, now)
	}
}

func TestAllocatedCountsRunningPodsUpTheTree(t *testing.T) {
	res := Build(Input{
		Now: now, SchedulerName: "arbiter", Queues: defaultQueues,
		Nodes: []*corev1.Node{newNode("n1", "64", "256Gi", 8)},
		Pods: []*corev1.Pod{
			newPod("ml", "a-run", label(KeyQueue, "team-a"), onNode("n1", t0), requesting("nvidia.com/gpu", "2")),
			newPod("ml", "a-wait", label(KeyQueue, "team-a"), requesting("nvidia.com/gpu", "4")),
			newPod("ml", "b-run", label(KeyQueue, "team-b"), onNode("n1", t0), requesting("nvidia.com/gpu", "1"), requesting("cpu", "1")),
			newPod("ml", "b-gone", label(KeyQueue, "team-b"), onNode("n1", t0), terminating, requesting("nvidia.com/gpu", "3")),
		},
	})
	want := map[string]map[string]float64{
		"research": {"nvidia.com/gpu": 3, "cpu": 1000, "pods": 2},
		"team-a":   {"nvidia.com/gpu": 2, "pods": 1},
		"team-b":   {"nvidia.com/gpu": 1, "cpu": 1000, "pods": 1},
	}
	if diff := cmp.Diff(want, res.Allocated); diff != "" {
		t.Errorf("allocated (-want +got):\n%s", diff)
	}
}

// TestPodsAreCountedAgainstTheNodesPodsAllocatable: every pod asks for one "pods", which the
// node's pods allocatable bounds (less the pods of other schedulers); queues that set no pods
// quota deserve -1 of it. Ignoring "pods" turns all of that off.
func TestPodsAreCountedAgainstTheNodesPodsAllocatable(t *testing.T) {
	queues := []*arbiterv1.Queue{
		{Name: "team-a", Deserved: map[string]float64{"nvidia.com/gpu": 4}},
		{Name: "team-b", Deserved: map[string]float64{"pods": 10}},
	}
	in := Input{
		Now: now, SchedulerName: "arbiter", Queues: queues,
		Nodes: []*corev1.Node{newNode("n1", "8", "16Gi", 0)},
		Pods: []*corev1.Pod{
			newPod("ml", "a-run", label(KeyQueue, "team-a"), onNode("n1", t0), requesting("cpu", "1")),
			newPod("ml", "a-wait", label(KeyQueue, "team-a"), requesting("cpu", "1")),
			newPod("kube-system", "other", scheduler("default-scheduler"), onNode("n1", t0), requesting("cpu", "1")),
		},
	}
	res := Build(in)
	if got := res.Snapshot.GetNodes()[0].GetAllocatable()["pods"]; got != 109 {
		t.Errorf("n1's pods allocatable = %v, want 110 less the other scheduler's pod", got)
	}
	for _, name := range []string{"a-run", "a-wait"} {
		if got := snapshotPod(res.Snapshot, name).GetRequests()["pods"]; got != 1 {
			t.Errorf("%s asks for %v pods, want 1", name, got)
		}
	}
	if got := res.Snapshot.GetQueues()[0].GetDeserved()["pods"]; got != -1 {
		t.Errorf("team-a deserves %v pods, want -1 (it names no pods quota)", got)
	}
	if got := res.Snapshot.GetQueues()[1].GetDeserved()["pods"]; got != 10 {
		t.Errorf("team-b deserves %v pods, want its own 10", got)
	}
	if _, changed := queues[0].GetDeserved()["pods"]; changed {
		t.Error("Build changed the queues it was given")
	}

	in.IgnoredResources = map[string]bool{"pods": true}
	res = Build(in)
	if _, ok := res.Snapshot.GetNodes()[0].GetAllocatable()["pods"]; ok {
		t.Error("pods ignored, yet n1 has a pods allocatable")
	}
	if _, ok := snapshotPod(res.Snapshot, "a-wait").GetRequests()["pods"]; ok {
		t.Error("pods ignored, yet a-wait asks for pods")
	}
	if _, ok := res.Snapshot.GetQueues()[0].GetDeserved()["pods"]; ok {
		t.Error("pods ignored, yet team-a has a pods quota")
	}
}

// snapshotPod finds a pod of the snapshot by name.
func snapshotPod(snap *arbiterv1.Snapshot, name string) *arbiterv1.Pod {
	for _, g := range snap.GetPodGroups() {
		for _, p := range g.GetPods() {
			if p.GetName() == name {
				return p
			}
		}
	}
	return nil
}
