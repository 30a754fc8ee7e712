package translate

import (
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	arbiterv1 "arbiter.dev/clients/go/arbiterv1"
)

func gpuNode(name string, gpus int64, memory string) *corev1.Node {
	n := newNode(name, "64", "256Gi", gpus)
	if memory != "" {
		n.Labels = map[string]string{LabelNodeGPUMemory: memory}
	}
	return n
}

func TestGPUSharingPods(t *testing.T) {
	inA := label(KeyQueue, "team-a")
	half := annotation(AnnotationGPUFraction, "0.5")
	tests := []struct {
		name          string
		pod           *corev1.Pod
		assumedGroups map[types.UID][]string
		want          *arbiterv1.Pod // nil: excluded
		wantMessage   string         // part of the exclusion's message
	}{
		{
			name: "FractionPodIsPendingWithItsFraction",
			pod:  newPod("ml", "p", inA, half),
			want: &arbiterv1.Pod{Name: "p", Phase: pending, GpuFraction: proto.Float64(0.5)},
		},
		{
			name: "MemoryPodOnSeveralDevices",
			pod:  newPod("ml", "p", inA, annotation(AnnotationGPUMemory, "20000"), annotation(AnnotationGPUFractionDevices, "2")),
			want: &arbiterv1.Pod{Name: "p", Phase: pending, GpuMemory: proto.Float64(20000), GpuFractionDevices: 2},
		},
		{
			name: "PendingPodsGroupLabelsAreNotSent",
			pod:  newPod("ml", "p", inA, half, label(LabelGPUGroup, "left-from-a-failed-binding")),
			want: &arbiterv1.Pod{Name: "p", Phase: pending, GpuFraction: proto.Float64(0.5)},
		},
		{
			name: "RunningPodNamesItsDeviceByItsGroupLabel",
			pod:  newPod("ml", "p", inA, half, onNode("n1", t0), label(LabelGPUGroup, "g1")),
			want: &arbiterv1.Pod{Name: "p", Phase: running, NodeName: "n1", StartTime: ts(t0), GpuFraction: proto.Float64(0.5),
				GpuGroups: []string{"g1"}},
		},
		{
			name: "TerminatingMultiDevicePodNamesItsDevicesByPrefixedLabelsAscending",
			pod: newPod("ml", "p", inA, annotation(AnnotationGPUMemory, "10000"), annotation(AnnotationGPUFractionDevices, "2"),
				onNode("n1", t0), terminating, label(LabelGPUGroupPrefix+"zz", "zz"), label(LabelGPUGroupPrefix+"aa", "aa")),
			want: &arbiterv1.Pod{Name: "p", Phase: releasing, NodeName: "n1", StartTime: ts(t0), GpuMemory: proto.Float64(10000),
				GpuFractionDevices: 2, GpuGroups: []string{"aa", "zz"}},
		},
		{
			name:          "AssumedPodsGroupsComeFromTheAdapter",
			pod:           newPod("ml", "p", inA, half),
			assumedGroups: map[types.UID][]string{"ml-p": {"g9"}},
			want:          &arbiterv1.Pod{Name: "p", Phase: running, NodeName: "n1", GpuFraction: proto.Float64(0.5), GpuGroups: []string{"g9"}},
		},
		{name: "FractionOfOne", pod: newPod("ml", "p", inA, annotation(AnnotationGPUFraction, "1")), wantMessage: "gpu-fraction=\"1\""},
		{name: "FractionOfZero", pod: newPod("ml", "p", inA, annotation(AnnotationGPUFraction, "0")), wantMessage: "gpu-fraction"},
		{name: "FractionNaN", pod: newPod("ml", "p", inA, annotation(AnnotationGPUFraction, "NaN")), wantMessage: "gpu-fraction"},
		{name: "FractionNotANumber", pod: newPod("ml", "p", inA, annotation(AnnotationGPUFraction, "half")), wantMessage: "gpu-fraction"},
		{name: "MemoryZero", pod: newPod("ml", "p", inA, annotation(AnnotationGPUMemory, "0")), wantMessage: "gpu-memory"},
		{name: "MemoryNotWhole", pod: newPod("ml", "p", inA, annotation(AnnotationGPUMemory, "1.5")), wantMessage: "gpu-memory"},
		{name: "MemoryAbove2To53", pod: newPod("ml", "p", inA, annotation(AnnotationGPUMemory, "9007199254740993")), wantMessage: "gpu-memory"},
		{
			name:        "FractionAndMemory",
			pod:         newPod("ml", "p", inA, half, annotation(AnnotationGPUMemory, "100")),
			wantMessage: "both set",
		},
		{
			name:        "DevicesWithoutAShare",
			pod:         newPod("ml", "p", inA, annotation(AnnotationGPUFractionDevices, "2")),
			wantMessage: "gpu-fraction-num-devices needs",
		},
		{name: "ZeroDevices", pod: newPod("ml", "p", inA, half, annotation(AnnotationGPUFractionDevices, "0")), wantMessage: "gpu-fraction-num-devices"},
		{
			name:        "ShareAndWholeGPUs",
			pod:         newPod("ml", "p", inA, half, requesting("nvidia.com/gpu", "1")),
			wantMessage: "shares devices or takes whole ones",
		},
		{
			name:        "RunningPodWithoutGroupLabel",
			pod:         newPod("ml", "p", inA, half, onNode("n1", t0)),
			wantMessage: "0 GPU group label(s)",
		},
		{
			name: "RunningPodWithTooFewGroups",
			pod: newPod("ml", "p", inA, half, annotation(AnnotationGPUFractionDevices, "2"), onNode("n1", t0),
				label(LabelGPUGroupPrefix+"g1", "g1")),
			wantMessage: "1 GPU group label(s)",
		},
		{
			name:        "RunningMemoryPodOnANodeWithoutDeviceMemory",
			pod:         newPod("ml", "p", inA, annotation(AnnotationGPUMemory, "100"), onNode("n2", t0), label(LabelGPUGroup, "g1")),
			wantMessage: "has no nvidia.com/gpu.memory label",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assumed := map[types.UID]string{}
			for uid := range tc.assumedGroups {
				assumed[uid] = "n1"
			}
			res := Build(Input{
				Now: now, SchedulerName: "arbiter", Queues: defaultQueues,
				Nodes: []*corev1.Node{gpuNode("n1", 8, "40960"), gpuNode("n2", 8, "")}, Pods: []*corev1.Pod{tc.pod},
				IgnoredResources: map[string]bool{"pods": true}, Assumed: assumed, AssumedGroups: tc.assumedGroups,
			})
			got := snapshotPod(res.Snapshot, tc.pod.Name)
			if tc.want == nil {
				if got != nil || len(res.Excluded) != 1 || res.Excluded[0].Reason != ReasonInvalidGPUSharing ||
					!strings.Contains(res.Excluded[0].Message, tc.wantMessage) {
					t.Errorf("pod = %v, excluded = %+v; want it excluded (%s) naming %q", got, res.Excluded, ReasonInvalidGPUSharing, tc.wantMessage)
				}
				return
			}
			if diff := cmp.Diff(tc.want, got, protocmp.Transform()); diff != "" {
				t.Errorf("pod (-want +got):\n%s\nexcluded: %+v", diff, res.Excluded)
			}
		})
	}
}

