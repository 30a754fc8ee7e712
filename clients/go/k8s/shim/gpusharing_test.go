package shim

import (
	"context"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	arbiterv1 "arbiter.dev/clients/go/arbiterv1"
	"arbiter.dev/clients/go/k8s/translate"
)

// sharingPod is a pod asking for a share of GPU devices (KAI's annotations).
func sharingPod(s podSpec, annotations ...string) *corev1.Pod {
	p := pod(s)
	for i := 0; i+1 < len(annotations); i += 2 {
		p.Annotations[annotations[i]] = annotations[i+1]
	}
	return p
}

func gpuNodeWithMemory(name string, gpus int64, memory string) *corev1.Node {
	n := node(name, "8", gpus)
	n.Labels = map[string]string{translate.LabelNodeGPUMemory: memory}
	return n
}

func sharedBinding(group, pod, node string, after bool, keys ...string) *arbiterv1.Binding {
	b := binding(group, pod, node, after)
	b.GpuGroups = keys
	return b
}

// reservationPods lists the reservation pods in the API, by name.
func (h *harness) reservationPods() map[string]*corev1.Pod {
	h.t.Helper()
	list, err := h.kube.CoreV1().Pods(testNamespace).List(context.Background(),
		metav1.ListOptions{LabelSelector: translate.LabelApp + "=" + translate.ReservationApp})
	if err != nil {
		h.t.Fatal(err)
	}
	out := map[string]*corev1.Pod{}
	for i := range list.Items {
		out[list.Items[i].Name] = &list.Items[i]
	}
	return out
}

func (h *harness) livePod(ns, name string) *corev1.Pod {
	h.t.Helper()
	p, err := h.kube.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	return p
}

func TestSharingPodsAreLabelledAndTheirNewDevicesReservedBeforeBinding(t *testing.T) {
	h := newHarness(t, harnessOpts{}, queueConfigMap(twoTeams), gpuNodeWithMemory("n1", 4, "40960"),
		sharingPod(podSpec{name: "nb", queue: "team-a"}, translate.AnnotationGPUFraction, "0.5"),
		sharingPod(podSpec{name: "inf", queue: "team-a"}, translate.AnnotationGPUMemory, "10000"),
		sharingPod(podSpec{name: "multi", queue: "team-b"}, translate.AnnotationGPUFraction, "0.3",
			translate.AnnotationGPUFractionDevices, "2"))
	// nb opens a device that inf joins in the same answer; multi opens two.
	h.sched.answer = answer([]*arbiterv1.Binding{
		sharedBinding("ml/inf", "inf", "n1", false, "new-0"),
		sharedBinding("ml/multi", "multi", "n1", false, "new-1", "new-2"),
		sharedBinding("ml/nb", "nb", "n1", false, "new-0"),
	}, nil)
	h.cycle()

	// new-0 is named after the smallest UID among the pods that list it: inf's.
	g0 := translate.GPUGroupName("n1", "new-0", "ml/inf-uid")
	g1 := translate.GPUGroupName("n1", "new-1", "ml/multi-uid")
	g2 := translate.GPUGroupName("n1", "new-2", "ml/multi-uid")
	for name, want := range map[string]map[string]string{
		"nb":    {translate.LabelGPUGroup: g0},
		"inf":   {translate.LabelGPUGroup: g0},
		"multi": {translate.LabelGPUGroupPrefix + g1: g1, translate.LabelGPUGroupPrefix + g2: g2},
	} {
		p := h.livePod("ml", name)
		got := map[string]string{}
		for k, v := range p.Labels {
			if translate.IsGPUGroupLabel(k) {
				got[k] = v
			}
		}
		if diff := cmp.Diff(want, got); diff != "" || p.Spec.NodeName != "n1" {
			t.Errorf("pod %s on %q, group labels (-want +got):\n%s", name, p.Spec.NodeName, diff)
		}
	}
	res := h.reservationPods()
	if len(res) != 3 {
		t.Fatalf("reservation pods = %d, want 3 (one per new device)", len(res))
	}
	for _, g := range []string{g0, g1, g2} {
		r := res[translate.ReservationPodName("n1", g)]
		if r == nil {
			t.Fatalf("no reservation pod for group %s", g)
		}
		gpu := r.Spec.Containers[0].Resources.Requests[translate.GPUResource]
		if r.Spec.NodeName != "n1" || gpu.Value() != 1 || r.Labels[translate.LabelGPUGroup] != g ||
			r.Labels[translate.LabelApp] != translate.ReservationApp {
			t.Errorf("reservation pod %s: node %q, gpu %v, labels %v", r.Name, r.Spec.NodeName, gpu.String(), r.Labels)
		}
	}
	// Each pod's reservation and labels come before its binding.
	var order []string
	for _, a := range h.kube.Actions() {
		switch {
		case a.GetVerb() == "create" && a.GetResource() == podsGVR && a.GetNamespace() == testNamespace:
			order = append(order, "reserve")
		case a.GetVerb() == "patch" && a.GetSubresource() == "" && a.(k8stesting.PatchAction).GetName() == "multi":
			order = append(order, "label")
		case a.GetVerb() == "create" && a.GetSubresource() == "binding" && a.(k8stesting.CreateAction).GetObject().(*corev1.Binding).Name == "multi":
			order = append(order, "bind")
		}
	}
	if n := len(order); n < 2 || order[n-2] != "label" || order[n-1] != "bind" {
		t.Errorf("multi's calls end with %v, want label then bind", order)
	}

	// The next snapshot names the devices; the reservation pods take no GPU from the node (the
	// sharing pods count each device as one), only their pod slots.
	h.waitBound("ml", "multi")
	h.waitPod(testNamespace, translate.ReservationPodName("n1", g2), func(p *corev1.Pod) bool { return p != nil })
	h.sched.answer = nil
	h.cycle()
	req := h.sched.last()
	if got := podIn(req, "ml/multi", "multi").GetGpuGroups(); !cmp.Equal(got, sortedPair(g1, g2)) {
		t.Errorf("multi's gpu_groups = %v, want [%s %s]", got, g1, g2)
	}
	if got := podIn(req, "ml/nb", "nb").GetGpuGroups(); !cmp.Equal(got, []string{g0}) {
		t.Errorf("nb's gpu_groups = %v, want [%s]", got, g0)
	}
	n1 := req.GetSnapshot().GetNodes()[0]
	if n1.GetAllocatable()[translate.GPUResource] != 4 || n1.GetAllocatable()["pods"] != 107 || n1.GetGpuDeviceMemory() != 40900 {
		t.Errorf("n1 = %v, want 4 GPUs, 107 pod slots, device memory 40900", n1)
	}

	// Once the device's last pod is gone, its reservation pod goes too.
	h.deletePod("ml", "nb")
	h.cycle()
	if len(h.reservationPods()) != 3 {
		t.Errorf("a device with a pod left lost its reservation")
	}
	h.deletePod("ml", "inf")
	h.cycle()
	if _, ok := h.reservationPods()[translate.ReservationPodName("n1", g0)]; ok || len(h.reservationPods()) != 2 {
		t.Errorf("reservation pods = %v, want g0's deleted", keys(h.reservationPods()))
	}
	if got := testutil.ToFloat64(h.metrics.Reservations.WithLabelValues("deleted")); got != 1 {
		t.Errorf("deleted reservations = %v, want 1", got)
	}
}

