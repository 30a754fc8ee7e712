package main

import (
	"strings"
	"testing"
	"time"

	"arbiter.dev/clients/go/k8s/translate"
)

const exposition = `# HELP arbiter_k8s_cycle_duration_seconds Duration of one scheduling cycle.
# TYPE arbiter_k8s_cycle_duration_seconds histogram
arbiter_k8s_cycle_duration_seconds_bucket{le="0.5"} 1
arbiter_k8s_cycle_duration_seconds_bucket{le="1"} 3
arbiter_k8s_cycle_duration_seconds_bucket{le="16"} 4
arbiter_k8s_cycle_duration_seconds_bucket{le="+Inf"} 5
arbiter_k8s_cycle_duration_seconds_sum 40.5
arbiter_k8s_cycle_duration_seconds_count 5
arbiter_k8s_binds_total 1000
arbiter_k8s_errors_total{stage="bind"} 2
arbiter_k8s_errors_total{stage="status"} 0
apiserver_request_total{code="201",resource="pods",scope="resource",subresource="binding",verb="POST"} 700
apiserver_request_total{code="409",resource="pods",scope="resource",subresource="binding",verb="POST"} 300
apiserver_request_total{code="200",resource="pods",scope="cluster",verb="LIST"} 12
apiserver_request_total{code="200",resource="pods",scope="cluster",verb="WATCH"} 40
apiserver_request_duration_seconds_sum{resource="pods",scope="resource",subresource="binding",verb="POST",note="a \"quoted\", value"} 25
`

func TestParseMetricsAndShimFigures(t *testing.T) {
	ss, err := parseMetrics(strings.NewReader(exposition))
	if err != nil {
		t.Fatal(err)
	}
	f := shimFigures(ss)
	if f.Cycles != 5 || f.CycleSecondsTotal != 40.5 || f.CycleSecondsMean != 8.1 || f.Binds != 1000 {
		t.Errorf("figures = %+v", f)
	}
	if f.CycleSecondsP50 != "<= 1" || f.CycleSecondsP99 != "> 16" {
		t.Errorf("p50 %q, p99 %q; want <= 1 and > 16", f.CycleSecondsP50, f.CycleSecondsP99)
	}
	if len(f.Errors) != 1 || f.Errors["bind"] != 2 {
		t.Errorf("errors = %v, want bind 2 only", f.Errors)
	}
	var note string
	for _, s := range ss {
		if s.name == "apiserver_request_duration_seconds_sum" {
			note = s.labels["note"]
		}
	}
	if note != `a "quoted", value` {
		t.Errorf("escaped label = %q", note)
	}
}

func TestAPIRequestsAreTheDifferenceWithoutWatches(t *testing.T) {
	after, err := parseMetrics(strings.NewReader(exposition))
	if err != nil {
		t.Fatal(err)
	}
	before, err := parseMetrics(strings.NewReader(`apiserver_request_total{code="201",resource="pods",scope="resource",subresource="binding",verb="POST"} 100
apiserver_request_total{code="200",resource="pods",scope="cluster",verb="LIST"} 5
`))
	if err != nil {
		t.Fatal(err)
	}
	got := apiRequests(before, after)
	if r := got["POST pods/binding"]; r.Count != 900 || r.Seconds != 25 {
		t.Errorf("POST pods/binding = %+v, want 900 requests, 25 s", r)
	}
	if _, ok := got["LIST pods (cluster)"]; ok {
		t.Errorf("7 LISTs reported; fewer than 10 are left out: %v", got)
	}
	for k := range got {
		if strings.HasPrefix(k, "WATCH") {
			t.Errorf("watch reported: %v", got)
		}
	}
}

func TestPodsOfAGangShareANamespaceAndQueue(t *testing.T) {
	c := &config{Scheduler: "arbiter", Pods: 32, Namespaces: 4, GangSize: 8, PodCPU: "1", PodMemory: "1Gi"}
	groups := map[string][]string{}
	for i := 0; i < c.Pods; i++ {
		p := podAt(c, i)
		if p.Spec.SchedulerName != "arbiter" {
			t.Fatalf("scheduler name %q", p.Spec.SchedulerName)
		}
		groups[groupOf(p)] = append(groups[groupOf(p)], p.Labels[translate.KeyQueue])
		if p.Annotations[translate.KeyMinMember] != "8" {
			t.Errorf("pod %s: min-member %q", p.Name, p.Annotations[translate.KeyMinMember])
		}
	}
	if len(groups) != 4 {
		t.Fatalf("%d groups, want 4", len(groups))
	}
	for g, queues := range groups {
		if len(queues) != 8 {
			t.Errorf("group %s has %d pods", g, len(queues))
		}
		for _, q := range queues {
			if q != queues[0] {
				t.Errorf("group %s spans queues %v", g, queues)
			}
		}
	}
	c.Scheduler, c.GangSize = "kube-scheduler", 0
	if p := podAt(c, 5); p.Spec.SchedulerName != "default-scheduler" || p.Labels[translate.KeyPodGroup] != "" || p.Namespace != "bench-1" {
		t.Errorf("pod 5 without gangs: %s/%s scheduler %q group %q", p.Namespace, p.Name, p.Spec.SchedulerName, p.Labels[translate.KeyPodGroup])
	}
}

func TestQueuesSplitTheClusterEvenly(t *testing.T) {
	c := &config{Nodes: 10, Namespaces: 4, NodeCPU: "32", NodeMemory: "256Gi"}
	cfg, err := translate.ParseQueueConfig([]byte(queuesYAML(c)))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Queues) != 5 || cfg.Queues[0].GetName() != parentQ {
		t.Fatalf("queues = %v", cfg.Queues)
	}
	for _, q := range cfg.Queues[1:] {
		if q.GetParent() != parentQ || q.GetDeserved()["cpu"] != 80000 || q.GetDeserved()["memory"] != 10*256*(1<<30)/4 {
			t.Errorf("queue %s: parent %q deserved %v", q.GetName(), q.GetParent(), q.GetDeserved())
		}
	}
}

func TestLatencyQuantilesAreNearestRanks(t *testing.T) {
	var ds []time.Duration
	for i := 100; i >= 1; i-- { // 1..100 ms, given out of order
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	l := latencyOf(ds)
	want := Latency{Pods: 100, Mean: 0.0505, P50: 0.05, P90: 0.09, P99: 0.099, Max: 0.1}
	if *l != want {
		t.Errorf("latency = %+v, want %+v", *l, want)
	}
	if one := latencyOf([]time.Duration{7 * time.Millisecond}); one.P50 != 0.007 || one.P99 != 0.007 || one.Max != 0.007 {
		t.Errorf("latency of one pod = %+v, want 7 ms everywhere", *one)
	}
}
