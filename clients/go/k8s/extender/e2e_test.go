package extender

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	arbiterv1 "arbiter.dev/clients/go/arbiterv1"
	"arbiter.dev/clients/go/client"
	"arbiter.dev/clients/go/k8s/shim"
	"arbiter.dev/clients/go/k8s/translate"
	"arbiter.dev/clients/go/test/controlplane"
	"arbiter.dev/clients/go/test/e2e"
)

// These tests run stock kube-scheduler, configured only by its configuration file, against a
// real API server and kwok nodes, with arbiter-extender (in the test process) as its extender and
// a real arbiter-server behind it.

const schedulerConfig = `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: KUBECONFIG
leaderElection:
  leaderElect: false
extenders:
- urlPrefix: URL
  filterVerb: filter
  prioritizeVerb: prioritize
  preemptVerb: preempt
  BIND
  weight: 100
  nodeCacheCapable: true
  ignorable: false
  httpTimeout: 30s
  managedResources:
  - name: nvidia.com/gpu
    ignoredByScheduler: false
`

const queues = `queues:
- name: research
  deserved: {cpu: -1, memory: -1, nvidia.com/gpu: -1}
- name: team-a
  parent: research
  deserved: {cpu: -1, memory: -1, nvidia.com/gpu: 4}
  limit: {nvidia.com/gpu: LIMIT}
- name: team-b
  parent: research
  deserved: {cpu: -1, memory: -1, nvidia.com/gpu: 4}
`

// recordingDecider keeps every answer, to compare what kube-scheduler did with them.
type recordingDecider struct {
	Decider
	mu      sync.Mutex
	answers []*arbiterv1.ScheduleResponse
}

func (r *recordingDecider) Decide(ctx context.Context) (*translate.Result, *arbiterv1.ScheduleResponse, error) {
	res, resp, err := r.Decider.Decide(ctx)
	r.mu.Lock()
	if resp != nil {
		r.answers = append(r.answers, resp)
	}
	r.mu.Unlock()
	return res, resp, err
}

type env struct {
	t       *testing.T
	ctx     context.Context
	cp      *controlplane.ControlPlane
	admin   kubernetes.Interface
	ext     *Extender
	decider *recordingDecider
	down    *atomic.Bool // answer every call with 503, as a dead extender would
	refused *refusals    // the calls answered so
}

// refusals counts the calls refused while the extender is down, by verb and pod.
type refusals struct {
	mu    sync.Mutex
	calls map[string]int // "verb pod" → count
}

// record counts a refused call to path ("/filter") whose ExtenderArgs body names a pod.
func (r *refusals) record(path string, body io.Reader) {
	var args struct {
		Pod *struct {
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
		} `json:"pod"`
	}
	_ = json.NewDecoder(body).Decode(&args)
	name := ""
	if args.Pod != nil {
		name = args.Pod.Metadata.Name
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls[strings.TrimPrefix(path, "/")+" "+name]++
}

// count is how many calls of verb about pod were refused.
func (r *refusals) count(verb, pod string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls[verb+" "+pod]
}

func (r *refusals) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return fmt.Sprint(r.calls)
}

type envOpts struct {
	bind  bool
	limit string // team-a's GPU limit; default -1
}

