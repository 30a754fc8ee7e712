// Package extender is arbiter as a scheduler extender of stock kube-scheduler: an HTTP service
// named in KubeSchedulerConfiguration.extenders that answers the verbs filter, prioritize,
// preempt and bind with arbiter's decisions (types of k8s.io/kube-scheduler/extender/v1).
//
// The decisions come from one Schedule answer, built from informer caches exactly as arbiter-k8s
// builds a cycle's snapshot (package shim), and reused by every call of kube-scheduler until it
// goes stale:
//   - a pod the answer does not know (new since) makes the next call ask again;
//   - an answer older than Config.MaxAge is asked again;
//   - a pod bound, deleted or added by anyone, or a node changed, marks it stale, except a pod
//     bound where the answer placed it: that is the answer being carried out.
//
// Per pod the answer says one of three things, and the verbs follow it:
//   - bound to node N now: filter keeps N only, prioritize scores N highest, bind (when on)
//     binds it, holding a gang's members until all of them are bound together;
//   - bound to N after evictions: filter keeps N (kube-scheduler's own fit check then fails it,
//     and its preemption asks the preempt verb), preempt names arbiter's victims on N;
//   - pending: filter refuses every node with arbiter's reason, which kube-scheduler writes in
//     the pod's FailedScheduling event.
//
// A pod of arbiter's that even a fresh answer does not know (kube-scheduler saw it before the
// decider's caches did) waits, up to Config.CacheWait, for the caches to have it. If they still
// do not, filter answers with an error and preempt names no victims: kube-scheduler neither
// places it nor preempts for it on its own, and retries it after backoff.
//
// Pods arbiter does not schedule (no queue, another scheduler's) pass through untouched.
package extender

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	policylisters "k8s.io/client-go/listers/policy/v1"
	"k8s.io/client-go/tools/cache"

	arbiterv1 "arbiter.dev/clients/go/arbiterv1"
	"arbiter.dev/clients/go/k8s/shim"
	"arbiter.dev/clients/go/k8s/translate"
)

// Config holds the extender's settings.
type Config struct {
	// MaxAge bounds how long one answer is reused; default 2s.
	MaxAge time.Duration
	// Bind turns on the bind verb: gangs are bound whole, members held until all are bound.
	Bind bool
	// GangWait bounds how long a member's bind call waits for the rest of its gang; default 20s
	// (keep it below the extender's httpTimeout in KubeSchedulerConfiguration).
	GangWait time.Duration
	// CacheWait bounds how long a call about a pod of arbiter's waits for the decider's caches
	// to have it, when kube-scheduler saw it first; default 2s.
	CacheWait time.Duration
}

// Decider is the source of answers; *shim.Shim implements it (Decide).
type Decider interface {
	Decide(ctx context.Context) (*translate.Result, *arbiterv1.ScheduleResponse, error)
	// Owns reports whether the decider schedules pod, from the pod alone: kube-scheduler may
	// ask about a pod before the decider's caches have it.
	Owns(pod *corev1.Pod) bool
	// Has reports whether the decider's caches have pod, so that its next answer covers it.
	Has(pod *corev1.Pod) bool
}

// Extender answers kube-scheduler's extender calls. Create it with New, then Start.
type Extender struct {
	cfg     Config
	decider Decider
	kube    kubernetes.Interface
	log     *slog.Logger
	metrics *Metrics

	factory informers.SharedInformerFactory
	pods    corelisters.PodLister
	pdbs    policylisters.PodDisruptionBudgetLister
	synced  []cache.InformerSynced

	ready atomic.Bool // caches synced

	mu     sync.Mutex // guards answer and stale; one Decide at a time
	answer *answer
	stale  bool

	gangs *gangBinder
}

// answer is one Schedule answer, indexed for the verbs.
type answer struct {
	at        time.Time
	byUID     map[types.UID]decision
	leftOut   map[types.UID]bool // pods of this scheduler arbiter does not schedule (no queue...)
	groupSize map[string]int     // pods of each group the answer binds (now or after evictions)
}

// decision is what the answer says about one pod.
type decision struct {
	group   string
	node    string // "" when pending
	after   bool   // bound after evictions on node
	reason  string // why pending
	victims []*corev1.Pod
}