func TestNodeGPUMemory(t *testing.T) {
	for label, want := range map[string]float64{
		"40960":       40900, // floored to a multiple of 100, as KAI does
		"81920":       81900,
		"16000":       16000,
		"42949672960": 40900, // bytes (GPU feature discovery's old bug), converted to MiB
		"":            0,
		"lots":        0,
		"-1":          0,
		"0":           0,
	} {
		if got := NodeGPUMemory(gpuNode("n", 1, label)); got != want {
			t.Errorf("NodeGPUMemory(%s=%q) = %v, want %v", LabelNodeGPUMemory, label, got, want)
		}
	}
	res := Build(Input{Now: now, SchedulerName: "arbiter", Nodes: []*corev1.Node{gpuNode("n1", 8, "81920")}})
	if got := res.Snapshot.Nodes[0].GetGpuDeviceMemory(); got != 81900 {
		t.Errorf("snapshot node gpu_device_memory = %v, want 81900", got)
	}
}

// reservationPod is a reservation pod of group on node, as the shim creates it.
func reservationPod(node, group string, opts ...podOpt) *corev1.Pod {
	p := newPod("arbiter-gpu-reservation", ReservationPodName(node, group), scheduler("default-scheduler"),
		label(LabelApp, ReservationApp), label(LabelGPUGroup, group), onNode(node, t0),
		requesting("nvidia.com/gpu", "1"))
	for _, o := range opts {
		o(p)
	}
	return p
}

