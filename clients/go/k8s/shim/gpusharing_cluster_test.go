package shim

import (
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"arbiter.dev/clients/go/k8s/translate"
	"arbiter.dev/clients/go/test/controlplane"
)

// gpuTeams: team-a deserves one GPU, team-b three; each may use what the other leaves idle.
const gpuTeams = `
queues:
- name: research
  deserved: {cpu: -1, memory: -1, nvidia.com/gpu: -1}
- name: team-a
  parent: research
  deserved: {cpu: -1, memory: -1, nvidia.com/gpu: 1}
- name: team-b
  parent: research
  deserved: {cpu: -1, memory: -1, nvidia.com/gpu: 3}
`

// deviceAudit checks, from the pods' labels and the reservation pods alone (the API server's
// view, nothing of arbiter's), that no GPU is over-committed: on every node, the shares of each
// GPU group add up to at most one device, each group in use has exactly one reservation pod,
// and whole-GPU pods plus reservation pods fit the node's nvidia.com/gpu. Pods still terminating
// count: they hold their devices until they are gone. It returns the groups in use per node.
func (c *cluster) deviceAudit() map[string][]string {
	c.t.Helper()
	nodes, err := c.admin.CoreV1().Nodes().List(c.ctx, metav1.ListOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	capacity, memory := map[string]int64{}, map[string]float64{}
	for _, n := range nodes.Items {
		q := n.Status.Allocatable[translate.GPUResource]
		capacity[n.Name], memory[n.Name] = q.Value(), translate.NodeGPUMemory(&n)
	}
	pods, err := c.admin.CoreV1().Pods("").List(c.ctx, metav1.ListOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	type device struct{ node, group string }
	share := map[device]float64{}
	sharers := map[device][]string{}
	reservations := map[device]int{}
	held := map[string]int64{} // node -> whole GPUs held by pods and reservation pods
	holders := map[string][]string{}
	for _, p := range pods.Items {
		if p.Spec.NodeName == "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		n := p.Spec.NodeName
		if p.Namespace == testNamespace && p.Labels[translate.LabelApp] == translate.ReservationApp {
			reservations[device{n, p.Labels[translate.LabelGPUGroup]}]++
			held[n]++
			holders[n] = append(holders[n], p.Name+"(reservation, group "+p.Labels[translate.LabelGPUGroup]+leaving(&p)+")")
			continue
		}
		if !translate.SharesGPU(&p) {
			for _, ctr := range p.Spec.Containers {
				q := ctr.Resources.Requests[translate.GPUResource]
				held[n] += q.Value()
				if q.Value() > 0 {
					holders[n] = append(holders[n], p.Name+leaving(&p))
				}
			}
			continue
		}
		groups := translate.GPUGroupsOf(&p)
		want := 1
		if d, err := strconv.Atoi(p.Annotations[translate.AnnotationGPUFractionDevices]); err == nil {
			want = d
		}
		if len(groups) != want {
			c.t.Errorf("bound sharing pod %s/%s on %s has groups %v, want %d", p.Namespace, p.Name, n, groups, want)
		}
		var s float64
		if f, err := strconv.ParseFloat(p.Annotations[translate.AnnotationGPUFraction], 64); err == nil {
			s = f
		} else if m, err := strconv.ParseFloat(p.Annotations[translate.AnnotationGPUMemory], 64); err == nil {
			s = m / memory[n]
		}
		for _, g := range groups {
			share[device{n, g}] += s
			sharers[device{n, g}] = append(sharers[device{n, g}], p.Name)
		}
	}
	inUse := map[string][]string{}
	for d, s := range share {
		if s > 1+1e-9 {
			c.t.Errorf("GPU group %s on %s is over-committed: shares add up to %v (%v)", d.group, d.node, s, sharers[d])
		}
		if reservations[d] != 1 {
			c.t.Errorf("GPU group %s on %s (pods %v) has %d reservation pods, want 1", d.group, d.node, sharers[d], reservations[d])
		}
		inUse[d.node] = append(inUse[d.node], d.group)
	}
	for d, k := range reservations {
		if k > 1 {
			c.t.Errorf("GPU group %s on %s has %d reservation pods", d.group, d.node, k)
		}
	}
	for n, h := range held {
		if h > capacity[n] {
			c.t.Errorf("node %s: whole-GPU pods and reservation pods hold %d GPUs of %d: %v", n, h, capacity[n], holders[n])
		}
	}
	for _, gs := range inUse {
		sort.Strings(gs)
	}
	return inUse
}

func leaving(p *corev1.Pod) string {
	if p.DeletionTimestamp != nil {
		return ", terminating"
	}
	return ""
}

func gpuKwokNode(name string, gpus int64) *corev1.Node {
	n := kwokNode(name, "16", gpus)
	n.Labels = map[string]string{translate.LabelNodeGPUMemory: "40960"}
	return n
}

// TestRealGPUSharingNeverOverCommitsADevice runs fraction, memory and whole-GPU pods on kwok GPU
// nodes, then a reclaim by whole-GPU pods of another queue, auditing the devices after every
// cycle from what the API server holds. The shim runs as the chart's ServiceAccount, with the
// chart's RBAC: labelling pods and making and deleting reservation pods need nothing more.
func TestRealGPUSharingNeverOverCommitsADevice(t *testing.T) {
	sa := controlplane.ServiceAccount("arbiter-system", "arbiter-k8s")
	c := newCluster(t, clusterOpts{queues: gpuTeams, noShim: true, cp: controlplane.Options{Users: []controlplane.User{sa}}})
	base := filepath.Join("..", "..", "..", "..", "deploy", "kustomize", "base")
	c.applyManifests(filepath.Join(base, "namespace.yaml"), filepath.Join(base, "scheduler-rbac.yaml"))
	c.apply(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: "arbiter-usage"}})
	c.newShim(clusterOpts{user: sa.Name})
	c.apply(gpuKwokNode("n1", 2), gpuKwokNode("n2", 2))
	var teamA []string
	for i := 0; i < 4; i++ {
		name := fmt.Sprintf("nb-%d", i) // notebooks on half a GPU each
		c.apply(sharingPod(podSpec{name: name, queue: "team-a", cpu: "100m"}, translate.AnnotationGPUFraction, "0.5"))
		teamA = append(teamA, name)
	}
	c.apply(sharingPod(podSpec{name: "inf-0", queue: "team-a", cpu: "100m"}, translate.AnnotationGPUMemory, "20000"),
		pod(podSpec{name: "w-0", queue: "team-a", gpus: 1}))
	teamA = append(teamA, "inf-0", "w-0")

	// Everything fits: four halves on two devices, the 20000 MiB pod on a third, one whole GPU.
	c.cyclesUntil(6, func() bool { return c.allBound("ml", teamA...) })
	inUse := c.deviceAudit()
	devices := 0
	for _, gs := range inUse {
		devices += len(gs)
	}
	if devices != 3 {
		t.Fatalf("devices in use = %v, want 3 (2 of notebooks, 1 of inference)", inUse)
	}

	// team-b takes its deserved three GPUs back with whole-GPU pods: besides team-a's whole-GPU
	// pod, devices are freed by evicting team-a's sharing pods (a device is free once all its pods
	// are gone), and a freed device's reservation pod is deleted.
	var teamB []string
	for i := 0; i < 3; i++ {
		name := fmt.Sprintf("b-%d", i)
		c.apply(pod(podSpec{name: name, queue: "team-b", gpus: 1}))
		teamB = append(teamB, name)
	}
	freed := func() bool { return testutil.ToFloat64(c.metrics.Reservations.WithLabelValues("deleted")) >= 1 }
	c.cyclesUntil(12, func() bool { return c.allBound("ml", teamB...) && freed() })
	c.cyclesUntil(4, func() bool { return c.reservationCount() == c.devicesInUse() })
	after := 0
	for _, gs := range c.deviceAudit() {
		after += len(gs)
	}
	if after >= devices {
		t.Errorf("devices in use after the reclaim = %d, want fewer than %d", after, devices)
	}
	if n := c.reservationCount(); n != after {
		t.Errorf("reservation pods = %d, want %d (one per device in use)", n, after)
	}
	for _, stage := range []string{"schedule", "bind", "reservation", "status", "evict", "usage"} {
		if got := testutil.ToFloat64(c.metrics.Errors.WithLabelValues(stage)); got != 0 {
			t.Errorf("%s errors = %v, want 0", stage, got)
		}
	}
	t.Logf("devices in use: %d before the reclaim, %d after; team-b pods bound: %d of 3", devices, after, c.boundCount("ml", teamB...))
}

