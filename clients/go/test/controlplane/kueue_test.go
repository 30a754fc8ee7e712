package controlplane_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	kueueclient "sigs.k8s.io/kueue/client-go/clientset/versioned"

	"arbiter.dev/clients/go/test/controlplane"
	"arbiter.dev/clients/go/test/e2e"
)

const (
	flavor    = "default-flavor"
	namespace = "default"
	// Every wait for Kueue is bounded by this; it reacts in well under a second.
	kueueWait = 30 * time.Second
)

// TestKueueAdmitsWhatFitsAndReleasesTheQuotaOfAFinishedWorkload runs Kueue's own controller
// manager on the control plane: a Cohort with 2 CPUs of its own and two ClusterQueues of 2 CPUs
// each (fair-sharing weights 1 and 2), so 6 CPUs in all. Two Workloads of 3 CPUs each, one per
// queue, are admitted (each borrowing 1 CPU); a third of 2 CPUs does not fit and stays pending
// until the second queue's Workload is marked Finished, which frees its quota.
func TestKueueAdmitsWhatFitsAndReleasesTheQuotaOfAFinishedWorkload(t *testing.T) {
	cp, k := e2e.ControlPlaneWithKueue(t, controlplane.Options{}, controlplane.KueueOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	kube := kubernetes.NewForConfigOrDie(cp.RESTConfig(controlplane.Admin))
	kq := kueueclient.NewForConfigOrDie(cp.RESTConfig(controlplane.Admin))

	// Kueue counts quota, not nodes; the nodes are there because a real cluster has them.
	err := controlplane.CreateNodes(ctx, kube,
		controlplane.NewNode("n1", corev1.ResourceList{"cpu": resource.MustParse("4")}),
		controlplane.NewNode("n2", corev1.ResourceList{"cpu": resource.MustParse("4")}))
	if err != nil {
		t.Fatal(err)
	}
	rf := &kueue.ResourceFlavor{ObjectMeta: metav1.ObjectMeta{Name: flavor}}
	if _, err := kq.KueueV1beta2().ResourceFlavors().Create(ctx, rf, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cohort := &kueue.Cohort{
		ObjectMeta: metav1.ObjectMeta{Name: "all"},
		Spec:       kueue.CohortSpec{ResourceGroups: cpuQuota("2")},
	}
	if _, err := kq.KueueV1beta2().Cohorts().Create(ctx, cohort, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, q := range []struct{ name, weight string }{{"team-a", "1"}, {"team-b", "2"}} {
		weight := resource.MustParse(q.weight)
		cq := &kueue.ClusterQueue{
			ObjectMeta: metav1.ObjectMeta{Name: q.name},
			Spec: kueue.ClusterQueueSpec{
				CohortName:     "all",
				ResourceGroups: cpuQuota("2"),
				// nil would admit from no namespace at all.
				NamespaceSelector: &metav1.LabelSelector{},
				FairSharing:       &kueue.FairSharing{Weight: &weight},
			},
		}
		if _, err := kq.KueueV1beta2().ClusterQueues().Create(ctx, cq, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		lq := &kueue.LocalQueue{
			ObjectMeta: metav1.ObjectMeta{Name: q.name, Namespace: namespace},
			Spec:       kueue.LocalQueueSpec{ClusterQueue: kueue.ClusterQueueReference(q.name)},
		}
		if _, err := kq.KueueV1beta2().LocalQueues(namespace).Create(ctx, lq, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	createWorkload(ctx, t, kq, "a1", "team-a", "3")
	createWorkload(ctx, t, kq, "b1", "team-b", "3")
	for _, name := range []string{"a1", "b1"} {
		wl := waitFor(ctx, t, kq, name, kueue.WorkloadAdmitted)
		if !meta.IsStatusConditionTrue(wl.Status.Conditions, kueue.WorkloadQuotaReserved) {
			t.Errorf("%s is Admitted without QuotaReserved: %v", name, wl.Status.Conditions)
		}
	}
	// Each queue borrows 1 CPU of the 6 the cohort tree can lend: a share of 1000/6 per mille,
	// divided by the weight and rounded up.
	waitForWeightedShares(ctx, t, kq, map[string]int64{"team-a": 167, "team-b": 84})

	start := time.Now()
	createWorkload(ctx, t, kq, "a2", "team-a", "2")
	pending := waitForPending(ctx, t, kq, "a2")
	t.Logf("a2 pending after %s: %s", time.Since(start).Round(time.Millisecond), pending.Message)

	start = time.Now()
	if err := controlplane.FinishWorkload(ctx, kq, namespace, "b1"); err != nil {
		t.Fatal(err)
	}
	wl := waitFor(ctx, t, kq, "a2", kueue.WorkloadAdmitted)
	t.Logf("a2 admitted %s after b1 finished", time.Since(start).Round(time.Millisecond))
	if wl.Status.Admission == nil || wl.Status.Admission.ClusterQueue != "team-a" {
		t.Errorf("a2's admission = %+v, want one to team-a", wl.Status.Admission)
	} else if got := wl.Status.Admission.PodSetAssignments[0].Flavors["cpu"]; got != flavor {
		t.Errorf("a2's cpu flavor = %q, want %q", got, flavor)
	}
	// team-a now uses 5 CPUs of a nominal 2: 3 borrowed of 6, 500 per mille; team-b borrows none.
	waitForWeightedShares(ctx, t, kq, map[string]int64{"team-a": 500, "team-b": 0})

	// A restarted Kueue rebuilds its usage from the admitted Workloads: 5 of 6 CPUs are in use,
	// so a Workload of 2 waits.
	start = time.Now()
	if err := k.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("Kueue restarted and ready in %s", time.Since(start).Round(time.Millisecond))
	createWorkload(ctx, t, kq, "a3", "team-a", "2")
	waitForPending(ctx, t, kq, "a3")
	waitForWeightedShares(ctx, t, kq, map[string]int64{"team-a": 500, "team-b": 0})
}

// cpuQuota is one resource group: quantity CPUs of the default flavor.
func cpuQuota(quantity string) []kueue.ResourceGroup {
	return []kueue.ResourceGroup{{
		CoveredResources: []corev1.ResourceName{"cpu"},
		Flavors: []kueue.FlavorQuotas{{
			Name:      flavor,
			Resources: []kueue.ResourceQuota{{Name: "cpu", NominalQuota: resource.MustParse(quantity)}},
		}},
	}}
}

// createWorkload creates a Workload of one pod asking for cpu CPUs in the LocalQueue queue.
func createWorkload(ctx context.Context, t *testing.T, kq kueueclient.Interface, name, queue, cpu string) {
	t.Helper()
	wl := &kueue.Workload{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: kueue.WorkloadSpec{
			QueueName: kueue.LocalQueueName(queue),
			PodSets: []kueue.PodSet{{
				Name:  kueue.DefaultPodSetName,
				Count: 1,
				Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Containers: []corev1.Container{{
						Name:      "c",
						Image:     "x",
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{"cpu": resource.MustParse(cpu)}},
					}},
				}},
			}},
		},
	}
	if _, err := kq.KueueV1beta2().Workloads(namespace).Create(ctx, wl, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func waitFor(ctx context.Context, t *testing.T, kq kueueclient.Interface, name, condition string) *kueue.Workload {
	t.Helper()
	wl, err := controlplane.WaitForWorkloadCondition(ctx, kq, namespace, name, condition, kueueWait)
	if err != nil {
		t.Fatal(err)
	}
	return wl
}

// waitForPending waits until Kueue has tried the Workload and found no quota for it: its
// QuotaReserved condition is False.
func waitForPending(ctx context.Context, t *testing.T, kq kueueclient.Interface, name string) metav1.Condition {
	t.Helper()
	var found metav1.Condition
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, kueueWait, true, func(ctx context.Context) (bool, error) {
		wl := getWorkload(ctx, t, kq, name)
		c := meta.FindStatusCondition(wl.Status.Conditions, kueue.WorkloadQuotaReserved)
		if c == nil {
			return false, nil
		}
		if c.Status == metav1.ConditionTrue {
			return false, fmt.Errorf("%s has quota reserved: %s", name, c.Message)
		}
		found = *c
		return true, nil
	})
	if err != nil {
		t.Fatalf("%s never pending: %v", name, err)
	}
	return found
}

func getWorkload(ctx context.Context, t *testing.T, kq kueueclient.Interface, name string) *kueue.Workload {
	t.Helper()
	wl, err := kq.KueueV1beta2().Workloads(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return wl
}

// waitForWeightedShares waits until each ClusterQueue publishes the given
// status.fairSharing.weightedShare.
func waitForWeightedShares(ctx context.Context, t *testing.T, kq kueueclient.Interface, want map[string]int64) {
	t.Helper()
	got := map[string]int64{}
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, kueueWait, true, func(ctx context.Context) (bool, error) {
		for name := range want {
			cq, err := kq.KueueV1beta2().ClusterQueues().Get(ctx, name, metav1.GetOptions{})
			if err != nil || cq.Status.FairSharing == nil {
				return false, nil
			}
			got[name] = cq.Status.FairSharing.WeightedShare
		}
		for name, share := range want {
			if got[name] != share {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("weighted shares = %v, want %v: %v", got, want, err)
	}
}