func TestPipelinedSharingPodReservesItsNewDeviceWhenBound(t *testing.T) {
	h := newHarness(t, harnessOpts{}, queueConfigMap(twoTeams), gpuNodeWithMemory("n1", 1, "40960"),
		pod(podSpec{name: "victim", queue: "team-a", gpus: 1, node: "n1"}),
		sharingPod(podSpec{name: "nb", queue: "team-b"}, translate.AnnotationGPUFraction, "0.5"))
	h.set(func(h *harness) { h.evictMode = evictTerminate })
	pipelined := []*arbiterv1.Binding{sharedBinding("ml/nb", "nb", "n1", true, "new-0")}
	h.sched.answer = answer(pipelined, []*arbiterv1.Eviction{
		eviction("ml/victim", "victim", "n1", arbiterv1.EvictionReason_FAIR_SHARE_RECLAIM, "ml/nb")})
	h.cycle()
	h.waitPod("ml", "victim", func(p *corev1.Pod) bool { return p != nil && p.DeletionTimestamp != nil })

	// While the victim terminates, the nominated pod is sent on its device, which has no
	// reservation pod yet: the victim still holds the GPU.
	g0 := translate.GPUGroupName("n1", "new-0", "ml/nb-uid")
	h.sched.answer = nil
	h.cycle()
	if got := podIn(h.sched.last(), "ml/nb", "nb"); got.GetPhase() != arbiterv1.PodPhase_POD_PHASE_RUNNING || !cmp.Equal(got.GetGpuGroups(), []string{g0}) {
		t.Errorf("nominated pod sent as %v with groups %v, want RUNNING on [%s]", got.GetPhase(), got.GetGpuGroups(), g0)
	}
	if n := len(h.reservationPods()); n != 0 {
		t.Errorf("%d reservation pods while the victim still holds the GPU, want 0", n)
	}

	h.deletePod("ml", "victim")
	h.cycle()
	h.waitBound("ml", "nb")
	if _, ok := h.reservationPods()[translate.ReservationPodName("n1", g0)]; !ok {
		t.Errorf("no reservation pod for the bound pod's device")
	}
	if got := h.livePod("ml", "nb").Labels[translate.LabelGPUGroup]; got != g0 {
		t.Errorf("nb's group label = %q, want %q", got, g0)
	}
}

