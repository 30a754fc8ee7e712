package shim

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
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
}

func newState() *state {
	return &state{
		bound:       map[types.UID]string{},
		evicted:     map[types.UID]bool{},
		nominations: map[types.UID]*nomination{},
		hints:       map[string][]hint{},
		written:     map[types.UID]string{},
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

// assumed is where the next snapshot places pods that the cache shows unbound: the bindings
// issued, and the nominated pods on their nodes. A nominated pod is sent as bound there, so its
// claim on the capacity its victims release holds until they are gone (SEMANTICS.md §4.1, the
// pipelined claim): no later answer hands that capacity to another pod, and the preemptor causes
// no evictions beyond those of its own answer. A nomination whose node is gone is dropped: its
// pod is pending again.
func (st *state) assumed(nodes []*corev1.Node) map[types.UID]string {
	exists := make(map[string]bool, len(nodes))
	for _, n := range nodes {
		exists[n.Name] = true
	}
	out := make(map[types.UID]string, len(st.bound)+len(st.nominations))
	for uid, n := range st.nominations {
		if !exists[n.node] {
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

func terminal(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}
