package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"arbiter.dev/clients/go/k8s/translate"
	"arbiter.dev/clients/go/k8s/usage"
	"arbiter.dev/clients/go/test/controlplane"
	"arbiter.dev/clients/go/test/e2e"
)

// The objects every end-to-end test of the command works with.
const (
	systemNS  = "arbiter-system"
	workNS    = "work"
	queueName = "team-a"
	leaseName = "arbiter-k8s"
	usageCM   = "arbiter-usage"
	// Each node offers nodeCPU cores; each pod asks for podMilliCPU.
	nodeCount   = 4
	nodeCPU     = 32
	podMilliCPU = 100
)

const queuesYAML = `queues:
- name: team-a
  deserved: {cpu: -1, memory: -1}
`

// cluster is a control plane with kwok nodes, the queue ConfigMap, an arbiter-server and the
// arbiter-k8s binary, ready for replicas to be started against it.
type cluster struct {
	cp     *controlplane.ControlPlane
	kube   kubernetes.Interface
	server string
	bin    string
}

// newCluster starts everything a replica needs. Each of users (a ServiceAccount-style identity
// per replica, so that the audit log tells the replicas apart) is bound to cluster-admin.
func newCluster(t *testing.T, users ...controlplane.User) *cluster {
	t.Helper()
	start := time.Now()
	bin := e2e.Binary(t, "arbiter.dev/clients/go/cmd/arbiter-k8s")
	cp := e2e.ControlPlane(t, controlplane.Options{Users: users})
	server := e2e.ArbiterServer(t)
	cfg := cp.RESTConfig(controlplane.Admin)
	cfg.QPS, cfg.Burst = 200, 400
	kube := kubernetes.NewForConfigOrDie(cfg)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, ns := range []string{systemNS, workNS} {
		if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// The default ServiceAccount of a new namespace comes from a controller; pods here name none,
	// and admission does not ask for one (no ServiceAccount plugin), so nothing waits for it.
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: systemNS, Name: "arbiter-queues"},
		Data:       map[string]string{translate.QueueConfigKey: queuesYAML},
	}
	if _, err := kube.CoreV1().ConfigMaps(systemNS).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, u := range users {
		ns, name, ok := serviceAccountOf(u)
		if !ok {
			t.Fatalf("user %s is not a ServiceAccount", u.Name)
		}
		crb := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "e2e-" + name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name}},
		}
		if _, err := kube.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	var nodes []*corev1.Node
	for i := 0; i < nodeCount; i++ {
		nodes = append(nodes, controlplane.NewNode(fmt.Sprintf("n%d", i), corev1.ResourceList{
			corev1.ResourceCPU:    *resource.NewQuantity(nodeCPU, resource.DecimalSI),
			corev1.ResourceMemory: resource.MustParse("128Gi"),
			corev1.ResourcePods:   resource.MustParse("500"),
		}))
	}
	if err := controlplane.CreateNodes(ctx, kube, nodes...); err != nil {
		t.Fatal(err)
	}
	t.Logf("cluster ready in %v (binary, control plane, arbiter-server, %d nodes)", time.Since(start).Round(time.Millisecond), nodeCount)
	return &cluster{cp: cp, kube: kube, server: server, bin: bin}
}

func serviceAccountOf(u controlplane.User) (ns, name string, ok bool) {
	rest, ok := strings.CutPrefix(u.Name, "system:serviceaccount:")
	if !ok {
		return "", "", false
	}
	ns, name, ok = strings.Cut(rest, ":")
	return ns, name, ok
}

// replica is one arbiter-k8s process.
type replica struct {
	name string // for messages
	user string // the identity it authenticates as, as the audit log names it
	cmd  *exec.Cmd
	log  string // its stderr
	addr string // of /metrics
	done chan struct{}
	err  error // Wait's result, once done is closed
}

// leaseArgs are the flags of a short lease: a leader that dies is replaced within seconds.
var leaseArgs = []string{"--lease-duration=4s", "--renew-deadline=3s", "--retry-period=500ms"}