// New wires the extender's own informers (pods, for invalidation; disruption budgets, for
// preempt) and takes its answers from decider.
func New(cfg Config, decider Decider, kube kubernetes.Interface, metrics *Metrics, log *slog.Logger) *Extender {
	if cfg.MaxAge <= 0 {
		cfg.MaxAge = 2 * time.Second
	}
	if cfg.GangWait <= 0 {
		cfg.GangWait = 20 * time.Second
	}
	if cfg.CacheWait <= 0 {
		cfg.CacheWait = 2 * time.Second
	}
	if metrics == nil {
		metrics = NewMetrics(nil)
	}
	if log == nil {
		log = slog.Default()
	}
	e := &Extender{cfg: cfg, decider: decider, kube: kube, log: log, metrics: metrics, stale: true}
	e.factory = informers.NewSharedInformerFactory(kube, 0)
	podInformer := e.factory.Core().V1().Pods()
	pdbInformer := e.factory.Policy().V1().PodDisruptionBudgets()
	e.pods, e.pdbs = podInformer.Lister(), pdbInformer.Lister()
	e.synced = []cache.InformerSynced{podInformer.Informer().HasSynced, pdbInformer.Informer().HasSynced}
	_, _ = podInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { e.markStale() },
		DeleteFunc: func(any) { e.markStale() },
		UpdateFunc: func(oldObj, newObj any) {
			o, ok1 := oldObj.(*corev1.Pod)
			n, ok2 := newObj.(*corev1.Pod)
			if ok1 && ok2 && o.Spec.NodeName == "" && n.Spec.NodeName != "" && !e.expected(n) {
				e.markStale()
			}
		},
	})
	e.gangs = newGangBinder(e)
	return e
}

// Start starts the informers and waits for their caches.
func (e *Extender) Start(ctx context.Context) error {
	e.factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), e.synced...) {
		return fmt.Errorf("extender: informer caches did not sync: %w", context.Cause(ctx))
	}
	e.ready.Store(true)
	return nil
}

func (e *Extender) markStale() {
	e.mu.Lock()
	e.stale = true
	e.mu.Unlock()
}

// expected reports whether pod was bound where the current answer placed it.
func (e *Extender) expected(pod *corev1.Pod) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.answer == nil {
		return false
	}
	d, ok := e.answer.byUID[pod.UID]
	return ok && d.node == pod.Spec.NodeName
}

// decision returns what the current answer says about pod, asking arbiter again when the answer
// is stale or does not know the pod. ok is false for a pod arbiter does not schedule.
//
// kube-scheduler can ask about a pod of arbiter's before the decider's caches have it. Then
// decision waits, up to Config.CacheWait, for the caches to have it, and asks again. If they
// still do not, it returns errUnseen: letting kube-scheduler decide the pod alone (place it, or
// preempt for it) would not be arbiter's decision.
func (e *Extender) decision(ctx context.Context, pod *corev1.Pod) (decision, bool, error) {
	d, ours, err := e.lookup(ctx, pod)
	if !errors.Is(err, errUnseen) || !e.awaitCache(ctx, pod) {
		return d, ours, err
	}
	return e.lookup(ctx, pod)
}

// errUnseen is the answer for a pod of arbiter's that the decider's caches do not have yet.
var errUnseen = errors.New("the pod is not in arbiter's snapshot yet; kube-scheduler retries it after backoff")

// lookup is decision without the wait: errUnseen for a pod of arbiter's the answer does not know.
func (e *Extender) lookup(ctx context.Context, pod *corev1.Pod) (decision, bool, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.answer != nil && !e.stale && time.Since(e.answer.at) < e.cfg.MaxAge {
		if d, ok := e.answer.byUID[pod.UID]; ok {
			e.metrics.Answers.WithLabelValues("reused").Inc()
			return d, true, nil
		}
		if e.answer.leftOut[pod.UID] {
			return decision{}, false, nil
		}
	}
	start := time.Now()
	res, resp, err := e.decider.Decide(ctx)
	e.metrics.DecideDuration.Observe(time.Since(start).Seconds())
	if err != nil {
		e.metrics.Answers.WithLabelValues("failed").Inc()
		return decision{}, false, err
	}
	e.metrics.Answers.WithLabelValues("asked").Inc()
	e.answer, e.stale = index(res, resp), false
	if d, ok := e.answer.byUID[pod.UID]; ok {
		return d, true, nil
	}
	if e.answer.leftOut[pod.UID] || !e.decider.Owns(pod) {
		return decision{}, false, nil
	}
	e.stale = true
	return decision{}, true, errUnseen
}

// awaitCache waits until the decider's caches have pod, up to Config.CacheWait; it reports
// whether they do.
func (e *Extender) awaitCache(ctx context.Context, pod *corev1.Pod) bool {
	ctx, cancel := context.WithTimeout(ctx, e.cfg.CacheWait)
	defer cancel()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !e.decider.Has(pod) {
		select {
		case <-ctx.Done():
			return false
		case <-tick.C:
		}
	}
	return true
}

