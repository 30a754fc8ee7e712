package main

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	qcache "sigs.k8s.io/kueue/pkg/cache/queue"
	schedcache "sigs.k8s.io/kueue/pkg/cache/scheduler"
	"sigs.k8s.io/kueue/pkg/controller/core/indexer"
	"sigs.k8s.io/kueue/pkg/scheduler"
	preemptexpectations "sigs.k8s.io/kueue/pkg/scheduler/preemption/expectations"
	"sigs.k8s.io/kueue/pkg/util/routine"
	kueuewait "sigs.k8s.io/kueue/pkg/util/wait"
	kueueworkload "sigs.k8s.io/kueue/pkg/workload"
)

// Kueue's scheduler runs one cycle in an unexported method, and its unit tests make the
// admission's API write synchronous with another; the harness calls both as those tests do.
//
//go:linkname schedulerCycle sigs.k8s.io/kueue/pkg/scheduler.(*Scheduler).schedule
func schedulerCycle(s *scheduler.Scheduler, ctx context.Context) kueuewait.SpeedSignal

//go:linkname setAdmissionRoutineWrapper sigs.k8s.io/kueue/pkg/scheduler.(*Scheduler).setAdmissionRoutineWrapper
func setAdmissionRoutineWrapper(s *scheduler.Scheduler, w routine.Wrapper)

// The queue manager says how many workloads a ClusterQueue holds in its heap (active) and among
// its inadmissible ones only on its internal ClusterQueue type, which the harness handles as
// an opaque pointer.
//
//go:linkname managerClusterQueue sigs.k8s.io/kueue/pkg/cache/queue.(*Manager).getClusterQueue
func managerClusterQueue(m *qcache.Manager, name kueue.ClusterQueueReference) unsafe.Pointer

//go:linkname queuePending sigs.k8s.io/kueue/pkg/cache/queue.(*ClusterQueue).Pending
func queuePending(cq unsafe.Pointer) (active, inadmissible int)

// kueueRun is what Kueue's scheduler did with a decision scenario.
type kueueRun struct {
	verdict *verdictOf
	cycles  int
	history []string // per cycle: what it admitted and evicted
	// rerun: a fair-sharing preemption ended its first pass in the state SEMANTICS §5.5 step 6
	// reruns (rerun.go); the scenario is left out.
	rerun bool
	// scanResets counts the workloads set aside without their scan progress (SEMANTICS
	// §5.8.10 deviation 1, avoided).
	scanResets int
	// stickyCleared counts the preempting workloads whose stickiness was forgotten.
	stickyCleared int
	// candidateAdmitted: a cycle took as a preemption candidate a workload an earlier cycle
	// admitted, which a Schedule call never does (SEMANTICS §5.4 step 6).
	candidateAdmitted bool
	// overlapSkipped: a cycle skipped an entry whose preemption targets overlapped an earlier
	// entry's, where SEMANTICS §5.4 step 5.1 nominates it again (open difference (d)).
	overlapSkipped bool
}

// namespace is where every workload and LocalQueue lives.
const namespace = "default"

