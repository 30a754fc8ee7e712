package shim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	arbiterv1 "arbiter.dev/clients/go/arbiterv1"
	"arbiter.dev/clients/go/k8s/translate"
)

// apply carries out one answer, in this order: GPU reservation pods (stale ones deleted, missing
// ones created: gpusharing.go); evictions (of a nominated pod: its nomination is dropped, it was
// never bound); bindings (immediate ones bound, pipelined ones kept as
// nominations, those of moved pods kept as hints); nominations whose victims are gone are
// bound; then pending reasons are written. A nomination is carried to later snapshots as its
// pod bound to the node (state.assumed), so a later answer keeps it unless it evicts the pod.
// Every call that fails is left for the next cycle, whose answer decides again; nothing that
// succeeded is ever issued twice.
func (s *Shim) apply(ctx context.Context, res *translate.Result, resp *arbiterv1.ScheduleResponse, now time.Time) {
	key := func(group, pod string) translate.PodKey { return translate.PodKey{Group: group, Pod: pod} }
	s.syncReservations(ctx, s.withoutNominated(res.Reservations))
	shares := groupNames(res, resp)

	evictedNow := map[translate.PodKey]bool{}
	victimsOn := map[string]map[types.UID]podRef{} // node -> pods evicted now or releasing there
	for _, e := range resp.GetEvictions() {
		k := key(e.GetPodGroup(), e.GetPod())
		pod := res.Pods[k]
		if pod == nil {
			s.log.Error("answer evicts a pod that is not in the snapshot", "group", k.Group, "pod", k.Pod)
			continue
		}
		if n := s.state.nominations[pod.UID]; n != nil {
			// A claim the answer takes back: the pod was never bound, so it only waits again (or
			// takes the answer's new binding below). Its nomination is cleared from its status too,
			// so that no later leader adopts it.
			delete(s.state.nominations, pod.UID)
			delete(s.state.groups, pod.UID)
			s.writeCondition(ctx, pod, fmt.Sprintf("its claim on node %s was taken back (%s): %s", n.node, e.GetReason(), e.GetMessage()), "")
			continue
		}
		evictedNow[k] = true
		addVictim(victimsOn, e.GetNode(), pod)
		s.evict(ctx, pod, e)
	}
	for _, g := range res.Snapshot.GetPodGroups() {
		for _, p := range g.GetPods() {
			if p.GetPhase() == arbiterv1.PodPhase_POD_PHASE_RELEASING {
				addVictim(victimsOn, p.GetNodeName(), res.Pods[key(g.GetName(), p.GetName())])
			}
		}
	}

	var toBind []bindTo
	for _, b := range resp.GetBindings() {
		k := key(b.GetPodGroup(), b.GetPod())
		pod := res.Pods[k]
		if pod == nil {
			s.log.Error("answer binds a pod that is not in the snapshot", "group", k.Group, "pod", k.Pod)
			continue
		}
		if evictedNow[k] {
			// A move: the pod itself is evicted; its controller's replacement takes the node.
			s.addHint(res, b.GetPodGroup(), b.GetNode(), now)
			continue
		}
		sh := shares[pod.UID]
		if len(sh.groups) > 0 {
			s.state.groups[pod.UID] = sh.groups
		} else {
			delete(s.state.groups, pod.UID)
		}
		if b.GetAfterEvictions() {
			s.state.nominations[pod.UID] = &nomination{
				namespace: pod.Namespace, name: pod.Name, group: b.GetPodGroup(), node: b.GetNode(),
				victims: victimsOn[b.GetNode()], sharing: sh,
			}
			continue
		}
		delete(s.state.nominations, pod.UID)
		toBind = append(toBind, bindTo{pod, b.GetNode(), sh})
	}

	// Groups with a nominated pod whose victims are still there, or whose node still has the
	// reservation pod of a device its victims drain, or one leaving: the kubelet counts its GPU
	// until it is gone.
	drained := s.drainedReservations(res, victimsOn, shares, resp)
	waiting := map[string]bool{}
	for _, n := range s.state.nominations {
		if !s.victimsGone(n) || res.Reservations.Leaving[n.node] || drained[n.node] {
			waiting[n.group] = true
		}
	}
	for _, uid := range sortedUIDs(s.state.nominations) {
		n := s.state.nominations[uid]
		if waiting[n.group] {
			continue
		}
		delete(s.state.nominations, uid)
		if pod, err := s.pods.Pods(n.namespace).Get(n.name); err == nil && pod.UID == uid {
			toBind = append(toBind, bindTo{pod, n.node, n.sharing})
		}
	}
	s.bindAll(ctx, toBind)
	s.deps.Metrics.Nominations.Set(float64(len(s.state.nominations)))
	s.deps.Metrics.PendingGroups.Set(float64(len(resp.GetPending())))
	s.writePending(ctx, res, resp)
	s.applyHints(ctx, res)
}

