package report

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	kueuemodel "arbiter.dev/clients/go/k8s/kueue"

	"arbiter.dev/clients/go/test/kueuetest"
)

// borrowedCohort: team-a and team-b (4 CPUs each, cohort pool) where team-b's running workload
// borrows 2 CPUs of team-a's quota, and team-a may reclaim it.
func borrowedCohort() *kueuemodel.State {
	teamA := kueuetest.ClusterQueue("team-a", "pool", kueuetest.Quota("cpu", "4"))
	teamA.Spec.Preemption = &kueue.ClusterQueuePreemption{ReclaimWithinCohort: kueue.PreemptionPolicyAny}
	teamB := kueuetest.ClusterQueue("team-b", "pool", kueuetest.Quota("cpu", "4"))
	teamA.Status.FairSharing = &kueue.FairSharingStatus{WeightedShare: 7} // not what arbiter computes
	teamB.Status.FairSharing = &kueue.FairSharingStatus{WeightedShare: 250}
	return &kueuemodel.State{
		Now:           kueuetest.T0.Add(time.Hour),
		ClusterQueues: []kueue.ClusterQueue{teamA, teamB},
		LocalQueues:   []kueue.LocalQueue{kueuetest.LocalQueue("a", "lq", "team-a"), kueuetest.LocalQueue("b", "lq", "team-b")},
		Workloads: []kueue.Workload{
			kueuetest.Reserve(kueuetest.Pending("b", "big", "lq", 0, 3, "cpu", "2"), "team-b", time.Minute, true),
			kueuetest.Pending("a", "reclaimer", "lq", 2*time.Minute, 4, "cpu", "1"),
			kueuetest.Pending("a", "huge", "lq", 3*time.Minute, 1, "cpu", "20"),
		},
	}
}

func TestExplainNamesTheAdmissionsPreemptionsAndReasonsOfArbiter(t *testing.T) {
	arb := kueuetest.ArbiterClient(t)
	s := borrowedCohort()
	m, err := kueuemodel.Build(s, kueuemodel.Options{})
	if err != nil {
		t.Fatal(err)
	}
	report, err := Explain(context.Background(), arb, s, m, ExplainOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]WorkloadVerdict{}
	for _, v := range report.Workloads {
		got[v.Workload] = v
	}
	if v := got["a/reclaimer"]; v.Verdict != VerdictPreempt || len(v.Preempts) != 1 ||
		v.Preempts[0].Workload != "b/big" || v.Preempts[0].Rule != "InCohortReclamation" || v.Preempts[0].ClusterQueue != "team-b" {
		t.Errorf("a/reclaimer: %+v, want preempt of b/big by InCohortReclamation", v)
	}
	if v := got["a/huge"]; v.Verdict != VerdictPending || v.Reason != "exceeds-max-quota" || v.Message == "" {
		t.Errorf("a/huge: %+v, want pending exceeds-max-quota", v)
	}
	if len(report.Workloads) != 2 {
		t.Errorf("%d verdicts, want the 2 pending workloads: %+v", len(report.Workloads), report.Workloads)
	}
	shares := map[string]ShareComparison{}
	for _, q := range report.Queues {
		shares[q.Name] = q
	}
	// team-b borrows 2 of the 8 its parent could reach: 2·1000/8 = 250, as Kueue publishes it.
	if b := shares["team-b"]; b.WeightedShare != 250 || !b.Borrowing || b.DominantResource != "cpu" || b.Differs || b.Kueue == nil {
		t.Errorf("team-b: %+v, want 250 borrowing cpu, equal to Kueue's", b)
	}
	if a := shares["team-a"]; a.WeightedShare != 0 || !a.Differs {
		t.Errorf("team-a: %+v, want 0 and flagged against Kueue's 7", a)
	}
	if p := shares["pool"]; p.Kind != kueuemodel.KindCohort || p.Kueue != nil || p.Differs {
		t.Errorf("pool: %+v, want an implicit cohort with no published share", p)
	}

	var table bytes.Buffer
	if err := report.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"a/reclaimer", "preempts b/big (team-b, InCohortReclamation)", "exceeds-max-quota", "DIFFERS"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, table.String())
		}
	}
	var js bytes.Buffer
	if err := report.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(report, &back); diff != "" {
		t.Errorf("JSON round trip (-want +got):\n%s", diff)
	}
}

func TestExplainNarrowsToOneWorkload(t *testing.T) {
	arb := kueuetest.ArbiterClient(t)
	s := borrowedCohort()
	m, err := kueuemodel.Build(s, kueuemodel.Options{})
	if err != nil {
		t.Fatal(err)
	}
	report, err := Explain(context.Background(), arb, s, m, ExplainOptions{Namespace: "a", Workload: "huge"})
	if err != nil {
		t.Fatal(err)
	}
	if len(report.Workloads) != 1 || report.Workloads[0].Workload != "a/huge" {
		t.Errorf("workloads %+v, want only a/huge", report.Workloads)
	}
}

func TestPublishedShareIsKueuesRounding(t *testing.T) {
	for _, c := range []struct {
		in   float64
		want int64
	}{{0, 0}, {0.2, 1}, {250, 250}, {333.34, 334}, {posInf(), 1<<63 - 1}} {
		if got := PublishedShare(c.in); got != c.want {
			t.Errorf("PublishedShare(%g) = %d, want %d", c.in, got, c.want)
		}
	}
}

func posInf() float64 { var zero float64; return 1 / zero }