// startReplica runs the binary as user and waits until it serves /metrics. The process is killed
// when the test ends, and the end of its log is shown if the test failed.
func (c *cluster) startReplica(t *testing.T, name string, user controlplane.User, args ...string) *replica {
	t.Helper()
	kubeconfig, err := c.cp.Kubeconfig(user.Name)
	if err != nil {
		t.Fatal(err)
	}
	r := &replica{name: name, user: user.Name, log: filepath.Join(t.TempDir(), name+".log"), done: make(chan struct{})}
	out, err := os.Create(r.log)
	if err != nil {
		t.Fatal(err)
	}
	all := append([]string{
		"--kubeconfig=" + kubeconfig, "--server=" + c.server, "--http-addr=127.0.0.1:0",
		"--namespace=" + systemNS, "--lease-name=" + leaseName, "--usage-configmap=" + usageCM,
	}, args...)
	r.cmd = exec.Command(c.bin, all...)
	r.cmd.Stdout, r.cmd.Stderr = out, out
	// Killed with the test binary if that dies first.
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := r.cmd.Start(); err != nil {
		out.Close()
		t.Fatal(err)
	}
	go func() {
		r.err = r.cmd.Wait()
		out.Close()
		close(r.done)
	}()
	t.Cleanup(func() {
		r.stop(syscall.SIGTERM, 5*time.Second)
		if t.Failed() {
			t.Logf("--- %s's log (%s, pid %d), start:\n%s\n--- end:\n%s", r.name, r.user, r.cmd.Process.Pid,
				head(r.log, 1500), controlplane.Tail(r.log, 6000))
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for r.addr == "" {
		r.addr = startedAt(r.log)
		if r.addr != "" {
			break
		}
		select {
		case <-r.done:
			t.Fatalf("%s exited before it started (%v):\n%s", name, r.err, controlplane.Tail(r.log, 4000))
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not log its start within 30s:\n%s", name, controlplane.Tail(r.log, 4000))
		}
	}
	return r
}

// head returns at most the first n bytes of the file at path.
func head(path string, n int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	b, _ := io.ReadAll(io.LimitReader(f, n))
	return string(b)
}

// startedAt returns the /metrics address from the command's start line, "" before that line.
func startedAt(log string) string {
	f, err := os.Open(log)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for sc.Scan() {
		var line struct {
			Msg  string `json:"msg"`
			HTTP string `json:"http"`
		}
		if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "arbiter-k8s starting" {
			return line.HTTP
		}
	}
	return ""
}

// stop sends sig and waits up to grace for the process to exit, then kills it. It reports
// whether the process exited by itself within grace.
func (r *replica) stop(sig syscall.Signal, grace time.Duration) bool {
	select {
	case <-r.done:
		return true
	default:
	}
	_ = r.cmd.Process.Signal(sig)
	select {
	case <-r.done:
		return true
	case <-time.After(grace):
	}
	_ = r.cmd.Process.Kill()
	<-r.done
	return false
}

// kill sends SIGKILL and waits until the process is gone.
func (r *replica) kill() { r.stop(syscall.SIGKILL, 10*time.Second) }

// metric reads one unlabelled sample from the replica's /metrics.
func (r *replica) metric(name string) (float64, error) {
	c := &http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get("http://" + r.addr + "/metrics")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			return strconv.ParseFloat(strings.TrimSpace(v), 64)
		}
	}
	return 0, fmt.Errorf("%s: no sample of %s", r.name, name)
}

// waitCycles waits until r has finished n more scheduling cycles (arbiter_k8s_cycle_duration_seconds's
// count) than when it was called, failing the test after timeout. A cycle may be under way at the
// call: of n more, at least n-1 started after it.
func (r *replica) waitCycles(t *testing.T, n int, timeout time.Duration) {
	t.Helper()
	const cycles = "arbiter_k8s_cycle_duration_seconds_count"
	from, err := r.metric(cycles)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, fmt.Sprintf("%s to finish %d more cycles", r.name, n), timeout, 100*time.Millisecond, func() (bool, string) {
		v, err := r.metric(cycles)
		return err == nil && v >= from+float64(n), fmt.Sprintf("%v more (%v)", v-from, err)
	})
}

// leader is the arbiter_k8s_leader gauge: 1 while the replica schedules.
func (r *replica) leader() (bool, error) {
	v, err := r.metric("arbiter_k8s_leader")
	return v == 1, err
}

// waitFor polls cond every interval until it holds, failing the test after timeout with what
// the last poll said.
func waitFor(t *testing.T, what string, timeout, interval time.Duration, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, last := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v (last: %s)", what, timeout, last)
		}
		time.Sleep(interval)
	}
}