func newEnv(t *testing.T, o envOpts) *env {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var handler atomic.Pointer[http.Handler]
	down := &atomic.Bool{}
	refused := &refusals{calls: map[string]int{}}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := handler.Load()
		if h == nil || down.Load() {
			refused.record(r.URL.Path, r.Body)
			http.Error(w, "extender down", http.StatusServiceUnavailable)
			return
		}
		(*h).ServeHTTP(w, r)
	}), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(func() { srv.Close() })

	cfgText := strings.ReplaceAll(schedulerConfig, "URL", "http://"+lis.Addr().String())
	bind := ""
	if o.bind {
		bind = "bindVerb: bind"
	}
	cfgText = strings.ReplaceAll(cfgText, "BIND", bind)
	cfgPath := filepath.Join(t.TempDir(), "kube-scheduler.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfgText), 0o644); err != nil {
		t.Fatal(err)
	}
	cp := e2e.ControlPlane(t, controlplane.Options{Scheduler: true, SchedulerConfig: cfgPath})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	e := &env{t: t, ctx: ctx, cp: cp, admin: kubernetes.NewForConfigOrDie(cp.RESTConfig(controlplane.Admin)), down: down, refused: refused}
	for _, ns := range []string{"arbiter-system", "ml"} {
		if _, err := e.admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if o.limit == "" {
		o.limit = "-1"
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "arbiter-system", Name: "arbiter-queues"},
		Data: map[string]string{translate.QueueConfigKey: strings.ReplaceAll(queues, "LIMIT", o.limit)}}
	if _, err := e.admin.CoreV1().ConfigMaps("arbiter-system").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, pc := range []struct {
		name  string
		value int32
	}{{"batch", 50}, {"inference", 100}} {
		_, err := e.admin.SchedulingV1().PriorityClasses().Create(ctx, &schedulingv1.PriorityClass{
			ObjectMeta: metav1.ObjectMeta{Name: pc.name}, Value: pc.value}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}

	arbiter, err := client.Dial(client.Config{Target: e2e.ArbiterServer(t), Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { arbiter.Close() })
	cfg := cp.RESTConfig(controlplane.Admin)
	cfg.QPS, cfg.Burst = 100, 200
	kube := kubernetes.NewForConfigOrDie(cfg)
	s, err := shim.New(shim.Config{SchedulerName: "default-scheduler"}, shim.Deps{
		Kube: kube, Dynamic: dynamic.NewForConfigOrDie(cfg), Scheduler: arbiter})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	e.decider = &recordingDecider{Decider: s}
	e.ext = New(Config{Bind: o.bind, MaxAge: time.Second, GangWait: 10 * time.Second}, e.decider, kube, nil, nil)
	if err := e.ext.Start(ctx); err != nil {
		t.Fatal(err)
	}
	h := e.ext.Handler()
	handler.Store(&h)
	return e
}

func (e *env) nodes(names ...string) {
	e.t.Helper()
	var nodes []*corev1.Node
	for _, n := range names {
		nodes = append(nodes, controlplane.NewNode(n, corev1.ResourceList{
			"cpu": resource.MustParse("16"), "memory": resource.MustParse("64Gi"), "nvidia.com/gpu": resource.MustParse("4"),
		}))
	}
	if err := controlplane.CreateNodes(e.ctx, e.admin, nodes...); err != nil {
		e.t.Fatal(err)
	}
}

type podOpts struct {
	name, queue, group, priorityClass, node string
	gpus, minMember                         int
}

func (e *env) pod(o podOpts) {
	e.t.Helper()
	req := corev1.ResourceList{"cpu": resource.MustParse("1"), "nvidia.com/gpu": *resource.NewQuantity(int64(o.gpus), resource.DecimalSI)}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: o.name, Labels: map[string]string{translate.KeyQueue: o.queue},
			Annotations: map[string]string{}},
		Spec: corev1.PodSpec{NodeName: o.node, PriorityClassName: o.priorityClass, Containers: []corev1.Container{{
			Name: "main", Image: "trainer", Resources: corev1.ResourceRequirements{Requests: req, Limits: corev1.ResourceList{"nvidia.com/gpu": req["nvidia.com/gpu"]}}}}},
	}
	if o.group != "" {
		p.Labels[translate.KeyPodGroup] = o.group
		p.Annotations[translate.KeyMinMember] = fmt.Sprint(o.minMember)
	}
	if _, err := e.admin.CoreV1().Pods("ml").Create(e.ctx, p, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

// wait polls until ok holds for the pods of ml, or fails with what it saw.
func (e *env) wait(what string, timeout time.Duration, ok func(map[string]*corev1.Pod) bool) map[string]*corev1.Pod {
	e.t.Helper()
	var pods map[string]*corev1.Pod
	err := wait.PollUntilContextTimeout(e.ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		list, err := e.admin.CoreV1().Pods("ml").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		pods = map[string]*corev1.Pod{}
		for i := range list.Items {
			pods[list.Items[i].Name] = &list.Items[i]
		}
		return ok(pods), nil
	})
	if err != nil {
		e.t.Fatalf("%s: %v; pods: %s", what, err, describe(pods))
	}
	return pods
}

