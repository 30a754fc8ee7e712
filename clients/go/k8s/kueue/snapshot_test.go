package kueue

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/timestamppb"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	arbiterv1 "arbiter.dev/clients/go/arbiterv1"

	"arbiter.dev/clients/go/test/kueuetest"
)

func TestBuildMapsKueueObjectsToTheKueueModel(t *testing.T) {
	teamA := kueuetest.ClusterQueue("team-a", "research", kueuetest.Quota("cpu", "4", "nvidia.com/gpu", "2"))
	bl, ll := resource.MustParse("2"), resource.MustParse("1")
	teamA.Spec.ResourceGroups[0].Flavors[0].Resources[1].BorrowingLimit = &bl
	teamA.Spec.ResourceGroups[0].Flavors[0].Resources[1].LendingLimit = &ll
	teamA.Spec.FairSharing = &kueue.FairSharing{Weight: ptr.To(resource.MustParse("2"))}
	teamA.Spec.Preemption = &kueue.ClusterQueuePreemption{ReclaimWithinCohort: kueue.PreemptionPolicyAny, WithinClusterQueue: kueue.PreemptionPolicyLowerPriority}
	lone := kueuetest.ClusterQueue("lone", "", kueuetest.Quota("cpu", "1"))

	running := kueuetest.Reserve(kueuetest.Pending("ns-a", "running", "lq-a", 0, 2, "cpu", "1500m"), "team-a", time.Minute, true)
	releasing := kueuetest.Reserve(kueuetest.Pending("ns-a", "releasing", "lq-a", time.Second, 1, "cpu", "1"), "team-a", time.Minute, true)
	releasing.Status.Conditions = append(releasing.Status.Conditions, metav1.Condition{Type: kueue.WorkloadEvicted, Status: metav1.ConditionTrue, Reason: "Preempted"})
	retried := kueuetest.Pending("ns-a", "retried", "lq-a", 2*time.Second, 3, "nvidia.com/gpu", "1")
	retried.Spec.Priority = ptr.To[int32](5)
	retried.Status.Conditions = []metav1.Condition{{Type: kueue.WorkloadEvicted, Status: metav1.ConditionTrue, Reason: kueue.WorkloadEvictedByAdmissionCheck, LastTransitionTime: metav1.NewTime(kueuetest.T0.Add(time.Hour))}}
	retried.Status.ReclaimablePods = []kueue.ReclaimablePod{{Name: "main", Count: 1}}
	finished := kueuetest.Reserve(kueuetest.Pending("ns-a", "finished", "lq-a", 0, 1, "cpu", "1"), "team-a", 0, true)
	finished.Status.Conditions = append(finished.Status.Conditions, metav1.Condition{Type: kueue.WorkloadFinished, Status: metav1.ConditionTrue, Reason: "Succeeded"})
	inactive := kueuetest.Pending("ns-a", "inactive", "lq-a", 0, 1, "cpu", "1")
	inactive.Spec.Active = ptr.To(false)
	lost := kueuetest.Pending("ns-b", "lost", "no-such-queue", 0, 1, "cpu", "1")
	dangling := kueuetest.Pending("ns-b", "dangling", "lq-gone", 0, 1, "cpu", "1")

	s := &State{
		Now:           kueuetest.T0.Add(2 * time.Hour),
		ClusterQueues: []kueue.ClusterQueue{teamA, lone},
		Cohorts:       []kueue.Cohort{kueuetest.Cohort("research", "org", kueuetest.Quota("cpu", "10"))},
		LocalQueues:   []kueue.LocalQueue{kueuetest.LocalQueue("ns-a", "lq-a", "team-a"), kueuetest.LocalQueue("ns-b", "lq-gone", "deleted-cq")},
		Workloads:     []kueue.Workload{running, releasing, retried, finished, inactive, lost, dangling},
	}
	m, err := Build(s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := &arbiterv1.ScheduleRequest{
		Snapshot: &arbiterv1.Snapshot{
			Now: timestamppb.New(kueuetest.T0.Add(2 * time.Hour)),
			Queues: []*arbiterv1.Queue{
				{Name: "lone", Deserved: map[string]float64{"cpu": 1000}},
				{Name: "org"}, // implicit: only named as a parent
				{Name: "research", Parent: "org", Deserved: map[string]float64{"cpu": 10000}},
				{
					Name: "team-a", Parent: "research",
					Deserved:          map[string]float64{"cpu": 4000, "nvidia.com/gpu": 2},
					BorrowingLimit:    map[string]float64{"nvidia.com/gpu": 2},
					LendingLimit:      map[string]float64{"nvidia.com/gpu": 1},
					FairSharingWeight: ptr.To(2.0),
					KueuePreemption: &arbiterv1.KueuePreemption{
						WithinClusterQueue:  arbiterv1.KueuePreemption_WITHIN_CLUSTER_QUEUE_LOWER_PRIORITY,
						ReclaimWithinCohort: arbiterv1.KueuePreemption_RECLAIM_WITHIN_COHORT_ANY,
					},
				},
			},
			Nodes: []*arbiterv1.Node{{Name: releasingNode}},
			PodGroups: []*arbiterv1.PodGroup{
				{
					Name: "ns-a/releasing", Queue: "team-a", CreationTime: timestamppb.New(kueuetest.T0.Add(time.Second)),
					Admitted: true, AdmissionTime: timestamppb.New(kueuetest.T0.Add(time.Minute)),
					Pods: []*arbiterv1.Pod{{Name: "main", Requests: map[string]float64{"cpu": 1000}, Phase: arbiterv1.PodPhase_POD_PHASE_RELEASING, NodeName: releasingNode}},
				},
				{
					// Ordered by its eviction by an admission check, as Kueue requeues it.
					Name: "ns-a/retried", Queue: "team-a", Priority: 5, CreationTime: timestamppb.New(kueuetest.T0.Add(time.Hour)),
					Pods: []*arbiterv1.Pod{{Name: "main", Requests: map[string]float64{"nvidia.com/gpu": 2}}}, // 3 pods, 1 reclaimable
				},
				{
					Name: "ns-a/running", Queue: "team-a", CreationTime: timestamppb.New(kueuetest.T0),
					Admitted: true, AdmissionTime: timestamppb.New(kueuetest.T0.Add(time.Minute)),
					Pods: []*arbiterv1.Pod{{Name: "main", Requests: map[string]float64{"cpu": 3000}}},
				},
			},
		},
		Policy: &arbiterv1.Policy{FairnessModel: arbiterv1.FairnessModel_FAIRNESS_MODEL_KUEUE},
	}
	if diff := cmp.Diff(want, m.Request, protocmp.Transform()); diff != "" {
		t.Errorf("request (-want +got):\n%s", diff)
	}
	wantSkipped := []Skipped{
		{Workload: "ns-a/inactive", Reason: "inactive", Message: "spec.active is false"},
		{Workload: "ns-b/dangling", Reason: "cluster-queue-not-found", Message: `LocalQueue lq-gone points at ClusterQueue "deleted-cq", which does not exist`},
		{Workload: "ns-b/lost", Reason: "local-queue-not-found", Message: `LocalQueue "no-such-queue" does not exist in namespace ns-b`},
	}
	if diff := cmp.Diff(wantSkipped, m.Skipped); diff != "" {
		t.Errorf("skipped (-want +got):\n%s", diff)
	}
	if m.Root("team-a") != "org" || m.Root("lone") != "lone" || m.Kind["org"] != KindCohort || m.Kind["lone"] != KindClusterQueue {
		t.Errorf("tree: root(team-a)=%s root(lone)=%s kinds=%v", m.Root("team-a"), m.Root("lone"), m.Kind)
	}
}

func TestBuildRefusesAResourceOfferedInTwoFlavors(t *testing.T) {
	cq := kueuetest.ClusterQueue("gpus", "", kueuetest.Quota("nvidia.com/gpu", "4"))
	cq.Spec.ResourceGroups[0].Flavors = append(cq.Spec.ResourceGroups[0].Flavors,
		kueue.FlavorQuotas{Name: "spot", Resources: kueuetest.Quota("nvidia.com/gpu", "8")})
	_, err := Build(&State{Now: kueuetest.T0, ClusterQueues: []kueue.ClusterQueue{cq}}, Options{})
	var unsupported *UnsupportedError
	if !errors.As(err, &unsupported) {
		t.Fatalf("err = %v, want an UnsupportedError", err)
	}
	for _, part := range []string{"ClusterQueue gpus", "nvidia.com/gpu", "default", "spot", "not yet supported"} {
		if !strings.Contains(err.Error(), part) {
			t.Errorf("%q does not name %q", err, part)
		}
	}
}

func TestBuildRefusesACohortCycle(t *testing.T) {
	_, err := Build(&State{Now: kueuetest.T0, Cohorts: []kueue.Cohort{kueuetest.Cohort("a", "b", nil), kueuetest.Cohort("b", "a", nil)}}, Options{})
	if err == nil || !strings.Contains(err.Error(), "cycle") {
		t.Fatalf("err = %v, want a cohort cycle", err)
	}
}

func TestBuildRefusesAClusterQueueAndACohortOfOneName(t *testing.T) {
	_, err := Build(&State{Now: kueuetest.T0,
		ClusterQueues: []kueue.ClusterQueue{kueuetest.ClusterQueue("shared", "", kueuetest.Quota("cpu", "1"))},
		Cohorts:       []kueue.Cohort{kueuetest.Cohort("shared", "", nil)},
	}, Options{})
	if err == nil || !strings.Contains(err.Error(), "same name") {
		t.Fatalf("err = %v, want a name clash", err)
	}
}

func TestBuildLeavesOutWorkloadsOfNamespacesTheClusterQueueDoesNotSelect(t *testing.T) {
	open := kueuetest.ClusterQueue("open", "", kueuetest.Quota("cpu", "4"))
	none := kueuetest.ClusterQueue("none", "", kueuetest.Quota("cpu", "4"))
	none.Spec.NamespaceSelector = nil // Kueue admits from no namespace
	teams := kueuetest.ClusterQueue("teams", "", kueuetest.Quota("cpu", "4"))
	teams.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"kind": "team"}}
	s := &State{
		Now:           kueuetest.T0,
		Namespaces:    map[string]map[string]string{"x": {"kind": "team"}, "y": {}},
		ClusterQueues: []kueue.ClusterQueue{open, none, teams},
		LocalQueues: []kueue.LocalQueue{kueuetest.LocalQueue("x", "open", "open"), kueuetest.LocalQueue("x", "none", "none"),
			kueuetest.LocalQueue("x", "teams", "teams"), kueuetest.LocalQueue("y", "teams", "teams")},
		Workloads: []kueue.Workload{kueuetest.Pending("x", "w-open", "open", 0, 1, "cpu", "1"), kueuetest.Pending("x", "w-none", "none", 0, 1, "cpu", "1"),
			kueuetest.Pending("x", "w-team", "teams", 0, 1, "cpu", "1"), kueuetest.Pending("y", "w-other", "teams", 0, 1, "cpu", "1")},
	}
	m, err := Build(s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := len(m.Request.Snapshot.PodGroups); got != 2 || m.Workloads["x/w-open"] == nil || m.Workloads["x/w-team"] == nil {
		t.Errorf("model has %d pod groups (%v), want x/w-open and x/w-team", got, sortedKeys(m.Workloads))
	}
	var reasons []string
	for _, sk := range m.Skipped {
		reasons = append(reasons, sk.Workload+" "+sk.Reason)
	}
	if want := []string{"x/w-none namespace-not-selected", "y/w-other namespace-not-selected"}; !cmp.Equal(reasons, want) {
		t.Errorf("skipped %v, want %v", reasons, want)
	}
}

func TestDescribeWritesEveryNumberInFull(t *testing.T) {
	got := Describe(map[string]float64{"memory": 274877906944, "cpu": 1500, "nvidia.com/gpu": 0.5})
	if want := "cpu=1500, memory=274877906944, nvidia.com/gpu=0.5"; got != want {
		t.Errorf("describe = %q, want %q", got, want)
	}
}
