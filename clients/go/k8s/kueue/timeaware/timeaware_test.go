package timeaware

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"arbiter.dev/clients/go/k8s/usage"

	kueuemodel "arbiter.dev/clients/go/k8s/kueue"

	"arbiter.dev/clients/go/test/kueuetest"
)

// storyOne is the seed's story 1 on Kueue: a cohort holds 8 GPUs, team-a and team-b hold none of
// their own, and each has an endless backlog of jobs that take all 8. reserved (a workload key
// of ns a or b) has its quota reserved and waits for the check.
func storyOne(reserved string) *kueuemodel.State {
	s := &kueuemodel.State{
		Now:           kueuetest.T0.Add(2 * time.Hour),
		ClusterQueues: []kueue.ClusterQueue{kueuetest.ClusterQueue("team-a", "pool", kueuetest.Quota("nvidia.com/gpu", "0")), kueuetest.ClusterQueue("team-b", "pool", kueuetest.Quota("nvidia.com/gpu", "0"))},
		Cohorts:       []kueue.Cohort{kueuetest.Cohort("pool", "", kueuetest.Quota("nvidia.com/gpu", "8"))},
		LocalQueues:   []kueue.LocalQueue{kueuetest.LocalQueue("a", "lq", "team-a"), kueuetest.LocalQueue("b", "lq", "team-b")},
	}
	for i := 0; i < 3; i++ {
		for _, team := range []string{"a", "b"} {
			w := kueuetest.Pending(team, fmt.Sprintf("job-%d", i), "lq", time.Duration(i)*time.Minute, 1, "nvidia.com/gpu", "8")
			if kueuemodel.Key(team, w.Name) == reserved {
				w = kueuetest.Reserve(w, "team-"+team, time.Hour, false)
				w.Status.AdmissionChecks = []kueue.AdmissionCheckState{{Name: "time-aware", State: kueue.CheckStatePending}}
			}
			s.Workloads = append(s.Workloads, w)
		}
	}
	return s
}

// ledgerAfter is a ledger where team-a held all 8 GPUs for aHours and team-b for bHours.
func ledgerAfter(aHours, bHours float64) *usage.Ledger {
	hours := aHours + bHours
	return &usage.Ledger{
		Updated: kueuetest.T0.Add(2 * time.Hour),
		Queues: map[string]map[string]float64{
			"team-a": {"nvidia.com/gpu": 8 * 3600 * aHours},
			"team-b": {"nvidia.com/gpu": 8 * 3600 * bHours},
			"pool":   {"nvidia.com/gpu": 8 * 3600 * hours},
		},
		Capacity: map[string]float64{"nvidia.com/gpu": 8 * 3600 * hours},
	}
}

func decide(t *testing.T, s *kueuemodel.State, l *usage.Ledger, k float64, key string) Decision {
	t.Helper()
	m, err := kueuemodel.Build(s, kueuemodel.Options{})
	if err != nil {
		t.Fatal(err)
	}
	d, req, err := Decide(context.Background(), kueuetest.ArbiterClient(t), m, l, k, key)
	if err != nil {
		t.Fatal(err)
	}
	if req == nil || req.GetPolicy().GetKValue() != k {
		t.Errorf("request %v, want the time-aware request with k=%g", req.GetPolicy(), k)
	}
	return d
}

func TestTimeAwareCheckRetriesTheClusterQueueThatUsedMore(t *testing.T) {
	// team-a ran the last hour; Kueue reserves quota for its next job (the older one).
	d := decide(t, storyOne("a/job-1"), ledgerAfter(1, 0), 1, "a/job-1")
	if d.State != kueue.CheckStateRetry || d.Rival != "team-b" {
		t.Fatalf("%+v, want Retry for team-b", d)
	}
	for _, part := range []string{"team-b deserves the quota more", "b/job-0", "k=1"} {
		if !strings.Contains(d.Message, part) {
			t.Errorf("message %q lacks %q", d.Message, part)
		}
	}
	// Once team-b's job has its quota, the check lets it through: team-a used more.
	if d := decide(t, storyOne("b/job-0"), ledgerAfter(1, 0), 1, "b/job-0"); d.State != kueue.CheckStateReady {
		t.Errorf("team-b after team-a's hour: %+v, want Ready", d)
	}
	// With equal history nothing is overturned.
	if d := decide(t, storyOne("a/job-1"), ledgerAfter(1, 1), 1, "a/job-1"); d.State != kueue.CheckStateReady {
		t.Errorf("equal usage: %+v, want Ready", d)
	}
}