func addVictim(m map[string]map[types.UID]podRef, node string, pod *corev1.Pod) {
	if node == "" || pod == nil {
		return
	}
	if m[node] == nil {
		m[node] = map[types.UID]podRef{}
	}
	m[node][pod.UID] = podRef{namespace: pod.Namespace, name: pod.Name}
}

// victimsGone asks the live cache (which may be newer than this cycle's snapshot) whether every
// victim of n has left.
func (s *Shim) victimsGone(n *nomination) bool {
	for uid, v := range n.victims {
		if p, err := s.pods.Pods(v.namespace).Get(v.name); err == nil && p.UID == uid && !terminal(p) {
			return false
		}
	}
	return true
}

// bindTimeout bounds one binding call, its wait for the client's rate limiter included.
const bindTimeout = 30 * time.Second

// bindTo is one pod to bind to a node, with its GPU groups when it shares devices.
type bindTo struct {
	pod     *corev1.Pod
	node    string
	sharing sharing
}

// bindAll issues the bindings not issued before, up to BindWorkers at a time (the client's rate
// limiter paces them), then records each outcome in the order given.
func (s *Shim) bindAll(ctx context.Context, bs []bindTo) {
	todo := bs[:0:0]
	for _, b := range bs {
		if _, done := s.state.bound[b.pod.UID]; !done && b.pod.Spec.NodeName == "" {
			todo = append(todo, b)
		}
	}
	errs := make([]error, len(todo))
	next := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < min(s.cfg.BindWorkers, len(todo)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if errs[i] = ctx.Err(); errs[i] != nil {
					continue // stopping: issue no new binding
				}
				// A binding once sent is not torn off mid-flight by a stop: its outcome would be
				// unknown to the next leader. It is bounded on its own instead.
				callCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), bindTimeout)
				pod := todo[i].pod
				if len(todo[i].sharing.groups) > 0 {
					if errs[i] = s.prepareSharing(callCtx, pod, todo[i].node, todo[i].sharing); errs[i] != nil {
						cancel()
						continue
					}
				}
				errs[i] = s.deps.Kube.CoreV1().Pods(pod.Namespace).Bind(callCtx, &corev1.Binding{
					ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
					Target:     corev1.ObjectReference{Kind: "Node", Name: todo[i].node},
				}, metav1.CreateOptions{})
				cancel()
				if errs[i] == nil {
					// Recorded as each binding lands, so that Events follow at the binding rate: all
					// of a large cycle's at once would overflow the event broadcaster's queue (1000),
					// which drops the rest.
					s.deps.Recorder.Eventf(pod, corev1.EventTypeNormal, "Scheduled", "Successfully assigned %s/%s to %s", pod.Namespace, pod.Name, todo[i].node)
				}
			}
		}()
	}
	for i := range todo {
		next <- i
	}
	close(next)
	wg.Wait()
	for i, b := range todo {
		s.recordBind(ctx, b.pod, b.node, errs[i])
	}
}

// recordBind remembers a binding that was made (its Scheduled event is already recorded) and
// reports one that was not.
func (s *Shim) recordBind(ctx context.Context, pod *corev1.Pod, node string, err error) {
	switch {
	case err == nil:
		s.state.bound[pod.UID] = node
		s.deps.Metrics.Binds.Inc()
	case apierrors.IsNotFound(err):
		// Gone (or replaced under the same name): nothing to bind.
	case apierrors.IsConflict(err):
		s.bindConflict(ctx, pod, node, err)
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil:
		// Stopping (SIGTERM, or the lease lost) before it was sent: the next leader decides.
	default:
		s.deps.Metrics.Errors.WithLabelValues("bind").Inc()
		s.log.Error("bind failed; retried next cycle", "pod", pod.Namespace+"/"+pod.Name, "node", node, "err", err)
	}
}

