package shim

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/testing/protocmp"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	arbiterv1 "arbiter.dev/clients/go/arbiterv1"
	"arbiter.dev/clients/go/k8s/translate"
)

func TestBindsEachPodOnceEvenBeforeTheCacheShowsIt(t *testing.T) {
	h := newHarness(t, harnessOpts{}, queueConfigMap(twoTeams), node("n1", "8", 4),
		pod(podSpec{name: "p", queue: "team-a", gpus: 2}))
	h.sched.answer = answer([]*arbiterv1.Binding{binding("ml/p", "p", "n1", false)}, nil)
	h.set(func(h *harness) { h.applyBinds = false }) // the API accepts; the cache lags

	h.cycle()
	h.cycle() // the same answer again: the binding was issued already

	want := []call{{"bind", "ml", "p", "n1"}}
	if diff := cmp.Diff(want, h.calls(), cmp.AllowUnexported(call{})); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	// Until the cache shows it, the issued binding holds the node in the snapshot.
	if p := podIn(h.sched.last(), "ml/p", "p"); p.GetPhase() != arbiterv1.PodPhase_POD_PHASE_RUNNING || p.GetNodeName() != "n1" {
		t.Errorf("second snapshot has the bound pod as %v on %q, want RUNNING on n1", p.GetPhase(), p.GetNodeName())
	}
	if got := testutil.ToFloat64(h.metrics.Binds); got != 1 {
		t.Errorf("binds metric = %v, want 1", got)
	}
	if ev := h.events(); len(ev) != 1 || !strings.Contains(ev[0], "Scheduled Successfully assigned ml/p to n1") {
		t.Errorf("events = %q, want one Scheduled event", ev)
	}
}

func TestBoundPodIsNotBoundAgainOnceTheCacheShowsIt(t *testing.T) {
	h := newHarness(t, harnessOpts{}, queueConfigMap(twoTeams), node("n1", "8", 4),
		pod(podSpec{name: "p", queue: "team-a", gpus: 2}))
	h.sched.answer = answer([]*arbiterv1.Binding{binding("ml/p", "p", "n1", false)}, nil)
	h.cycle()
	h.waitBound("ml", "p")
	h.cycle() // a stale answer still naming the pod
	if got := len(h.calls()); got != 1 {
		t.Errorf("%d calls, want 1: %v", got, h.calls())
	}
	if p := podIn(h.sched.last(), "ml/p", "p"); p.GetPhase() != arbiterv1.PodPhase_POD_PHASE_RUNNING {
		t.Errorf("bound pod sent as %v, want RUNNING", p.GetPhase())
	}
}

func TestFailedBindIsRetriedOnTheNextCycle(t *testing.T) {
	h := newHarness(t, harnessOpts{}, queueConfigMap(twoTeams), node("n1", "8", 4),
		pod(podSpec{name: "p", queue: "team-a", gpus: 2}))
	h.sched.answer = answer([]*arbiterv1.Binding{binding("ml/p", "p", "n1", false)}, nil)
	h.set(func(h *harness) { h.bindFailures = 1 })

	h.cycle() // fails
	if p := podIn(h.sched.last(), "ml/p", "p"); p.GetPhase() != arbiterv1.PodPhase_POD_PHASE_PENDING {
		t.Fatalf("pod sent as %v before any binding, want PENDING", p.GetPhase())
	}
	h.cycle() // retried, succeeds
	h.waitBound("ml", "p")
	h.cycle() // nothing left to do

	want := []call{{"bind", "ml", "p", "n1"}, {"bind", "ml", "p", "n1"}}
	if diff := cmp.Diff(want, h.calls(), cmp.AllowUnexported(call{})); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	if got := h.errorsAt("bind"); got != 1 {
		t.Errorf("bind errors = %v, want 1", got)
	}
	if got := testutil.ToFloat64(h.metrics.Binds); got != 1 {
		t.Errorf("binds = %v, want 1", got)
	}
}