// flavoredStoryOne is storyOne with the cohort's GPUs in two flavors, a100 then h100, 8 each;
// every job still takes 8, so one flavor holds it. The reserved workload holds h100.
func flavoredStoryOne(reserved string) *kueuemodel.State {
	s := storyOne(reserved)
	for i := range s.ClusterQueues {
		s.ClusterQueues[i].Spec.ResourceGroups = []kueue.ResourceGroup{kueuetest.ResourceGroup(
			kueuetest.Flavor("a100", "nvidia.com/gpu", "0"), kueuetest.Flavor("h100", "nvidia.com/gpu", "0"))}
	}
	s.Cohorts[0].Spec.ResourceGroups = []kueue.ResourceGroup{kueuetest.ResourceGroup(
		kueuetest.Flavor("a100", "nvidia.com/gpu", "8"), kueuetest.Flavor("h100", "nvidia.com/gpu", "8"))}
	for i := range s.Workloads {
		if a := s.Workloads[i].Status.Admission; a != nil {
			a.PodSetAssignments[0].Flavors["nvidia.com/gpu"] = "h100"
		}
	}
	return s
}

// The time-aware division knows resources, not flavors: a ClusterQueue's quota and usage are
// summed over its flavors, and the rival's workload must fit (arbiter's Kueue model picks its
// flavor) in what the reserved one gives back.
func TestTimeAwareCheckSumsTheFlavorsOfAResource(t *testing.T) {
	m, err := kueuemodel.Build(flavoredStoryOne("a/job-1"), kueuemodel.Options{})
	if err != nil {
		t.Fatal(err)
	}
	req := m.TimeAwareRequest("pool", ledgerAfter(1, 0), 1)
	if got := req.GetSnapshot().GetCapacity()["nvidia.com/gpu"]; got != 16 {
		t.Errorf("capacity %g GPUs, want a100's 8 and h100's 8", got)
	}
	if got := m.Allocated()["pool"]["nvidia.com/gpu"]; got != 0 {
		t.Errorf("allocated %g, want 0: the reserved workload waits for its check", got)
	}
	d := decide(t, flavoredStoryOne("a/job-1"), ledgerAfter(1, 0), 1, "a/job-1")
	if d.State != kueue.CheckStateRetry || d.Rival != "team-b" || !strings.Contains(d.Message, "nvidia.com/gpu=") {
		t.Fatalf("%+v, want Retry for team-b", d)
	}
	if d := decide(t, flavoredStoryOne("a/job-1"), ledgerAfter(1, 1), 1, "a/job-1"); d.State != kueue.CheckStateReady {
		t.Errorf("equal usage: %+v, want Ready", d)
	}
}

func TestTimeAwareCheckWithKZeroIsReadyWhatever(t *testing.T) {
	if d := decide(t, storyOne("a/job-1"), ledgerAfter(5, 0), 0, "a/job-1"); d.State != kueue.CheckStateReady {
		t.Fatalf("k=0: %+v, want Ready", d)
	}
	// Random cohorts, quotas, weights, workloads and histories: with k = 0 every workload Kueue
	// reserved quota for goes through.
	rng := rand.New(rand.NewPCG(7, 16))
	arb := kueuetest.ArbiterClient(t)
	for trial := 0; trial < 40; trial++ {
		s, keys := randomState(rng)
		m, err := kueuemodel.Build(s, kueuemodel.Options{})
		if err != nil {
			t.Fatal(err)
		}
		l := &usage.Ledger{Queues: map[string]map[string]float64{}, Capacity: map[string]float64{"cpu": 1e9}}
		for name := range m.Kind {
			l.Queues[name] = map[string]float64{"cpu": rng.Float64() * 1e8}
		}
		for _, key := range keys {
			d, _, err := Decide(context.Background(), arb, m, l, 0, key)
			if err != nil {
				t.Fatal(err)
			}
			if d.State != kueue.CheckStateReady {
				t.Fatalf("trial %d, %s: %+v with k=0", trial, key, d)
			}
		}
	}
}

