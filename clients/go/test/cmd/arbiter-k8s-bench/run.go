package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"arbiter.dev/clients/go/k8s/translate"
	"arbiter.dev/clients/go/test/controlplane"
)

const (
	// benchLabel marks the pods a run creates; the watch selects them by it.
	benchLabel = "bench.arbiter.dev/run"
	shimUser   = "arbiter-k8s"
	shimNS     = "arbiter-system"
	queueCM    = "arbiter-queues"
	parentQ    = "bench"
)

// run carries out one run. It returns what it measured even with an error, when it got as far
// as creating pods.
func run(ctx context.Context, c *config) (res *Result, err error) {
	res = newResult(c)
	dir, err := os.MkdirTemp("", "arbiter-k8s-bench-")
	if err != nil {
		return nil, err
	}
	res.Dir = dir
	var cleanups []func()
	defer func() {
		for i := len(cleanups) - 1; i >= 0; i-- {
			cleanups[i]()
		}
		if c.KeepDir || err != nil {
			fmt.Fprintln(os.Stderr, "logs kept in", dir)
		} else {
			_ = os.RemoveAll(dir)
		}
	}()
	step := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "%s  %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
	}

	// The control plane.
	opts := controlplane.Options{
		BinDir:  c.BinDir,
		Dir:     filepath.Join(dir, "controlplane"),
		KeepDir: true,
		Users:   []controlplane.User{{Name: shimUser, Groups: []string{"system:masters"}}},
		Timeout: 2 * time.Minute,
	}
	if c.Scheduler == "kube-scheduler" {
		opts.Scheduler = true
		if c.KubeSchedulerQPS > 0 {
			opts.SchedulerConfig = filepath.Join(dir, "kube-scheduler.yaml")
			if err := os.WriteFile(opts.SchedulerConfig, []byte(schedulerConfig(c)), 0o644); err != nil {
				return nil, err
			}
		}
	}
	step("starting the control plane in %s", opts.Dir)
	cp, err := controlplane.Start(ctx, opts)
	if err != nil {
		return nil, err
	}
	cleanups = append(cleanups, cp.Stop)
	cfg := cp.RESTConfig(controlplane.Admin)
	cfg.QPS, cfg.Burst = 5000, 5000
	cfg.UserAgent = "arbiter-k8s-bench"
	// Protobuf, as Kubernetes' own components and both schedulers speak.
	cfg.ContentType = runtime.ContentTypeProtobuf
	cfg.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}

	// Nodes, namespaces, and for arbiter its queues, server and shim.
	step("creating %d nodes", c.Nodes)
	t := time.Now()
	if err := createNodes(ctx, kube, c); err != nil {
		return nil, err
	}
	res.NodesReadySeconds = time.Since(t).Seconds()
	step("%d nodes Ready in %.1f s", c.Nodes, res.NodesReadySeconds)
	for i := 0; i < c.Namespaces; i++ {
		if err := createNamespace(ctx, kube, namespace(i)); err != nil {
			return nil, err
		}
	}
	var shimURL, serverMetricsURL string
	if c.Scheduler == "arbiter" {
		if err := createNamespace(ctx, kube, shimNS); err != nil {
			return nil, err
		}
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: shimNS, Name: queueCM},
			Data:       map[string]string{translate.QueueConfigKey: queuesYAML(c)},
		}
		if _, err := kube.CoreV1().ConfigMaps(shimNS).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			return nil, fmt.Errorf("create the queue ConfigMap: %w", err)
		}
		server, addr, metricsAddr, err := startServer(ctx, c.ServerBin, dir)
		if err != nil {
			return nil, err
		}
		cleanups = append(cleanups, server.stop)
		serverMetricsURL = "http://" + metricsAddr + "/metrics"
		step("arbiter-server listening on %s", addr)
		kubeconfig, err := cp.Kubeconfig(shimUser)
		if err != nil {
			return nil, err
		}
		shim, url, err := startShim(ctx, c, kubeconfig, addr, dir)
		if err != nil {
			return nil, err
		}
		cleanups = append(cleanups, shim.stop)
		shimURL = url
		step("arbiter-k8s ready (%s)", url)
	}

	// The watch that sees each binding, started before the first pod.
	tr := newTracker(c)
	factory := informers.NewSharedInformerFactoryWithOptions(kube, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = benchLabel }),
		informers.WithTransform(func(obj any) (any, error) {
			if p, ok := obj.(*corev1.Pod); ok {
				p.ManagedFields = nil
			}
			return obj, nil
		}))
	podInformer := factory.Core().V1().Pods().Informer()
	if _, err := podInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { tr.observe(obj) },
		UpdateFunc: func(_, obj any) { tr.observe(obj) },
	}); err != nil {
		return nil, err
	}
	watchCtx, stopWatch := context.WithCancel(ctx)
	cleanups = append(cleanups, stopWatch)
	factory.Start(watchCtx.Done())
	syncCtx, cancelSync := context.WithTimeout(ctx, time.Minute)
	synced := cache.WaitForCacheSync(syncCtx.Done(), podInformer.HasSynced)
	cancelSync()
	if !synced {
		return nil, errors.New("the pod watch did not sync within 1 minute")
	}

	apiserverMetrics := func() ([]sample, error) {
		return scrape(ctx, cp.URL+"/metrics", cp.Token(controlplane.Admin))
	}
	api0, err := apiserverMetrics()
	if err != nil {
		return nil, fmt.Errorf("kube-apiserver /metrics: %w", err)
	}
	cpu0 := sampleCPU()

	// The measured window: from the first create to the last binding.
	step("creating %d pods in %d namespaces (%d at a time)", c.Pods, c.Namespaces, c.CreateWorkers)
	tr.start(time.Now())
	if c.ProfileDir != "" {
		go profile(ctx, cp.URL, cp.Token(controlplane.Admin), c.ProfileDir, "kube-apiserver", step)
		if shimURL != "" {
			go profile(ctx, shimURL, "", c.ProfileDir, "arbiter-k8s", step)
		}
	}
	samplerDone := make(chan struct{})
	go func() {
		defer close(samplerDone)
		tr.sample(watchCtx)
	}()
	var createErr error
	if c.OneByOne {
		createErr = createOneByOne(ctx, kube, c, tr, step)
	} else {
		createErr = createPods(ctx, kube, c, tr)
	}
	res.CreateSeconds = tr.createdSince()
	if createErr != nil {
		err = fmt.Errorf("create pods: %w", createErr)
	} else {
		step("%d pods created in %.1f s; waiting for the bindings", c.Pods, res.CreateSeconds)
		err = tr.wait(ctx, c.Timeout, c.Settle, step)
	}
	cpu1 := sampleCPU()
	api1, apiErr := apiserverMetrics()
	stopWatch()
	<-samplerDone

	tr.fill(res)
	res.CPUSeconds = cpu1.minus(cpu0)
	if apiErr == nil {
		res.APIRequests = apiRequests(api0, api1)
	}
	if shimURL != "" {
		if s, serr := scrape(ctx, shimURL+"/metrics", ""); serr == nil {
			res.Shim = shimFigures(s)
		}
	}
	if serverMetricsURL != "" {
		if s, serr := scrape(ctx, serverMetricsURL, ""); serr == nil {
			res.Server = serverFigures(s)
		}
	}
	if res.Bound > 0 {
		step("counting the Scheduled events")
		res.ScheduledEvents = countScheduledEvents(ctx, kube, c)
		res.FailedSchedulingEvents = countEvents(ctx, kube, c, "FailedScheduling")
	}
	// kube-scheduler knows no gangs: it places pods one by one, so a gang may end in part.
	if err == nil && c.Scheduler == "arbiter" && res.Gang != nil && res.Gang.Partial > 0 {
		err = fmt.Errorf("%d gangs are bound in part", res.Gang.Partial)
	}
	return res, err
}

