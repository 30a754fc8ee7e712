package shim

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	arbiterv1 "arbiter.dev/clients/go/arbiterv1"
)

func TestPodUpdateIsCause(t *testing.T) {
	s := &Shim{cfg: Config{SchedulerName: "arbiter"}}
	pending := pod(podSpec{name: "p", queue: "team-a"})
	bound := pod(podSpec{name: "p", queue: "team-a", node: "n1"})
	with := func(p *corev1.Pod, f func(p *corev1.Pod)) *corev1.Pod {
		p = p.DeepCopy()
		f(p)
		return p
	}
	finished := func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }
	deleting := func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{Time: epoch} }
	condition := func(p *corev1.Pod) {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Message: "no room"}}
	}
	tests := []struct {
		name     string
		old, new *corev1.Pod
		waiting  bool
		want     bool
	}{
		{"QueueLabelAddedToAPendingPod", pod(podSpec{name: "p"}), pending, false, true},
		{"PendingPodOfAnotherSchedulerGetsAQueue", pod(podSpec{name: "p", scheduler: "default-scheduler"}),
			pod(podSpec{name: "p", queue: "team-a", scheduler: "default-scheduler"}), true, false},
		{"OwnConditionWrittenOnAPendingPod", pending, with(pending, condition), true, false},
		{"OwnBindingLands", pending, bound, true, false},
		{"PendingPodDeleted", pending, with(pending, deleting), true, false},
		{"BoundPodFinishesWhileSomethingWaits", bound, with(bound, finished), true, true},
		{"BoundPodFinishesWhileNothingWaits", bound, with(bound, finished), false, false},
		{"PodOfAnotherSchedulerFinishesWhileSomethingWaits", pod(podSpec{name: "q", node: "n1", scheduler: "default-scheduler"}),
			with(pod(podSpec{name: "q", node: "n1", scheduler: "default-scheduler"}), finished), true, true},
		{"BoundPodStartsTerminating", bound, with(bound, deleting), true, false},
		{"FinishedPodUpdatedAgain", with(bound, finished), with(with(bound, finished), condition), true, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s.waiting.Store(tc.waiting)
			if got := s.podUpdateIsCause(tc.old, tc.new); got != tc.want {
				t.Errorf("podUpdateIsCause = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestPlacementChanged(t *testing.T) {
	base := node("n1", "8", 0)
	base.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue,
		LastHeartbeatTime: metav1.Time{Time: epoch}}}
	with := func(f func(n *corev1.Node)) *corev1.Node {
		n := base.DeepCopy()
		f(n)
		return n
	}
	tests := []struct {
		name string
		new  *corev1.Node
		want bool
	}{
		{"Heartbeat", with(func(n *corev1.Node) {
			n.Status.Conditions[0].LastHeartbeatTime = metav1.Time{Time: epoch.Add(time.Minute)}
			n.ResourceVersion = "2"
		}), false},
		{"SameAllocatableWrittenAnotherWay", with(func(n *corev1.Node) { n.Status.Allocatable["cpu"] = resource.MustParse("8000m") }), false},
		{"CordonedOrUncordoned", with(func(n *corev1.Node) { n.Spec.Unschedulable = true }), true},
		{"AllocatableGrows", with(func(n *corev1.Node) { n.Status.Allocatable["cpu"] = resource.MustParse("16") }), true},
		{"LabelAdded", with(func(n *corev1.Node) { n.Labels = map[string]string{"pool": "gpu"} }), true},
		{"TaintAddedOrRemoved", with(func(n *corev1.Node) {
			n.Spec.Taints = []corev1.Taint{{Key: "maintenance", Effect: corev1.TaintEffectNoSchedule}}
		}), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// Both ways: a change that frees room and its reverse read the same fields.
			if got := placementChanged(base, tc.new); got != tc.want {
				t.Errorf("placementChanged(base, new) = %v, want %v", got, tc.want)
			}
			if got := placementChanged(tc.new, base); got != tc.want {
				t.Errorf("placementChanged(new, base) = %v, want %v", got, tc.want)
			}
		})
	}
}

// pendingCause waits until the shim's trigger holds a cause, and takes it.
func pendingCause(s *Shim, within time.Duration) bool {
	select {
	case <-s.trigger.causes:
		return true
	case <-time.After(within):
		return false
	}
}

// TestInformerEventsReachTheTrigger checks the wiring through the informers: a new pod to place,
// a bound pod deleted while the last cycle left a pod pending (and not while it left none), a
// node added; and that the shim's own binding leaves no cause behind.
func TestInformerEventsReachTheTrigger(t *testing.T) {
	h := newHarness(t, harnessOpts{}, queueConfigMap(twoTeams), node("n1", "8", 4),
		pod(podSpec{name: "r1", queue: "team-a", gpus: 2, node: "n1"}),
		pod(podSpec{name: "r2", queue: "team-a", gpus: 2, node: "n1"}))
	for pendingCause(h.shim, 100*time.Millisecond) { // the informers' first list
	}

	h.createPod(pod(podSpec{name: "p", queue: "team-a", gpus: 2}))
	if !pendingCause(h.shim, 10*time.Second) {
		t.Fatal("a new pod to place caused no cycle")
	}
	h.sched.answer = answer(nil, nil) // nothing left waiting
	h.cycle()
	h.deletePod("ml", "r1")
	if pendingCause(h.shim, 200*time.Millisecond) {
		t.Error("room freed while nothing waits caused a cycle")
	}
	h.sched.answer = answer(nil, nil, &arbiterv1.PendingPodGroup{PodGroup: "ml/p", Reason: "insufficient-resources", Message: "n1 is full"})
	h.cycle()
	h.deletePod("ml", "r2")
	if !pendingCause(h.shim, 10*time.Second) {
		t.Fatal("room freed while a pod waits caused no cycle")
	}
	if _, err := h.kube.CoreV1().Nodes().Create(context.Background(), node("n2", "8", 4), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if !pendingCause(h.shim, 10*time.Second) {
		t.Fatal("a node added caused no cycle")
	}
	h.sched.answer = answer([]*arbiterv1.Binding{binding("ml/p", "p", "n2", false)}, nil)
	h.cycle()
	h.waitBound("ml", "p")
	if pendingCause(h.shim, 200*time.Millisecond) {
		t.Error("the cycle's own binding caused another cycle")
	}
}
