package translate

import (
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	arbiterv1 "arbiter.dev/clients/go/arbiterv1"
)

// Pod labels and annotations that place a pod in a queue and a pod group. Each key is read from
// the pod's labels first, then from its annotations.
const (
	// KeyQueue names the leaf queue of the pod's group.
	KeyQueue = "arbiter.dev/queue"
	// KAIQueueLabel is KAI Scheduler's queue label, accepted when KeyQueue is absent.
	KAIQueueLabel = "kai.scheduler/queue"
	// KeyPodGroup names the pod group within the pod's namespace. Without it the pod is a group
	// of one, named after the pod (so a group label equal to another pod's name joins that pod).
	KeyPodGroup = "arbiter.dev/pod-group"
	// KeyMinMember is the gang size: the group runs only once that many pods can run together.
	KeyMinMember = "arbiter.dev/min-member"
	// KeyPreemptibility is "preemptible" or "non-preemptible"; absent means KAI's rule (a group
	// is preemptible iff its priority is below 100).
	KeyPreemptibility = "arbiter.dev/preemptibility"
	// KeyPriority is the group's priority (an int32); absent means the pod's spec.priority
	// (from its PriorityClass), else 0.
	KeyPriority = "arbiter.dev/priority"
)

// groupAttributes are the pod-group settings one pod declares.
type groupAttributes struct {
	name           string // "namespace/group"
	queue          string
	minMember      int32
	preemptibility arbiterv1.Preemptibility
	priority       int32
}

func lookup(pod *corev1.Pod, key string) (string, bool) {
	if v, ok := pod.Labels[key]; ok {
		return v, true
	}
	v, ok := pod.Annotations[key]
	return v, ok
}

// QueueOf is the queue pod names (KeyQueue, else KAIQueueLabel, in its labels or annotations),
// or defaultQueue when it names none.
func QueueOf(pod *corev1.Pod, defaultQueue string) string {
	if v, ok := lookup(pod, KeyQueue); ok && v != "" {
		return v
	}
	if v, ok := lookup(pod, KAIQueueLabel); ok && v != "" {
		return v
	}
	return defaultQueue
}

// GroupOf is the name of pod's pod group as the snapshot carries it: "namespace/group" from
// KeyPodGroup, else "namespace/pod".
func GroupOf(pod *corev1.Pod) string {
	if v, ok := lookup(pod, KeyPodGroup); ok && v != "" {
		return pod.Namespace + "/" + v
	}
	return pod.Namespace + "/" + pod.Name
}

// groupOf reads the pod-group attributes of pod; defaultQueue applies when the pod names no
// queue. The error says which key is malformed.
func groupOf(pod *corev1.Pod, defaultQueue string) (groupAttributes, error) {
	g := groupAttributes{name: GroupOf(pod), queue: QueueOf(pod, defaultQueue)}
	if v, ok := lookup(pod, KeyMinMember); ok {
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil || n < 0 {
			return g, fmt.Errorf("%s=%q: want a non-negative integer", KeyMinMember, v)
		}
		g.minMember = int32(n)
	}
	if v, ok := lookup(pod, KeyPreemptibility); ok {
		switch v {
		case "preemptible":
			g.preemptibility = arbiterv1.Preemptibility_PREEMPTIBLE
		case "non-preemptible":
			g.preemptibility = arbiterv1.Preemptibility_NON_PREEMPTIBLE
		default:
			return g, fmt.Errorf("%s=%q: want preemptible or non-preemptible", KeyPreemptibility, v)
		}
	}
	if v, ok := lookup(pod, KeyPriority); ok {
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil {
			return g, fmt.Errorf("%s=%q: want a 32-bit integer", KeyPriority, v)
		}
		g.priority = int32(n)
	} else if pod.Spec.Priority != nil {
		g.priority = *pod.Spec.Priority
	}
	return g, nil
}