// cyclesUntil runs cycles, auditing the devices after each, until done or n cycles have run.
func (c *cluster) cyclesUntil(n int, done func() bool) {
	c.t.Helper()
	for i := 0; i < n; i++ {
		c.cycle()
		c.settleBindings()
		c.deviceAudit()
		if c.t.Failed() {
			c.t.FailNow()
		}
		if done() {
			return
		}
	}
	c.t.Fatalf("not done after %d cycles; last exchange:\n%s", n, c.rec)
}

// settleBindings waits until every bound pod is Running or gone (kwok's doing), so that the next
// cycle sees the cluster at rest.
func (c *cluster) settleBindings() {
	c.t.Helper()
	pods, err := c.admin.CoreV1().Pods("").List(c.ctx, metav1.ListOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.Spec.NodeName == "" {
			continue
		}
		if p.DeletionTimestamp != nil {
			c.waitGone(p.Namespace, p.Name)
		} else {
			c.waitRunning(p.Namespace, p.Name)
		}
	}
}

func (c *cluster) boundCount(ns string, names ...string) int {
	n := 0
	for _, name := range names {
		if c.allBound(ns, name) {
			n++
		}
	}
	return n
}

func (c *cluster) allBound(ns string, names ...string) bool {
	for _, n := range names {
		if p := c.pod(ns, n); p == nil || p.Spec.NodeName == "" {
			return false
		}
	}
	return true
}