func TestEvictsOnceThroughTheEvictionAPI(t *testing.T) {
	h := newHarness(t, harnessOpts{}, queueConfigMap(twoTeams), node("n1", "8", 4),
		pod(podSpec{name: "victim", queue: "team-a", gpus: 4, node: "n1"}))
	h.sched.answer = answer(nil, []*arbiterv1.Eviction{
		eviction("ml/victim", "victim", "n1", arbiterv1.EvictionReason_FAIR_SHARE_RECLAIM, "ml/other")})
	h.set(func(h *harness) { h.evictMode = evictNothing }) // accepted; the pod has not noticed yet

	h.cycle()
	h.cycle()

	want := []call{{"evict", "ml", "victim", ""}}
	if diff := cmp.Diff(want, h.calls(), cmp.AllowUnexported(call{})); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	if p := podIn(h.sched.last(), "ml/victim", "victim"); p.GetPhase() != arbiterv1.PodPhase_POD_PHASE_RELEASING {
		t.Errorf("evicted pod sent as %v, want RELEASING", p.GetPhase())
	}
	if ev := h.events(); len(ev) != 1 || !strings.Contains(ev[0], "Preempted reclaimed for ml/other (FAIR_SHARE_RECLAIM)") {
		t.Errorf("events = %q, want one Preempted event", ev)
	}
	if got := testutil.ToFloat64(h.metrics.Evictions); got != 1 {
		t.Errorf("evictions = %v, want 1", got)
	}
}

func TestEvictionCarriesTheUIDPrecondition(t *testing.T) {
	victim := pod(podSpec{name: "victim", queue: "team-a", gpus: 4, node: "n1"})
	h := newHarness(t, harnessOpts{}, queueConfigMap(twoTeams), node("n1", "8", 4), victim)
	h.sched.answer = answer(nil, []*arbiterv1.Eviction{
		eviction("ml/victim", "victim", "n1", arbiterv1.EvictionReason_PRIORITY_PREEMPTION, "ml/x")})
	h.cycle()
	var uids []string
	for _, a := range h.kube.Actions() {
		if a.GetSubresource() == "eviction" {
			e := a.(k8stesting.CreateAction).GetObject().(*policyv1.Eviction)
			if uid := preconditionUID(e); uid != nil {
				uids = append(uids, string(*uid))
			} else {
				uids = append(uids, "")
			}
		}
	}
	if diff := cmp.Diff([]string{string(victim.UID)}, uids); diff != "" {
		t.Errorf("eviction UID preconditions (-want +got):\n%s", diff)
	}
}

func TestEvictionRefusedByADisruptionBudgetIsRetried(t *testing.T) {
	h := newHarness(t, harnessOpts{}, queueConfigMap(twoTeams), node("n1", "8", 4),
		pod(podSpec{name: "victim", queue: "team-a", gpus: 4, node: "n1"}))
	h.sched.answer = answer(nil, []*arbiterv1.Eviction{
		eviction("ml/victim", "victim", "n1", arbiterv1.EvictionReason_FAIR_SHARE_RECLAIM, "ml/other")})
	h.set(func(h *harness) { h.evictFailures = 1 })

	h.cycle() // 429 from the budget
	if p := podIn(h.sched.last(), "ml/victim", "victim"); p.GetPhase() != arbiterv1.PodPhase_POD_PHASE_RUNNING {
		t.Fatalf("refused victim sent as %v, want RUNNING", p.GetPhase())
	}
	h.cycle() // retried, accepted
	h.waitGone("ml", "victim")
	h.cycle()

	want := []call{{"evict", "ml", "victim", ""}, {"evict", "ml", "victim", ""}}
	if diff := cmp.Diff(want, h.calls(), cmp.AllowUnexported(call{})); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	if got := testutil.ToFloat64(h.metrics.EvictionsRefused); got != 1 {
		t.Errorf("refused evictions = %v, want 1", got)
	}
	if got := h.errorsAt("evict"); got != 0 {
		t.Errorf("evict errors = %v, want 0: a budget's refusal is counted apart", got)
	}
	var reported bool
	for _, e := range h.events() {
		reported = reported || strings.Contains(e, "EvictionRefused")
	}
	if !reported {
		t.Errorf("no EvictionRefused event in %v", h.events())
	}
}

