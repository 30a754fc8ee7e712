package shim

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/yaml"

	arbiterv1 "arbiter.dev/clients/go/arbiterv1"
	"arbiter.dev/clients/go/client"
	"arbiter.dev/clients/go/k8s/translate"
	"arbiter.dev/clients/go/k8s/usage"
	"arbiter.dev/clients/go/test/controlplane"
	"arbiter.dev/clients/go/test/e2e"
)

// This file runs the shim against a real control plane (package controlplane): kube-apiserver
// with etcd, kube-controller-manager and kwok nodes, and a real arbiter-server. It shows what a
// fake clientset cannot: real binding and eviction semantics (409 for a bound pod, 429 from a
// disruption budget computed by the real disruption controller), RBAC, CRDs and watch latency.

// cluster is one control plane, an arbiter-server, and a shim acting as user.
type cluster struct {
	t       *testing.T
	ctx     context.Context
	cp      *controlplane.ControlPlane
	admin   kubernetes.Interface
	kube    kubernetes.Interface // the shim's own client
	shim    *Shim
	metrics *Metrics
	rec     *recordingScheduler
}

type clusterOpts struct {
	cp     controlplane.Options
	user   string // the shim's identity; default controlplane.Admin
	cfg    Config
	queues string // queues.yaml; default twoTeams
	// wrap, when set, wraps the scheduler the shim calls.
	wrap func(Scheduler) Scheduler
	// noShim leaves the shim to the test (newShim).
	noShim bool
	// server, when set, is the arbiter-server address the shim dials instead of a new server.
	server string
}

func newCluster(t *testing.T, opts clusterOpts) *cluster {
	t.Helper()
	cp := e2e.ControlPlane(t, opts.cp)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	c := &cluster{t: t, ctx: ctx, cp: cp, admin: kubernetes.NewForConfigOrDie(cp.RESTConfig(controlplane.Admin))}
	for _, ns := range []string{testNamespace, "ml"} {
		_, err := c.admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	if opts.queues == "" {
		opts.queues = twoTeams
	}
	c.apply(queueConfigMap(opts.queues))
	if !opts.noShim {
		c.newShim(opts)
	}
	return c
}

// newShim starts a shim acting as opts.user against a new arbiter-server.
func (c *cluster) newShim(opts clusterOpts) {
	c.t.Helper()
	user := opts.user
	if user == "" {
		user = controlplane.Admin
	}
	cfg := c.cp.RESTConfig(user)
	cfg.QPS, cfg.Burst = 200, 400
	c.kube = kubernetes.NewForConfigOrDie(cfg)
	server := opts.server
	if server == "" {
		server = e2e.ArbiterServer(c.t)
	}
	arbiter, err := client.Dial(client.Config{Target: server, Timeout: 20 * time.Second})
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { arbiter.Close() })
	c.rec = &recordingScheduler{Scheduler: arbiter}
	var sched Scheduler = c.rec
	if opts.wrap != nil {
		sched = opts.wrap(sched)
	}
	broadcaster := record.NewBroadcaster(record.WithContext(c.ctx))
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: c.kube.CoreV1().Events("")})
	c.t.Cleanup(broadcaster.Shutdown)
	c.metrics = NewMetrics(nil)
	opts.cfg.Namespace = testNamespace
	s, err := New(opts.cfg, Deps{
		Kube: c.kube, Dynamic: dynamic.NewForConfigOrDie(cfg), Scheduler: sched, Metrics: c.metrics,
		Recorder: broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "arbiter"}),
		Store:    &usage.ConfigMapStore{Client: c.kube, Namespace: testNamespace, Name: "arbiter-usage"},
	})
	if err != nil {
		c.t.Fatal(err)
	}
	// The informers live as long as the context given to Start: the test's.
	if err := s.Start(c.ctx); err != nil {
		c.t.Fatal(err)
	}
	c.shim = s
	c.t.Cleanup(func() {
		if c.t.Failed() && c.rec.req != nil {
			c.t.Logf("last exchange with arbiter-server:\n%s", c.rec)
		}
	})
}

// apply creates obj as the admin (a node through kwok, waiting until it is Ready).
func (c *cluster) apply(objs ...any) {
	c.t.Helper()
	for _, o := range objs {
		var err error
		switch o := o.(type) {
		case *corev1.Node:
			o = o.DeepCopy()
			o.Annotations = map[string]string{controlplane.KwokNodeAnnotation: "fake"}
			err = controlplane.CreateNodes(c.ctx, c.admin, o)
		case *corev1.Pod:
			o = o.DeepCopy()
			o.UID, o.CreationTimestamp = "", metav1.Time{}
			_, err = c.admin.CoreV1().Pods(o.Namespace).Create(c.ctx, o, metav1.CreateOptions{})
		case *corev1.ConfigMap:
			_, err = c.admin.CoreV1().ConfigMaps(o.Namespace).Create(c.ctx, o, metav1.CreateOptions{})
		default:
			err = fmt.Errorf("cannot apply %T", o)
		}
		if err != nil {
			c.t.Fatal(err)
		}
	}
}