// pod is a pending pod for arbiter in queue team-a, asking for podMilliCPU.
func pod(name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: workNS, Name: name, Labels: map[string]string{translate.KeyQueue: queueName}},
		Spec: corev1.PodSpec{
			SchedulerName: "arbiter",
			Containers: []corev1.Container{{Name: "c", Image: "busybox", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{
					corev1.ResourceCPU:    *resource.NewMilliQuantity(podMilliCPU, resource.DecimalSI),
					corev1.ResourceMemory: resource.MustParse("64Mi"),
				},
			}}},
		},
	}
}

// createPods creates n pods named prefix-0 … prefix-(n-1), a few at a time, and returns their
// names.
func (c *cluster) createPods(t *testing.T, prefix string, n int) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	names := make([]string, n)
	errs := make([]error, n)
	next := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				names[i] = fmt.Sprintf("%s-%d", prefix, i)
				_, errs[i] = c.kube.CoreV1().Pods(workNS).Create(ctx, pod(names[i]), metav1.CreateOptions{})
			}
		}()
	}
	for i := 0; i < n; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("create pod %s: %v", names[i], err)
		}
	}
	return names
}

// unbound returns the names among names whose pod has no node yet.
func (c *cluster) unbound(names []string) ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	list, err := c.kube.CoreV1().Pods(workNS).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	node := map[string]string{}
	for _, p := range list.Items {
		node[p.Name] = p.Spec.NodeName
	}
	var out []string
	for _, n := range names {
		if node[n] == "" {
			out = append(out, n)
		}
	}
	return out, nil
}

// waitBound waits until every pod of names is bound to a node and the audit log shows a
// successful binding for each.
func (c *cluster) waitBound(t *testing.T, names []string, timeout time.Duration) {
	t.Helper()
	c.waitBoundAcrossKill(t, names, time.Time{}, timeout)
}

// waitBoundAcrossKill is waitBound for a run in which a scheduler was killed and another process
// started at restarted: a pod whose one binding the kill cut off, but whose write took effect
// (the API server shows it bound; its binding was answered 500 or 504, see cutByKill), counts as
// bound by that binding.
func (c *cluster) waitBoundAcrossKill(t *testing.T, names []string, restarted time.Time, timeout time.Duration) {
	t.Helper()
	waitFor(t, fmt.Sprintf("all %d pods bound", len(names)), timeout, 200*time.Millisecond, func() (bool, string) {
		left, err := c.unbound(names)
		if err != nil {
			return false, err.Error()
		}
		if len(left) > 0 {
			return false, fmt.Sprintf("%d unbound, e.g. %s", len(left), left[0])
		}
		b := c.bindings(t)
		for _, n := range names {
			if b.created(n) == 0 && !b.cutThenBound(n, restarted) {
				return false, fmt.Sprintf("audit log has no binding of %s yet (its binding events: %+v)", n, b[n])
			}
		}
		return true, ""
	})
}

// bindingLog is the audit log's bindings of pods in workNS, by pod, in order.
type bindingLog map[string][]controlplane.AuditEvent

func (c *cluster) bindings(t *testing.T) bindingLog {
	t.Helper()
	events, err := c.cp.Audit()
	if err != nil {
		t.Fatal(err)
	}
	out := bindingLog{}
	for _, e := range events {
		if e.Subresource == "binding" && e.Namespace == workNS {
			out[e.Pod] = append(out[e.Pod], e)
		}
	}
	return out
}

// created counts pod's successful (201) bindings.
func (b bindingLog) created(pod string) int {
	n := 0
	for _, e := range b[pod] {
		if e.Code == http.StatusCreated {
			n++
		}
	}
	return n
}

// createdBy counts the successful bindings made by user among pods (all pods when nil).
func (b bindingLog) createdBy(user string, pods []string) int {
	n := 0
	for _, p := range b.pods(pods) {
		for _, e := range b[p] {
			if e.Code == http.StatusCreated && e.User == user {
				n++
			}
		}
	}
	return n
}