// kueueDecide runs Kueue's scheduler on the scenario: the cache (pkg/cache/scheduler), the
// queue manager (pkg/cache/queue) and the scheduler (pkg/scheduler) over a controller-runtime
// fake client holding the namespace, one LocalQueue per ClusterQueue and the pending workloads,
// wired as Kueue's scheduler unit tests wire them, with fair sharing on. It runs cycles until one
// admits and evicts nothing and leaves the queues' heaps as it found them, or they are empty.
// Between cycles it does what Kueue's workload controller would: an evicted workload leaves
// the cache and is not requeued (SEMANTICS §5.4: never reconsidered in the call), inadmissible
// workloads go back to their heaps, and an admitted workload leaves the queues. Where Kueue's
// cycles and SEMANTICS §5.4 part (scan progress, sticky heads, which trees an eviction
// requeues, candidates admitted in the call), the harness takes Kueue's behaviour out, as the
// comments below say (docs/conformance.md, "Decisions: Kueue").
func (d *decision) kueueDecide() (*kueueRun, error) {
	t := d.s.t
	det := &decisionLog{admitted: map[string]bool{}}
	ctx, cancel := context.WithCancel(ctrl.LoggerInto(context.Background(), logr.New(decisionSink{det: det})))
	defer cancel()
	log := logr.Discard()
	clk := clocktesting.NewFakeClock(epoch.Add(24 * time.Hour))

	var mu sync.Mutex
	evicted := map[string]bool{}
	why := map[string]string{} // evicted workload -> Kueue's reason and preemptor
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := kueue.AddToScheme(scheme); err != nil {
		return nil, err
	}
	builder := fake.NewClientBuilder().WithScheme(scheme).
		WithIndex(&kueue.LocalQueue{}, indexer.QueueClusterQueueKey, indexer.IndexQueueClusterQueue).
		WithIndex(&kueue.Workload{}, indexer.WorkloadQueueKey, indexer.IndexWorkloadQueue).
		WithIndex(&kueue.Workload{}, indexer.WorkloadClusterQueueKey, indexer.IndexWorkloadClusterQueue).
		WithStatusSubresource(&kueue.Workload{}).
		WithObjects(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}).
		// Status writes (an admission, an eviction, a pending message) are not stored: the
		// cache and the queue manager hold the state. An eviction is recorded.
		WithInterceptorFuncs(interceptor.Funcs{SubResourcePatch: func(_ context.Context, _ client.Client, _ string, obj client.Object, _ client.Patch, _ ...client.SubResourcePatchOption) error {
			if wl, ok := obj.(*kueue.Workload); ok && apimeta.IsStatusConditionTrue(wl.Status.Conditions, kueue.WorkloadEvicted) {
				reason := ""
				if c := apimeta.FindStatusCondition(wl.Status.Conditions, kueue.WorkloadPreempted); c != nil {
					reason = c.Reason
					if i := strings.Index(c.Message, "(UID: "); i >= 0 {
						if j := strings.Index(c.Message[i:], ")"); j >= 0 {
							reason += " for " + c.Message[i+6:i+j]
						}
					}
				}
				mu.Lock()
				evicted[wl.Name] = true
				why[wl.Name] = reason
				mu.Unlock()
			}
			return nil
		}})
	pending := d.livePending()
	rootOf := map[string]int{} // pending workload -> its ClusterQueue's root
	for _, p := range pending {
		builder = builder.WithObjects(d.kueuePending(&p))
		rootOf[p.w.name] = t.rootOf(p.cq)
	}
	for i := range t.nodes {
		if n := &t.nodes[i]; n.cq && !n.dropped {
			builder = builder.WithObjects(&kueue.LocalQueue{
				ObjectMeta: metav1.ObjectMeta{Name: "lq-" + n.name, Namespace: namespace},
				Spec:       kueue.LocalQueueSpec{ClusterQueue: kueue.ClusterQueueReference(n.name)},
			})
		}
	}
	cl := builder.Build()

	cache := schedcache.New(cl, schedcache.WithFairSharing(true))
	queues, requeuer := qcache.NewManagerForUnitTestsWithRequeuer(cl, cache)
	if !t.flavored {
		cache.AddOrUpdateResourceFlavor(log, &kueue.ResourceFlavor{ObjectMeta: metav1.ObjectMeta{Name: flavor}})
	}
	for _, name := range t.flavorNamesOf() {
		f := d.s.flavors[name]
		cache.AddOrUpdateResourceFlavor(log, &kueue.ResourceFlavor{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: kueue.ResourceFlavorSpec{NodeLabels: f.labels, NodeTaints: f.taints, Tolerations: f.tolerations}})
	}
	for i := range t.nodes {
		n := &t.nodes[i]
		if n.cq || !n.explicit || n.dropped {
			continue
		}
		cohort := t.cohortObject(i)
		if err := cache.AddOrUpdateCohort(cohort); err != nil {
			return nil, fmt.Errorf("cohort %s: %w", n.name, err)
		}
		queues.AddOrUpdateCohort(ctx, cohort)
	}
	var cqs []*kueue.ClusterQueue
	for i := range t.nodes {
		n := &t.nodes[i]
		if !n.cq || n.dropped {
			continue
		}
		cq := &kueue.ClusterQueue{
			ObjectMeta: metav1.ObjectMeta{Name: n.name},
			Spec: kueue.ClusterQueueSpec{
				ResourceGroups:    t.resourceGroups(i),
				FairSharing:       fairSharing(n.weight),
				QueueingStrategy:  kueue.BestEffortFIFO,
				NamespaceSelector: &metav1.LabelSelector{},
				Preemption:        &kueue.ClusterQueuePreemption{WithinClusterQueue: d.s.within[n.name], ReclaimWithinCohort: d.s.reclaim[n.name]},
				FlavorFungibility: d.fungibility[n.name],
			},
		}
		if n.parent >= 0 {
			cq.Spec.CohortName = kueue.CohortReference(t.nodes[n.parent].name)
		}
		if err := cache.AddClusterQueue(ctx, cq); err != nil {
			return nil, fmt.Errorf("cluster queue %s: %w", n.name, err)
		}
		cqs = append(cqs, cq)
		for _, w := range n.workloads {
			if w.admitted {
				cache.AddOrUpdateWorkload(log, t.admittedWorkload(n, &w))
			}
		}
	}
	// The queues learn their LocalQueues (and, through them, the pending workloads) after the
	// ClusterQueues, as Kueue's controllers do at start-up.
	for _, cq := range cqs {
		if err := queues.AddClusterQueue(ctx, cq); err != nil {
			return nil, fmt.Errorf("queues: cluster queue %s: %w", cq.Name, err)
		}
		lq := &kueue.LocalQueue{ObjectMeta: metav1.ObjectMeta{Name: "lq-" + cq.Name, Namespace: namespace},
			Spec: kueue.LocalQueueSpec{ClusterQueue: kueue.ClusterQueueReference(cq.Name)}}
		if err := queues.AddLocalQueue(ctx, lq); err != nil {
			return nil, fmt.Errorf("queues: local queue of %s: %w", cq.Name, err)
		}
	}

	sched := scheduler.New(queues, cache, cl, &record.FakeRecorder{},
		scheduler.WithFairSharing(fairSharingConfig), scheduler.WithClock(nil, clk),
		scheduler.WithPreemptionExpectations(preemptexpectations.New()))
	var wg sync.WaitGroup
	setAdmissionRoutineWrapper(sched, routine.NewWrapper(func() { wg.Add(1) }, func() { wg.Done() }))

	// Adding the ClusterQueues notified the requeuer; nothing is inadmissible yet.
	requeuer.ProcessRequeues(ctx)
	run := &kueueRun{}
	active := func() int {
		total := 0
		for i := range t.nodes {
			if n := &t.nodes[i]; n.cq && !n.dropped {
				a, _ := queuePending(managerClusterQueue(queues, kueue.ClusterQueueReference(n.name)))
				total += a
			}
		}
		return total
	}
	isPending := map[string]bool{}
	for _, p := range pending {
		isPending[p.w.name] = true
	}
	admitted := map[string]map[string]map[string]string{}
	removed := map[string]bool{} // evicted workloads the cache no longer holds
	for cycle := 0; active() > 0; cycle++ {
		if cycle == 60 {
			return nil, fmt.Errorf("no fixed point after %d cycles", cycle)
		}
		run.cycles = cycle + 1
		before := active()
		schedulerCycle(sched, ctx)
		wg.Wait()
		snap, err := cache.Snapshot(ctx)
		if err != nil {
			return nil, err
		}
		var news []string
		for _, cq := range snap.ClusterQueues() {
			for _, w := range cq.Workloads {
				name := w.Obj.Name
				if !isPending[name] || admitted[name] != nil {
					continue
				}
				m := map[string]map[string]string{}
				if t.flavored {
					for _, psa := range w.Obj.Status.Admission.PodSetAssignments {
						f := map[string]string{}
						for r, fl := range psa.Flavors {
							f[string(r)] = string(fl)
						}
						m[string(psa.Name)] = f
					}
				}
				admitted[name] = m
				det.admitted[name] = true
				news = append(news, name)
				// SEMANTICS §5.4 step 6: a workload admitted in the call is no preemption
				// candidate in it. Kueue's later cycles have no such notion; the harness gives the
				// workload the highest priority in the cache, so that no LowerPriority or
				// LowerOrNewerEqualPriority policy can take it. Under reclaimWithinCohort Any it
				// stays a candidate (rule admitted-as-candidate).
				top := w.Obj.DeepCopy()
				top.Spec.Priority = ptrTo(int32(math.MaxInt32))
				cache.AddOrUpdateWorkload(log, top)
				// The workload controller sees the reservation: the workload leaves the queues.
				queues.DeleteWorkload(log, kueueworkload.Reference(namespace+"/"+name))
			}
		}
		var gone []string
		roots := map[int]bool{}
		mu.Lock()
		for name := range evicted {
			if removed[name] {
				continue // gone in an earlier cycle
			}
			removed[name] = true
			if err := cache.DeleteWorkload(log, kueueworkload.Reference(namespace+"/"+name)); err != nil {
				return nil, err
			}
			gone = append(gone, name+" ("+why[name]+")")
			if admitted[name] != nil {
				// A workload this run admitted, preempted in a later cycle.
				delete(admitted, name)
				roots[rootOf[name]] = true
			} else if i := t.cqOf(name); i >= 0 {
				roots[t.rootOf(i)] = true
			} else {
				return nil, fmt.Errorf("Kueue evicted %s, which is not an admitted workload", name)
			}
		}
		mu.Unlock()
		// An eviction releases quota: Kueue's workload controller puts the inadmissible
		// workloads of that cohort tree back in their heaps (the requeuer is notified through any
		// pending workload of the tree). SEMANTICS §5.4 step 6 clears the whole set-aside list
		// (open difference (e), docs/conformance.md): unless the scenario keeps Kueue's rule, the
		// harness requeues every tree's.
		for _, p := range pending {
			if roots[rootOf[p.w.name]] || len(roots) > 0 && !d.keepTreeRequeue {
				queues.QueueAssociatedInadmissibleWorkloadsAfter(ctx, kueueworkload.Reference(namespace+"/"+p.w.name), nil)
			}
		}
		requeuer.ProcessRequeues(ctx)
		sort.Strings(news)
		sort.Strings(gone)
		if len(news) > 0 || len(gone) > 0 {
			run.history = append(run.history, fmt.Sprintf("cycle %d: admitted %v, evicted %v", cycle+1, news, gone))
		}
		// Scan progress (SEMANTICS §5.8.10 deviation 1) is taken out: a workload Kueue put
		// back in its heap only because its last nomination left flavors untried is set aside
		// with no LastAssignment, as arbiter sets aside a NoFit or a Preempt without targets
		// and starts every nomination at each group's first flavor.
		reset := false
		// Kueue keeps a preempting workload at the head of its ClusterQueue until it is
		// admitted (the "sticky" workload of BestEffortFIFO queues, pkg/cache/queue), ahead of
		// workloads that sort before it; SEMANTICS §5.4 step 2 takes the first eligible
		// workload in priority order every round (docs/conformance.md, open difference (c)).
		// Unless the scenario keeps it, the harness takes the workload out of its queue and puts
		// it back as requeued after a nomination, which forgets the stickiness.
		for _, name := range det.preempting {
			if d.keepSticky || admitted[name] != nil {
				continue
			}
			for _, info := range queues.PendingWorkloadsInfo(kueue.ClusterQueueReference(t.nodes[t.pendingCQ(d, name)].name)) {
				if info.Obj.Name != name {
					continue
				}
				again := *info
				queues.DeleteWorkload(log, kueueworkload.Key(info.Obj))
				queues.RequeueWorkload(ctx, &again, qcache.RequeueReasonFailedAfterNomination)
				run.stickyCleared++
			}
		}
		det.preempting = det.preempting[:0]
		for i := range t.nodes {
			if n := &t.nodes[i]; n.cq && !n.dropped {
				for _, info := range queues.PendingWorkloadsInfo(kueue.ClusterQueueReference(n.name)) {
					if info.LastAssignment == nil || !info.LastAssignment.PendingFlavors() {
						continue
					}
					fresh := *info
					fresh.LastAssignment = nil
					queues.DeleteWorkload(log, kueueworkload.Key(info.Obj))
					queues.RequeueWorkload(ctx, &fresh, qcache.RequeueReasonGeneric)
					run.scanResets++
					reset = true
				}
			}
		}
		if len(news) == 0 && len(gone) == 0 && !reset && active() == before {
			break
		}
	}
	v := &verdictOf{admitted: admitted}
	for name := range evicted {
		v.evicted = append(v.evicted, name)
	}
	sort.Strings(v.evicted)
	for _, p := range pending {
		if admitted[p.w.name] == nil && !evicted[p.w.name] {
			v.pending = append(v.pending, p.w.name)
		}
	}
	sort.Strings(v.pending)
	run.verdict = v
	run.rerun = det.rerun
	run.candidateAdmitted = det.candidateAdmitted
	run.overlapSkipped = det.overlapSkipped
	return run, nil
}