// cycle runs one scheduling cycle once the shim's cache shows every pod the API server has.
func (c *cluster) cycle() {
	c.t.Helper()
	c.settle()
	if err := c.shim.RunCycle(c.ctx); err != nil {
		c.t.Fatalf("cycle: %v", err)
	}
}

// settle waits until the shim's pod cache holds the API server's current pods (same resource
// versions), so that a cycle sees what the test just did.
func (c *cluster) settle() {
	c.t.Helper()
	err := wait.PollUntilContextTimeout(c.ctx, 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		live, err := c.admin.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		for _, p := range live.Items {
			cached, err := c.shim.pods.Pods(p.Namespace).Get(p.Name)
			if err != nil || cached.ResourceVersion != p.ResourceVersion {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		c.t.Fatalf("the shim's cache did not catch up: %v", err)
	}
}

// pod reads a pod from the API server (nil when gone).
func (c *cluster) pod(ns, name string) *corev1.Pod {
	p, err := c.admin.CoreV1().Pods(ns).Get(c.ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		c.t.Fatal(err)
	}
	return p
}

// waitPod waits until ok holds for the pod as the API server has it.
func (c *cluster) waitPod(ns, name string, what string, ok func(*corev1.Pod) bool) {
	c.t.Helper()
	err := wait.PollUntilContextTimeout(c.ctx, 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return ok(c.pod(ns, name)), nil
	})
	if err != nil {
		c.t.Fatalf("pod %s/%s never %s: %v (now %+v)", ns, name, what, err, c.pod(ns, name))
	}
}

func (c *cluster) waitRunning(ns, name string) {
	c.t.Helper()
	c.waitPod(ns, name, "Running", func(p *corev1.Pod) bool { return p != nil && p.Status.Phase == corev1.PodRunning })
}

func (c *cluster) waitGone(ns, name string) {
	c.t.Helper()
	c.waitPod(ns, name, "gone", func(p *corev1.Pod) bool { return p == nil })
}

// audit returns the API server's answers to bindings and evictions, as "subresource ns/pod code".
func (c *cluster) audit() []string {
	c.t.Helper()
	events, err := c.cp.Audit()
	if err != nil {
		c.t.Fatal(err)
	}
	var out []string
	for _, e := range events {
		out = append(out, fmt.Sprintf("%s %s/%s %d", e.Subresource, e.Namespace, e.Pod, e.Code))
	}
	return out
}

// boundOnce fails unless each named pod has exactly one successful binding in the audit log.
func (c *cluster) boundOnce(ns string, names ...string) {
	c.t.Helper()
	log := c.audit()
	for _, n := range names {
		ok := 0
		for _, line := range log {
			if line == fmt.Sprintf("binding %s/%s 201", ns, n) {
				ok++
			}
		}
		if ok != 1 {
			c.t.Errorf("pod %s/%s has %d successful bindings, want 1; audit: %v", ns, n, ok, log)
		}
	}
}

// events returns "Reason: message" of the Events about a pod, as the API server has them.
func (c *cluster) events(ns, name string) []string {
	c.t.Helper()
	list, err := c.admin.CoreV1().Events(ns).List(c.ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
	if err != nil {
		c.t.Fatal(err)
	}
	var out []string
	for _, e := range list.Items {
		out = append(out, e.Reason+": "+e.Message)
	}
	return out
}

// waitEvent waits until an Event about the pod has the reason and a message containing part.
func (c *cluster) waitEvent(ns, name, reason, part string) {
	c.t.Helper()
	err := wait.PollUntilContextTimeout(c.ctx, 100*time.Millisecond, 20*time.Second, true, func(context.Context) (bool, error) {
		for _, e := range c.events(ns, name) {
			if strings.HasPrefix(e, reason+": ") && strings.Contains(e, part) {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		c.t.Errorf("no %s event containing %q about %s/%s; events: %v", reason, part, ns, name, c.events(ns, name))
	}
}

func kwokNode(name, cpu string, gpus int64) *corev1.Node { return node(name, cpu, gpus) }

func pendingCondition(p *corev1.Pod) string {
	if p == nil {
		return ""
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			return c.Message
		}
	}
	return ""
}

// TestRealGangIsBoundWholeOnKwokNodesOrNotAtAll: a gang that fits is bound whole and runs on
// kwok nodes; a gang that does not fit gets no binding at all, only its reason, until nodes are
// added, and then all of it is bound.
func TestRealGangIsBoundWholeOnKwokNodesOrNotAtAll(t *testing.T) {
	c := newCluster(t, clusterOpts{})
	c.apply(kwokNode("n1", "8", 4), kwokNode("n2", "8", 4),
		pod(podSpec{name: "train-0", group: "train", minMember: 2, queue: "team-a", gpus: 4}),
		pod(podSpec{name: "train-1", group: "train", minMember: 2, queue: "team-a", gpus: 4}),
		pod(podSpec{name: "huge-0", group: "huge", minMember: 3, queue: "team-b", gpus: 4}),
		pod(podSpec{name: "huge-1", group: "huge", minMember: 3, queue: "team-b", gpus: 4}),
		pod(podSpec{name: "huge-2", group: "huge", minMember: 3, queue: "team-b", gpus: 4}))
	c.cycle()
	c.waitRunning("ml", "train-0")
	c.waitRunning("ml", "train-1")
	if a, b := c.pod("ml", "train-0").Spec.NodeName, c.pod("ml", "train-1").Spec.NodeName; a == b {
		t.Errorf("gang placed on %s and %s, want two nodes", a, b)
	}
	for _, n := range []string{"huge-0", "huge-1", "huge-2"} {
		c.waitPod("ml", n, "given its pending reason", func(p *corev1.Pod) bool { return pendingCondition(p) != "" })
	}
	c.cycle() // nothing changes
	for _, line := range c.audit() {
		if strings.Contains(line, "/huge-") {
			t.Errorf("a member of the gang that cannot fit was bound: %s", line)
		}
	}
	c.waitEvent("ml", "huge-0", "FailedScheduling", "")

	c.apply(kwokNode("n3", "8", 4), kwokNode("n4", "8", 4), kwokNode("n5", "8", 4))
	c.cycle()
	for _, n := range []string{"huge-0", "huge-1", "huge-2"} {
		c.waitRunning("ml", n)
	}
	c.boundOnce("ml", "train-0", "train-1", "huge-0", "huge-1", "huge-2")
}

// TestRealReclaimEvictsThenBindsTheReclaimerWhereTheVictimRan: team-a borrowed team-b's share;
// team-b's pod arrives. The victim is evicted through the Eviction API, and the reclaimer is
// bound onto the freed node only once the victim is gone.
func TestRealReclaimEvictsThenBindsTheReclaimerWhereTheVictimRan(t *testing.T) {
	c := newCluster(t, clusterOpts{})
	c.apply(kwokNode("n1", "8", 4), kwokNode("n2", "8", 4),
		pod(podSpec{name: "a-0", queue: "team-a", gpus: 4, node: "n1"}),
		pod(podSpec{name: "a-1", queue: "team-a", gpus: 4, node: "n2"}))
	c.waitRunning("ml", "a-0")
	c.waitRunning("ml", "a-1")
	c.apply(pod(podSpec{name: "b-0", queue: "team-b", gpus: 4}))

	c.cycle()
	evictions := 0
	var victim string
	for _, line := range c.audit() {
		if strings.HasPrefix(line, "eviction ") {
			evictions++
			victim = strings.Fields(line)[1]
		}
	}
	if evictions != 1 {
		t.Fatalf("audit %v: want exactly one eviction", c.audit())
	}
	victimName := strings.TrimPrefix(victim, "ml/")
	victimNode := map[string]string{"a-0": "n1", "a-1": "n2"}[victimName]
	c.waitGone("ml", victimName)
	for i := 0; i < 3 && c.pod("ml", "b-0").Spec.NodeName == ""; i++ {
		c.cycle()
	}
	c.waitRunning("ml", "b-0")
	if got := c.pod("ml", "b-0").Spec.NodeName; got != victimNode {
		t.Errorf("b-0 bound to %s, want %s where the victim ran", got, victimNode)
	}
	log := c.audit()
	if log[len(log)-1] != "binding ml/b-0 201" || !strings.HasPrefix(log[0], "eviction ") {
		t.Errorf("audit %v: want the eviction first and the reclaimer's binding after it", log)
	}
	c.boundOnce("ml", "b-0")
	c.waitEvent("ml", victimName, "Preempted", "FAIR_SHARE_RECLAIM")
}

// conflictingScheduler binds a pod of the first answer to the other of two nodes, as another
// scheduler would, after arbiter answers and before the shim applies the answer.
type conflictingScheduler struct {
	Scheduler
	admin kubernetes.Interface
	other map[string]string // node -> the other node
	taken string            // the node it bound the pod to
}

func (s *conflictingScheduler) Schedule(ctx context.Context, req *arbiterv1.ScheduleRequest) (*arbiterv1.ScheduleResponse, error) {
	resp, err := s.Scheduler.Schedule(ctx, req)
	if err != nil || s.taken != "" || len(resp.GetBindings()) == 0 {
		return resp, err
	}
	b := resp.GetBindings()[0]
	s.taken = s.other[b.GetNode()]
	return resp, s.admin.CoreV1().Pods("ml").Bind(ctx, &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: b.GetPod()},
		Target:     corev1.ObjectReference{Kind: "Node", Name: s.taken},
	}, metav1.CreateOptions{})
}

// TestRealBindingRefusedBecauseThePodWasBoundMeanwhile: the API server refuses the shim's
// binding with 409 because someone else bound the pod after arbiter answered. The shim reports
// it, counts the pod where it really is, and never binds it again.
func TestRealBindingRefusedBecauseThePodWasBoundMeanwhile(t *testing.T) {
	var cs *conflictingScheduler
	c := newCluster(t, clusterOpts{wrap: func(s Scheduler) Scheduler {
		cs = &conflictingScheduler{Scheduler: s, other: map[string]string{"n1": "n2", "n2": "n1"}}
		return cs
	}})
	cs.admin = c.admin
	c.apply(kwokNode("n1", "8", 4), kwokNode("n2", "8", 4),
		pod(podSpec{name: "solo", queue: "team-a", gpus: 1, cpu: "1"}))
	c.cycle()
	if got := testutil.ToFloat64(c.metrics.BindConflicts); got != 1 {
		t.Fatalf("bind conflicts = %v, want 1; audit %v", got, c.audit())
	}
	c.waitRunning("ml", "solo")
	if got := c.pod("ml", "solo").Spec.NodeName; got != cs.taken {
		t.Fatalf("solo is on %s, want %s where the other scheduler put it", got, cs.taken)
	}
	c.waitEvent("ml", "solo", "BindConflict", "bound to "+cs.taken+" meanwhile")
	c.cycle()
	c.cycle()
	want := []string{"binding ml/solo 201", "binding ml/solo 409"}
	if got := c.audit(); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("audit = %v, want %v: the other scheduler's binding, then the shim's refused one, and nothing after", got, want)
	}
	if p := podIn(c.rec.req, "ml/solo", "solo"); p.GetNodeName() != cs.taken || p.GetPhase() != arbiterv1.PodPhase_POD_PHASE_RUNNING {
		t.Errorf("the next snapshot has solo as %v on %q, want RUNNING on %s", p.GetPhase(), p.GetNodeName(), cs.taken)
	}
}

// TestRealEvictionRefusedByADisruptionBudgetFreesNothingForThePreemptor: every pod team-a
// borrowed with is covered by a PodDisruptionBudget that allows no disruption (its status kept by
// the real disruption controller). The API server answers each eviction with 429; the shim
// reports it and never binds the reclaimer onto capacity that was never freed. Once the budget
// is gone, the reclaim goes through.
func TestRealEvictionRefusedByADisruptionBudgetFreesNothingForThePreemptor(t *testing.T) {
	c := newCluster(t, clusterOpts{})
	c.apply(kwokNode("n1", "8", 4), kwokNode("n2", "8", 4))
	for i, n := range []string{"n1", "n2"} {
		p := pod(podSpec{name: fmt.Sprintf("a-%d", i), queue: "team-a", gpus: 4, node: n})
		p.Labels["app"] = "a"
		c.apply(p)
		c.waitRunning("ml", p.Name)
	}
	// Bare pods have no controller to scale against, so the budget counts them: both must stay.
	two := intstr.FromInt32(2)
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: "a"},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: &two,
			Selector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": "a"}},
		},
	}
	if _, err := c.admin.PolicyV1().PodDisruptionBudgets("ml").Create(c.ctx, pdb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(c.ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		got, err := c.admin.PolicyV1().PodDisruptionBudgets("ml").Get(ctx, "a", metav1.GetOptions{})
		return err == nil && got.Status.ObservedGeneration == got.Generation && got.Status.ExpectedPods == 2, nil
	})
	if err != nil {
		t.Fatalf("the disruption controller never processed the budget: %v", err)
	}
	c.apply(pod(podSpec{name: "b-0", queue: "team-b", gpus: 4}))

	for i := 0; i < 3; i++ {
		c.cycle()
	}
	var refused int
	for _, line := range c.audit() {
		switch {
		case strings.HasPrefix(line, "eviction ") && strings.HasSuffix(line, " 429"):
			refused++
		case strings.HasPrefix(line, "eviction ") || strings.HasPrefix(line, "binding "):
			t.Errorf("%s: nothing may be evicted or bound while the budget holds", line)
		}
	}
	if refused == 0 || testutil.ToFloat64(c.metrics.EvictionsRefused) != float64(refused) {
		t.Errorf("refused evictions: audit %d, metric %v; want the same, above 0", refused, testutil.ToFloat64(c.metrics.EvictionsRefused))
	}
	if p := c.pod("ml", "b-0"); p.Spec.NodeName != "" {
		t.Fatalf("b-0 bound to %s while no victim left", p.Spec.NodeName)
	}
	c.waitPod("ml", "b-0", "told what it waits for", func(p *corev1.Pod) bool { return strings.Contains(pendingCondition(p), "waiting for") })
	victims, err := c.admin.CoreV1().Events("ml").List(c.ctx, metav1.ListOptions{FieldSelector: "reason=EvictionRefused"})
	if err != nil || len(victims.Items) == 0 {
		t.Errorf("no EvictionRefused event (%v)", err)
	}

	if err := c.admin.PolicyV1().PodDisruptionBudgets("ml").Delete(c.ctx, "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(c.ctx, 200*time.Millisecond, 60*time.Second, true, func(context.Context) (bool, error) {
		c.cycle()
		p := c.pod("ml", "b-0")
		return p.Spec.NodeName != "", nil
	})
	if err != nil {
		t.Fatalf("b-0 never bound after the budget went: %v; audit %v", err, c.audit())
	}
	c.waitRunning("ml", "b-0")
	c.boundOnce("ml", "b-0")
}