func (b bindingLog) pods(names []string) []string {
	if names != nil {
		return names
	}
	out := make([]string, 0, len(b))
	for p := range b {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// checkEachBoundOnce fails the test unless every pod of names has exactly one successful binding,
// made by one of users. A 409 (the pod was bound already) is allowed and logged; any other
// answer is an error. It returns the number of 409s.
func (b bindingLog) checkEachBoundOnce(t *testing.T, names []string, users ...string) int {
	t.Helper()
	return b.checkBoundOnce(t, names, time.Time{}, users...)
}

// checkEachBoundOnceAcrossKill is checkEachBoundOnce for a run in which a scheduler was killed
// and another process started at restarted. A binding of the killed process that its death cut
// off is answered 504 or 500 (the write's context was cancelled), which is allowed and logged.
// Only the killed process can have sent a request the API server received before restarted (a
// request sent just before the kill may be read from its socket a moment after it), so such an
// answer to a request received later is an error. Every pod still needs exactly one success, or
// one such cut-off binding whose write took effect and nothing else (cutThenBound).
func (b bindingLog) checkEachBoundOnceAcrossKill(t *testing.T, names []string, restarted time.Time, users ...string) int {
	t.Helper()
	return b.checkBoundOnce(t, names, restarted, users...)
}

// cutByKill tells whether e is a binding cut off by a kill, received before restarted (zero:
// no kill).
func cutByKill(e controlplane.AuditEvent, restarted time.Time) bool {
	cut := e.Code == http.StatusGatewayTimeout || e.Code == http.StatusInternalServerError
	return cut && !restarted.IsZero() && e.Received.Before(restarted)
}

// cutThenBound tells whether pod's bindings are one cut off by a kill (cutByKill) and nothing
// else: the write of such a binding can take effect after its context was cancelled, and then it
// is the pod's one binding (any later one would be answered 409). The caller knows the pod is
// bound.
func (b bindingLog) cutThenBound(pod string, restarted time.Time) bool {
	cut := 0
	for _, e := range b[pod] {
		switch {
		case cutByKill(e, restarted):
			cut++
		case e.Code != http.StatusConflict:
			return false
		}
	}
	return cut == 1
}

func (b bindingLog) checkBoundOnce(t *testing.T, names []string, restarted time.Time, users ...string) int {
	t.Helper()
	allowed := map[string]bool{}
	for _, u := range users {
		allowed[u] = true
	}
	conflicts := 0
	for _, p := range names {
		switch n := b.created(p); {
		case n == 0 && b.cutThenBound(p, restarted):
			t.Logf("pod %s: its one binding was cut off by the kill and took effect (bound, no binding answered 201): %+v", p, b[p])
		case n != 1:
			t.Errorf("pod %s has %d successful bindings, want exactly 1: %+v", p, n, b[p])
		}
		for _, e := range b[p] {
			switch {
			case e.Code == http.StatusConflict:
				conflicts++
				t.Logf("pod %s: binding by %s answered 409 Conflict (bound already)", p, e.User)
			case cutByKill(e, restarted):
				t.Logf("pod %s: binding by %s answered %d (received %v before the restart: cut off by the kill)",
					p, e.User, e.Code, restarted.Sub(e.Received).Round(time.Millisecond))
			case e.Code != http.StatusCreated:
				t.Errorf("pod %s: binding by %s answered %d (received %s)", p, e.User, e.Code, e.Received.Format(time.RFC3339Nano))
			case !allowed[e.User]:
				t.Errorf("pod %s was bound by %s, want one of %v", p, e.User, users)
			}
		}
	}
	return conflicts
}

// lease reads the leader Lease's holder ("" while it is not held or does not exist).
func (c *cluster) leaseHolder() (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	l, err := c.kube.CoordinationV1().Leases(systemNS).Get(ctx, leaseName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	if l.Spec.HolderIdentity == nil {
		return "", nil
	}
	return *l.Spec.HolderIdentity, nil
}

// ledger reads the usage ledger the replicas persist; nil while the ConfigMap or its key is
// missing.
func (c *cluster) ledger(t *testing.T) *usage.Ledger {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cm, err := c.kube.CoreV1().ConfigMaps(systemNS).Get(ctx, usageCM, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	data, ok := cm.Data[usage.DataKey]
	if !ok {
		return nil
	}
	l := &usage.Ledger{}
	if err := json.Unmarshal([]byte(data), l); err != nil {
		t.Fatalf("configmap %s key %s: %v\n%s", usageCM, usage.DataKey, err, data)
	}
	return l
}

// queueCPU is the queue's recorded cpu usage in millicore-seconds.
func queueCPU(l *usage.Ledger) float64 {
	if l == nil {
		return 0
	}
	return l.Queues[queueName][string(corev1.ResourceCPU)]
}