func TestReservationPodsHoldTheirDeviceOnceAndStaleOnesAreListed(t *testing.T) {
	inA := label(KeyQueue, "team-a")
	half := annotation(AnnotationGPUFraction, "0.5")
	res := Build(Input{
		Now: now, SchedulerName: "arbiter", Queues: defaultQueues, ReservationNamespace: "arbiter-gpu-reservation",
		Nodes: []*corev1.Node{gpuNode("n1", 4, "40960"), gpuNode("n2", 4, "40960")},
		Pods: []*corev1.Pod{
			// n1: g1 is shared by two pods and held by its reservation pod, which the snapshot does
			// not count (the pods count the device), but for its pod slot.
			newPod("ml", "a", inA, half, onNode("n1", t0), label(LabelGPUGroup, "g1")),
			newPod("ml", "b", inA, half, onNode("n1", t0), terminating, label(LabelGPUGroup, "g1")),
			reservationPod("n1", "g1"),
			// A second reservation pod of g1 (a duplicate) holds a device of its own until it is gone,
			// and is deleted.
			reservationPod("n1", "g1", func(p *corev1.Pod) { p.Name += "-dup" }),
			// g2's last pod is gone: its reservation pod is stale.
			reservationPod("n1", "g2"),
			// n2: g3's pod runs without a reservation pod (it is missing); g4's is terminating.
			newPod("ml", "c", inA, half, onNode("n2", t0), label(LabelGPUGroup, "g3")),
			reservationPod("n2", "g4", terminating),
			// KAI's reservation pod (another namespace) is another scheduler's pod: withheld.
			newPod("kai-resource-reservation", "gpu-reservation-n2-abcde", scheduler("default-scheduler"),
				label(LabelApp, "kai-resource-reservation"), onNode("n2", t0), requesting("nvidia.com/gpu", "1")),
		},
	})
	gpus := map[string]float64{}
	pods := map[string]float64{}
	for _, n := range res.Snapshot.Nodes {
		gpus[n.Name], pods[n.Name] = n.Allocatable["nvidia.com/gpu"], n.Allocatable["pods"]
	}
	// n1: 4 - the duplicate - stale g2 = 2; pod slots: 110 - 3 reservation pods.
	// n2: 4 - terminating g4 - KAI's = 2; pod slots: 110 - 2.
	if diff := cmp.Diff(map[string]float64{"n1": 2, "n2": 2}, gpus); diff != "" {
		t.Errorf("allocatable nvidia.com/gpu (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]float64{"n1": 107, "n2": 108}, pods); diff != "" {
		t.Errorf("allocatable pods (-want +got):\n%s", diff)
	}
	var stale []string
	for _, p := range res.Reservations.Stale {
		stale = append(stale, p.Name)
	}
	if diff := cmp.Diff([]string{ReservationPodName("n1", "g1") + "-dup", ReservationPodName("n1", "g2")}, stale); diff != "" {
		t.Errorf("stale reservation pods (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]bool{"n1": true, "n2": true}, res.Reservations.Leaving); diff != "" {
		t.Errorf("nodes with a reservation pod leaving (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]Device{{Node: "n2", Group: "g3"}}, res.Reservations.Missing); diff != "" {
		t.Errorf("missing reservations (-want +got):\n%s", diff)
	}
	// Time-aware usage counts the shares held: 0.5 (a, running); b is releasing.
	if got := res.Allocated["team-a"]["nvidia.com/gpu"]; got != 1 {
		t.Errorf("team-a allocated nvidia.com/gpu = %v, want 1 (a and c, 0.5 each)", got)
	}
}

func TestExcludedSharingPodWithoutGroupsHoldsWholeDevices(t *testing.T) {
	res := Build(Input{
		Now: now, SchedulerName: "arbiter", Queues: defaultQueues, ReservationNamespace: "arbiter-gpu-reservation",
		Nodes: []*corev1.Node{gpuNode("n1", 4, "40960")},
		Pods: []*corev1.Pod{newPod("ml", "p", label(KeyQueue, "team-a"), annotation(AnnotationGPUFraction, "0.3"),
			annotation(AnnotationGPUFractionDevices, "3"), onNode("n1", t0))},
		IgnoredResources: map[string]bool{"pods": true},
	})
	if len(res.Excluded) != 1 {
		t.Fatalf("excluded = %+v, want the pod", res.Excluded)
	}
	if got := res.Snapshot.Nodes[0].Allocatable["nvidia.com/gpu"]; got != 1 {
		t.Errorf("allocatable nvidia.com/gpu = %v, want 1 (3 devices held by a pod no group names)", got)
	}
}

func TestExcludedSharingPodsReservationIsNotStale(t *testing.T) {
	res := Build(Input{
		Now: now, SchedulerName: "arbiter", Queues: defaultQueues, ReservationNamespace: "arbiter-gpu-reservation",
		Nodes: []*corev1.Node{gpuNode("n1", 4, "")},
		Pods: []*corev1.Pod{
			// A memory pod on a node without device memory cannot be sent; its device stays held.
			newPod("ml", "p", label(KeyQueue, "team-a"), annotation(AnnotationGPUMemory, "100"), onNode("n1", t0), label(LabelGPUGroup, "g1")),
			reservationPod("n1", "g1"),
		},
		IgnoredResources: map[string]bool{"pods": true},
	})
	if len(res.Excluded) != 1 || len(res.Reservations.Stale) != 0 || len(res.Reservations.Missing) != 0 {
		t.Errorf("excluded %+v, reservations %+v; want the pod excluded and its reservation kept", res.Excluded, res.Reservations)
	}
	if got := res.Snapshot.Nodes[0].Allocatable["nvidia.com/gpu"]; got != 3 {
		t.Errorf("allocatable nvidia.com/gpu = %v, want 3 (the device is withheld)", got)
	}
}

func TestGPUGroupNamesAndLabels(t *testing.T) {
	for key, want := range map[string]bool{"new-0": true, "new-12": true, "new-": false, "new-x": false, "g1": false, "new-1a": false} {
		if got := NewDeviceKey(key); got != want {
			t.Errorf("NewDeviceKey(%q) = %v, want %v", key, got, want)
		}
	}
	a := GPUGroupName("n1", "new-0", "uid-1")
	uuid := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
	if !uuid.MatchString(a) || a != GPUGroupName("n1", "new-0", "uid-1") {
		t.Errorf("GPUGroupName = %q, want a deterministic UUID-shaped name", a)
	}
	for _, other := range []string{GPUGroupName("n2", "new-0", "uid-1"), GPUGroupName("n1", "new-1", "uid-1"), GPUGroupName("n1", "new-0", "uid-2")} {
		if other == a {
			t.Errorf("two devices are both named %q", a)
		}
	}
	one := newPod("ml", "p", annotation(AnnotationGPUFraction, "0.5"))
	if diff := cmp.Diff(map[string]string{LabelGPUGroup: "g1"}, GPUGroupLabels(one, []string{"g1"})); diff != "" {
		t.Errorf("labels of a one-device pod (-want +got):\n%s", diff)
	}
	two := newPod("ml", "p", annotation(AnnotationGPUFraction, "0.5"), annotation(AnnotationGPUFractionDevices, "2"))
	want := map[string]string{LabelGPUGroupPrefix + "g1": "g1", LabelGPUGroupPrefix + "g2": "g2"}
	if diff := cmp.Diff(want, GPUGroupLabels(two, []string{"g1", "g2"})); diff != "" {
		t.Errorf("labels of a two-device pod (-want +got):\n%s", diff)
	}
	if got := GPUGroupsOf(&corev1.Pod{}); got != nil {
		t.Errorf("groups of an unlabelled pod = %v", got)
	}
	long := strings.Repeat("n", 250)
	if name := ReservationPodName(long, "g"); len(name) > 253 {
		t.Errorf("reservation pod name is %d characters long", len(name))
	}
}
