package report

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	arbiterv1 "arbiter.dev/clients/go/arbiterv1"
	kueuemodel "arbiter.dev/clients/go/k8s/kueue"

	"arbiter.dev/clients/go/test/kueuetest"
)

var spotTaint = corev1.Taint{Key: "spot", Value: "true", Effect: corev1.TaintEffectNoSchedule}

// tolerating is w with every pod set tolerating the spot flavor's taint.
func tolerating(w kueue.Workload) kueue.Workload {
	for i := range w.Spec.PodSets {
		w.Spec.PodSets[i].Template.Spec.Tolerations = []corev1.Toleration{{Key: "spot", Operator: corev1.TolerationOpEqual, Value: "true", Effect: corev1.TaintEffectNoSchedule}}
	}
	return w
}

// twoFlavors: ClusterQueue team-a offers cpu in on-demand (3) then spot (4, tainted). Kueue
// holds a/first (2) on on-demand and a/odd (1) on spot, though on-demand had room for it. Two
// workloads wait: a/big (2, tolerates spot), and a/lost, whose node selector no flavor matches.
func twoFlavors() *kueuemodel.State {
	cq := kueuetest.ClusterQueue("team-a", "", nil)
	cq.Spec.ResourceGroups = []kueue.ResourceGroup{kueuetest.ResourceGroup(kueuetest.Flavor("on-demand", "cpu", "3"), kueuetest.Flavor("spot", "cpu", "4"))}
	lost := kueuetest.Pending("a", "lost", "lq", 3*time.Minute, 1, "cpu", "1")
	lost.Spec.PodSets[0].Template.Spec.NodeSelector = map[string]string{"tier": "gpu"}
	return &kueuemodel.State{
		Now: kueuetest.T0.Add(time.Hour),
		ResourceFlavors: []kueue.ResourceFlavor{
			kueuetest.ResourceFlavor("on-demand", map[string]string{"tier": "on-demand"}),
			kueuetest.ResourceFlavor("spot", map[string]string{"tier": "spot"}, spotTaint),
		},
		ClusterQueues: []kueue.ClusterQueue{cq},
		LocalQueues:   []kueue.LocalQueue{kueuetest.LocalQueue("a", "lq", "team-a")},
		Workloads: []kueue.Workload{
			kueuetest.ReserveIn(kueuetest.Pending("a", "first", "lq", 0, 2, "cpu", "1"), "team-a", "on-demand", time.Minute, true),
			kueuetest.ReserveIn(tolerating(kueuetest.Pending("a", "odd", "lq", time.Second, 1, "cpu", "1")), "team-a", "spot", 2*time.Minute, true),
			tolerating(kueuetest.Pending("a", "big", "lq", 2*time.Minute, 2, "cpu", "1")),
			lost,
		},
	}
}