func TestPipelinedBindingWaitsUntilItsVictimsAreGone(t *testing.T) {
	h := newHarness(t, harnessOpts{}, queueConfigMap(twoTeams), node("n1", "8", 4),
		pod(podSpec{name: "victim", queue: "team-a", gpus: 4, node: "n1"}),
		pod(podSpec{name: "reclaimer", queue: "team-b", gpus: 4}))
	h.set(func(h *harness) { h.evictMode = evictTerminate })
	pipelined := []*arbiterv1.Binding{binding("ml/reclaimer", "reclaimer", "n1", true)}
	h.sched.answer = answer(pipelined, []*arbiterv1.Eviction{
		eviction("ml/victim", "victim", "n1", arbiterv1.EvictionReason_FAIR_SHARE_RECLAIM, "ml/reclaimer")})

	h.cycle() // evicts, nominates
	h.waitPod("ml", "victim", func(p *corev1.Pod) bool { return p != nil && p.DeletionTimestamp != nil })
	h.sched.answer = answer(pipelined, nil) // the victim is RELEASING now: the answer only pipelines
	h.cycle()                               // the victim is still terminating: no binding yet
	if got := h.calls(); len(got) != 1 {
		t.Fatalf("calls while the victim terminates = %v, want only the eviction", got)
	}
	if p := podIn(h.sched.last(), "ml/victim", "victim"); p.GetPhase() != arbiterv1.PodPhase_POD_PHASE_RELEASING {
		t.Errorf("terminating victim sent as %v, want RELEASING", p.GetPhase())
	}
	h.waitPod("ml", "reclaimer", func(p *corev1.Pod) bool { return p != nil && p.Status.NominatedNodeName == "n1" })
	if got := testutil.ToFloat64(h.metrics.Nominations); got != 1 {
		t.Errorf("nominations = %v, want 1", got)
	}

	h.deletePod("ml", "victim") // terminated
	h.cycle()                   // the same pipelined answer: its victims are gone, so bind
	want := []call{{"evict", "ml", "victim", ""}, {"bind", "ml", "reclaimer", "n1"}}
	if diff := cmp.Diff(want, h.calls(), cmp.AllowUnexported(call{})); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
}

func TestPipelinedGangIsBoundTogether(t *testing.T) {
	h := newHarness(t, harnessOpts{}, queueConfigMap(twoTeams), node("n1", "8", 4), node("n2", "8", 4),
		pod(podSpec{name: "victim", queue: "team-a", gpus: 4, node: "n1"}),
		pod(podSpec{name: "g-0", group: "g", minMember: 2, queue: "team-b", gpus: 4}),
		pod(podSpec{name: "g-1", group: "g", minMember: 2, queue: "team-b", gpus: 4}))
	h.set(func(h *harness) { h.evictMode = evictTerminate })
	// g-1 fits on n2 now, but the gang is pipelined as a whole behind g-0's victim on n1.
	pipelined := []*arbiterv1.Binding{binding("ml/g", "g-0", "n1", true), binding("ml/g", "g-1", "n2", true)}
	h.sched.answer = answer(pipelined, []*arbiterv1.Eviction{
		eviction("ml/victim", "victim", "n1", arbiterv1.EvictionReason_FAIR_SHARE_RECLAIM, "ml/g")})
	h.cycle()
	h.waitPod("ml", "victim", func(p *corev1.Pod) bool { return p != nil && p.DeletionTimestamp != nil })
	h.sched.answer = answer(pipelined, nil)
	h.cycle()
	if got := h.calls(); len(got) != 1 {
		t.Fatalf("calls while the victim terminates = %v, want only the eviction: the gang waits as a whole", got)
	}
	h.deletePod("ml", "victim")
	h.cycle()
	// The two bindings are in flight together: their order is the workers'.
	got := h.calls()
	sort.SliceStable(got[1:], func(i, j int) bool { return got[1+i].name < got[1+j].name })
	want := []call{{"evict", "ml", "victim", ""}, {"bind", "ml", "g-0", "n1"}, {"bind", "ml", "g-1", "n2"}}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(call{})); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
}