// bindConflict handles a binding the API server refused because the pod is bound already: by
// another scheduler, or by an earlier call of ours whose answer was lost. The pod is read again
// and counted where it really is; the rest is decided again by the next cycle.
func (s *Shim) bindConflict(ctx context.Context, pod *corev1.Pod, node string, err error) {
	s.deps.Metrics.BindConflicts.Inc()
	live, getErr := s.deps.Kube.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
	if getErr != nil || live.UID != pod.UID || live.Spec.NodeName == "" {
		s.log.Error("bind conflict; decided again next cycle", "pod", pod.Namespace+"/"+pod.Name, "node", node, "err", err)
		return
	}
	s.state.bound[pod.UID] = live.Spec.NodeName
	if live.Spec.NodeName == node {
		return // our own earlier binding, whose answer was lost
	}
	s.log.Warn("pod was bound by someone else meanwhile; arbiter's placement was not applied",
		"pod", pod.Namespace+"/"+pod.Name, "wanted", node, "boundTo", live.Spec.NodeName)
	s.deps.Recorder.Eventf(pod, corev1.EventTypeWarning, "BindConflict",
		"arbiter would have bound it to %s, but it was bound to %s meanwhile", node, live.Spec.NodeName)
}

// evict issues one eviction unless one was already issued for the pod. The UID precondition
// keeps it from hitting a replacement with the same name.
func (s *Shim) evict(ctx context.Context, pod *corev1.Pod, e *arbiterv1.Eviction) {
	if s.state.evicted[pod.UID] || pod.DeletionTimestamp != nil {
		return
	}
	uid := pod.UID
	err := s.deps.Kube.PolicyV1().Evictions(pod.Namespace).Evict(ctx, &policyv1.Eviction{
		ObjectMeta:    metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name},
		DeleteOptions: &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}},
	})
	switch {
	case err == nil:
		s.state.evicted[pod.UID] = true
		s.deps.Metrics.Evictions.Inc()
		msg := e.GetMessage()
		if msg == "" {
			msg = fmt.Sprintf("evicted for %s", e.GetPreemptorPodGroup())
		}
		s.deps.Recorder.Eventf(pod, corev1.EventTypeNormal, "Preempted", "%s (%s)", msg, e.GetReason())
	case apierrors.IsNotFound(err):
		// Already gone.
	case apierrors.IsTooManyRequests(err):
		// A PodDisruptionBudget forbids it for now. The preemptor stays nominated, waiting for a
		// victim that does not leave, and the next cycle decides again.
		s.deps.Metrics.EvictionsRefused.Inc()
		s.log.Warn("eviction refused by a disruption budget; decided again next cycle",
			"pod", pod.Namespace+"/"+pod.Name, "preemptor", e.GetPreemptorPodGroup(), "err", err)
		s.deps.Recorder.Eventf(pod, corev1.EventTypeWarning, "EvictionRefused",
			"arbiter's eviction for %s (%s) was refused: %v", e.GetPreemptorPodGroup(), e.GetReason(), err)
	default:
		s.deps.Metrics.Errors.WithLabelValues("evict").Inc()
		s.log.Error("eviction failed; retried next cycle", "pod", pod.Namespace+"/"+pod.Name, "err", err)
	}
}

// writePending writes each pending group's reason to its unplaced pods, and the nomination of
// every pod waiting on a pipelined binding.
func (s *Shim) writePending(ctx context.Context, res *translate.Result, resp *arbiterv1.ScheduleResponse) {
	groups := map[string]*arbiterv1.PodGroup{}
	for _, g := range res.Snapshot.GetPodGroups() {
		groups[g.GetName()] = g
	}
	for _, p := range resp.GetPending() {
		g := groups[p.GetPodGroup()]
		for _, pp := range g.GetPods() {
			pod := res.Pods[translate.PodKey{Group: g.GetName(), Pod: pp.GetName()}]
			if pp.GetPhase() != arbiterv1.PodPhase_POD_PHASE_PENDING || pod == nil || s.state.nominations[pod.UID] != nil {
				continue
			}
			s.writeCondition(ctx, pod, fmt.Sprintf("%s: %s", p.GetReason(), p.GetMessage()), "")
		}
	}
	for _, uid := range sortedUIDs(s.state.nominations) {
		n := s.state.nominations[uid]
		pod, err := s.pods.Pods(n.namespace).Get(n.name)
		if err != nil || pod.UID != uid {
			continue
		}
		s.writeCondition(ctx, pod, fmt.Sprintf(waitingMessage, len(n.victims), n.node), n.node)
	}
}

// writeExcluded writes why a pending pod of this scheduler could not be sent to arbiter.
func (s *Shim) writeExcluded(ctx context.Context, excluded []translate.Excluded) {
	for _, e := range excluded {
		if e.Pod.Spec.NodeName == "" && s.state.bound[e.Pod.UID] == "" {
			s.writeCondition(ctx, e.Pod, fmt.Sprintf("%s: %s", e.Reason, e.Message), "")
		}
	}
}

