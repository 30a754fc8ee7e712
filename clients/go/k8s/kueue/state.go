// Package kueue translates Kueue's objects (ResourceFlavors, ClusterQueues, Cohorts, LocalQueues,
// Workloads) into arbiter's Kueue model: Read gathers them into a State, Build turns the State
// into a Model (a ScheduleRequest and the index back to the Workloads), and TimeAwareRequest
// turns a Model into the KAI-model request of the time-aware division. It acts on nothing and
// reports nothing: the reports explain and what-if live in package report below it, the
// arbiter.dev/time-aware AdmissionCheck controller in package timeaware.
//
// The objects are those of Kueue's own API (kueue.x-k8s.io/v1beta2) at the version pinned in
// go.mod. See README.md in this folder for the mapping and the commands.
package kueue

import (
	"context"
	"fmt"
	"sort"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	kueueclient "sigs.k8s.io/kueue/client-go/clientset/versioned"
)

// State is what arbiter is told of a Kueue installation: its objects at one moment.
type State struct {
	Now time.Time
	// Namespaces holds the labels of every namespace, for the ClusterQueues' namespace
	// selectors; nil skips that test.
	Namespaces      map[string]map[string]string
	ResourceFlavors []kueue.ResourceFlavor
	ClusterQueues   []kueue.ClusterQueue
	Cohorts         []kueue.Cohort
	LocalQueues     []kueue.LocalQueue
	Workloads       []kueue.Workload
	AdmissionChecks []kueue.AdmissionCheck
}

// Read lists every object State holds, cluster-wide, and stamps the state with now.
func Read(ctx context.Context, c kueueclient.Interface, kube kubernetes.Interface, now time.Time) (*State, error) {
	api := c.KueueV1beta2()
	s := &State{Now: now, Namespaces: map[string]map[string]string{}}
	nss, err := kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list Namespaces: %w", err)
	}
	for _, ns := range nss.Items {
		s.Namespaces[ns.Name] = ns.Labels
	}
	rfs, err := api.ResourceFlavors().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list ResourceFlavors: %w", err)
	}
	cqs, err := api.ClusterQueues().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list ClusterQueues: %w", err)
	}
	cohorts, err := api.Cohorts().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list Cohorts: %w", err)
	}
	lqs, err := api.LocalQueues(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list LocalQueues: %w", err)
	}
	wls, err := api.Workloads(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list Workloads: %w", err)
	}
	acs, err := api.AdmissionChecks().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list AdmissionChecks: %w", err)
	}
	s.ResourceFlavors = rfs.Items
	s.ClusterQueues, s.Cohorts, s.LocalQueues, s.Workloads, s.AdmissionChecks = cqs.Items, cohorts.Items, lqs.Items, wls.Items, acs.Items
	return s, nil
}

// Key names a namespaced object as "namespace/name", the pod group name of a Workload.
func Key(namespace, name string) string { return namespace + "/" + name }

// WorkloadKey is w's pod group name.
func WorkloadKey(w *kueue.Workload) string { return Key(w.Namespace, w.Name) }

// HasQuotaReservation: Kueue reserved quota for w in a ClusterQueue.
func HasQuotaReservation(w *kueue.Workload) bool {
	return w.Status.Admission != nil && apimeta.IsStatusConditionTrue(w.Status.Conditions, kueue.WorkloadQuotaReserved)
}

// IsAdmitted: w has quota and every admission check is Ready, so its pods may run.
func IsAdmitted(w *kueue.Workload) bool {
	return HasQuotaReservation(w) && apimeta.IsStatusConditionTrue(w.Status.Conditions, kueue.WorkloadAdmitted)
}

// IsFinished: w's job is done; it holds no quota and waits for nothing.
func IsFinished(w *kueue.Workload) bool {
	return apimeta.IsStatusConditionTrue(w.Status.Conditions, kueue.WorkloadFinished)
}

// IsActive: w may be queued (spec.active is unset or true).
func IsActive(w *kueue.Workload) bool { return w.Spec.Active == nil || *w.Spec.Active }

// queueOrderTime is the timestamp Kueue orders w by in its ClusterQueue (with the default
// requeuing timestamp, Eviction): the time of its eviction by an admission check or by the
// pods-ready timeout, else its creation.
func queueOrderTime(w *kueue.Workload) time.Time {
	if c := apimeta.FindStatusCondition(w.Status.Conditions, kueue.WorkloadEvicted); c != nil && c.Status == metav1.ConditionTrue {
		switch c.Reason {
		case kueue.WorkloadEvictedByAdmissionCheck, kueue.WorkloadEvictedByPodsReadyTimeout:
			return c.LastTransitionTime.Time
		}
	}
	return w.CreationTimestamp.Time
}

// reservationTime is when Kueue reserved w's quota.
func reservationTime(w *kueue.Workload) time.Time {
	if c := apimeta.FindStatusCondition(w.Status.Conditions, kueue.WorkloadQuotaReserved); c != nil {
		return c.LastTransitionTime.Time
	}
	return time.Time{}
}

func priorityOf(w *kueue.Workload) int32 {
	if w.Spec.Priority != nil {
		return *w.Spec.Priority
	}
	return 0
}

// QueueOrderLess is Kueue's order of pending workloads in one ClusterQueue: higher priority,
// then older queue-order timestamp, then (arbiter's tie-break) smaller key.
func QueueOrderLess(a, b *kueue.Workload) bool {
	if pa, pb := priorityOf(a), priorityOf(b); pa != pb {
		return pa > pb
	}
	if ta, tb := queueOrderTime(a), queueOrderTime(b); !ta.Equal(tb) {
		return ta.Before(tb)
	}
	return WorkloadKey(a) < WorkloadKey(b)
}

// sortedWorkloads returns pointers to s's workloads in key order.
func (s *State) sortedWorkloads() []*kueue.Workload {
	out := make([]*kueue.Workload, len(s.Workloads))
	for i := range s.Workloads {
		out[i] = &s.Workloads[i]
	}
	sort.Slice(out, func(i, j int) bool { return WorkloadKey(out[i]) < WorkloadKey(out[j]) })
	return out
}