func TestNominationIsDroppedWhenALaterAnswerDisagrees(t *testing.T) {
	h := newHarness(t, harnessOpts{}, queueConfigMap(twoTeams), node("n1", "8", 4), node("n2", "8", 4),
		pod(podSpec{name: "victim", queue: "team-a", gpus: 4, node: "n1"}),
		pod(podSpec{name: "reclaimer", queue: "team-b", gpus: 4}))
	h.set(func(h *harness) { h.evictMode = evictTerminate })
	h.sched.answer = answer([]*arbiterv1.Binding{binding("ml/reclaimer", "reclaimer", "n1", true)},
		[]*arbiterv1.Eviction{eviction("ml/victim", "victim", "n1", arbiterv1.EvictionReason_FAIR_SHARE_RECLAIM, "ml/reclaimer")})
	h.cycle()
	h.waitPod("ml", "victim", func(p *corev1.Pod) bool { return p != nil && p.DeletionTimestamp != nil })

	// The next answer puts the reclaimer on n2 at once: the nomination to n1 goes.
	h.sched.answer = answer([]*arbiterv1.Binding{binding("ml/reclaimer", "reclaimer", "n2", false)}, nil)
	h.cycle()
	h.deletePod("ml", "victim")
	h.sched.answer = answer(nil, nil)
	h.cycle()

	want := []call{{"evict", "ml", "victim", ""}, {"bind", "ml", "reclaimer", "n2"}}
	if diff := cmp.Diff(want, h.calls(), cmp.AllowUnexported(call{})); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	if got := testutil.ToFloat64(h.metrics.Nominations); got != 0 {
		t.Errorf("nominations = %v, want 0", got)
	}
}

// TestNominationIsCarriedAsABoundPodUntilItsVictimsAreGone (issue 32): a later answer that says
// nothing of the nominated pod does not drop its claim. The next snapshots send it as bound to its
// node, and it is bound there once its victim is gone.
func TestNominationIsCarriedAsABoundPodUntilItsVictimsAreGone(t *testing.T) {
	h := newHarness(t, harnessOpts{}, queueConfigMap(twoTeams), node("n1", "8", 4),
		pod(podSpec{name: "victim", queue: "team-a", gpus: 4, node: "n1"}),
		pod(podSpec{name: "reclaimer", queue: "team-b", gpus: 4}))
	h.set(func(h *harness) { h.evictMode = evictTerminate })
	h.sched.answer = answer([]*arbiterv1.Binding{binding("ml/reclaimer", "reclaimer", "n1", true)},
		[]*arbiterv1.Eviction{eviction("ml/victim", "victim", "n1", arbiterv1.EvictionReason_FAIR_SHARE_RECLAIM, "ml/reclaimer")})
	h.cycle()
	h.sched.answer = answer(nil, nil)
	h.cycle()
	if p := podIn(h.sched.last(), "ml/reclaimer", "reclaimer"); p.GetPhase() != arbiterv1.PodPhase_POD_PHASE_RUNNING || p.GetNodeName() != "n1" {
		t.Errorf("the nominated pod is sent as %v on %q, want RUNNING on n1 (its claim)", p.GetPhase(), p.GetNodeName())
	}
	h.deletePod("ml", "victim")
	h.cycle()
	h.waitBound("ml", "reclaimer")
	if got := h.calls(); len(got) != 2 || got[0].verb != "evict" || got[1].verb != "bind" || got[1].node != "n1" {
		t.Errorf("calls = %v, want the eviction, then the binding to n1", got)
	}
}

// TestNominationOfAnEarlierLeaderIsAdopted (issue 32): a new leader finds a pod its predecessor
// nominated (status.nominatedNodeName and the waiting message) while its victim terminates. It
// keeps the claim, sending the pod as bound to that node, and binds it there once the victim is
// gone.
func TestNominationOfAnEarlierLeaderIsAdopted(t *testing.T) {
	victim := pod(podSpec{name: "victim", queue: "team-a", gpus: 4, node: "n1"})
	deleted := metav1.NewTime(epoch)
	victim.DeletionTimestamp = &deleted
	victim.Finalizers = []string{"example.com/slow"}
	claimer := pod(podSpec{name: "reclaimer", queue: "team-b", gpus: 4})
	claimer.Status.NominatedNodeName = "n1"
	claimer.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
		Reason: corev1.PodReasonUnschedulable, Message: fmt.Sprintf(waitingMessage, 1, "n1")}}
	h := newHarness(t, harnessOpts{}, queueConfigMap(twoTeams), node("n1", "8", 4), victim, claimer)
	h.sched.answer = answer(nil, nil)
	h.cycle()
	if p := podIn(h.sched.last(), "ml/reclaimer", "reclaimer"); p.GetPhase() != arbiterv1.PodPhase_POD_PHASE_RUNNING || p.GetNodeName() != "n1" {
		t.Errorf("the adopted claim is sent as %v on %q, want RUNNING on n1", p.GetPhase(), p.GetNodeName())
	}
	if got := h.calls(); len(got) != 0 {
		t.Errorf("calls = %v while the victim terminates, want none", got)
	}
	h.deletePod("ml", "victim")
	h.cycle()
	h.waitBound("ml", "reclaimer")
	if got := h.calls(); len(got) != 1 || got[0].verb != "bind" || got[0].node != "n1" {
		t.Errorf("calls = %v, want the binding to n1", got)
	}
}

