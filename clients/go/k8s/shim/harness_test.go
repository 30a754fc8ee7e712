package shim

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"

	arbiterv1 "arbiter.dev/clients/go/arbiterv1"
	"arbiter.dev/clients/go/k8s/translate"
	"arbiter.dev/clients/go/k8s/usage"
)

var (
	podsGVR = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	epoch   = time.Date(2026, 4, 1, 8, 0, 0, 0, time.UTC)
)

const testNamespace = "arbiter-system"

// fakeScheduler answers with a scripted function and records every request.
type fakeScheduler struct {
	mu       sync.Mutex
	requests []*arbiterv1.ScheduleRequest
	answer   func(*arbiterv1.ScheduleRequest) (*arbiterv1.ScheduleResponse, error)
}

func (f *fakeScheduler) Schedule(_ context.Context, req *arbiterv1.ScheduleRequest) (*arbiterv1.ScheduleResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests = append(f.requests, req)
	if f.answer == nil {
		return &arbiterv1.ScheduleResponse{}, nil
	}
	return f.answer(req)
}

func (f *fakeScheduler) last() *arbiterv1.ScheduleRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.requests[len(f.requests)-1]
}

// evictionMode says what the Eviction reactor does to the evicted pod.
type evictionMode int

const (
	evictDeletes   evictionMode = iota // the pod is gone at once
	evictTerminate                     // the pod is terminating (deletionTimestamp set)
	evictNothing                       // the API accepted it, the cache has not shown it yet
)

// harness is a fake cluster with real informers. Its reactors apply Binding and Eviction calls
// to the object tracker, as the API server would; the fake clientset alone only records them.
type harness struct {
	t        *testing.T
	kube     *fake.Clientset
	sched    *fakeScheduler
	recorder *record.FakeRecorder
	clock    *clocktesting.FakePassiveClock
	shim     *Shim
	metrics  *Metrics
	store    *usage.ConfigMapStore

	mu            sync.Mutex
	applyBinds    bool
	bindFailures  int
	evictFailures int
	evictMode     evictionMode
}

type harnessOpts struct {
	cfg Config
	// scheduler replaces the scripted fake (the end-to-end test passes a real client).
	scheduler Scheduler
	kai       []runtime.Object
	noStore   bool
}

func newHarness(t *testing.T, opts harnessOpts, objs ...runtime.Object) *harness {
	t.Helper()
	h := &harness{
		t:          t,
		kube:       fake.NewClientset(objs...),
		sched:      &fakeScheduler{},
		recorder:   record.NewFakeRecorder(1000),
		clock:      clocktesting.NewFakePassiveClock(epoch),
		metrics:    NewMetrics(nil),
		applyBinds: true,
	}
	h.kube.PrependReactor("create", "pods", h.react)
	deps := Deps{Kube: h.kube, Scheduler: h.sched, Recorder: h.recorder, Clock: h.clock, Metrics: h.metrics,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))} // failures are asserted through metrics
	if opts.scheduler != nil {
		deps.Scheduler = opts.scheduler
	}
	if !opts.noStore {
		h.store = &usage.ConfigMapStore{Client: h.kube, Namespace: testNamespace, Name: "arbiter-usage"}
		deps.Store = h.store
	}
	if opts.kai != nil {
		scheme := runtime.NewScheme()
		deps.Dynamic = dynamicfake.NewSimpleDynamicClientWithCustomListKinds(scheme,
			map[schema.GroupVersionResource]string{translate.KAIQueueResource: "QueueList"}, opts.kai...)
		opts.cfg.KAIQueues = true
	}
	if opts.cfg.Namespace == "" {
		opts.cfg.Namespace = testNamespace
	}
	s, err := New(opts.cfg, deps)
	if err != nil {
		t.Fatal(err)
	}
	h.shim = s
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	return h
}