// kueuePending is pending workload p as a Kueue Workload in its ClusterQueue's LocalQueue.
func (d *decision) kueuePending(p *pendingAt) *kueue.Workload {
	s := &scenario{t: d.s.t, pending: p.w}
	wl := s.pendingWorkload()
	wl.Spec.QueueName = kueue.LocalQueueName("lq-" + d.s.t.nodes[p.cq].name)
	return wl
}

// pendingCQ is the ClusterQueue of pending workload name.
func (t *tree) pendingCQ(d *decision, name string) int {
	for _, p := range d.pending {
		if p.w.name == name {
			return p.cq
		}
	}
	return -1
}

// rootOf is the root of node i's tree.
func (t *tree) rootOf(i int) int {
	for t.nodes[i].parent >= 0 {
		i = t.nodes[i].parent
	}
	return i
}

// cqOf is the ClusterQueue holding the admitted workload of that name (-1: none).
func (t *tree) cqOf(name string) int {
	for i := range t.nodes {
		for _, w := range t.nodes[i].workloads {
			if w.name == name {
				return i
			}
		}
	}
	return -1
}

// decisionLog watches Kueue's log for the state of SEMANTICS §5.5 step 6 (rerun.go), for any
// preemptor: the message's targets include one of the preemptor's own ClusterQueue and the
// retry list is not empty. The preemptor's ClusterQueue comes from the logger's values.
type decisionLog struct {
	rerun bool
	// admitted are the workloads admitted in earlier cycles; candidateAdmitted: a preemption
	// search (the flavor assigner's oracle or the preemptor's) had one of them among its
	// candidates, or a nomination among its targets.
	admitted          map[string]bool
	candidateAdmitted bool
	// preempting are the workloads that issued preemptions this cycle.
	preempting []string
	// overlapSkipped: an entry was skipped for preemption targets an earlier entry of its
	// cycle had taken.
	overlapSkipped bool
}