// TestNominationTakenBackByAnEvictionIsDroppedWithoutAnAPICall: an answer that evicts a nominated
// pod (sent as bound, yet never bound) takes its claim back; the pod is not evicted through the
// API, and the next snapshot has it pending.
func TestNominationTakenBackByAnEvictionIsDroppedWithoutAnAPICall(t *testing.T) {
	h := newHarness(t, harnessOpts{}, queueConfigMap(twoTeams), node("n1", "8", 4),
		pod(podSpec{name: "victim", queue: "team-a", gpus: 4, node: "n1"}),
		pod(podSpec{name: "reclaimer", queue: "team-b", gpus: 4}))
	h.set(func(h *harness) { h.evictMode = evictTerminate })
	h.sched.answer = answer([]*arbiterv1.Binding{binding("ml/reclaimer", "reclaimer", "n1", true)},
		[]*arbiterv1.Eviction{eviction("ml/victim", "victim", "n1", arbiterv1.EvictionReason_FAIR_SHARE_RECLAIM, "ml/reclaimer")})
	h.cycle()
	h.sched.answer = answer(nil, []*arbiterv1.Eviction{eviction("ml/reclaimer", "reclaimer", "n1", arbiterv1.EvictionReason_PRIORITY_PREEMPTION, "ml/other")})
	h.cycle()
	h.sched.answer = answer(nil, nil)
	h.deletePod("ml", "victim")
	h.cycle()
	if p := podIn(h.sched.last(), "ml/reclaimer", "reclaimer"); p.GetPhase() != arbiterv1.PodPhase_POD_PHASE_PENDING {
		t.Errorf("the pod whose claim was taken back is sent as %v, want PENDING", p.GetPhase())
	}
	if got := h.calls(); len(got) != 1 || got[0].verb != "evict" || got[0].name != "victim" {
		t.Errorf("calls = %v, want only the victim's eviction", got)
	}
}

func TestPendingReasonGoesToTheConditionAndAnEventOnce(t *testing.T) {
	h := newHarness(t, harnessOpts{}, queueConfigMap(twoTeams), node("n1", "8", 4),
		pod(podSpec{name: "big-0", group: "big", minMember: 2, queue: "team-a", gpus: 4}),
		pod(podSpec{name: "big-1", group: "big", minMember: 2, queue: "team-a", gpus: 4}))
	h.sched.answer = answer(nil, nil, &arbiterv1.PendingPodGroup{PodGroup: "ml/big", Reason: "gang-does-not-fit",
		Message: "2 pods of 4 nvidia.com/gpu fit no set of nodes"})

	h.cycle()
	h.waitPod("ml", "big-1", func(p *corev1.Pod) bool { return len(p.Status.Conditions) > 0 })
	h.cycle() // same reason: nothing written again

	for _, name := range []string{"big-0", "big-1"} {
		p, err := h.kube.CoreV1().Pods("ml").Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var cond *corev1.PodCondition
		for i := range p.Status.Conditions {
			if p.Status.Conditions[i].Type == corev1.PodScheduled {
				cond = &p.Status.Conditions[i]
			}
		}
		want := "gang-does-not-fit: 2 pods of 4 nvidia.com/gpu fit no set of nodes"
		if cond == nil || cond.Status != corev1.ConditionFalse || cond.Reason != corev1.PodReasonUnschedulable || cond.Message != want {
			t.Errorf("%s PodScheduled = %+v, want False/Unschedulable/%q", name, cond, want)
		}
		if got := h.statusPatches("ml", name); got != 1 {
			t.Errorf("%s got %d status patches, want 1", name, got)
		}
	}
	ev := h.events()
	if len(ev) != 2 || !strings.HasPrefix(ev[0], "Warning FailedScheduling gang-does-not-fit") {
		t.Errorf("events = %q, want two FailedScheduling warnings", ev)
	}

	// A new reason is written again.
	h.sched.answer = answer(nil, nil, &arbiterv1.PendingPodGroup{PodGroup: "ml/big", Reason: "queue-over-limit", Message: "team-a"})
	h.cycle()
	if got := h.statusPatches("ml", "big-0"); got != 2 {
		t.Errorf("status patches after a new reason = %d, want 2", got)
	}
}