func (h *harness) react(action k8stesting.Action) (bool, runtime.Object, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	create := action.(k8stesting.CreateAction)
	ns := action.GetNamespace()
	tracker := h.kube.Tracker()
	switch action.GetSubresource() {
	case "binding":
		b := create.GetObject().(*corev1.Binding)
		if h.bindFailures > 0 {
			h.bindFailures--
			return true, nil, apierrors.NewServiceUnavailable("apiserver restarting")
		}
		obj, err := tracker.Get(podsGVR, ns, b.Name)
		if err != nil {
			return true, nil, err
		}
		pod := obj.(*corev1.Pod).DeepCopy()
		if pod.Spec.NodeName != "" {
			return true, nil, apierrors.NewConflict(podsGVR.GroupResource(), b.Name, fmt.Errorf("already assigned to %s", pod.Spec.NodeName))
		}
		if h.applyBinds {
			pod.Spec.NodeName = b.Target.Name
			pod.Status.Phase = corev1.PodRunning
			start := metav1.NewTime(h.clock.Now())
			pod.Status.StartTime = &start
			return true, b, tracker.Update(podsGVR, pod, ns)
		}
		return true, b, nil
	case "eviction":
		e := create.GetObject().(*policyv1.Eviction)
		if h.evictFailures > 0 {
			h.evictFailures--
			return true, nil, apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 10)
		}
		obj, err := tracker.Get(podsGVR, ns, e.Name)
		if err != nil {
			return true, nil, err
		}
		pod := obj.(*corev1.Pod).DeepCopy()
		if uid := preconditionUID(e); uid != nil && *uid != pod.UID {
			return true, nil, apierrors.NewConflict(podsGVR.GroupResource(), e.Name, fmt.Errorf("uid precondition failed"))
		}
		switch h.evictMode {
		case evictDeletes:
			return true, nil, tracker.Delete(podsGVR, ns, e.Name)
		case evictTerminate:
			now := metav1.NewTime(h.clock.Now())
			pod.DeletionTimestamp = &now
			return true, nil, tracker.Update(podsGVR, pod, ns)
		}
		return true, nil, nil
	}
	return false, nil, nil
}

func (h *harness) set(f func(h *harness)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	f(h)
}

// cycle runs one scheduling cycle and fails the test on error.
func (h *harness) cycle() {
	h.t.Helper()
	if err := h.shim.RunCycle(context.Background()); err != nil {
		h.t.Fatalf("cycle: %v", err)
	}
}

// waitPod waits until the shim's cache shows pod ns/name satisfying ok (nil pod = gone).
func (h *harness) waitPod(ns, name string, ok func(*corev1.Pod) bool) {
	h.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		p, err := h.shim.pods.Pods(ns).Get(name)
		if err != nil {
			p = nil
		}
		if ok(p) {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	h.t.Fatalf("cache never showed the expected state of pod %s/%s", ns, name)
}

func (h *harness) waitBound(ns, name string) {
	h.t.Helper()
	h.waitPod(ns, name, func(p *corev1.Pod) bool { return p != nil && p.Spec.NodeName != "" })
}

func (h *harness) waitGone(ns, name string) {
	h.t.Helper()
	h.waitPod(ns, name, func(p *corev1.Pod) bool { return p == nil })
}

// createPod adds a pod to the cluster and waits until the shim's cache has it.
func (h *harness) createPod(p *corev1.Pod) {
	h.t.Helper()
	if _, err := h.kube.CoreV1().Pods(p.Namespace).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
		h.t.Fatal(err)
	}
	h.waitPod(p.Namespace, p.Name, func(c *corev1.Pod) bool { return c != nil && c.UID == p.UID })
}

// deletePod removes a pod and waits until the cache has forgotten it.
func (h *harness) deletePod(ns, name string) {
	h.t.Helper()
	if err := h.kube.Tracker().Delete(podsGVR, ns, name); err != nil {
		h.t.Fatal(err)
	}
	h.waitGone(ns, name)
}

type call struct{ verb, ns, name, node string }

// calls lists the Binding and Eviction calls made so far, in order.
func (h *harness) calls() []call {
	var out []call
	for _, a := range h.kube.Actions() {
		c, ok := a.(k8stesting.CreateAction)
		if !ok || a.GetResource() != podsGVR {
			continue
		}
		switch a.GetSubresource() {
		case "binding":
			b := c.GetObject().(*corev1.Binding)
			out = append(out, call{"bind", b.Namespace, b.Name, b.Target.Name})
		case "eviction":
			e := c.GetObject().(*policyv1.Eviction)
			out = append(out, call{"evict", a.GetNamespace(), e.Name, ""})
		}
	}
	return out
}

// statusPatches counts the status patches sent for pod ns/name.
func (h *harness) statusPatches(ns, name string) int {
	n := 0
	for _, a := range h.kube.Actions() {
		if p, ok := a.(k8stesting.PatchAction); ok && a.GetSubresource() == "status" && a.GetNamespace() == ns && p.GetName() == name {
			n++
		}
	}
	return n
}

