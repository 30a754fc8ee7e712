package shim

import (
	"maps"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/client-go/tools/cache"
)

// The causes of a cycle, read from the informers' events as they arrive: a pod of the shim's to
// place, room freed or added where a waiting pod might go, or a new queue configuration. Writes
// of the shim's own (bindings, PodScheduled conditions) cause nothing, so an idle cluster sees a
// cycle only every Period.

// watchCauses tells s.trigger of every cause the informers see.
func (s *Shim) watchCauses(pods, nodes cache.SharedIndexInformer, queues ...cache.SharedIndexInformer) error {
	notifyIf := func(cause bool) {
		if cause {
			s.trigger.Notify()
		}
	}
	if _, err := pods.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			p, ok := obj.(*corev1.Pod)
			notifyIf(ok && s.toPlace(p))
		},
		UpdateFunc: func(oldObj, newObj any) {
			old, ok1 := oldObj.(*corev1.Pod)
			p, ok2 := newObj.(*corev1.Pod)
			notifyIf(ok1 && ok2 && s.podUpdateIsCause(old, p))
		},
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			p, ok := obj.(*corev1.Pod)
			notifyIf(ok && frees(p) && s.waiting.Load())
		},
	}); err != nil {
		return err
	}
	if _, err := nodes.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { s.trigger.Notify() },
		UpdateFunc: func(oldObj, newObj any) {
			old, ok1 := oldObj.(*corev1.Node)
			n, ok2 := newObj.(*corev1.Node)
			notifyIf(ok1 && ok2 && placementChanged(old, n))
		},
	}); err != nil {
		return err
	}
	for _, q := range queues {
		if _, err := q.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(any) { s.trigger.Notify() },
			UpdateFunc: func(any, any) { s.trigger.Notify() },
			DeleteFunc: func(any) { s.trigger.Notify() },
		}); err != nil {
			return err
		}
	}
	return nil
}

// podUpdateIsCause reports whether a pod's update causes a cycle: it became one to place (its
// queue label added, say), or it finished on its node while something waits for room.
func (s *Shim) podUpdateIsCause(old, p *corev1.Pod) bool {
	return s.toPlace(p) && !s.toPlace(old) || frees(old) && !frees(p) && s.waiting.Load()
}

// toPlace reports whether p is a pod a cycle would try to place: the shim's, live, and on no
// node yet.
func (s *Shim) toPlace(p *corev1.Pod) bool {
	return s.Owns(p) && p.Spec.NodeName == "" && p.DeletionTimestamp == nil && !terminal(p)
}

// frees reports whether p holds room on a node, which it frees when it finishes or is deleted:
// it is bound and not finished. A pod of any scheduler counts.
func frees(p *corev1.Pod) bool {
	return p.Spec.NodeName != "" && !terminal(p)
}

// placementChanged reports whether a node changed in what a placement reads (its allocatable,
// labels, taints or unschedulable flag), not just in its status heartbeat.
func placementChanged(old, n *corev1.Node) bool {
	return old.Spec.Unschedulable != n.Spec.Unschedulable ||
		!equality.Semantic.DeepEqual(old.Status.Allocatable, n.Status.Allocatable) ||
		!maps.Equal(old.Labels, n.Labels) ||
		!equality.Semantic.DeepEqual(old.Spec.Taints, n.Spec.Taints)
}