func TestExcludedPodGetsItsReasonWithoutReachingArbiter(t *testing.T) {
	h := newHarness(t, harnessOpts{}, queueConfigMap(twoTeams), node("n1", "8", 4),
		pod(podSpec{name: "lost", queue: "no-such-queue", gpus: 1}),
		pod(podSpec{name: "fine", queue: "team-a", gpus: 1}))
	h.cycle()
	if podIn(h.sched.last(), "ml/lost", "lost") != nil {
		t.Error("a pod of an unknown queue was sent to arbiter")
	}
	if podIn(h.sched.last(), "ml/fine", "fine") == nil {
		t.Error("a valid pod was not sent")
	}
	h.waitPod("ml", "lost", func(p *corev1.Pod) bool {
		return len(p.Status.Conditions) == 1 && strings.HasPrefix(p.Status.Conditions[0].Message, translate.ReasonUnknownQueue+": ")
	})
}

func TestMovedPodsBindingNominatesItsReplacement(t *testing.T) {
	h := newHarness(t, harnessOpts{}, queueConfigMap(twoTeams), node("n1", "8", 4), node("n2", "8", 4),
		pod(podSpec{name: "web-0", group: "web", queue: "team-a", gpus: 2, node: "n1"}),
		pod(podSpec{name: "train", queue: "team-b", gpus: 4}))
	// Consolidation: web-0 moves from n1 to n2 so that train fits on n1.
	h.sched.answer = answer(
		[]*arbiterv1.Binding{binding("ml/train", "train", "n1", true), binding("ml/web", "web-0", "n2", true)},
		[]*arbiterv1.Eviction{eviction("ml/web", "web-0", "n1", arbiterv1.EvictionReason_CONSOLIDATION, "ml/train")})
	h.cycle()
	h.waitGone("ml", "web-0")
	// train's binding waits for its victim: once web-0 is gone it may already be bound in this
	// cycle. What must never happen is a binding of the moved pod itself.
	got := h.calls()
	if len(got) == 0 || got[0] != (call{"evict", "ml", "web-0", ""}) {
		t.Fatalf("calls = %v, want the eviction of web-0 first", got)
	}
	for _, c := range got[1:] {
		if c != (call{"bind", "ml", "train", "n1"}) {
			t.Fatalf("calls = %v, want the eviction of web-0 and at most train's binding (a moved pod is never bound itself)", got)
		}
	}

	// Its controller creates a replacement under another name.
	h.createPod(pod(podSpec{name: "web-1", group: "web", queue: "team-a", gpus: 2}))
	h.sched.answer = answer(nil, nil)
	h.cycle()
	h.waitPod("ml", "web-1", func(p *corev1.Pod) bool { return p.Status.NominatedNodeName == "n2" })
}

