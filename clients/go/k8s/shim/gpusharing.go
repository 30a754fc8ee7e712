package shim

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	arbiterv1 "arbiter.dev/clients/go/arbiterv1"
	"arbiter.dev/clients/go/k8s/translate"
)

// GPU sharing (SEMANTICS.md §4.13), applied as KAI Scheduler's binder applies it:
//
//   - A Binding with gpu_groups labels its pod with the groups before the pod is bound
//     (translate.GPUGroupLabels: runai-gpu-group, or one runai-gpu-group/<group> label per device
//     for a pod on several devices). A key the answer opened ("new-<j>") becomes a new
//     cluster-wide group name (translate.GPUGroupName); a key that is a group name stays.
//   - Each new device is held, before the pod is bound, by a reservation pod: in the
//     reservation namespace (by default the shim's own, arbiter-system), bound to the node by spec.nodeName, asking for one whole
//     nvidia.com/gpu, labelled app=arbiter-gpu-reservation and runai-gpu-group=<group>. The API
//     server's accounting (and kube-scheduler, and any other scheduler) thus sees the device as
//     taken, so no whole-GPU pod is admitted onto it. KAI's binder does the same, in namespace
//     kai-resource-reservation with app=kai-resource-reservation; its reservation pod also learns
//     the physical GPU index from the device plugin, which arbiter does not model.
//   - Every cycle, the reservation pods whose device no placed pod uses any more are deleted,
//     and the devices in use that lack one get one (translate.Reservations).

// reservationContainer is the name of a reservation pod's one container.
const reservationContainer = "reservation"

// groupNames turns each binding's gpu_groups keys into group names: a key "new-<j>" that no pod of
// the snapshot lists on that node is a device the answer opened, named after its node, its key and
// the smallest UID among the answer's pods that list it (every pod that joins a device the answer
// opened lists the same key on the same node); other keys are group names already. The result
// maps pod UID to its names (ascending) and to those of them that are new.
func groupNames(res *translate.Result, resp *arbiterv1.ScheduleResponse) map[types.UID]sharing {
	existing := map[translate.Device]bool{}
	for _, g := range res.Snapshot.GetPodGroups() {
		for _, p := range g.GetPods() {
			for _, k := range p.GetGpuGroups() {
				existing[translate.Device{Node: p.GetNodeName(), Group: k}] = true
			}
		}
	}
	isNew := func(node, key string) bool {
		return translate.NewDeviceKey(key) && !existing[translate.Device{Node: node, Group: key}]
	}
	opener := map[translate.Device]string{}
	uidOf := func(b *arbiterv1.Binding) string {
		if pod := res.Pods[translate.PodKey{Group: b.GetPodGroup(), Pod: b.GetPod()}]; pod != nil {
			return string(pod.UID)
		}
		return ""
	}
	for _, b := range resp.GetBindings() {
		uid := uidOf(b)
		for _, k := range b.GetGpuGroups() {
			d := translate.Device{Node: b.GetNode(), Group: k}
			if old, ok := opener[d]; isNew(d.Node, k) && uid != "" && (!ok || uid < old) {
				opener[d] = uid
			}
		}
	}
	out := map[types.UID]sharing{}
	for _, b := range resp.GetBindings() {
		uid := uidOf(b)
		if uid == "" || len(b.GetGpuGroups()) == 0 {
			continue
		}
		var sh sharing
		for _, k := range b.GetGpuGroups() {
			if isNew(b.GetNode(), k) {
				name := translate.GPUGroupName(b.GetNode(), k, opener[translate.Device{Node: b.GetNode(), Group: k}])
				sh.groups = append(sh.groups, name)
				sh.newGroups = append(sh.newGroups, name)
			} else {
				sh.groups = append(sh.groups, k)
			}
		}
		sort.Strings(sh.groups)
		sort.Strings(sh.newGroups)
		out[types.UID(uid)] = sh
	}
	return out
}

// sharing is the GPU groups of one binding: all of them, and those the answer opened.
type sharing struct {
	groups, newGroups []string
}

// prepareSharing does what must precede binding a pod that shares devices: a reservation pod for
// each new device, then the pod's group labels. An error leaves the pod unbound; the next cycle
// decides again, and a reservation pod made meanwhile is stale then and deleted.
func (s *Shim) prepareSharing(ctx context.Context, pod *corev1.Pod, node string, sh sharing) error {
	for _, g := range sh.newGroups {
		if err := s.reserve(ctx, translate.Device{Node: node, Group: g}); err != nil {
			return err
		}
	}
	return s.labelGroups(ctx, pod, sh.groups)
}

// labelGroups sets pod's GPU group labels to groups, removing any other group label (from an
// earlier binding attempt that did not land).
func (s *Shim) labelGroups(ctx context.Context, pod *corev1.Pod, groups []string) error {
	labels := map[string]any{}
	for k := range pod.Labels {
		if translate.IsGPUGroupLabel(k) {
			labels[k] = nil
		}
	}
	for k, v := range translate.GPUGroupLabels(pod, groups) {
		labels[k] = v
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": labels}})
	if err != nil {
		return err
	}
	_, err = s.deps.Kube.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		return fmt.Errorf("labelling pod %s/%s with GPU groups %v: %w", pod.Namespace, pod.Name, groups, err)
	}
	return nil
}

