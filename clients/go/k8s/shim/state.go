package shim

import (
	"strings"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"arbiter.dev/clients/go/k8s/translate"
)

// hintTTL bounds how long a moved pod's new node waits for the pod's replacement.
const hintTTL = 5 * time.Minute

// nomination is a pipelined binding: bind pod to node once every victim has left the cache, and
// those of the other nominated pods of its group too (a gang starts together).
type nomination struct {
	namespace, name string
	group           string
	node            string
	victims         map[types.UID]podRef
	sharing         sharing // its GPU groups, when it shares devices
}

type podRef struct{ namespace, name string }

// hint is the node a moved pod was re-placed on; its controller's replacement pod, which does not
// exist yet, is nominated to that node when it appears.
type hint struct {
	node    string
	known   map[types.UID]bool // the group's pods when the move was decided: not replacements
	expires time.Time
}

// state is what the shim remembers between cycles.
type state struct {
	// bound: bindings issued that the cache does not show yet (pod UID -> node). They are never
	// issued again, and count as RUNNING in the next snapshot.
	bound map[types.UID]string
	// evicted: evictions issued whose pod the cache still shows running. Never issued again;
	// RELEASING in the next snapshot.
	evicted     map[types.UID]bool
	nominations map[types.UID]*nomination
	hints       map[string][]hint // by pod group
	// written: the PodScheduled message last written per pod, so it is written (and its Event
	// emitted) once per change, not once per cycle.
	written map[types.UID]string
	// groups: the GPU groups of pods that share devices, from the binding or nomination that
	// named them until the cache shows the pod bound (and so its group labels, written first).
	groups map[types.UID][]string
	// reservationNamespaceSeen: the reservation namespace was created or found.
	reservationNamespaceSeen atomic.Bool
}

func newState() *state {
	return &state{
		bound:       map[types.UID]string{},
		evicted:     map[types.UID]bool{},
		nominations: map[types.UID]*nomination{},
		hints:       map[string][]hint{},
		written:     map[types.UID]string{},
		groups:      map[types.UID][]string{},
	}
}

// reconcile forgets what the cache now shows: bindings that landed, evictions whose pod is
// terminating or gone, nominations of pods that are bound or gone, and expired hints.
func (st *state) reconcile(pods map[types.UID]*corev1.Pod, now time.Time) {
	for uid := range st.bound {
		if p := pods[uid]; p == nil || p.Spec.NodeName != "" {
			delete(st.bound, uid)
		}
	}
	for uid := range st.evicted {
		if p := pods[uid]; p == nil || p.DeletionTimestamp != nil || terminal(p) {
			delete(st.evicted, uid)
		}
	}
	for uid := range st.nominations {
		if p := pods[uid]; p == nil || p.Spec.NodeName != "" {
			delete(st.nominations, uid)
		}
	}
	for uid := range st.groups {
		if p := pods[uid]; p == nil || p.Spec.NodeName != "" {
			delete(st.groups, uid)
		}
	}
	for uid := range st.written {
		if p := pods[uid]; p == nil || p.Spec.NodeName != "" {
			delete(st.written, uid)
		}
	}
	for g, hs := range st.hints {
		kept := hs[:0]
		for _, h := range hs {
			if now.Before(h.expires) {
				kept = append(kept, h)
			}
		}
		if len(kept) == 0 {
			delete(st.hints, g)
		} else {
			st.hints[g] = kept
		}
	}
}

// waitingMessage is the PodScheduled message of a nominated pod (its victim count and node);
// adopt recognises a nomination of an earlier leader by its start.
const (
	waitingMessage = "waiting for %d pod(s) to leave node %s"
	waitingPrefix  = "waiting for "
)

// adopt takes over the nominations an earlier leader (or this process before a restart) made
// and the cache shows: a pending pod of scheduler with status.nominatedNodeName and the
// waiting message in its PodScheduled condition. Its victims are the pods terminating on that
// node. Without it, a new leader would send the pod as pending, and the capacity its victims
// release could go to another pod.
func (st *state) adopt(pods []*corev1.Pod, scheduler string) {
	var claims []*corev1.Pod
	for _, p := range pods {
		// A pod that shares GPU devices is not adopted: its nomination's groups are not written
		// anywhere; it is decided afresh.
		if p.Spec.SchedulerName != scheduler || p.Spec.NodeName != "" || p.DeletionTimestamp != nil || translate.SharesGPU(p) ||
			p.Status.NominatedNodeName == "" || st.nominations[p.UID] != nil || st.bound[p.UID] != "" {
			continue
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && strings.HasPrefix(c.Message, waitingPrefix) {
				claims = append(claims, p)
			}
		}
	}
	if len(claims) == 0 {
		return
	}
	releasing := map[string]map[types.UID]podRef{}
	for _, p := range pods {
		if p.Spec.NodeName != "" && p.DeletionTimestamp != nil && !terminal(p) {
			if releasing[p.Spec.NodeName] == nil {
				releasing[p.Spec.NodeName] = map[types.UID]podRef{}
			}
			releasing[p.Spec.NodeName][p.UID] = podRef{namespace: p.Namespace, name: p.Name}
		}
	}
	for _, p := range claims {
		node := p.Status.NominatedNodeName
		if len(releasing[node]) == 0 {
			continue // nothing to wait for: the answer decides afresh
		}
		st.nominations[p.UID] = &nomination{
			namespace: p.Namespace, name: p.Name, group: translate.GroupOf(p), node: node, victims: releasing[node],
		}
	}
}

// assumed is where the next snapshot places pods that the cache shows unbound: the bindings
// issued, and the nominated pods on their nodes. A nominated pod is sent as bound there, so its
// claim on the capacity its victims release holds until they are gone (SEMANTICS.md §4.1, the
// pipelined claim): no later answer hands that capacity to another pod, and the preemptor causes
// no evictions beyond those of its own answer. A nomination is dropped, its pod pending again and
// decided afresh, when its node is gone, or when a victim is not leaving: its eviction was refused
// (a disruption budget) or failed, so the claim would wait on capacity that is not being freed.
func (st *state) assumed(nodes []*corev1.Node, pods map[types.UID]*corev1.Pod) map[types.UID]string {
	exists := make(map[string]bool, len(nodes))
	for _, n := range nodes {
		exists[n.Name] = true
	}
	out := make(map[types.UID]string, len(st.bound)+len(st.nominations))
	for uid, n := range st.nominations {
		if !exists[n.node] || st.victimStays(n, pods) {
			delete(st.nominations, uid)
			continue
		}
		out[uid] = n.node
	}
	for uid, node := range st.bound {
		out[uid] = node
	}
	return out
}

// assumedGroups is the GPU groups of the assumed pods that share devices.
func (st *state) assumedGroups(assumed map[types.UID]string) map[types.UID][]string {
	out := map[types.UID][]string{}
	for uid, g := range st.groups {
		if assumed[uid] != "" {
			out[uid] = g
		}
	}
	return out
}

// victimStays reports whether a victim of n is still there without leaving: not terminating,
// and no eviction of it accepted.
func (st *state) victimStays(n *nomination, pods map[types.UID]*corev1.Pod) bool {
	for uid := range n.victims {
		if p := pods[uid]; p != nil && !terminal(p) && p.DeletionTimestamp == nil && !st.evicted[uid] {
			return true
		}
	}
	return false
}

func terminal(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}