func TestUsageIsSentAndSaved(t *testing.T) {
	h := newHarness(t, harnessOpts{cfg: Config{UsageSaveInterval: 5 * time.Second}},
		queueConfigMap(twoTeams), node("n1", "8", 8),
		pod(podSpec{name: "a", queue: "team-a", gpus: 2, node: "n1"}),
		pod(podSpec{name: "b", queue: "team-b", gpus: 1, node: "n1"}))
	h.cycle()
	h.clock.SetTime(epoch.Add(10 * time.Second))
	h.cycle()

	req := h.sched.last()
	got := map[string]float64{}
	for _, u := range req.GetSnapshot().GetUsage() {
		got[u.GetQueue()] = u.GetUsage()["nvidia.com/gpu"]
	}
	want := map[string]float64{"research": 30, "team-a": 20, "team-b": 10}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("usage (-want +got):\n%s", diff)
	}
	if c := req.GetSnapshot().GetUsageCapacity()["nvidia.com/gpu"]; c != 80 {
		t.Errorf("usage capacity = %v, want 80", c)
	}
	saved, err := h.store.Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if saved.Queues["team-a"]["nvidia.com/gpu"] != 20 || !saved.Updated.Equal(epoch.Add(10*time.Second)) {
		t.Errorf("saved ledger = %+v, want team-a at 20 as of +10s", saved)
	}
}

func TestUsageContinuesFromTheSavedLedger(t *testing.T) {
	h := newHarness(t, harnessOpts{}, queueConfigMap(twoTeams), node("n1", "8", 8),
		pod(podSpec{name: "a", queue: "team-a", gpus: 2, node: "n1"}),
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: "arbiter-usage"},
			Data: map[string]string{"usage.json": `{"updated":"2026-04-01T07:59:00Z","queues":{"team-a":{"nvidia.com/gpu":100}},"capacity":{"nvidia.com/gpu":1000}}`}})
	h.cycle() // 60 s after the saved state
	for _, u := range h.sched.last().GetSnapshot().GetUsage() {
		if u.GetQueue() == "team-a" && u.GetUsage()["nvidia.com/gpu"] != 100+2*60 {
			t.Errorf("team-a usage = %v, want 220", u.GetUsage()["nvidia.com/gpu"])
		}
	}
}

func TestDumpSnapshotWritesAReplayableRequest(t *testing.T) {
	dir := t.TempDir()
	h := newHarness(t, harnessOpts{cfg: Config{DumpDir: dir}}, queueConfigMap(twoTeams), node("n1", "8", 4),
		pod(podSpec{name: "p", queue: "team-a", gpus: 2, cpu: "500m"}))
	h.cycle()
	files, err := filepath.Glob(filepath.Join(dir, "schedule-*.json"))
	if err != nil || len(files) != 1 {
		t.Fatalf("dump files = %v (%v), want 1", files, err)
	}
	data, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	got := &arbiterv1.ScheduleRequest{}
	if err := protojson.Unmarshal(data, got); err != nil {
		t.Fatalf("dump is not a proto3 JSON ScheduleRequest: %v", err)
	}
	if diff := cmp.Diff(h.sched.last(), got, protocmp.Transform()); diff != "" {
		t.Errorf("dumped request differs from the one sent (-sent +dumped):\n%s", diff)
	}
}

func TestQueuesComeFromTheConfigMapAndKAIResources(t *testing.T) {
	kai := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "scheduling.run.ai/v2", "kind": "Queue",
		"metadata": map[string]any{"name": "kai-team"},
		"spec": map[string]any{"parentQueue": "research", "resources": map[string]any{
			"gpu": map[string]any{"quota": int64(2), "limit": int64(-1), "overQuotaWeight": int64(1)}}},
	}}
	overridden := kai.DeepCopy()
	overridden.SetName("team-a")
	h := newHarness(t, harnessOpts{kai: []runtime.Object{kai, overridden}}, queueConfigMap(twoTeams), node("n1", "8", 4),
		pod(podSpec{name: "p", gpus: 1, queue: "kai-team"}))
	h.cycle()
	req := h.sched.last()
	var names []string
	for _, q := range req.GetSnapshot().GetQueues() {
		names = append(names, q.GetName())
		if q.GetName() == "team-a" && q.GetDeserved()["nvidia.com/gpu"] != 4 {
			t.Errorf("team-a deserved = %v, want the ConfigMap's 4", q.GetDeserved())
		}
	}
	if diff := cmp.Diff([]string{"kai-team", "research", "team-a", "team-b"}, names); diff != "" {
		t.Errorf("queues (-want +got):\n%s", diff)
	}
	if podIn(req, "ml/p", "p") == nil {
		t.Error("the pod of the KAI queue was not sent")
	}
}

