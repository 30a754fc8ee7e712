package extender

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/fake"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"

	arbiterv1 "arbiter.dev/clients/go/arbiterv1"
	"arbiter.dev/clients/go/k8s/translate"
)

// fixedDecider answers with a fixed answer about fixed pods, and counts the calls.
type fixedDecider struct {
	mu    sync.Mutex
	res   *translate.Result
	resp  *arbiterv1.ScheduleResponse
	calls int
	// arrive, when set, is called by Has for a pod the answer does not know: the cache's late
	// event, as the informer would deliver it.
	arrive func(pod *corev1.Pod)
}

// Has: the decider's cache has the pods its answer knows.
func (f *fixedDecider) Has(pod *corev1.Pod) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range f.res.Pods {
		if p.UID == pod.UID {
			return true
		}
	}
	if f.arrive != nil {
		f.arrive(pod)
		f.arrive = nil
	}
	return false
}

func (f *fixedDecider) Decide(context.Context) (*translate.Result, *arbiterv1.ScheduleResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	return f.res, f.resp, nil
}

// Owns: the pods that name a queue are the decider's.
func (f *fixedDecider) Owns(pod *corev1.Pod) bool { return translate.QueueOf(pod, "") != "" }

func testPod(name string, labels map[string]string, node string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: name, UID: types.UID(name + "-uid"), Labels: labels},
		Spec: corev1.PodSpec{NodeName: node}}
}