func TestFailedReservationLeavesThePodUnbound(t *testing.T) {
	h := newHarness(t, harnessOpts{}, queueConfigMap(twoTeams), gpuNodeWithMemory("n1", 1, "40960"),
		sharingPod(podSpec{name: "nb", queue: "team-b"}, translate.AnnotationGPUFraction, "0.5"))
	failures := 1
	h.kube.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetNamespace() == testNamespace && a.GetSubresource() == "" && failures > 0 {
			failures--
			return true, nil, apierrors.NewServiceUnavailable("etcd is slow")
		}
		return false, nil, nil
	})
	h.sched.answer = answer([]*arbiterv1.Binding{sharedBinding("ml/nb", "nb", "n1", false, "new-0")}, nil)
	h.cycle()
	if len(h.calls()) != 0 || h.errorsAt("reservation") != 1 {
		t.Fatalf("calls %v, reservation errors %v; want no binding and one error", h.calls(), h.errorsAt("reservation"))
	}
	h.cycle() // retried
	h.waitBound("ml", "nb")
	if len(h.reservationPods()) != 1 {
		t.Errorf("reservation pods = %v, want 1", keys(h.reservationPods()))
	}
}

func sortedPair(a, b string) []string {
	if b < a {
		return []string{b, a}
	}
	return []string{a, b}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestPipelinedBindingWaitsForTheReservationPodOfTheDeviceItsVictimsDrain(t *testing.T) {
	g := "0c5d7f4e-0000-4000-8000-000000000001"
	victim := sharingPod(podSpec{name: "nb", queue: "team-a", node: "n1"}, translate.AnnotationGPUFraction, "0.5")
	victim.Labels[translate.LabelGPUGroup] = g
	h := newHarness(t, harnessOpts{}, queueConfigMap(twoTeams), gpuNodeWithMemory("n1", 1, "40960"), victim,
		pod(podSpec{name: "whole", queue: "team-b", gpus: 1}))
	if err := h.shim.reserve(context.Background(), translate.Device{Node: "n1", Group: g}); err != nil {
		t.Fatal(err)
	}
	reservation := translate.ReservationPodName("n1", g)
	h.waitPod(testNamespace, reservation, func(p *corev1.Pod) bool { return p != nil })
	pipelined := []*arbiterv1.Binding{binding("ml/whole", "whole", "n1", true)}
	h.sched.answer = answer(pipelined, []*arbiterv1.Eviction{
		eviction("ml/nb", "nb", "n1", arbiterv1.EvictionReason_FAIR_SHARE_RECLAIM, "ml/whole")})

	h.cycle() // evicts (the victim is deleted at once), nominates
	h.waitGone("ml", "nb")
	if got := h.calls(); len(got) != 1 {
		t.Fatalf("calls = %v, want only the eviction: the device's reservation pod still holds the GPU", got)
	}
	h.sched.answer = answer(pipelined, nil)
	h.cycle() // the device has no pod left: its reservation pod is deleted; the binding still waits
	if got := h.calls(); len(got) != 1 {
		t.Fatalf("calls = %v, want no binding while the reservation pod leaves", got)
	}
	if _, ok := h.reservationPods()[reservation]; ok {
		t.Fatalf("the drained device's reservation pod was not deleted")
	}
	h.waitGone(testNamespace, reservation)
	h.cycle()
	want := []call{{"evict", "ml", "nb", ""}, {"bind", "ml", "whole", "n1"}}
	if diff := cmp.Diff(want, h.calls(), cmp.AllowUnexported(call{})); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
}

func TestAGroupNamedLikeANewKeyIsKept(t *testing.T) {
	running := sharingPod(podSpec{name: "old", queue: "team-a", node: "n1"}, translate.AnnotationGPUFraction, "0.5")
	running.Labels[translate.LabelGPUGroup] = "new-0" // a group someone named so
	h := newHarness(t, harnessOpts{}, queueConfigMap(twoTeams), gpuNodeWithMemory("n1", 2, "40960"), running,
		sharingPod(podSpec{name: "joins", queue: "team-a"}, translate.AnnotationGPUFraction, "0.5"),
		sharingPod(podSpec{name: "opens", queue: "team-a"}, translate.AnnotationGPUFraction, "0.5"))
	h.sched.answer = answer([]*arbiterv1.Binding{
		sharedBinding("ml/joins", "joins", "n1", false, "new-0"),
		sharedBinding("ml/opens", "opens", "n1", false, "new-1"),
	}, nil)
	h.cycle()
	if got := h.livePod("ml", "joins").Labels[translate.LabelGPUGroup]; got != "new-0" {
		t.Errorf("joins is in group %q, want the existing group new-0", got)
	}
	g1 := translate.GPUGroupName("n1", "new-1", "ml/opens-uid")
	if got := h.livePod("ml", "opens").Labels[translate.LabelGPUGroup]; got != g1 {
		t.Errorf("opens is in group %q, want the new group %s", got, g1)
	}
	// Two devices, two reservation pods: new-0's was missing (the cycle makes it), g1's is new.
	want := []string{translate.ReservationPodName("n1", "new-0"), translate.ReservationPodName("n1", g1)}
	got := keys(h.reservationPods())
	sort.Strings(want)
	sort.Strings(got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("reservation pods (-want +got):\n%s", diff)
	}
}