func (h *harness) events() []string {
	var out []string
	for {
		select {
		case e := <-h.recorder.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// errorsAt reads the error counter of a stage.
func (h *harness) errorsAt(stage string) float64 {
	return testutil.ToFloat64(h.metrics.Errors.WithLabelValues(stage))
}

// ---- cluster builders ----

func node(name string, cpu string, gpus int64) *corev1.Node {
	alloc := corev1.ResourceList{"cpu": resource.MustParse(cpu), "memory": resource.MustParse("64Gi"), "pods": resource.MustParse("110")}
	if gpus > 0 {
		alloc["nvidia.com/gpu"] = *resource.NewQuantity(gpus, resource.DecimalSI)
	}
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{Allocatable: alloc, Capacity: alloc}}
}

type podSpec struct {
	ns, name, queue, group string
	minMember              int
	gpus                   int64
	cpu                    string
	node                   string
	scheduler              string
}

func pod(s podSpec) *corev1.Pod {
	if s.ns == "" {
		s.ns = "ml"
	}
	if s.scheduler == "" {
		s.scheduler = "arbiter"
	}
	labels := map[string]string{}
	if s.queue != "" {
		labels[translate.KeyQueue] = s.queue
	}
	if s.group != "" {
		labels[translate.KeyPodGroup] = s.group
	}
	ann := map[string]string{}
	if s.minMember > 0 {
		ann[translate.KeyMinMember] = fmt.Sprint(s.minMember)
	}
	req := corev1.ResourceList{}
	if s.gpus > 0 {
		req["nvidia.com/gpu"] = *resource.NewQuantity(s.gpus, resource.DecimalSI)
	}
	if s.cpu != "" {
		req["cpu"] = resource.MustParse(s.cpu)
	}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: s.name, UID: types.UID(s.ns + "/" + s.name + "-uid"),
			Labels: labels, Annotations: ann, CreationTimestamp: metav1.NewTime(epoch.Add(-time.Hour))},
		Spec: corev1.PodSpec{SchedulerName: s.scheduler, NodeName: s.node, Containers: []corev1.Container{{
			Name: "main", Image: "trainer", Resources: corev1.ResourceRequirements{Requests: req, Limits: req}}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending},
	}
	if s.node != "" {
		p.Status.Phase = corev1.PodRunning
		st := metav1.NewTime(epoch.Add(-30 * time.Minute))
		p.Status.StartTime = &st
	}
	return p
}

func queueConfigMap(yaml string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: "arbiter-queues"},
		Data:       map[string]string{translate.QueueConfigKey: yaml},
	}
}

// twoTeams is a queue tree with two leaves that each deserve 4 GPUs.
const twoTeams = `
queues:
- name: research
  deserved: {cpu: -1, memory: -1, nvidia.com/gpu: -1}
- name: team-a
  parent: research
  deserved: {cpu: -1, memory: -1, nvidia.com/gpu: 4}
- name: team-b
  parent: research
  deserved: {cpu: -1, memory: -1, nvidia.com/gpu: 4}
`

// binding and eviction build answer entries.
func binding(group, pod, node string, after bool) *arbiterv1.Binding {
	return &arbiterv1.Binding{PodGroup: group, Pod: pod, Node: node, AfterEvictions: after}
}

func eviction(group, pod, node string, reason arbiterv1.EvictionReason, preemptor string) *arbiterv1.Eviction {
	return &arbiterv1.Eviction{PodGroup: group, Pod: pod, Node: node, Reason: reason, PreemptorPodGroup: preemptor,
		Message: "reclaimed for " + preemptor}
}

func answer(bindings []*arbiterv1.Binding, evictions []*arbiterv1.Eviction, pending ...*arbiterv1.PendingPodGroup) func(*arbiterv1.ScheduleRequest) (*arbiterv1.ScheduleResponse, error) {
	return func(*arbiterv1.ScheduleRequest) (*arbiterv1.ScheduleResponse, error) {
		return &arbiterv1.ScheduleResponse{Bindings: bindings, Evictions: evictions, Pending: pending}, nil
	}
}

// podIn finds a pod of the request's snapshot.
func podIn(req *arbiterv1.ScheduleRequest, group, name string) *arbiterv1.Pod {
	for _, g := range req.GetSnapshot().GetPodGroups() {
		if g.GetName() != group {
			continue
		}
		for _, p := range g.GetPods() {
			if p.GetName() == name {
				return p
			}
		}
	}
	return nil
}

func preconditionUID(e *policyv1.Eviction) *types.UID {
	if e.DeleteOptions == nil || e.DeleteOptions.Preconditions == nil {
		return nil
	}
	return e.DeleteOptions.Preconditions.UID
}
