package kueue

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/timestamppb"
	corev1 "k8s.io/api/core/v1"
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
				{Name: "lone", ResourceGroups: []*arbiterv1.ResourceGroup{group("default", "cpu", quota(1000))}},
				{Name: "org"}, // implicit: only named as a parent
				{Name: "research", Parent: "org", ResourceGroups: []*arbiterv1.ResourceGroup{group("default", "cpu", quota(10000))}},
				{
					Name: "team-a", Parent: "research",
					// One flavor is still a flavored queue: the answer names it.
					ResourceGroups: []*arbiterv1.ResourceGroup{group("default",
						"cpu", quota(4000),
						"nvidia.com/gpu", &arbiterv1.FlavorResourceQuota{Nominal: 2, BorrowingLimit: ptr.To(2.0), LendingLimit: ptr.To(1.0)})},
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
					Pods:    []*arbiterv1.Pod{{Name: "main", PodSet: "main", Requests: map[string]float64{"cpu": 1000}, Phase: arbiterv1.PodPhase_POD_PHASE_RELEASING, NodeName: releasingNode}},
					Flavors: []*arbiterv1.PodSetFlavors{{PodSet: "main", Flavors: map[string]string{"cpu": "default"}}},
				},
				{
					// Ordered by its eviction by an admission check, as Kueue requeues it.
					Name: "ns-a/retried", Queue: "team-a", Priority: 5, CreationTime: timestamppb.New(kueuetest.T0.Add(time.Hour)),
					Pods: []*arbiterv1.Pod{{Name: "main", PodSet: "main", Requests: map[string]float64{"nvidia.com/gpu": 2}}}, // 3 pods, 1 reclaimable
				},
				{
					Name: "ns-a/running", Queue: "team-a", CreationTime: timestamppb.New(kueuetest.T0),
					Admitted: true, AdmissionTime: timestamppb.New(kueuetest.T0.Add(time.Minute)),
					Pods:    []*arbiterv1.Pod{{Name: "main", PodSet: "main", Requests: map[string]float64{"cpu": 3000}}},
					Flavors: []*arbiterv1.PodSetFlavors{{PodSet: "main", Flavors: map[string]string{"cpu": "default"}}},
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

// group is a resource group of one flavor with the quotas of pairs (resource, quota).
func group(flavor string, pairs ...any) *arbiterv1.ResourceGroup {
	g := &arbiterv1.ResourceGroup{}
	fq := &arbiterv1.FlavorQuotas{Flavor: flavor, Resources: map[string]*arbiterv1.FlavorResourceQuota{}}
	for i := 0; i < len(pairs); i += 2 {
		g.CoveredResources = append(g.CoveredResources, pairs[i].(string))
		fq.Resources[pairs[i].(string)] = pairs[i+1].(*arbiterv1.FlavorResourceQuota)
	}
	g.Flavors = []*arbiterv1.FlavorQuotas{fq}
	return g
}

func quota(nominal float64) *arbiterv1.FlavorResourceQuota {
	return &arbiterv1.FlavorResourceQuota{Nominal: nominal}
}

func TestBuildMapsResourceFlavors(t *testing.T) {
	spotTaint := corev1.Taint{Key: "spot", Value: "true", Effect: corev1.TaintEffectNoSchedule}
	onDemand := kueuetest.ResourceFlavor("on-demand", map[string]string{"tier": "on-demand"})
	spot := kueuetest.ResourceFlavor("spot", map[string]string{"tier": "spot"}, spotTaint)
	spot.Spec.Tolerations = []corev1.Toleration{{Key: "preemptible", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}}
	// Two groups: cpu and memory in on-demand then spot, GPUs in one flavor of their own.
	cpuMem := kueuetest.ResourceGroup(kueuetest.Flavor("on-demand", "cpu", "4", "memory", "8Gi"), kueuetest.Flavor("spot", "cpu", "8", "memory", "16Gi"))
	bl, ll := resource.MustParse("2"), resource.MustParse("1")
	cpuMem.Flavors[1].Resources[0].BorrowingLimit, cpuMem.Flavors[1].Resources[0].LendingLimit = &bl, &ll
	gpus := kueuetest.ResourceGroup(kueuetest.Flavor("a100", "nvidia.com/gpu", "2"))
	cq := kueuetest.ClusterQueue("team-a", "pool", nil)
	cq.Spec.ResourceGroups = []kueue.ResourceGroup{cpuMem, gpus}
	cq.Spec.FlavorFungibility = &kueue.FlavorFungibility{WhenCanBorrow: kueue.TryNextFlavor, WhenCanPreempt: kueue.TryNextFlavor, Preference: ptr.To(kueue.PreemptionOverBorrowing)}
	pool := kueuetest.Cohort("pool", "", nil)
	pool.Spec.ResourceGroups = []kueue.ResourceGroup{kueuetest.ResourceGroup(kueuetest.Flavor("spot", "cpu", "16"))}

	pending := kueuetest.Pending("a", "pending", "lq", 0, 2, "cpu", "1", "memory", "1Gi")
	pending.Spec.PodSets[0].Template.Spec.NodeSelector = map[string]string{"tier": "spot"}
	pending.Spec.PodSets[0].Template.Spec.Tolerations = []corev1.Toleration{{Key: "spot", Operator: corev1.TolerationOpEqual, Value: "true", Effect: corev1.TaintEffectNoSchedule}}
	pending.Spec.PodSets = append(pending.Spec.PodSets, kueue.PodSet{Name: "workers", Count: 1, Template: pending.Spec.PodSets[0].Template})
	pending.Spec.PodSets[1].Template.Spec.NodeSelector = nil
	pending.Spec.PodSets[1].Template.Spec.Tolerations = nil
	// A required node affinity a node selector can say is matched as one; another is not.
	pending.Spec.PodSets = append(pending.Spec.PodSets, *pending.Spec.PodSets[1].DeepCopy(), *pending.Spec.PodSets[1].DeepCopy())
	pending.Spec.PodSets[2].Name, pending.Spec.PodSets[3].Name = "x-affine", "y-either"
	affinity := func(values ...string) *corev1.Affinity {
		return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "tier", Operator: corev1.NodeSelectorOpIn, Values: values}}}},
		}}}
	}
	pending.Spec.PodSets[2].Template.Spec.Affinity = affinity("on-demand")
	pending.Spec.PodSets[3].Template.Spec.Affinity = affinity("on-demand", "spot")
	onSpot := kueuetest.ReserveIn(kueuetest.Pending("a", "on-spot", "lq", 0, 2, "cpu", "1", "nvidia.com/gpu", "1"), "team-a", "spot", time.Minute, true)
	onSpot.Status.Admission.PodSetAssignments[0].Flavors["nvidia.com/gpu"] = "a100"
	// Admitted before team-a covered memory: Kueue assigned memory no flavor and charges it
	// nowhere; its example-com/widget is covered by no group and not charged either.
	stale := kueuetest.ReserveIn(kueuetest.Pending("a", "stale", "lq", 0, 1, "cpu", "1", "memory", "1Gi", "example.com/widget", "1"), "team-a", "on-demand", time.Minute, false)
	delete(stale.Status.Admission.PodSetAssignments[0].Flavors, "memory")
	delete(stale.Status.Admission.PodSetAssignments[0].Flavors, "example.com/widget")

	s := &State{
		Now:             kueuetest.T0,
		ResourceFlavors: []kueue.ResourceFlavor{spot, onDemand},
		ClusterQueues:   []kueue.ClusterQueue{cq},
		Cohorts:         []kueue.Cohort{pool},
		LocalQueues:     []kueue.LocalQueue{kueuetest.LocalQueue("a", "lq", "team-a")},
		Workloads:       []kueue.Workload{pending, onSpot, stale},
	}
	m, err := Build(s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	snap := m.Request.GetSnapshot()
	for _, c := range []struct {
		what      string
		want, got any
	}{
		{"resource flavors, by name", []*arbiterv1.ResourceFlavor{
			{Name: "on-demand", NodeLabels: map[string]string{"tier": "on-demand"}},
			{Name: "spot", NodeLabels: map[string]string{"tier": "spot"},
				NodeTaints:  []*arbiterv1.Taint{{Key: "spot", Value: "true", Effect: "NoSchedule"}},
				Tolerations: []*arbiterv1.Toleration{{Key: "preemptible", Operator: "Exists", Effect: "NoExecute"}}},
		}, snap.GetResourceFlavors()},
		{"cohort quota", &arbiterv1.Queue{Name: "pool", ResourceGroups: []*arbiterv1.ResourceGroup{group("spot", "cpu", quota(16000))}}, snap.GetQueues()[0]},
		{"ClusterQueue groups, flavors in Kueue's order", []*arbiterv1.ResourceGroup{
			{CoveredResources: []string{"cpu", "memory"}, Flavors: []*arbiterv1.FlavorQuotas{
				{Flavor: "on-demand", Resources: map[string]*arbiterv1.FlavorResourceQuota{"cpu": quota(4000), "memory": quota(8 << 30)}},
				{Flavor: "spot", Resources: map[string]*arbiterv1.FlavorResourceQuota{
					"cpu": {Nominal: 8000, BorrowingLimit: ptr.To(2000.0), LendingLimit: ptr.To(1000.0)}, "memory": quota(16 << 30)}},
			}},
			group("a100", "nvidia.com/gpu", quota(2)),
		}, snap.GetQueues()[1].GetResourceGroups()},
		{"no legacy maps", 0, len(snap.GetQueues()[1].GetDeserved()) + len(snap.GetQueues()[1].GetBorrowingLimit()) + len(snap.GetQueues()[1].GetLendingLimit())},
		{"flavor fungibility", &arbiterv1.FlavorFungibility{
			WhenCanBorrow:  arbiterv1.FlavorFungibility_WHEN_CAN_BORROW_TRY_NEXT_FLAVOR,
			WhenCanPreempt: arbiterv1.FlavorFungibility_WHEN_CAN_PREEMPT_TRY_NEXT_FLAVOR,
			Preference:     arbiterv1.FlavorFungibility_PREFERENCE_PREEMPTION_OVER_BORROWING,
		}, snap.GetQueues()[1].GetFlavorFungibility()},
		{"a reserved workload's flavors, per pod set", &arbiterv1.PodGroup{
			Name: "a/on-spot", Queue: "team-a", CreationTime: timestamppb.New(kueuetest.T0),
			Admitted: true, AdmissionTime: timestamppb.New(kueuetest.T0.Add(time.Minute)),
			Pods:    []*arbiterv1.Pod{{Name: "main", PodSet: "main", Requests: map[string]float64{"cpu": 2000, "nvidia.com/gpu": 2}}},
			Flavors: []*arbiterv1.PodSetFlavors{{PodSet: "main", Flavors: map[string]string{"cpu": "spot", "nvidia.com/gpu": "a100"}}},
		}, snap.GetPodGroups()[0]},
		{"a pending workload's pod sets, with what decides their flavors", []*arbiterv1.Pod{
			{Name: "main", PodSet: "main", Requests: map[string]float64{"cpu": 2000, "memory": 2 << 30},
				NodeSelector: map[string]string{"tier": "spot"}, Tolerations: []*arbiterv1.Toleration{{Key: "spot", Operator: "Equal", Value: "true", Effect: "NoSchedule"}}},
			{Name: "workers", PodSet: "workers", Requests: map[string]float64{"cpu": 1000, "memory": 1 << 30}},
			{Name: "x-affine", PodSet: "x-affine", Requests: map[string]float64{"cpu": 1000, "memory": 1 << 30}, NodeSelector: map[string]string{"tier": "on-demand"}},
			{Name: "y-either", PodSet: "y-either", Requests: map[string]float64{"cpu": 1000, "memory": 1 << 30}},
		}, snap.GetPodGroups()[1].GetPods()},
		{"a covered resource the admission gave no flavor is charged nowhere, an uncovered one stays", []*arbiterv1.Pod{
			{Name: "main", PodSet: "main", Requests: map[string]float64{"cpu": 1000, "example.com/widget": 1}},
		}, snap.GetPodGroups()[2].GetPods()},
		{"Kueue's flavors kept for the reports", map[string]map[string]string{"main": {"cpu": "spot", "nvidia.com/gpu": "a100"}}, m.Workloads["a/on-spot"].Flavors},
		{"the charged usage", map[string]float64{"cpu": 1000, "example.com/widget": 1}, m.Workloads["a/stale"].Requests},
	} {
		if diff := cmp.Diff(c.want, c.got, protocmp.Transform()); diff != "" {
			t.Errorf("%s (-want +got):\n%s", c.what, diff)
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