// newTestExtender serves a fixed answer: gang g (g-0 to n1, g-1 to n2), b-0 on n1 after
// evicting v-0, and p-0 pending; v-0 runs on n1 with label app=v.
func newTestExtender(t *testing.T, objs ...*corev1.Pod) (*Extender, *fixedDecider, *fake.Clientset) {
	t.Helper()
	pods := map[string]*corev1.Pod{
		"g-0": testPod("g-0", nil, ""), "g-1": testPod("g-1", nil, ""), "b-0": testPod("b-0", nil, ""),
		"p-0": testPod("p-0", nil, ""), "v-0": testPod("v-0", map[string]string{"app": "v"}, "n1"),
	}
	res := &translate.Result{Pods: map[translate.PodKey]*corev1.Pod{
		{Group: "ml/g", Pod: "g-0"}: pods["g-0"], {Group: "ml/g", Pod: "g-1"}: pods["g-1"],
		{Group: "ml/b-0", Pod: "b-0"}: pods["b-0"], {Group: "ml/p-0", Pod: "p-0"}: pods["p-0"],
		{Group: "ml/v-0", Pod: "v-0"}: pods["v-0"],
	}, Snapshot: &arbiterv1.Snapshot{PodGroups: []*arbiterv1.PodGroup{
		{Name: "ml/p-0", Pods: []*arbiterv1.Pod{{Name: "p-0", Phase: arbiterv1.PodPhase_POD_PHASE_PENDING}}},
	}}}
	resp := &arbiterv1.ScheduleResponse{
		Bindings: []*arbiterv1.Binding{
			{PodGroup: "ml/g", Pod: "g-0", Node: "n1"}, {PodGroup: "ml/g", Pod: "g-1", Node: "n2"},
			{PodGroup: "ml/b-0", Pod: "b-0", Node: "n1", AfterEvictions: true},
		},
		Evictions: []*arbiterv1.Eviction{{PodGroup: "ml/v-0", Pod: "v-0", Node: "n1", PreemptorPodGroup: "ml/b-0"}},
		Pending:   []*arbiterv1.PendingPodGroup{{PodGroup: "ml/p-0", Reason: "queue-over-limit", Message: "team-a is at its limit"}},
	}
	var all []*corev1.Pod
	for _, p := range pods {
		all = append(all, p)
	}
	kube := fake.NewClientset()
	for _, p := range append(all, objs...) {
		if _, err := kube.CoreV1().Pods(p.Namespace).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	d := &fixedDecider{res: res, resp: resp}
	e := New(Config{MaxAge: time.Hour, Bind: true, GangWait: 2 * time.Second, CacheWait: 200 * time.Millisecond}, d, kube, nil, nil)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := e.Start(ctx); err != nil {
		t.Fatal(err)
	}
	return e, d, kube
}

func filter(e *Extender, pod *corev1.Pod, nodes ...string) *extenderv1.ExtenderFilterResult {
	return e.Filter(context.Background(), &extenderv1.ExtenderArgs{Pod: pod, NodeNames: &nodes})
}

func TestFilterKeepsArbitersNodeAndRefusesPendingPodsAsUnresolvable(t *testing.T) {
	e, d, _ := newTestExtender(t)
	got := filter(e, testPod("g-1", nil, ""), "n1", "n2", "n3")
	if *got.NodeNames == nil || strings.Join(*got.NodeNames, ",") != "n2" || len(got.FailedNodes) != 2 {
		t.Errorf("g-1: kept %v, failed %v; want n2 only", *got.NodeNames, got.FailedNodes)
	}
	got = filter(e, testPod("p-0", nil, ""), "n1", "n2")
	if len(*got.NodeNames) != 0 || !strings.Contains(got.FailedAndUnresolvableNodes["n1"], "team-a is at its limit") {
		t.Errorf("p-0: kept %v, unresolvable %v; want none kept, arbiter's reason", *got.NodeNames, got.FailedAndUnresolvableNodes)
	}
	if d.calls != 1 {
		t.Errorf("Decide called %d times for two pods of one answer, want 1", d.calls)
	}
	// A pod arbiter never heard of makes the next call ask again.
	filter(e, testPod("new", nil, ""), "n1")
	if d.calls != 2 {
		t.Errorf("Decide called %d times after an unknown pod, want 2", d.calls)
	}
}

// TestAPodOfArbitersTheCachesNeverGetIsNeitherPlacedNorPreemptedFor: kube-scheduler can ask
// about a pod before the decider's caches have it. When they still do not after the wait,
// filter answers with an error (kube-scheduler retries after backoff) and preempt names no
// victims, rather than treating it as a pod arbiter does not schedule, whose placement and
// preemption kube-scheduler decides alone.
func TestAPodOfArbitersTheCachesNeverGetIsNeitherPlacedNorPreemptedFor(t *testing.T) {
	e, _, _ := newTestExtender(t)
	unseen := testPod("late", map[string]string{translate.KeyQueue: "team-b"}, "")
	got := filter(e, unseen, "n1", "n2")
	if got.NodeNames != nil || len(got.FailedNodes) != 0 || !strings.Contains(got.Error, "not in arbiter's snapshot yet") {
		t.Errorf("filter kept %v, failed %v, error %q; want an error, retried after backoff until arbiter has the pod",
			got.NodeNames, got.FailedNodes, got.Error)
	}
	kubes := map[string]*extenderv1.MetaVictims{"n1": {Pods: []*extenderv1.MetaPod{{UID: "v-0-uid"}}}}
	pre := e.Preempt(context.Background(), &extenderv1.ExtenderPreemptionArgs{Pod: unseen, NodeNameToMetaVictims: kubes})
	if len(pre.NodeNameToMetaVictims) != 0 {
		t.Errorf("preempt = %+v, want no victims: arbiter has not decided this pod", pre.NodeNameToMetaVictims)
	}
	if n := testutil.ToFloat64(e.metrics.Filtered.WithLabelValues("unseen")); n != 1 {
		t.Errorf("unseen filter calls = %v, want 1", n)
	}
	// A pod that names no queue is not arbiter's: kube-scheduler's own choice stands.
	other := testPod("other", nil, "")
	pre = e.Preempt(context.Background(), &extenderv1.ExtenderPreemptionArgs{Pod: other, NodeNameToMetaVictims: kubes})
	if len(pre.NodeNameToMetaVictims["n1"].Pods) != 1 {
		t.Errorf("preempt for a pod arbiter does not schedule = %+v, want kube-scheduler's victims", pre.NodeNameToMetaVictims)
	}
}

// TestAPodOfArbitersTheCachesGetLateIsDecidedByArbiter: when the decider's caches get the pod
// during the wait, the call asks again and follows arbiter's answer: here, b-1 placed on n1
// after evicting v-0, so preempt names v-0 (kube-scheduler's own choice was a-9).
func TestAPodOfArbitersTheCachesGetLateIsDecidedByArbiter(t *testing.T) {
	e, d, _ := newTestExtender(t)
	late := testPod("b-1", map[string]string{translate.KeyQueue: "team-b"}, "")
	d.mu.Lock()
	d.arrive = func(pod *corev1.Pod) {
		d.res.Pods[translate.PodKey{Group: "ml/b-1", Pod: "b-1"}] = pod
		d.resp.Bindings = append(d.resp.Bindings, &arbiterv1.Binding{PodGroup: "ml/b-1", Pod: "b-1", Node: "n1", AfterEvictions: true})
		d.resp.Evictions = append(d.resp.Evictions, &arbiterv1.Eviction{PodGroup: "ml/v-0", Pod: "v-0", Node: "n1", PreemptorPodGroup: "ml/b-1"})
	}
	d.mu.Unlock()
	kubes := map[string]*extenderv1.MetaVictims{"n1": {Pods: []*extenderv1.MetaPod{{UID: "a-9-uid"}}}}
	got := e.Preempt(context.Background(), &extenderv1.ExtenderPreemptionArgs{Pod: late, NodeNameToMetaVictims: kubes})
	if v := got.NodeNameToMetaVictims["n1"]; len(got.NodeNameToMetaVictims) != 1 || v == nil || len(v.Pods) != 1 || v.Pods[0].UID != "v-0-uid" {
		t.Errorf("preempt = %+v, want arbiter's victim v-0 on n1", got.NodeNameToMetaVictims)
	}
	if d.calls != 2 {
		t.Errorf("Decide called %d times, want 2: once before the cache had the pod, once after", d.calls)
	}
}

func TestPreemptNamesArbitersVictimsOnlyOnArbitersNode(t *testing.T) {
	e, _, _ := newTestExtender(t)
	got := e.Preempt(context.Background(), &extenderv1.ExtenderPreemptionArgs{Pod: testPod("b-0", nil, ""),
		NodeNameToMetaVictims: map[string]*extenderv1.MetaVictims{"n1": {}, "n2": {}}})
	if len(got.NodeNameToMetaVictims) != 1 || len(got.NodeNameToMetaVictims["n1"].Pods) != 1 ||
		got.NodeNameToMetaVictims["n1"].Pods[0].UID != "v-0-uid" {
		t.Errorf("victims = %+v, want v-0 on n1 only", got.NodeNameToMetaVictims)
	}
}

func TestPreemptRespectsADisruptionBudget(t *testing.T) {
	e, _, kube := newTestExtender(t)
	one := intstr.FromInt32(1)
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: "v"},
		Spec:       policyv1.PodDisruptionBudgetSpec{MinAvailable: &one, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "v"}}},
		Status:     policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: 0},
	}
	if _, err := kube.PolicyV1().PodDisruptionBudgets("ml").Create(context.Background(), pdb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		if l, _ := e.pdbs.List(labels.Everything()); len(l) == 1 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	got := e.Preempt(context.Background(), &extenderv1.ExtenderPreemptionArgs{Pod: testPod("b-0", nil, ""),
		NodeNameToMetaVictims: map[string]*extenderv1.MetaVictims{"n1": {}}})
	if len(got.NodeNameToMetaVictims) != 0 {
		t.Errorf("victims = %+v, want none: the budget allows no disruption", got.NodeNameToMetaVictims)
	}
	if n := testutil.ToFloat64(e.metrics.Preemptions.WithLabelValues("budget")); n != 1 {
		t.Errorf("budget refusals = %v, want 1", n)
	}
}