type decisionSink struct {
	det *decisionLog
	cq  string // the preemptor's ClusterQueue, from the logger's values
}

// noteCandidates notes whether a list of workload references (namespace/name) holds a workload
// admitted in an earlier cycle.
func (det *decisionLog) noteCandidates(list any) {
	for _, ref := range strings.Fields(strings.Trim(fmt.Sprint(list), "[]")) {
		if det.admitted[strings.TrimPrefix(ref, namespace+"/")] {
			det.candidateAdmitted = true
		}
	}
}

func (decisionSink) Init(logr.RuntimeInfo)       {}
func (decisionSink) Enabled(level int) bool      { return level <= 6 }
func (decisionSink) Error(error, string, ...any) {}

func (s decisionSink) Info(_ int, msg string, kv ...any) {
	if msg == "Simulating fair preemption" {
		// The candidates of every preemption search, the oracle's included.
		for k := 0; k+1 < len(kv); k += 2 {
			if kv[k] == "candidates" {
				s.det.noteCandidates(kv[k+1])
			}
		}
		return
	}
	if msg == "Workload evaluated for admission" {
		var name, reason string
		for k := 0; k+1 < len(kv); k += 2 {
			switch kv[k] {
			case "workload":
				name = strings.TrimPrefix(fmt.Sprint(kv[k+1]), namespace+"/")
			case "reason":
				reason = fmt.Sprint(kv[k+1])
			}
		}
		if strings.Contains(reason, ". Pending the preemption of ") {
			s.det.preempting = append(s.det.preempting, name)
		}
		if strings.HasPrefix(reason, "Workload has overlapping preemption targets") {
			s.det.overlapSkipped = true
		}
		for k := 0; k+1 < len(kv); k += 2 {
			if kv[k] != "preempted" {
				continue
			}
			s.det.noteCandidates(kv[k+1])
		}
		return
	}
	if msg != "First fair sharing strategy failed, trying second strategy" || s.cq == "" {
		return
	}
	targets, retry := secondStrategyTargets(kv)
	if strings.Contains(targets, namespace+"/"+s.cq+"-") && retry != "[]" && retry != "" {
		s.det.rerun = true
	}
}

func (s decisionSink) WithValues(kv ...any) logr.LogSink {
	for k := 0; k+1 < len(kv); k += 2 {
		if kv[k] == "clusterQueue" {
			s.cq = fmt.Sprint(kv[k+1])
		}
	}
	return s
}

func (s decisionSink) WithName(string) logr.LogSink { return s }