// writeWaiting writes reason and message to every pod of this scheduler that waits for a node:
// the cycle stopped before arbiter's answer, so no pod gets a reason of its own. A nominated pod
// keeps its nomination.
func (s *Shim) writeWaiting(ctx context.Context, pods []*corev1.Pod, reason, message string) {
	for _, pod := range translate.SortedPods(pods) {
		if pod.Spec.SchedulerName != s.cfg.SchedulerName || pod.Spec.NodeName != "" || pod.DeletionTimestamp != nil ||
			terminal(pod) || s.state.bound[pod.UID] != "" {
			continue
		}
		nominated := ""
		if n := s.state.nominations[pod.UID]; n != nil {
			nominated = n.node
		}
		s.writeCondition(ctx, pod, fmt.Sprintf("%s: %s", reason, message), nominated)
	}
}

// writeCondition sets PodScheduled=False (reason Unschedulable, as kube-scheduler does) with
// message, and status.nominatedNodeName to nominated, and emits a FailedScheduling event; only
// when the message changed since it was last written.
func (s *Shim) writeCondition(ctx context.Context, pod *corev1.Pod, message, nominated string) {
	if s.state.written[pod.UID] == message+"\x00"+nominated {
		return
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse &&
			c.Reason == corev1.PodReasonUnschedulable && c.Message == message && pod.Status.NominatedNodeName == nominated {
			s.state.written[pod.UID] = message + "\x00" + nominated
			return
		}
	}
	status := map[string]any{"conditions": []any{map[string]any{
		"type":               corev1.PodScheduled,
		"status":             corev1.ConditionFalse,
		"reason":             corev1.PodReasonUnschedulable,
		"message":            message,
		"lastTransitionTime": metav1.Now().UTC().Format(time.RFC3339),
	}}}
	if nominated != "" {
		status["nominatedNodeName"] = nominated
	} else if pod.Status.NominatedNodeName != "" {
		status["nominatedNodeName"] = nil
	}
	patch, err := json.Marshal(map[string]any{"status": status})
	if err == nil {
		_, err = s.deps.Kube.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
	}
	if err != nil {
		if !apierrors.IsNotFound(err) {
			s.deps.Metrics.Errors.WithLabelValues("status").Inc()
			s.log.Error("writing pod condition failed", "pod", pod.Namespace+"/"+pod.Name, "err", err)
		}
		return
	}
	s.state.written[pod.UID] = message + "\x00" + nominated
	s.deps.Recorder.Eventf(pod, corev1.EventTypeWarning, "FailedScheduling", "%s", message)
}

// addHint remembers that a pod of group moved to node.
func (s *Shim) addHint(res *translate.Result, group, node string, now time.Time) {
	known := map[types.UID]bool{}
	for k, p := range res.Pods {
		if k.Group == group {
			known[p.UID] = true
		}
	}
	s.state.hints[group] = append(s.state.hints[group], hint{node: node, known: known, expires: now.Add(hintTTL)})
}

// applyHints nominates each new pending pod of a group with hints to the next hinted node. The
// pod is then placed by the next cycles like any other; the nomination only tells users and
// other tools where its predecessor's move was headed.
func (s *Shim) applyHints(ctx context.Context, res *translate.Result) {
	if len(s.state.hints) == 0 {
		return
	}
	for _, g := range res.Snapshot.GetPodGroups() {
		hs := s.state.hints[g.GetName()]
		for _, pp := range g.GetPods() {
			if len(hs) == 0 {
				break
			}
			pod := res.Pods[translate.PodKey{Group: g.GetName(), Pod: pp.GetName()}]
			if pp.GetPhase() != arbiterv1.PodPhase_POD_PHASE_PENDING || pod == nil || hs[0].known[pod.UID] ||
				s.state.nominations[pod.UID] != nil || s.state.bound[pod.UID] != "" {
				continue
			}
			s.writeCondition(ctx, pod, fmt.Sprintf("replaces a pod moved to node %s", hs[0].node), hs[0].node)
			hs = hs[1:]
		}
		if len(hs) == 0 {
			delete(s.state.hints, g.GetName())
		} else {
			s.state.hints[g.GetName()] = hs
		}
	}
}

func sortedUIDs[V any](m map[types.UID]V) []types.UID {
	out := make([]types.UID, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}