// applyManifests applies YAML files as the admin (controlplane.Apply).
func (c *cluster) applyManifests(paths ...string) {
	c.t.Helper()
	if _, err := c.cp.Apply(c.ctx, paths...); err != nil {
		c.t.Fatal(err)
	}
}

// TestRealChartRBACIsExactlyEnough applies the chart's own manifests (the rendered kustomize
// base: namespace, ConfigMaps, ServiceAccount, roles and bindings) and runs the shim as that
// ServiceAccount: it binds, writes pending reasons and events, saves its usage and takes its
// Lease with exactly those permissions. An identity without them is refused with every missing
// permission named, by the check and by the binary itself.
func TestRealChartRBACIsExactlyEnough(t *testing.T) {
	sa := controlplane.ServiceAccount("arbiter-system", "arbiter-k8s")
	nobody := controlplane.User{Name: "nobody"}
	c := newCluster(t, clusterOpts{noShim: true, cp: controlplane.Options{Users: []controlplane.User{sa, nobody}}})
	base := filepath.Join("..", "..", "..", "..", "deploy", "kustomize", "base")
	c.applyManifests(filepath.Join(base, "namespace.yaml"), filepath.Join(base, "configmaps.yaml"),
		filepath.Join(base, "scheduler-rbac.yaml"))

	need := RequiredAccess(Config{Namespace: "arbiter-system", KAIQueues: true}, "arbiter-usage", "arbiter-k8s")
	if err := CheckAccess(c.ctx, kubernetes.NewForConfigOrDie(c.cp.RESTConfig(sa.Name)), need); err != nil {
		t.Fatalf("the chart's ServiceAccount: %v", err)
	}
	err := CheckAccess(c.ctx, kubernetes.NewForConfigOrDie(c.cp.RESTConfig(nobody.Name)), need)
	for _, want := range []string{"list pods cluster-wide", "create pods/binding cluster-wide", "create pods/eviction cluster-wide",
		`update configmaps "arbiter-usage" in namespace arbiter-system`, `update leases.coordination.k8s.io "arbiter-k8s"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("check as nobody = %v, want it to name %q", err, want)
		}
	}

	c.newShim(clusterOpts{user: sa.Name, cfg: Config{UsageSaveInterval: time.Nanosecond}})
	c.apply(kwokNode("n1", "8", 4),
		pod(podSpec{name: "fits", queue: "team-a", gpus: 2}),
		pod(podSpec{name: "too-big", queue: "team-b", gpus: 8}))
	c.cycle()
	c.cycle()
	c.waitRunning("ml", "fits")
	c.waitPod("ml", "too-big", "given its pending reason", func(p *corev1.Pod) bool { return pendingCondition(p) != "" })
	c.waitEvent("ml", "fits", "Scheduled", "n1")
	c.waitEvent("ml", "too-big", "FailedScheduling", "")
	if got := testutil.ToFloat64(c.metrics.Errors.WithLabelValues("usage")); got != 0 {
		t.Errorf("usage errors = %v, want 0", got)
	}
	cm, err := c.admin.CoreV1().ConfigMaps("arbiter-system").Get(c.ctx, "arbiter-usage", metav1.GetOptions{})
	if err != nil || !strings.Contains(cm.Data[usage.DataKey], "team-a") {
		t.Errorf("usage ConfigMap = %v (%v), want the ledger with team-a in it", cm.Data, err)
	}
	leases := kubernetes.NewForConfigOrDie(c.cp.RESTConfig(sa.Name)).CoordinationV1().Leases("arbiter-system")
	holder := "replica-1"
	lease, err := leases.Create(c.ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "arbiter-k8s"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder}}, metav1.CreateOptions{})
	if err == nil {
		_, err = leases.Update(c.ctx, lease, metav1.UpdateOptions{})
	}
	if err != nil {
		t.Errorf("leader Lease as the chart's ServiceAccount: %v", err)
	}

	// The binary, as nobody, stops at once and says what is missing.
	kubeconfig, err := c.cp.Kubeconfig(nobody.Name)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(c.ctx, e2e.Binary(t, "arbiter.dev/clients/go/cmd/arbiter-k8s"),
		"--kubeconfig", kubeconfig, "--server", "127.0.0.1:1", "--http-addr", "127.0.0.1:0")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "missing permissions") || !strings.Contains(string(out), "create pods/binding") {
		t.Errorf("arbiter-k8s as nobody: %v\n%s\nwant it to fail naming the missing permissions", err, out)
	}
}

// TestRealKAIQueuesFromKAIsOwnCRD installs KAI Scheduler's Queue CRD as its module ships it,
// creates queues the way KAI's users write them, and checks that the shim reads them as they
// are: a queue's GPU limit holds its pods back.
func TestRealKAIQueuesFromKAIsOwnCRD(t *testing.T) {
	c := newCluster(t, clusterOpts{noShim: true, queues: "queues: []\n"})
	crd := filepath.Join(os.Getenv(controlplane.BinDirEnv), "crds", "scheduling.run.ai_queues.yaml")
	c.applyManifests(crd)
	dyn := dynamic.NewForConfigOrDie(c.cp.RESTConfig(controlplane.Admin))
	queues := dyn.Resource(translate.KAIQueueResource)
	err := wait.PollUntilContextTimeout(c.ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := queues.List(ctx, metav1.ListOptions{})
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("KAI's Queue resource is not served: %v", err)
	}
	for _, q := range []string{`
apiVersion: scheduling.run.ai/v2
kind: Queue
metadata: {name: research}
spec:
  resources:
    gpu: {quota: -1, limit: -1, overQuotaWeight: 1}
    cpu: {quota: -1, limit: -1, overQuotaWeight: 1}
    memory: {quota: -1, limit: -1, overQuotaWeight: 1}`, `
apiVersion: scheduling.run.ai/v2
kind: Queue
metadata: {name: team-a}
spec:
  parentQueue: research
  priority: 100
  reclaimMinRuntime: 10m
  resources:
    gpu: {quota: 2, limit: 2, overQuotaWeight: 1}
    cpu: {quota: -1, limit: -1, overQuotaWeight: 1}
    memory: {quota: -1, limit: -1, overQuotaWeight: 1}`} {
		obj := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(q), &obj.Object); err != nil {
			t.Fatal(err)
		}
		if _, err := queues.Create(c.ctx, obj, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create KAI queue %s: %v", obj.GetName(), err)
		}
	}
	c.newShim(clusterOpts{cfg: Config{KAIQueues: true}})
	c.apply(kwokNode("n1", "8", 8))
	for i := 0; i < 3; i++ {
		p := pod(podSpec{name: fmt.Sprintf("kai-%d", i), gpus: 1})
		p.Labels[translate.KAIQueueLabel] = "team-a"
		c.apply(p)
	}
	c.cycle()
	c.cycle()
	var bound, held []string
	for i := 0; i < 3; i++ {
		name := fmt.Sprintf("kai-%d", i)
		if c.pod("ml", name).Spec.NodeName != "" {
			bound = append(bound, name)
		} else {
			held = append(held, name)
		}
	}
	if len(bound) != 2 || len(held) != 1 {
		t.Fatalf("bound %v, held %v: want two bound within team-a's GPU limit of 2 and one held", bound, held)
	}
	sent := c.rec.req.GetSnapshot().GetQueues()
	var teamA *arbiterv1.Queue
	for _, q := range sent {
		if q.GetName() == "team-a" {
			teamA = q
		}
	}
	if teamA.GetParent() != "research" || teamA.GetLimit()[translate.GPUResource] != 2 || teamA.GetPriority() != 100 ||
		teamA.GetReclaimMinRuntime().AsDuration() != 10*time.Minute {
		t.Errorf("team-a as sent = %v, want KAI's fields read as written", teamA)
	}
}

// TestRealNoNodeGetsMorePodsThanItsPodsAllocatable (issue 32): two nodes that each allow 5 pods
// and 12 small pods. Binpacking by CPU alone would put all of them on one node, which a kubelet
// refuses; counted against the nodes' pods allocatable, 10 are bound, 5 per node, and the other
// 2 wait with arbiter's reason.
func TestRealNoNodeGetsMorePodsThanItsPodsAllocatable(t *testing.T) {
	c := newCluster(t, clusterOpts{})
	for _, n := range []string{"n1", "n2"} {
		node := kwokNode(n, "8", 0)
		node.Status.Allocatable["pods"] = resource.MustParse("5")
		node.Status.Capacity = node.Status.Allocatable
		c.apply(node)
	}
	for i := 0; i < 12; i++ {
		c.apply(pod(podSpec{name: fmt.Sprintf("small-%02d", i), queue: "team-a", cpu: "50m"}))
	}
	c.cycle()
	c.cycle()
	perNode := map[string]int{}
	pending := 0
	for i := 0; i < 12; i++ {
		name := fmt.Sprintf("small-%02d", i)
		c.waitPod("ml", name, "bound or told why not", func(p *corev1.Pod) bool {
			return p.Spec.NodeName != "" || pendingCondition(p) != ""
		})
		if n := c.pod("ml", name).Spec.NodeName; n != "" {
			perNode[n]++
		} else {
			pending++
		}
	}
	if perNode["n1"] != 5 || perNode["n2"] != 5 || pending != 2 {
		t.Errorf("pods per node %v, %d pending; want 5 on each node (their pods allocatable) and 2 pending", perNode, pending)
	}
}

// TestRealOnePreemptorCausesExactlyTheEvictionsOfItsOwnAnswer (issue 32): team-a and team-b each
// deserve 4 of 8 GPUs and use them all; then a node is lost with two of team-b's pods, whose
// replacements wait, and the 6 GPUs left are oversubscribed. A high-priority pod of team-a
// preempts one of its queue's pods. The GPU that frees is its claim: the next answers must not
// give it to team-b's waiting pods (below their share), which would make the preemptor preempt
// again. Exactly the evictions of the first answer happen, and the preemptor runs where its victim
// ran.
func TestRealOnePreemptorCausesExactlyTheEvictionsOfItsOwnAnswer(t *testing.T) {
	c := newCluster(t, clusterOpts{})
	c.apply(kwokNode("n1", "8", 2), kwokNode("n2", "8", 2), kwokNode("n3", "8", 2), kwokNode("n4", "8", 2))
	running := map[string]string{"a-0": "n1", "a-1": "n1", "a-2": "n2", "a-3": "n2", "b-0": "n3", "b-1": "n3", "b-2": "n4", "b-3": "n4"}
	for _, name := range []string{"a-0", "a-1", "a-2", "a-3", "b-0", "b-1", "b-2", "b-3"} {
		c.apply(pod(podSpec{name: name, queue: "team-" + name[:1], gpus: 1, node: running[name]}))
	}
	for name := range running {
		c.waitRunning("ml", name)
	}

	// n4 is lost: its pods go with it, and their controller recreates them, pending.
	if err := c.admin.CoreV1().Nodes().Delete(c.ctx, "n4", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	zero := int64(0)
	for _, name := range []string{"b-2", "b-3"} {
		if err := c.admin.CoreV1().Pods("ml").Delete(c.ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
			t.Fatal(err)
		}
		c.waitGone("ml", name)
	}
	c.apply(pod(podSpec{name: "b-4", queue: "team-b", gpus: 1}), pod(podSpec{name: "b-5", queue: "team-b", gpus: 1}))
	c.cycle()
	if log := c.audit(); len(log) != 0 {
		t.Fatalf("audit %v: with the quotas oversubscribed, nothing should move before the preemptor comes", log)
	}

	hp := pod(podSpec{name: "hp", queue: "team-a", gpus: 1})
	hp.Labels[translate.KeyPriority] = "200"
	c.apply(hp)
	c.cycle()
	first := c.rec.resp.GetEvictions()
	if len(first) == 0 {
		t.Fatalf("the first answer evicts nothing for hp:\n%s", c.rec)
	}
	var want []string
	for _, e := range first {
		want = append(want, "eviction ml/"+e.GetPod()+" 201")
	}
	for i := 0; i < 20 && c.pod("ml", "hp").Spec.NodeName == ""; i++ {
		time.Sleep(200 * time.Millisecond)
		c.cycle()
	}
	c.waitRunning("ml", "hp")
	for i := 0; i < 3; i++ {
		c.cycle()
	}
	var evictions []string
	for _, line := range c.audit() {
		if strings.HasPrefix(line, "eviction ") {
			evictions = append(evictions, line)
		}
	}
	if strings.Join(evictions, ",") != strings.Join(want, ",") {
		t.Errorf("evictions %v, want exactly the first answer's %v", evictions, want)
	}
	if got, victimNode := c.pod("ml", "hp").Spec.NodeName, first[0].GetNode(); got != victimNode {
		t.Errorf("hp runs on %s, want %s where its victim ran", got, victimNode)
	}
	for _, name := range []string{"b-4", "b-5"} {
		if n := c.pod("ml", name).Spec.NodeName; n != "" {
			t.Errorf("%s was bound to %s: the capacity was the preemptor's claim", name, n)
		}
	}
}

// TestRealWaitingPodsAreToldWhenArbiterServerCannotBeReached (issue 32): with arbiter-server
// away, the cycle fails; the pending pods get a PodScheduled condition and an Event that say so,
// not only the shim's log, and the same failure is written once, not once a cycle.
func TestRealWaitingPodsAreToldWhenArbiterServerCannotBeReached(t *testing.T) {
	port, err := controlplane.FreePort() // nothing listens there
	if err != nil {
		t.Fatal(err)
	}
	c := newCluster(t, clusterOpts{server: fmt.Sprintf("127.0.0.1:%d", port)})
	c.apply(kwokNode("n1", "8", 4), pod(podSpec{name: "waits", queue: "team-a", gpus: 1}))
	for i := 0; i < 2; i++ {
		c.settle()
		if err := c.shim.RunCycle(c.ctx); err == nil {
			t.Fatal("a cycle without arbiter-server succeeded")
		}
	}
	c.waitPod("ml", "waits", "told arbiter-server is away", func(p *corev1.Pod) bool {
		return strings.HasPrefix(pendingCondition(p), ReasonArbiterUnavailable+": ")
	})
	c.waitEvent("ml", "waits", "FailedScheduling", ReasonArbiterUnavailable)
	if n := len(c.events("ml", "waits")); n != 1 {
		t.Errorf("%d events about waits after two failed cycles, want 1: %v", n, c.events("ml", "waits"))
	}
}

// TestRealWaitingPodsAreToldTheQueueConfigMapIsMalformed (issue 32): a typo in queues.yaml stops
// scheduling; the pending pods' condition and Event say so and name the field.
func TestRealWaitingPodsAreToldTheQueueConfigMapIsMalformed(t *testing.T) {
	c := newCluster(t, clusterOpts{queues: "queues:\n- name: team-a\n  deservd: {nvidia.com/gpu: 4}\n"})
	c.apply(kwokNode("n1", "8", 4), pod(podSpec{name: "waits", queue: "team-a", gpus: 1}))
	c.settle()
	if err := c.shim.RunCycle(c.ctx); err == nil {
		t.Fatal("a cycle with a malformed queue ConfigMap succeeded")
	}
	c.waitPod("ml", "waits", "told the queue ConfigMap is malformed", func(p *corev1.Pod) bool {
		m := pendingCondition(p)
		return strings.HasPrefix(m, ReasonQueueConfigInvalid+": ") && strings.Contains(m, "deservd")
	})
	c.waitEvent("ml", "waits", "FailedScheduling", "deservd")
}

// TestRealMinRuntimeReasonSaysWhenTheVictimsMayGo (issue 32): team-a borrowed all of team-b's
// GPUs with pods that started just now, and their parent queue protects them for 600s. team-b's pod
// waits; its reason says that reclaim_min_runtime is what protects the victims, and until when:
// the victims' start time plus 600s.
func TestRealMinRuntimeReasonSaysWhenTheVictimsMayGo(t *testing.T) {
	c := newCluster(t, clusterOpts{queues: strings.Replace(twoTeams, "- name: research\n",
		"- name: research\n  reclaimMinRuntime: 600s\n", 1)})
	c.apply(kwokNode("n1", "8", 4), kwokNode("n2", "8", 4),
		pod(podSpec{name: "a-0", queue: "team-a", gpus: 4, node: "n1"}),
		pod(podSpec{name: "a-1", queue: "team-a", gpus: 4, node: "n2"}))
	c.waitRunning("ml", "a-0")
	c.waitRunning("ml", "a-1")
	var latest time.Time
	for _, name := range []string{"a-0", "a-1"} {
		c.waitPod("ml", name, "given a start time", func(p *corev1.Pod) bool { return p.Status.StartTime != nil })
		if st := c.pod("ml", name).Status.StartTime.Time; st.After(latest) {
			latest = st
		}
	}
	c.apply(pod(podSpec{name: "b-0", queue: "team-b", gpus: 4}))
	c.cycle()
	for _, line := range c.audit() {
		if strings.HasPrefix(line, "eviction ") {
			t.Fatalf("%s: the victims are protected", line)
		}
	}
	want := "reclaim: the victims that would let it fit are protected by reclaim_min_runtime until " +
		latest.Add(600*time.Second).UTC().Format(time.RFC3339)
	c.waitPod("ml", "b-0", "told when the victims may go", func(p *corev1.Pod) bool {
		return strings.Contains(pendingCondition(p), want)
	})
	c.waitEvent("ml", "b-0", "FailedScheduling", want)
}

// queuesOf reads queues.yaml out of the arbiter-queues ConfigMap in a manifest file of the
// repository (path from the repository's root).
func queuesOf(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "..", path))
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range strings.Split(string(data), "\n---") {
		var cm corev1.ConfigMap
		if err := yaml.Unmarshal([]byte(doc), &cm); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if cm.Name == "arbiter-queues" {
			return cm.Data[translate.QueueConfigKey]
		}
	}
	t.Fatalf("%s has no arbiter-queues ConfigMap", path)
	return ""
}

// TestRealLocalTrialQueuesReclaimWithinSeconds (issue 32): with the queues the local trial applies
// (tests/k8s/local-queues.yaml), team-b reclaims its share from pods of team-a's that have just
// started within seconds, where the chart's production queues protect them for 600s.
func TestRealLocalTrialQueuesReclaimWithinSeconds(t *testing.T) {
	production, err := translate.ParseQueueConfig([]byte(queuesOf(t, "deploy/kustomize/base/configmaps.yaml")))
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range production.Queues {
		if q.GetParent() != "" && q.GetReclaimMinRuntime().AsDuration() != 600*time.Second {
			t.Errorf("the chart's queue %s has reclaimMinRuntime %v, want the production default 600s", q.GetName(), q.GetReclaimMinRuntime().AsDuration())
		}
	}

	c := newCluster(t, clusterOpts{queues: queuesOf(t, "tests/k8s/local-queues.yaml")})
	c.apply(kwokNode("n1", "8", 4), kwokNode("n2", "8", 4),
		pod(podSpec{name: "a-0", queue: "team-a", gpus: 4, node: "n1"}),
		pod(podSpec{name: "a-1", queue: "team-a", gpus: 4, node: "n2"}))
	c.waitRunning("ml", "a-0")
	c.waitRunning("ml", "a-1")
	started := c.pod("ml", "a-1").Status.StartTime.Time
	c.apply(pod(podSpec{name: "b-0", queue: "team-b", gpus: 4}))
	evicted := func() bool {
		for _, line := range c.audit() {
			if strings.HasPrefix(line, "eviction ") {
				return true
			}
		}
		return false
	}
	for !evicted() {
		if time.Since(started) > 20*time.Second {
			t.Fatalf("no reclaim 20s after the victims started; b-0 waits with %q", pendingCondition(c.pod("ml", "b-0")))
		}
		c.cycle()
		time.Sleep(500 * time.Millisecond)
	}
	t.Logf("reclaimed %s after the victims started", time.Since(started).Round(100*time.Millisecond))
}
