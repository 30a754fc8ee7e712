// Package kueuetest builds the Kueue objects the tests of the Kueue adapter spell their
// clusters with, and dials the arbiter-server they run against.
package kueuetest

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"arbiter.dev/clients/go/client"
	"arbiter.dev/clients/go/test/e2e"
)

// T0 is the time every test cluster starts from.
var T0 = time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)

// Quota is "resource=amount" pairs, e.g. Quota("cpu", "8", "nvidia.com/gpu", "4").
func Quota(pairs ...string) []kueue.ResourceQuota {
	var out []kueue.ResourceQuota
	for i := 0; i < len(pairs); i += 2 {
		out = append(out, kueue.ResourceQuota{Name: corev1.ResourceName(pairs[i]), NominalQuota: resource.MustParse(pairs[i+1])})
	}
	return out
}

// Groups is one resource group of flavor covering q's resources.
func Groups(flavor string, q []kueue.ResourceQuota) []kueue.ResourceGroup {
	var covered []corev1.ResourceName
	for _, r := range q {
		covered = append(covered, r.Name)
	}
	return []kueue.ResourceGroup{{CoveredResources: covered, Flavors: []kueue.FlavorQuotas{{Name: kueue.ResourceFlavorReference(flavor), Resources: q}}}}
}

// Flavor is the quota of one flavor of a resource group, e.g. Flavor("spot", "cpu", "8").
func Flavor(name string, pairs ...string) kueue.FlavorQuotas {
	return kueue.FlavorQuotas{Name: kueue.ResourceFlavorReference(name), Resources: Quota(pairs...)}
}

// ResourceGroup is a resource group of the flavors, in that order, covering the first one's
// resources.
func ResourceGroup(flavors ...kueue.FlavorQuotas) kueue.ResourceGroup {
	g := kueue.ResourceGroup{Flavors: flavors}
	for _, r := range flavors[0].Resources {
		g.CoveredResources = append(g.CoveredResources, r.Name)
	}
	return g
}

// ResourceFlavor is a ResourceFlavor with node labels and node taints.
func ResourceFlavor(name string, labels map[string]string, taints ...corev1.Taint) kueue.ResourceFlavor {
	return kueue.ResourceFlavor{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: kueue.ResourceFlavorSpec{NodeLabels: labels, NodeTaints: taints}}
}

// ClusterQueue is a ClusterQueue in cohort with quota q of flavor "default", for every namespace.
func ClusterQueue(name, cohort string, q []kueue.ResourceQuota) kueue.ClusterQueue {
	return kueue.ClusterQueue{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: kueue.ClusterQueueSpec{
			CohortName: kueue.CohortReference(cohort), ResourceGroups: Groups("default", q),
			NamespaceSelector: &metav1.LabelSelector{}, // every namespace
		},
	}
}

// Cohort is a Cohort under parent, with quota q of flavor "default" when q is not empty.
func Cohort(name, parent string, q []kueue.ResourceQuota) kueue.Cohort {
	c := kueue.Cohort{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: kueue.CohortSpec{ParentName: kueue.CohortReference(parent)}}
	if len(q) > 0 {
		c.Spec.ResourceGroups = Groups("default", q)
	}
	return c
}

// LocalQueue is LocalQueue ns/name pointing at ClusterQueue cq.
func LocalQueue(ns, name, cq string) kueue.LocalQueue {
	return kueue.LocalQueue{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: kueue.LocalQueueSpec{ClusterQueue: kueue.ClusterQueueReference(cq)}}
}

// Pending is a workload of count pods, each requesting the pairs, in LocalQueue lq, created at
// T0 + offset.
func Pending(ns, name, lq string, offset time.Duration, count int32, pairs ...string) kueue.Workload {
	req := corev1.ResourceList{}
	for i := 0; i < len(pairs); i += 2 {
		req[corev1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
	}
	return kueue.Workload{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, CreationTimestamp: metav1.NewTime(T0.Add(offset))},
		Spec: kueue.WorkloadSpec{
			QueueName: kueue.LocalQueueName(lq),
			PodSets: []kueue.PodSet{{Name: "main", Count: count, Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: req}}},
			}}}},
		},
	}
}

// Reserve gives w quota in cq at T0 + offset, in flavor "default" (that of ClusterQueue), as
// Kueue records it; admitted marks every check Ready (the Admitted condition).
func Reserve(w kueue.Workload, cq string, offset time.Duration, admitted bool) kueue.Workload {
	return ReserveIn(w, cq, "default", offset, admitted)
}

// ReserveIn is Reserve in flavor: every resource of the pod set is assigned that flavor.
func ReserveIn(w kueue.Workload, cq, flavor string, offset time.Duration, admitted bool) kueue.Workload {
	usage := corev1.ResourceList{}
	flavors := map[corev1.ResourceName]kueue.ResourceFlavorReference{}
	ps := w.Spec.PodSets[0]
	for r, q := range ps.Template.Spec.Containers[0].Resources.Requests {
		total := q.DeepCopy()
		total.Mul(int64(ps.Count))
		usage[r] = total
		flavors[r] = kueue.ResourceFlavorReference(flavor)
	}
	count := ps.Count
	w.Status.Admission = &kueue.Admission{
		ClusterQueue:      kueue.ClusterQueueReference(cq),
		PodSetAssignments: []kueue.PodSetAssignment{{Name: ps.Name, Flavors: flavors, ResourceUsage: usage, Count: &count}},
	}
	at := metav1.NewTime(T0.Add(offset))
	w.Status.Conditions = append(w.Status.Conditions, metav1.Condition{Type: kueue.WorkloadQuotaReserved, Status: metav1.ConditionTrue, Reason: "QuotaReserved", LastTransitionTime: at})
	if admitted {
		w.Status.Conditions = append(w.Status.Conditions, metav1.Condition{Type: kueue.WorkloadAdmitted, Status: metav1.ConditionTrue, Reason: "Admitted", LastTransitionTime: at})
	}
	return w
}

// ArbiterClient dials a real arbiter-server started for the test.
func ArbiterClient(t testing.TB) *client.Client {
	t.Helper()
	c, err := client.Dial(client.Config{Target: e2e.ArbiterServer(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// Quantity parses s, which must be a Kubernetes quantity.
func Quantity(s string) resource.Quantity { return resource.MustParse(s) }