func TestScheduleErrorAppliesNothing(t *testing.T) {
	h := newHarness(t, harnessOpts{}, queueConfigMap(twoTeams), node("n1", "8", 4),
		pod(podSpec{name: "p", queue: "team-a", gpus: 1}))
	h.sched.answer = func(*arbiterv1.ScheduleRequest) (*arbiterv1.ScheduleResponse, error) {
		return nil, status.Error(codes.InvalidArgument, "snapshot.queues[1].parent: unknown queue")
	}
	err := h.shim.RunCycle(context.Background())
	if status.Code(errors.Unwrap(err)) != codes.InvalidArgument {
		t.Fatalf("err = %v, want the server's INVALID_ARGUMENT", err)
	}
	if len(h.calls()) != 0 {
		t.Errorf("calls = %v, want none", h.calls())
	}
	if got := h.errorsAt("schedule"); got != 1 {
		t.Errorf("schedule errors = %v, want 1", got)
	}
}

func TestBadQueueConfigStopsScheduling(t *testing.T) {
	tests := []struct{ name, yaml, want string }{
		{"MisspeltField", "queues:\n- name: a\n  deservd: {}\n", "queues[0]"},
		{"KueueModel", "policy: {fairnessModel: FAIRNESS_MODEL_KUEUE}\nqueues: []\n", "KAI model"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, harnessOpts{}, queueConfigMap(tc.yaml), node("n1", "8", 4))
			err := h.shim.RunCycle(context.Background())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one mentioning %q", err, tc.want)
			}
			if len(h.sched.requests) != 0 {
				t.Error("arbiter was called with a broken queue configuration")
			}
			if got := h.errorsAt("queues"); got != 1 {
				t.Errorf("queue errors = %v, want 1", got)
			}
		})
	}
}

func TestPolicyComesFromTheQueueConfigMap(t *testing.T) {
	h := newHarness(t, harnessOpts{}, queueConfigMap(twoTeams+"policy: {kValue: 2}\n"), node("n1", "8", 4))
	h.cycle()
	if got := h.sched.last().GetPolicy().GetKValue(); got != 2 {
		t.Errorf("k_value = %v, want 2", got)
	}
}

// TestOwnsIsTheCyclesRuleReadFromThePodAlone: a pod is the shim's when it is of the shim's
// scheduler and has a queue (its own, the KAI label, or the default).
func TestOwnsIsTheCyclesRuleReadFromThePodAlone(t *testing.T) {
	pod := func(scheduler string, labels map[string]string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: "p", Labels: labels},
			Spec: corev1.PodSpec{SchedulerName: scheduler}}
	}
	plain := newHarness(t, harnessOpts{cfg: Config{SchedulerName: "arbiter"}}).shim
	withDefault := newHarness(t, harnessOpts{cfg: Config{SchedulerName: "arbiter", DefaultQueue: "team-a"}}).shim
	for _, c := range []struct {
		name string
		s    *Shim
		pod  *corev1.Pod
		want bool
	}{
		{"its queue label", plain, pod("arbiter", map[string]string{translate.KeyQueue: "team-a"}), true},
		{"KAI's queue label", plain, pod("arbiter", map[string]string{translate.KAIQueueLabel: "team-a"}), true},
		{"no queue", plain, pod("arbiter", nil), false},
		{"no queue, a default one", withDefault, pod("arbiter", nil), true},
		{"another scheduler's", withDefault, pod("default-scheduler", map[string]string{translate.KeyQueue: "team-a"}), false},
	} {
		if got := c.s.Owns(c.pod); got != c.want {
			t.Errorf("%s: Owns = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestHasIsThePodCacheByUID: Has is true for the cached object only, not for a pod of the same
// name made anew (another UID), nor for a pod the cache has not seen.
func TestHasIsThePodCacheByUID(t *testing.T) {
	cached := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: "p", UID: "uid-1"}}
	s := newHarness(t, harnessOpts{}, cached).shim
	if !s.Has(cached) {
		t.Error("Has(the cached pod) = false")
	}
	anew := cached.DeepCopy()
	anew.UID = "uid-2"
	if s.Has(anew) {
		t.Error("Has(a pod of the same name, another UID) = true")
	}
	if s.Has(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: "q", UID: "uid-3"}}) {
		t.Error("Has(a pod the cache never saw) = true")
	}
}