func TestExplainShowsTheFlavorsArbiterAssignsAndWhereKueuesDiffer(t *testing.T) {
	arb := kueuetest.ArbiterClient(t)
	s := twoFlavors()
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
	// on-demand has 1 of 3 left and nothing may be preempted there: the next flavor, spot.
	if v := got["a/big"]; v.Verdict != VerdictAdmit || !cmp.Equal(v.Flavors, []PodSetFlavors{{PodSet: "main", Flavors: map[string]string{"cpu": "spot"}}}) {
		t.Errorf("a/big: %+v, want admitted on spot", v)
	}
	if v := got["a/lost"]; v.Verdict != VerdictPending || v.Reason != "no-matching-flavor" || v.Flavors != nil {
		t.Errorf("a/lost: %+v, want pending no-matching-flavor", v)
	}
	checks := map[string]FlavorCheck{}
	for _, c := range report.Reserved {
		checks[c.Workload] = c
	}
	onDemand := []PodSetFlavors{{PodSet: "main", Flavors: map[string]string{"cpu": "on-demand"}}}
	if c := checks["a/first"]; c.Differs || !cmp.Equal(c.Kueue, onDemand) || !cmp.Equal(c.Arbiter, onDemand) {
		t.Errorf("a/first: %+v, want on-demand for both", c)
	}
	if c := checks["a/odd"]; !c.Differs || !cmp.Equal(c.Arbiter, onDemand) || c.Kueue[0].Flavors["cpu"] != "spot" {
		t.Errorf("a/odd: %+v, want Kueue's spot flagged against arbiter's on-demand", c)
	}
	if len(report.Queues) != 1 {
		t.Fatalf("queues %+v, want team-a", report.Queues)
	}
	wantUsage := []FlavorUsage{
		{Flavor: "on-demand", Resource: "cpu", Nominal: 3000, SubtreeQuota: 3000, Usage: 2000},
		{Flavor: "spot", Resource: "cpu", Nominal: 4000, SubtreeQuota: 4000, Usage: 1000},
	}
	if diff := cmp.Diff(wantUsage, report.Queues[0].Flavors); diff != "" {
		t.Errorf("team-a's usage by flavor (-want +got):\n%s", diff)
	}

	var table bytes.Buffer
	if err := report.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", table.String())
	for _, want := range []string{"FLAVORS", "main: spot", "no-matching-flavor", "RESERVED", "DIFFERS", "on-demand cpu 2000/3000, spot cpu 1000/4000"} {
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

func TestWhatIfReportsTheFlavor(t *testing.T) {
	arb := kueuetest.ArbiterClient(t)
	s := twoFlavors()
	s.Workloads = s.Workloads[:2] // nothing waits
	m, err := kueuemodel.Build(s, kueuemodel.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		manifest string
		flavor   string
	}{
		// on-demand has room for one CPU.
		{"apiVersion: batch/v1\nkind: Job\nmetadata: {name: one, namespace: a, labels: {kueue.x-k8s.io/queue-name: lq}}\nspec: {template: {spec: {containers: [{name: c, resources: {requests: {cpu: \"1\"}}}]}}}\n", "on-demand"},
		// Two do not fit there; spot takes them, its taint tolerated.
		{"apiVersion: batch/v1\nkind: Job\nmetadata: {name: two, namespace: a, labels: {kueue.x-k8s.io/queue-name: lq}}\nspec: {template: {spec: {tolerations: [{key: spot, operator: Exists}], containers: [{name: c, resources: {requests: {cpu: \"2\"}}}]}}}\n", "spot"},
	} {
		ws, err := WorkloadsFromManifests([]byte(c.manifest), "a", Priorities{})
		if err != nil {
			t.Fatal(err)
		}
		p, err := WhatIf(context.Background(), arb, m, ws[0])
		if err != nil {
			t.Fatal(err)
		}
		if want := []PodSetFlavors{{PodSet: "main", Flavors: map[string]string{"cpu": c.flavor}}}; p.Verdict != VerdictAdmit || !cmp.Equal(p.Flavors, want) {
			t.Errorf("%s: %+v, want admitted on %s", p.Workload, p, c.flavor)
		}
		var table bytes.Buffer
		if err := WritePredictionsTable(&table, []*Prediction{p}); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(table.String(), "main: "+c.flavor) {
			t.Errorf("table lacks the flavor:\n%s", table.String())
		}
	}
	// Without the toleration, two CPUs fit in no flavor it may use.
	ws, err := WorkloadsFromManifests([]byte("apiVersion: batch/v1\nkind: Job\nmetadata: {name: three, namespace: a, labels: {kueue.x-k8s.io/queue-name: lq}}\nspec: {template: {spec: {containers: [{name: c, resources: {requests: {cpu: \"2\"}}}]}}}\n"), "a", Priorities{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := WhatIf(context.Background(), arb, m, ws[0])
	if err != nil {
		t.Fatal(err)
	}
	if p.Verdict != VerdictPending || p.Flavors != nil {
		t.Errorf("%s: %+v, want pending", p.Workload, p)
	}
}

func TestFlavorsText(t *testing.T) {
	for _, c := range []struct {
		in   []PodSetFlavors
		want string
	}{
		{nil, "-"},
		{[]PodSetFlavors{{PodSet: "main", Flavors: map[string]string{"cpu": "spot", "memory": "spot"}}}, "main: spot"},
		{[]PodSetFlavors{{PodSet: "driver", Flavors: map[string]string{"cpu": "on-demand"}}, {PodSet: "workers", Flavors: map[string]string{"memory": "b", "cpu": "a"}}},
			"driver: on-demand; workers: cpu=a,memory=b"},
	} {
		if got := FlavorsText(c.in); got != c.want {
			t.Errorf("FlavorsText(%+v) = %q, want %q", c.in, got, c.want)
		}
	}
}

// cannedArbiter answers every Schedule with the admission of the pending workload it holds in
// the flavors of flavorOf (pod set "main", cpu), and ComputeFairShares with shares.
type cannedArbiter struct {
	flavorOf  map[string]string
	shares    *arbiterv1.FairShareResponse
	schedules []*arbiterv1.ScheduleRequest
}

func (c *cannedArbiter) Schedule(_ context.Context, req *arbiterv1.ScheduleRequest) (*arbiterv1.ScheduleResponse, error) {
	c.schedules = append(c.schedules, req)
	resp := &arbiterv1.ScheduleResponse{}
	for _, g := range req.GetSnapshot().GetPodGroups() {
		if !g.GetAdmitted() {
			resp.Admissions = append(resp.Admissions, &arbiterv1.Admission{PodGroup: g.GetName(), Queue: g.GetQueue(),
				PodSets: []*arbiterv1.PodSetFlavors{{PodSet: "main", Flavors: map[string]string{"cpu": c.flavorOf[g.GetName()]}}}})
		}
	}
	return resp, nil
}

func (c *cannedArbiter) ComputeFairShares(context.Context, *arbiterv1.FairShareRequest) (*arbiterv1.FairShareResponse, error) {
	return c.shares, nil
}

// Explain reads the flavors from the answer: a pending workload's from its admission, a
// reserved one's beside Kueue's from a Schedule of the reserved workloads but it, with it pending
// and nothing else waiting; the queues' usage by flavor from flavor_resources.
func TestExplainReadsTheFlavorsOfTheAnswer(t *testing.T) {
	s := twoFlavors()
	m, err := kueuemodel.Build(s, kueuemodel.Options{})
	if err != nil {
		t.Fatal(err)
	}
	arb := &cannedArbiter{
		flavorOf: map[string]string{"a/big": "spot", "a/lost": "spot", "a/first": "on-demand", "a/odd": "on-demand"},
		shares: &arbiterv1.FairShareResponse{Queues: []*arbiterv1.QueueShare{{Queue: "team-a", FlavorResources: []*arbiterv1.FlavorResourceShare{
			{Flavor: "on-demand", Resource: "cpu", Nominal: 3000, SubtreeQuota: 3000, Usage: 2000},
		}}}},
	}
	report, err := Explain(context.Background(), arb, s, m, ExplainOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := FlavorsText(report.Workloads[0].Flavors); report.Workloads[0].Workload != "a/big" || got != "main: spot" {
		t.Errorf("first verdict %+v, want a/big on spot", report.Workloads[0])
	}
	want := []FlavorCheck{
		{Workload: "a/first", ClusterQueue: "team-a", Kueue: []PodSetFlavors{{PodSet: "main", Flavors: map[string]string{"cpu": "on-demand"}}},
			Arbiter: []PodSetFlavors{{PodSet: "main", Flavors: map[string]string{"cpu": "on-demand"}}}},
		{Workload: "a/odd", ClusterQueue: "team-a", Kueue: []PodSetFlavors{{PodSet: "main", Flavors: map[string]string{"cpu": "spot"}}},
			Arbiter: []PodSetFlavors{{PodSet: "main", Flavors: map[string]string{"cpu": "on-demand"}}}, Differs: true},
	}
	if diff := cmp.Diff(want, report.Reserved); diff != "" {
		t.Errorf("reserved (-want +got):\n%s", diff)
	}
	if len(arb.schedules) != 3 {
		t.Fatalf("%d Schedule calls, want 1 and one per reserved workload", len(arb.schedules))
	}
	// a/odd's own check: a/first reserved, a/odd pending as its spec gives it, nothing else.
	var names []string
	for _, g := range arb.schedules[2].GetSnapshot().GetPodGroups() {
		names = append(names, fmt.Sprintf("%s admitted=%v pods=%d", g.GetName(), g.GetAdmitted(), len(g.GetPods())))
	}
	if w := []string{"a/first admitted=true pods=1", "a/odd admitted=false pods=1"}; !cmp.Equal(names, w) {
		t.Errorf("a/odd checked against %v, want %v", names, w)
	}
	if odd := arb.schedules[2].GetSnapshot().GetPodGroups()[1]; odd.GetQueue() != "team-a" || len(odd.GetFlavors()) != 0 || len(odd.GetPods()[0].GetTolerations()) != 1 {
		t.Errorf("a/odd as pending: %v", odd)
	}
	if want := []FlavorUsage{{Flavor: "on-demand", Resource: "cpu", Nominal: 3000, SubtreeQuota: 3000, Usage: 2000}}; !cmp.Equal(report.Queues[0].Flavors, want) {
		t.Errorf("usage by flavor %+v, want %+v", report.Queues[0].Flavors, want)
	}
	// Narrowed to one workload, only its flavors are checked.
	arb.schedules = nil
	if report, err = Explain(context.Background(), arb, s, m, ExplainOptions{Namespace: "a", Workload: "odd"}); err != nil {
		t.Fatal(err)
	}
	if len(report.Reserved) != 1 || len(arb.schedules) != 2 {
		t.Errorf("narrowed to a/odd: reserved %+v after %d calls, want a/odd's alone", report.Reserved, len(arb.schedules))
	}
	// Without the check, one Schedule.
	arb.schedules = nil
	if report, err = Explain(context.Background(), arb, s, m, ExplainOptions{SkipFlavorCheck: true}); err != nil {
		t.Fatal(err)
	}
	if report.Reserved != nil || len(arb.schedules) != 1 {
		t.Errorf("without the check: reserved %+v after %d calls, want none after 1", report.Reserved, len(arb.schedules))
	}
}