// reserve creates the reservation pod of device d; one that exists already (the same name) is
// kept.
func (s *Shim) reserve(ctx context.Context, d translate.Device) error {
	s.ensureReservationNamespace(ctx)
	one := resource.MustParse("1")
	noToken := false
	grace := int64(0)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:      translate.ReservationPodName(d.Node, d.Group),
			Namespace: s.cfg.ReservationNamespace,
			Labels:    map[string]string{translate.LabelApp: translate.ReservationApp, translate.LabelGPUGroup: d.Group},
		},
		Spec: corev1.PodSpec{
			NodeName: d.Node,
			Containers: []corev1.Container{{
				Name:  reservationContainer,
				Image: s.cfg.ReservationImage,
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{translate.GPUResource: one},
					Limits:   corev1.ResourceList{translate.GPUResource: one},
				},
			}},
			// It stays on the node its device is on, whatever the node's taints say.
			Tolerations:                   []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			AutomountServiceAccountToken:  &noToken,
			TerminationGracePeriodSeconds: &grace,
		},
	}
	_, err := s.deps.Kube.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	switch {
	case err == nil:
		s.deps.Metrics.Reservations.WithLabelValues("created").Inc()
		return nil
	case apierrors.IsAlreadyExists(err):
		return nil
	default:
		s.deps.Metrics.Errors.WithLabelValues("reservation").Inc()
		return fmt.Errorf("reservation pod for GPU group %s on node %s: %w", d.Group, d.Node, err)
	}
}

// ensureReservationNamespace creates a reservation namespace other than the shim's own the first
// time it is needed, when it is missing. Without the permission it is left to exist.
func (s *Shim) ensureReservationNamespace(ctx context.Context) {
	if s.cfg.ReservationNamespace == s.cfg.Namespace || s.state.reservationNamespaceSeen.Load() {
		return
	}
	_, err := s.deps.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{Name: s.cfg.ReservationNamespace},
	}, metav1.CreateOptions{})
	if err == nil || apierrors.IsAlreadyExists(err) || apierrors.IsForbidden(err) {
		s.state.reservationNamespaceSeen.Store(true)
		return
	}
	s.log.Error("creating the GPU reservation namespace failed", "namespace", s.cfg.ReservationNamespace, "err", err)
}

// syncReservations deletes the stale reservation pods and creates the missing ones.
func (s *Shim) syncReservations(ctx context.Context, r translate.Reservations) {
	for _, pod := range r.Stale {
		uid := pod.UID
		err := s.deps.Kube.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
			Preconditions: &metav1.Preconditions{UID: &uid},
		})
		switch {
		case err == nil:
			s.deps.Metrics.Reservations.WithLabelValues("deleted").Inc()
		case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
		default:
			s.deps.Metrics.Errors.WithLabelValues("reservation").Inc()
			s.log.Error("deleting a stale GPU reservation pod failed; retried next cycle", "pod", pod.Namespace+"/"+pod.Name, "err", err)
		}
	}
	for _, d := range r.Missing {
		if err := s.reserve(ctx, d); err != nil {
			s.log.Error("creating a missing GPU reservation pod failed; retried next cycle", "err", err)
		}
	}
}

// withoutNominated is r without the missing devices that a nominated pod opens: their reservation
// pod is made when the pod is bound, once its victims have left the GPU it takes.
func (s *Shim) withoutNominated(r translate.Reservations) translate.Reservations {
	opening := map[translate.Device]bool{}
	for _, n := range s.state.nominations {
		for _, g := range n.sharing.newGroups {
			opening[translate.Device{Node: n.node, Group: g}] = true
		}
	}
	out := translate.Reservations{Stale: r.Stale, Leaving: r.Leaving}
	for _, d := range r.Missing {
		if !opening[d] {
			out.Missing = append(out.Missing, d)
		}
	}
	return out
}

// drainedReservations is the nodes with a reservation pod, still in the cache, of a device that
// the victims there (evicted now or releasing) drain: every pod of the device is a victim, and
// no binding of the answer and no nomination uses it. A nominated pod waits for it as for its
// victims: the kubelet counts a reservation pod's GPU until it is gone, and the shim deletes it
// only once the device's last pod has left (a later cycle).
func (s *Shim) drainedReservations(res *translate.Result, victimsOn map[string]map[types.UID]podRef,
	shares map[types.UID]sharing, resp *arbiterv1.ScheduleResponse) map[string]bool {
	podsOf := map[translate.Device][]types.UID{}
	for _, g := range res.Snapshot.GetPodGroups() {
		for _, p := range g.GetPods() {
			pod := res.Pods[translate.PodKey{Group: g.GetName(), Pod: p.GetName()}]
			for _, k := range p.GetGpuGroups() {
				if pod != nil {
					d := translate.Device{Node: p.GetNodeName(), Group: k}
					podsOf[d] = append(podsOf[d], pod.UID)
				}
			}
		}
	}
	used := map[translate.Device]bool{}
	for _, b := range resp.GetBindings() {
		if pod := res.Pods[translate.PodKey{Group: b.GetPodGroup(), Pod: b.GetPod()}]; pod != nil {
			for _, g := range shares[pod.UID].groups {
				used[translate.Device{Node: b.GetNode(), Group: g}] = true
			}
		}
	}
	for _, n := range s.state.nominations {
		for _, g := range n.sharing.groups {
			used[translate.Device{Node: n.node, Group: g}] = true
		}
	}
	out := map[string]bool{}
	for d, uids := range podsOf {
		if used[d] || out[d.Node] {
			continue
		}
		all := true
		for _, uid := range uids {
			if _, ok := victimsOn[d.Node][uid]; !ok {
				all = false
				break
			}
		}
		if !all {
			continue
		}
		if _, err := s.pods.Pods(s.cfg.ReservationNamespace).Get(translate.ReservationPodName(d.Node, d.Group)); err == nil {
			out[d.Node] = true
		}
	}
	return out
}