func describe(pods map[string]*corev1.Pod) string {
	var out []string
	for name, p := range pods {
		out = append(out, fmt.Sprintf("%s@%q", name, p.Spec.NodeName))
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

func bound(pods map[string]*corev1.Pod, prefix string) int {
	n := 0
	for name, p := range pods {
		if strings.HasPrefix(name, prefix) && p.Spec.NodeName != "" {
			n++
		}
	}
	return n
}

// failedScheduling returns the FailedScheduling messages kube-scheduler wrote about a pod.
func (e *env) failedScheduling(name string) []string {
	list, err := e.admin.CoreV1().Events("ml").List(e.ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
	if err != nil {
		e.t.Fatal(err)
	}
	var out []string
	for _, ev := range list.Items {
		if ev.Reason == "FailedScheduling" {
			out = append(out, ev.Message)
		}
	}
	if evs, err := e.admin.EventsV1().Events("ml").List(e.ctx, metav1.ListOptions{}); err == nil {
		for _, ev := range evs.Items {
			if ev.Regarding.Name == name && ev.Reason == "FailedScheduling" {
				out = append(out, ev.Note)
			}
		}
	}
	return out
}

// TestExtenderQueueAtItsLimitLeavesThePodPendingWithArbitersReason: team-a may use 2 GPUs; its
// third pod stays Pending, and kube-scheduler's FailedScheduling event carries arbiter's reason.
func TestExtenderQueueAtItsLimitLeavesThePodPendingWithArbitersReason(t *testing.T) {
	e := newEnv(t, envOpts{limit: "2"})
	e.nodes("n1", "n2")
	for i := 0; i < 3; i++ {
		e.pod(podOpts{name: fmt.Sprintf("a-%d", i), queue: "team-a", gpus: 1})
	}
	e.wait("two of team-a's pods bound", 60*time.Second, func(p map[string]*corev1.Pod) bool { return bound(p, "a-") == 2 })
	var held string
	for _, name := range []string{"a-0", "a-1", "a-2"} {
		p, err := e.admin.CoreV1().Pods("ml").Get(e.ctx, name, metav1.GetOptions{})
		if err == nil && p.Spec.NodeName == "" {
			held = name
		}
	}
	err := wait.PollUntilContextTimeout(e.ctx, 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		for _, m := range e.failedScheduling(held) {
			if strings.Contains(m, "arbiter") && strings.Contains(strings.ToLower(m), "limit") {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Errorf("no FailedScheduling event naming arbiter's limit for %s: %v", held, e.failedScheduling(held))
	}
	time.Sleep(2 * time.Second)
	e.wait("still two bound", 5*time.Second, func(p map[string]*corev1.Pod) bool { return bound(p, "a-") == 2 })
}

// TestExtenderPlacesTwoQueuesInTheProportionOfTheirFairShares: 8 GPUs, two queues deserving 4
// each, 8 one-GPU pods each: kube-scheduler binds 4 of each, not the first 8 to arrive.
func TestExtenderPlacesTwoQueuesInTheProportionOfTheirFairShares(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.nodes("n1", "n2")
	// Both queues' pods arrive in one burst: the extender answers only once all are there, as
	// kube-scheduler holds them while it is unreachable (else team-a's pods, created first, would
	// be placed before team-b's exist, and equal priorities leave kube-scheduler nothing to
	// preempt).
	e.down.Store(true)
	for i := 0; i < 8; i++ {
		e.pod(podOpts{name: fmt.Sprintf("a-%d", i), queue: "team-a", gpus: 1})
		e.pod(podOpts{name: fmt.Sprintf("b-%d", i), queue: "team-b", gpus: 1})
	}
	e.down.Store(false)
	e.wait("8 pods bound", 60*time.Second, func(p map[string]*corev1.Pod) bool { return bound(p, "a-")+bound(p, "b-") == 8 })
	time.Sleep(2 * time.Second)
	pods := e.wait("4 of each queue", 5*time.Second, func(p map[string]*corev1.Pod) bool {
		return bound(p, "a-") == 4 && bound(p, "b-") == 4
	})
	t.Logf("placed: %s", describe(pods))
}

// TestExtenderPreemptEvictsExactlyArbitersVictims: team-a's batch pods hold all 8 GPUs; team-b's
// pod arrives. kube-scheduler's preemption asks the preempt verb, and exactly the victims of
// arbiter's fair-share reclaim are evicted; the reclaimer then runs on their node.
func TestExtenderPreemptEvictsExactlyArbitersVictims(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.nodes("n1", "n2")
	for i := 0; i < 4; i++ {
		e.pod(podOpts{name: fmt.Sprintf("a-%d", i), queue: "team-a", gpus: 2, priorityClass: "batch"})
	}
	e.wait("team-a holds every GPU", 60*time.Second, func(p map[string]*corev1.Pod) bool { return bound(p, "a-") == 4 })
	e.pod(podOpts{name: "b-0", queue: "team-b", gpus: 2, priorityClass: "inference"})
	pods := e.wait("b-0 bound", 90*time.Second, func(p map[string]*corev1.Pod) bool { return bound(p, "b-") == 1 })

	var gone []string
	for i := 0; i < 4; i++ {
		if _, ok := pods[fmt.Sprintf("a-%d", i)]; !ok {
			gone = append(gone, fmt.Sprintf("a-%d", i))
		}
	}
	e.decider.mu.Lock()
	defer e.decider.mu.Unlock()
	var want []string
	for _, a := range e.decider.answers {
		for _, ev := range a.GetEvictions() {
			if ev.GetPreemptorPodGroup() == "ml/b-0" {
				want = append(want, ev.GetPod())
			}
		}
		if len(want) > 0 {
			break
		}
	}
	sort.Strings(want)
	if len(want) == 0 || strings.Join(gone, ",") != strings.Join(want, ",") {
		t.Errorf("evicted %v, arbiter's victims %v: want exactly arbiter's", gone, want)
	}
}

// TestExtenderBindVerbBindsAGangWhole: with the bind verb on, kube-scheduler hands each
// member's binding to the extender, which holds them until the whole gang is there, then binds
// all of it.
func TestExtenderBindVerbBindsAGangWhole(t *testing.T) {
	e := newEnv(t, envOpts{bind: true})
	e.nodes("n1", "n2")
	for i := 0; i < 3; i++ {
		e.pod(podOpts{name: fmt.Sprintf("g-%d", i), queue: "team-a", gpus: 2, group: "g", minMember: 3})
	}
	e.wait("the gang bound", 60*time.Second, func(p map[string]*corev1.Pod) bool { return bound(p, "g-") == 3 })
	if got := testutil.ToFloat64(e.ext.metrics.GangsBound); got != 1 {
		t.Errorf("gangs bound by the bind verb = %v, want 1", got)
	}
	events, err := e.cp.Audit()
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range events {
		if ev.Subresource == "binding" && ev.User != controlplane.Admin {
			t.Errorf("%s/%s bound by %s, want the extender (%s)", ev.Namespace, ev.Pod, ev.User, controlplane.Admin)
		}
	}
}

// TestExtenderDownMakesKubeSchedulerFailSafe: with ignorable: false, kube-scheduler places none
// of arbiter's pods while the extender is down, and places them once it is back. The extender's
// address counts the calls it refuses: kube-scheduler must have asked filter about the pod, been
// refused, and asked again (a retry after the failure), without binding it meanwhile, and its
// FailedScheduling event must name the extender's 503.
func TestExtenderDownMakesKubeSchedulerFailSafe(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.nodes("n1")
	e.down.Store(true)
	e.pod(podOpts{name: "a-0", queue: "team-a", gpus: 1})
	err := wait.PollUntilContextTimeout(e.ctx, 100*time.Millisecond, 60*time.Second, true, func(context.Context) (bool, error) {
		return e.refused.count("filter", "a-0") >= 2, nil
	})
	if err != nil {
		t.Fatalf("kube-scheduler was not refused twice by filter about a-0 while the extender was down (refused: %s): %v", e.refused, err)
	}
	e.wait("a-0 still pending after two refused filter calls", 5*time.Second, func(p map[string]*corev1.Pod) bool { return bound(p, "a-") == 0 })
	// kube-scheduler's own account: the attempt failed on the extender's refusal (its 503).
	err = wait.PollUntilContextTimeout(e.ctx, 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		for _, m := range e.failedScheduling("a-0") {
			if strings.Contains(m, "extender") && strings.Contains(m, "503") {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Errorf("no FailedScheduling event for a-0 naming the extender's 503: %q: %v", e.failedScheduling("a-0"), err)
	}
	t.Logf("refused while down: %s; a-0's FailedScheduling: %q", e.refused, e.failedScheduling("a-0"))
	e.down.Store(false)
	e.wait("a-0 bound once the extender is back", 90*time.Second, func(p map[string]*corev1.Pod) bool { return bound(p, "a-") == 1 })
}

// TestExtenderAnswersKeepEveryNodeWithinItsPodsAllocatable (issue 32): two nodes that each allow
// 4 pods, and 8 small pods. kube-scheduler refuses a node at its pod count; the extender's
// answers must count pods too, or they name a full node and the rest of the pods wait forever.
func TestExtenderAnswersKeepEveryNodeWithinItsPodsAllocatable(t *testing.T) {
	e := newEnv(t, envOpts{})
	var nodes []*corev1.Node
	for _, n := range []string{"n1", "n2"} {
		nodes = append(nodes, controlplane.NewNode(n, corev1.ResourceList{
			"cpu": resource.MustParse("16"), "memory": resource.MustParse("64Gi"), "pods": resource.MustParse("4"),
		}))
	}
	if err := controlplane.CreateNodes(e.ctx, e.admin, nodes...); err != nil {
		t.Fatal(err)
	}
	e.down.Store(true) // all pods in one answer, as in a burst
	for i := 0; i < 8; i++ {
		e.pod(podOpts{name: fmt.Sprintf("a-%d", i), queue: "team-a"})
	}
	e.down.Store(false)
	pods := e.wait("all 8 pods bound", 60*time.Second, func(p map[string]*corev1.Pod) bool { return bound(p, "a-") == 8 })
	perNode := map[string]int{}
	for _, p := range pods {
		perNode[p.Spec.NodeName]++
	}
	if perNode["n1"] != 4 || perNode["n2"] != 4 {
		t.Errorf("pods per node %v, want 4 on each", perNode)
	}
	e.decider.mu.Lock()
	defer e.decider.mu.Unlock()
	for _, a := range e.decider.answers {
		onNode := map[string]int{}
		for _, b := range a.GetBindings() {
			onNode[b.GetNode()]++
		}
		for n, k := range onNode {
			if k > 4 {
				t.Errorf("an answer binds %d pods to %s, which allows 4", k, n)
			}
		}
	}
}