// randomState is 2–4 ClusterQueues in one cohort with random quotas and weights, and random
// workloads, some reserved; it returns the reserved keys.
func randomState(rng *rand.Rand) (*kueuemodel.State, []string) {
	s := &kueuemodel.State{Now: kueuetest.T0.Add(time.Hour), Cohorts: []kueue.Cohort{kueuetest.Cohort("pool", "", kueuetest.Quota("cpu", fmt.Sprint(rng.IntN(8))))}}
	var reserved []string
	for q := 0; q < 2+rng.IntN(3); q++ {
		cq := kueuetest.ClusterQueue(fmt.Sprintf("cq-%d", q), "pool", kueuetest.Quota("cpu", fmt.Sprint(rng.IntN(6))))
		if rng.IntN(2) == 0 {
			w := kueuetest.Quantity(fmt.Sprint(rng.IntN(4)))
			cq.Spec.FairSharing = &kueue.FairSharing{Weight: &w}
		}
		s.ClusterQueues = append(s.ClusterQueues, cq)
		ns := fmt.Sprintf("ns-%d", q)
		s.LocalQueues = append(s.LocalQueues, kueuetest.LocalQueue(ns, "lq", cq.Name))
		for i := 0; i < rng.IntN(4); i++ {
			w := kueuetest.Pending(ns, fmt.Sprintf("w-%d", i), "lq", time.Duration(rng.IntN(60))*time.Minute, 1+rng.Int32N(3), "cpu", fmt.Sprint(1+rng.IntN(3)))
			if rng.IntN(2) == 0 {
				w = kueuetest.Reserve(w, cq.Name, time.Duration(rng.IntN(60))*time.Minute, false)
				reserved = append(reserved, kueuemodel.WorkloadKey(&w))
			}
			s.Workloads = append(s.Workloads, w)
		}
	}
	return s, reserved
}

func TestTimeAwareCheckLetsThroughWhatNoRivalCouldUse(t *testing.T) {
	// No other ClusterQueue waits.
	s := storyOne("a/job-1")
	var onlyA []kueue.Workload
	for _, w := range s.Workloads {
		if w.Namespace == "a" {
			onlyA = append(onlyA, w)
		}
	}
	s.Workloads = onlyA
	if d := decide(t, s, ledgerAfter(1, 0), 1, "a/job-1"); d.State != kueue.CheckStateReady || !strings.Contains(d.Message, "no other ClusterQueue") {
		t.Errorf("no rival: %+v, want Ready", d)
	}
	// team-b waits for more than the whole pool: releasing team-a's quota would not help it.
	s = storyOne("a/job-1")
	for i := range s.Workloads {
		if s.Workloads[i].Namespace == "b" {
			s.Workloads[i] = kueuetest.Pending("b", s.Workloads[i].Name, "lq", 0, 2, "nvidia.com/gpu", "8")
		}
	}
	if d := decide(t, s, ledgerAfter(1, 0), 1, "a/job-1"); d.State != kueue.CheckStateReady {
		t.Errorf("rival that cannot fit: %+v, want Ready", d)
	}
	// team-a's job is small: within its time-aware share, although it used a little more. (After
	// an hour of team-a alone its share would be 0, and even this job would wait for team-b.)
	s = storyOne("")
	small := kueuetest.Reserve(kueuetest.Pending("a", "small", "lq", 0, 1, "nvidia.com/gpu", "1"), "team-a", time.Hour, false)
	s.Workloads = append(s.Workloads, small)
	if d := decide(t, s, ledgerAfter(1, 0.8), 1, "a/small"); d.State != kueue.CheckStateReady || !strings.Contains(d.Message, "within its time-aware share") {
		t.Errorf("small job: %+v, want Ready within share", d)
	}
}

func TestLedgerInputsCountAdmittedWorkloadsUpTheTree(t *testing.T) {
	s := storyOne("a/job-1") // reserved, not admitted: waits for the check, so holds nothing yet
	admitted := kueuetest.Reserve(kueuetest.Pending("b", "running", "lq", 0, 1, "nvidia.com/gpu", "2"), "team-b", 0, true)
	admitted.Status.Conditions = append(admitted.Status.Conditions, metav1.Condition{})
	s.Workloads = append(s.Workloads, admitted)
	m, err := kueuemodel.Build(s, kueuemodel.Options{})
	if err != nil {
		t.Fatal(err)
	}
	alloc := m.Allocated()
	if alloc["team-b"]["nvidia.com/gpu"] != 2 || alloc["pool"]["nvidia.com/gpu"] != 2 || alloc["team-a"]["nvidia.com/gpu"] != 0 {
		t.Errorf("allocated %v", alloc)
	}
	if c := m.Capacity(); c["nvidia.com/gpu"] != 8 {
		t.Errorf("capacity %v, want the pool's 8", c)
	}
}