func (c *cluster) reservationCount() int {
	c.t.Helper()
	list, err := c.admin.CoreV1().Pods(testNamespace).List(c.ctx,
		metav1.ListOptions{LabelSelector: translate.LabelApp + "=" + translate.ReservationApp})
	if err != nil {
		c.t.Fatal(err)
	}
	return len(list.Items)
}

func (c *cluster) devicesInUse() int {
	n := 0
	for _, gs := range c.deviceAudit() {
		n += len(gs)
	}
	return n
}

// TestRealMultiDeviceShareHoldsItsDevicesUntilItLeaves puts a pod on half of each of two devices,
// a second pod on half of one of them, and a whole-GPU pod that must wait: both GPUs of the node
// are held. When the two-device pod is deleted, its other device's reservation pod goes and the
// whole-GPU pod gets that GPU; the shared device stays held.
func TestRealMultiDeviceShareHoldsItsDevicesUntilItLeaves(t *testing.T) {
	c := newCluster(t, clusterOpts{})
	c.apply(gpuKwokNode("n1", 2),
		sharingPod(podSpec{name: "multi", queue: "team-a"}, translate.AnnotationGPUFraction, "0.5",
			translate.AnnotationGPUFractionDevices, "2"))
	c.cyclesUntil(4, func() bool { return c.allBound("ml", "multi") })
	c.apply(sharingPod(podSpec{name: "half", queue: "team-a"}, translate.AnnotationGPUMemory, "20000"),
		pod(podSpec{name: "whole", queue: "team-b", gpus: 1}))
	c.cyclesUntil(4, func() bool { return c.allBound("ml", "half") })

	multi := c.pod("ml", "multi")
	if len(translate.GPUGroupsOf(multi)) != 2 || multi.Labels[translate.LabelGPUGroup] != "" {
		t.Errorf("multi's labels = %v, want two %s<group> labels and no %s", multi.Labels, translate.LabelGPUGroupPrefix, translate.LabelGPUGroup)
	}
	half := translate.GPUGroupsOf(c.pod("ml", "half"))
	if len(half) != 1 || !slices.Contains(translate.GPUGroupsOf(multi), half[0]) {
		t.Errorf("half's groups = %v, want one of multi's %v", half, translate.GPUGroupsOf(multi))
	}
	c.cycle()
	c.deviceAudit()
	if p := c.pod("ml", "whole"); p.Spec.NodeName != "" || !strings.Contains(pendingCondition(p), "insufficient-resources") {
		t.Fatalf("whole on %q (%q), want it pending: both GPUs are held by shared devices", p.Spec.NodeName, pendingCondition(p))
	}

	if err := c.admin.CoreV1().Pods("ml").Delete(c.ctx, "multi", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	c.waitGone("ml", "multi")
	c.cyclesUntil(6, func() bool { return c.allBound("ml", "whole") })
	c.cyclesUntil(3, func() bool { return c.reservationCount() == 1 })
	if inUse := c.deviceAudit(); !cmp.Equal(inUse, map[string][]string{"n1": half}) {
		t.Errorf("devices in use = %v, want only half's %v", inUse, half)
	}
}