func TestBindHoldsAGangUntilEveryMemberAsks(t *testing.T) {
	e, _, kube := newTestExtender(t)
	bind := func(name, node string) chan string {
		out := make(chan string, 1)
		go func() {
			r := e.Bind(context.Background(), &extenderv1.ExtenderBindingArgs{PodNamespace: "ml", PodName: name,
				PodUID: types.UID(name + "-uid"), Node: node})
			out <- r.Error
		}()
		return out
	}
	first := bind("g-0", "n1")
	select {
	case err := <-first:
		t.Fatalf("g-0 bound alone (%q): want it held for g-1", err)
	case <-time.After(300 * time.Millisecond):
	}
	second := bind("g-1", "n2")
	for _, ch := range []chan string{first, second} {
		if err := <-ch; err != "" {
			t.Fatalf("bind: %s", err)
		}
	}
	bindings := 0
	for _, a := range kube.Actions() {
		if a.GetSubresource() == "binding" {
			bindings++
		}
	}
	if bindings != 2 {
		t.Errorf("bindings = %d, want the whole gang (2)", bindings)
	}
}

func TestBindGivesUpOnAGangWhoseMembersDoNotAllCome(t *testing.T) {
	e, _, kube := newTestExtender(t)
	r := e.Bind(context.Background(), &extenderv1.ExtenderBindingArgs{PodNamespace: "ml", PodName: "g-0", PodUID: "g-0-uid", Node: "n1"})
	if !strings.Contains(r.Error, "1 of 2 members") {
		t.Errorf("error = %q, want it to say 1 of 2 members were ready", r.Error)
	}
	for _, a := range kube.Actions() {
		if a.GetSubresource() == "binding" {
			t.Errorf("a member of an incomplete gang was bound: %v", a)
		}
	}
}