// index turns an answer into per-pod decisions.
func index(res *translate.Result, resp *arbiterv1.ScheduleResponse) *answer {
	a := &answer{at: time.Now(), byUID: map[types.UID]decision{}, leftOut: map[types.UID]bool{}, groupSize: map[string]int{}}
	for _, x := range res.Excluded {
		// A pod that names a queue is arbiter's even when it cannot be sent (an unknown queue,
		// say): it waits, with the reason. One that names none is not arbiter's business.
		if named(x.Pod, translate.KeyQueue) || named(x.Pod, translate.KAIQueueLabel) {
			a.byUID[x.Pod.UID] = decision{reason: fmt.Sprintf("arbiter: %s: %s", x.Reason, x.Message)}
		} else {
			a.leftOut[x.Pod.UID] = true
		}
	}
	uidOf := func(group, pod string) (types.UID, bool) {
		p := res.Pods[translate.PodKey{Group: group, Pod: pod}]
		if p == nil {
			return "", false
		}
		return p.UID, true
	}
	pending := map[string]string{}
	for _, p := range resp.GetPending() {
		pending[p.GetPodGroup()] = fmt.Sprintf("arbiter: %s: %s", p.GetReason(), p.GetMessage())
	}
	victims := map[string]map[string][]*corev1.Pod{} // preemptor group -> node -> victims
	for _, ev := range resp.GetEvictions() {
		v := res.Pods[translate.PodKey{Group: ev.GetPodGroup(), Pod: ev.GetPod()}]
		if v == nil {
			continue
		}
		g := ev.GetPreemptorPodGroup()
		if victims[g] == nil {
			victims[g] = map[string][]*corev1.Pod{}
		}
		victims[g][ev.GetNode()] = append(victims[g][ev.GetNode()], v)
	}
	for _, b := range resp.GetBindings() {
		uid, ok := uidOf(b.GetPodGroup(), b.GetPod())
		if !ok {
			continue
		}
		d := decision{group: b.GetPodGroup(), node: b.GetNode(), after: b.GetAfterEvictions()}
		if d.after {
			d.victims = victims[b.GetPodGroup()][b.GetNode()]
		}
		a.byUID[uid] = d
		a.groupSize[d.group]++
	}
	for _, g := range res.Snapshot.GetPodGroups() {
		for _, p := range g.GetPods() {
			uid, ok := uidOf(g.GetName(), p.GetName())
			if !ok || p.GetPhase() != arbiterv1.PodPhase_POD_PHASE_PENDING {
				continue
			}
			if _, decided := a.byUID[uid]; decided {
				continue
			}
			reason := pending[g.GetName()]
			if reason == "" {
				reason = "arbiter: not placed in this answer"
			}
			a.byUID[uid] = decision{group: g.GetName(), reason: reason}
		}
	}
	return a
}

func named(pod *corev1.Pod, key string) bool {
	_, inLabels := pod.Labels[key]
	_, inAnnotations := pod.Annotations[key]
	return inLabels || inAnnotations
}

// ruleOutPDBs drops a node's victims when evicting them would break a disruption budget that
// allows fewer disruptions than the victims it covers, and says which.
func (e *Extender) ruleOutPDBs(victims []*corev1.Pod) (string, error) {
	pdbs, err := e.pdbs.List(labels.Everything())
	if err != nil {
		return "", err
	}
	sort.Slice(pdbs, func(i, j int) bool { return pdbs[i].Namespace+"/"+pdbs[i].Name < pdbs[j].Namespace+"/"+pdbs[j].Name })
	for _, pdb := range pdbs {
		sel, err := metav1LabelSelector(pdb)
		if err != nil {
			continue
		}
		covered := 0
		for _, v := range victims {
			if v.Namespace == pdb.Namespace && sel.Matches(labels.Set(v.Labels)) {
				covered++
			}
		}
		if covered > 0 && int32(covered) > pdb.Status.DisruptionsAllowed {
			return fmt.Sprintf("PodDisruptionBudget %s/%s allows %d disruption(s), arbiter's victims are %d",
				pdb.Namespace, pdb.Name, pdb.Status.DisruptionsAllowed, covered), nil
		}
	}
	return "", nil
}

// shimAsDecider is a compile-time check that the shim can serve as the decider.
var _ Decider = (*shim.Shim)(nil)