func namespace(i int) string { return fmt.Sprintf("bench-%d", i) }
func queue(i int) string     { return fmt.Sprintf("q%d", i) }

func schedulerConfig(c *config) string {
	return fmt.Sprintf(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: KUBECONFIG
  qps: %g
  burst: %d
leaderElection:
  leaderElect: false
`, c.KubeSchedulerQPS, c.KubeSchedulerBurst)
}

// queuesYAML is one parent queue over one leaf queue per namespace, each leaf deserving an equal
// part of the cluster's cpu and memory.
func queuesYAML(c *config) string {
	cpu := resource.MustParse(c.NodeCPU)
	mem := resource.MustParse(c.NodeMemory)
	totalCPU := float64(cpu.MilliValue()) * float64(c.Nodes)
	totalMem := float64(mem.Value()) * float64(c.Nodes)
	out := "queues:\n- name: " + parentQ + "\n  deserved: {cpu: -1, memory: -1}\n"
	for i := 0; i < c.Namespaces; i++ {
		out += fmt.Sprintf("- name: %s\n  parent: %s\n  deserved: {cpu: %.0f, memory: %.0f}\n",
			queue(i), parentQ, totalCPU/float64(c.Namespaces), totalMem/float64(c.Namespaces))
	}
	return out
}

func createNamespace(ctx context.Context, kube kubernetes.Interface, name string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %s: %w", name, err)
	}
	return nil
}

// parallel runs f(0..n-1) on workers goroutines and returns the first error.
func parallel(ctx context.Context, n, workers int, f func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	next := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < min(workers, n); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := f(ctx, i); err != nil {
					cancel(err)
				}
			}
		}()
	}
feed:
	for i := 0; i < n; i++ {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	return context.Cause(ctx)
}

// createNodes creates the kwok nodes in parallel and waits until all are Ready.
func createNodes(ctx context.Context, kube kubernetes.Interface, c *config) error {
	alloc := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse(c.NodeCPU),
		corev1.ResourceMemory: resource.MustParse(c.NodeMemory),
		corev1.ResourcePods:   *resource.NewQuantity(int64(c.NodePods), resource.DecimalSI),
	}
	err := parallel(ctx, c.Nodes, c.CreateWorkers, func(ctx context.Context, i int) error {
		n := controlplane.NewNode(fmt.Sprintf("node-%05d", i), alloc)
		if _, err := kube.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create node %s: %w", n.Name, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	deadline := time.Now().Add(5 * time.Minute)
	for {
		list, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{ResourceVersion: "0"})
		if err != nil {
			return err
		}
		ready := 0
		for _, n := range list.Items {
			for _, cond := range n.Status.Conditions {
				if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
					ready++
				}
			}
		}
		if ready >= c.Nodes {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("only %d of %d nodes Ready after 5 minutes", ready, c.Nodes)
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(time.Second):
		}
	}
}

// podAt is the i-th pod: its namespace, name and group. Pods of one gang are consecutive and
// share a namespace; without gangs the pods go round-robin over the namespaces.
func podAt(c *config, i int) *corev1.Pod {
	unit, size := i, 1
	if c.GangSize > 0 {
		unit, size = i/c.GangSize, c.GangSize
	}
	nsIndex := unit % c.Namespaces
	schedulerName := corev1.DefaultSchedulerName
	if c.Scheduler == "arbiter" {
		schedulerName = "arbiter"
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: namespace(nsIndex),
			Name:      fmt.Sprintf("pod-%06d", i),
			Labels:    map[string]string{benchLabel: "1", translate.KeyQueue: queue(nsIndex)},
		},
		Spec: corev1.PodSpec{
			SchedulerName: schedulerName,
			Containers: []corev1.Container{{
				Name:  "c",
				Image: "registry.invalid/pause",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU:    resource.MustParse(c.PodCPU),
					corev1.ResourceMemory: resource.MustParse(c.PodMemory),
				}},
			}},
			// kwok nodes run nothing; no token to mount.
			AutomountServiceAccountToken: new(bool),
		},
	}
	if size > 1 {
		pod.Labels[translate.KeyPodGroup] = fmt.Sprintf("gang-%05d", unit)
		pod.Annotations = map[string]string{translate.KeyMinMember: strconv.Itoa(size)}
	}
	return pod
}

func groupOf(p *corev1.Pod) string {
	if g := p.Labels[translate.KeyPodGroup]; g != "" {
		return p.Namespace + "/" + g
	}
	return p.Namespace + "/" + p.Name
}

func createPods(ctx context.Context, kube kubernetes.Interface, c *config, tr *tracker) error {
	return parallel(ctx, c.Pods, c.CreateWorkers, func(ctx context.Context, i int) error {
		pod := podAt(c, i)
		if _, err := kube.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create pod %s/%s: %w", pod.Namespace, pod.Name, err)
		}
		tr.created()
		return nil
	})
}

// createOneByOne creates the pods one at a time: a pause drawn uniformly from [0, c.Pause), the
// create, then a wait until the watch sees the pod bound (at most 30 s). The pause makes the pods
// arrive at any moment of a scheduler's cycle, as independent users' pods do.
func createOneByOne(ctx context.Context, kube kubernetes.Interface, c *config, tr *tracker, step func(string, ...any)) error {
	rng := rand.New(rand.NewPCG(uint64(c.Seed), 0))
	for i := 0; i < c.Pods; i++ {
		if c.Pause > 0 {
			select {
			case <-ctx.Done():
				return context.Cause(ctx)
			case <-time.After(time.Duration(rng.Int64N(int64(c.Pause)))):
			}
		}
		pod := podAt(c, i)
		key := pod.Namespace + "/" + pod.Name
		bound := tr.expect(key)
		if _, err := kube.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create pod %s: %w", key, err)
		}
		tr.created()
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-bound:
		case <-time.After(30 * time.Second):
			return fmt.Errorf("pod %s not bound within 30 s of its create", key)
		}
		if (i+1)%10 == 0 {
			step("%d of %d pods created and bound", i+1, c.Pods)
		}
	}
	return nil
}

// tracker records when each pod was first seen bound.
type tracker struct {
	c        *config
	t0       time.Time
	nCreated atomic.Int64
	lastNano atomic.Int64 // last create, ns after t0

	mu         sync.Mutex
	bound      map[string]bool // namespace/name
	groupBound map[string]int
	nodes      map[string]bool // nodes with a pod of the run
	first      time.Time
	last       time.Time
	timeline   []Sample
	// Of --one-by-one: the pod expected next, from when, and seen, closed once the watch sees it
	// bound; then each pod's time from its create to its binding.
	expected  string
	createdAt time.Time
	seen      chan struct{}
	latencies []time.Duration
}

func newTracker(c *config) *tracker {
	return &tracker{c: c, bound: map[string]bool{}, groupBound: map[string]int{}, nodes: map[string]bool{}}
}

func (tr *tracker) start(t time.Time) {
	tr.mu.Lock()
	tr.t0 = t
	tr.mu.Unlock()
}

func (tr *tracker) created() {
	tr.nCreated.Add(1)
	tr.mu.Lock()
	t0 := tr.t0
	tr.mu.Unlock()
	tr.lastNano.Store(int64(time.Since(t0)))
}

// expect names the pod about to be created, from now; the channel is closed once it is seen bound.
func (tr *tracker) expect(key string) <-chan struct{} {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.expected, tr.createdAt, tr.seen = key, time.Now(), make(chan struct{})
	return tr.seen
}

func (tr *tracker) createdSince() float64 { return time.Duration(tr.lastNano.Load()).Seconds() }

func (tr *tracker) observe(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok || pod.Spec.NodeName == "" {
		return
	}
	now := time.Now()
	key := pod.Namespace + "/" + pod.Name
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if tr.bound[key] {
		return
	}
	tr.bound[key] = true
	tr.groupBound[groupOf(pod)]++
	tr.nodes[pod.Spec.NodeName] = true
	if tr.first.IsZero() {
		tr.first = now
	}
	tr.last = now
	if key == tr.expected {
		tr.latencies = append(tr.latencies, now.Sub(tr.createdAt))
		close(tr.seen)
		tr.expected = ""
	}
}

func (tr *tracker) counts() (created, bound int, last time.Time) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return int(tr.nCreated.Load()), len(tr.bound), tr.last
}

// sample records the pods created and bound every second until ctx ends.
func (tr *tracker) sample(ctx context.Context) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			created, bound, _ := tr.counts()
			tr.mu.Lock()
			tr.timeline = append(tr.timeline, Sample{Seconds: now.Sub(tr.t0).Seconds(), Created: created, Bound: bound})
			tr.mu.Unlock()
		}
	}
}

// wait returns once every pod is bound; or, every pod created, when none was bound for settle
// (pods that cannot fit); or with an error at the timeout.
func (tr *tracker) wait(ctx context.Context, timeout, settle time.Duration, step func(string, ...any)) error {
	deadline := tr.t0.Add(timeout)
	allCreated := time.Now()
	lastReport := time.Now()
	for {
		created, bound, last := tr.counts()
		if bound >= tr.c.Pods {
			return nil
		}
		now := time.Now()
		if created >= tr.c.Pods && now.Sub(later(last, allCreated)) > settle {
			step("no pod bound for %s: %d of %d bound", settle, bound, tr.c.Pods)
			return nil
		}
		if now.After(deadline) {
			return fmt.Errorf("%d of %d pods bound after %s", bound, tr.c.Pods, timeout)
		}
		if now.Sub(lastReport) >= 10*time.Second {
			step("%d of %d pods bound", bound, tr.c.Pods)
			lastReport = now
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// fill copies the measured times into res.
func (tr *tracker) fill(res *Result) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	res.Created = int(tr.nCreated.Load())
	res.Bound = len(tr.bound)
	res.Complete = res.Bound == tr.c.Pods
	res.NodesUsed = len(tr.nodes)
	res.Timeline = tr.timeline
	if !tr.first.IsZero() {
		res.FirstBindSeconds = tr.first.Sub(tr.t0).Seconds()
		res.LastBindSeconds = tr.last.Sub(tr.t0).Seconds()
		res.PodsPerSecond = float64(res.Bound) / res.LastBindSeconds
		if d := tr.last.Sub(tr.first).Seconds(); d > 0 {
			res.BindPhasePodsPerSecond = float64(res.Bound) / d
		}
	}
	if len(tr.latencies) > 0 {
		res.Latency = latencyOf(tr.latencies)
	}
	if tr.c.GangSize > 0 {
		g := &GangResult{Size: tr.c.GangSize, Groups: tr.c.Pods / tr.c.GangSize}
		for _, n := range tr.groupBound {
			if n >= tr.c.GangSize {
				g.Whole++
			} else {
				g.Partial++
			}
		}
		g.None = g.Groups - g.Whole - g.Partial
		res.Gang = g
	}
}

// profile takes a 30-second CPU profile of the program serving baseURL (kube-apiserver, or
// arbiter-k8s run with --profiling), from the first pod created, into dir/NAME.cpu.pprof.
func profile(ctx context.Context, baseURL, token, dir, name string, step func(string, ...any)) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		step("profile: %v", err)
		return
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, baseURL+"/debug/pprof/profile?seconds=30", nil)
	if err != nil {
		return
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	hc := &http.Client{
		Timeout: time.Minute,
		// Loopback only; the API server's certificate is self-signed for the run.
		Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, //nolint:gosec
	}
	resp, err := hc.Do(req)
	if err != nil {
		step("profile of %s: %v", name, err)
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		step("profile of %s: %s", name, resp.Status)
		return
	}
	path := filepath.Join(dir, name+".cpu.pprof")
	f, err := os.Create(path)
	if err != nil {
		step("profile: %v", err)
		return
	}
	defer f.Close()
	if _, err := io.Copy(f, resp.Body); err != nil {
		step("profile of %s: %v", name, err)
		return
	}
	step("CPU profile of %s written to %s", name, path)
}

// countScheduledEvents counts the Scheduled events of the run's pods once their number has not
// changed for 5 s (at most 1 minute after the last binding): schedulers write them after binding,
// and a busy one may drop some.
func countScheduledEvents(ctx context.Context, kube kubernetes.Interface, c *config) int {
	count := func() int { return countEvents(ctx, kube, c, "Scheduled") }
	last, stable := count(), time.Now()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline) && time.Since(stable) < 5*time.Second; {
		select {
		case <-ctx.Done():
			return last
		case <-time.After(time.Second):
		}
		if n := count(); n != last {
			last, stable = n, time.Now()
		}
	}
	return last
}

// countEvents counts the Events of the given reason in the run's namespaces (-1 on an error).
func countEvents(ctx context.Context, kube kubernetes.Interface, c *config, reason string) int {
	n := 0
	for i := 0; i < c.Namespaces; i++ {
		list, err := kube.CoreV1().Events(namespace(i)).List(ctx, metav1.ListOptions{FieldSelector: "reason=" + reason})
		if err != nil {
			return -1
		}
		n += len(list.Items)
	}
	return n
}
