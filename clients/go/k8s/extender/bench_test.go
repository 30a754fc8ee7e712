package extender

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"

	"arbiter.dev/clients/go/client"
	"arbiter.dev/clients/go/k8s/shim"
	"arbiter.dev/clients/go/k8s/translate"
	"arbiter.dev/clients/go/test/e2e"
)

// BenchmarkFilterAt1000Nodes measures filter calls as kube-scheduler makes them on a cluster of
// 1,000 nodes (8 GPUs each) with 4,000 running pods: every call names all 1,000 nodes, and
// after each call the pod is bound where the extender kept it, as kube-scheduler would. The
// answers come from a real arbiter-server. One iteration is one filter call for a new pending
// pod; run it with -benchtime=Nx for N pods. It reports the latency's p50, p99 and max, and how
// many calls asked arbiter anew.
//
//	go test -run '^$' -bench FilterAt1000Nodes -benchtime 2000x ./k8s/extender
func BenchmarkFilterAt1000Nodes(b *testing.B) {
	const nodes, running = 1000, 4000
	queuesYAML := "queues:\n- name: all\n  deserved: {cpu: -1, memory: -1, nvidia.com/gpu: -1}\n"
	for q := 0; q < 4; q++ {
		queuesYAML += fmt.Sprintf("- name: q%d\n  parent: all\n  deserved: {cpu: -1, memory: -1, nvidia.com/gpu: 2000}\n", q)
	}
	kube := fake.NewClientset()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	create := func(obj any) {
		var err error
		switch o := obj.(type) {
		case *corev1.Node:
			_, err = kube.CoreV1().Nodes().Create(ctx, o, metav1.CreateOptions{})
		case *corev1.Pod:
			_, err = kube.CoreV1().Pods(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		case *corev1.ConfigMap:
			_, err = kube.CoreV1().ConfigMaps(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	create(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "arbiter-system", Name: "arbiter-queues"},
		Data: map[string]string{translate.QueueConfigKey: queuesYAML}})
	names := make([]string, nodes)
	for i := range names {
		names[i] = fmt.Sprintf("node-%04d", i)
		alloc := corev1.ResourceList{"cpu": resource.MustParse("64"), "memory": resource.MustParse("512Gi"),
			"pods": resource.MustParse("110"), "nvidia.com/gpu": resource.MustParse("8")}
		create(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: names[i]}, Status: corev1.NodeStatus{Allocatable: alloc, Capacity: alloc}})
	}
	pod := func(name, queue, node string) *corev1.Pod {
		req := corev1.ResourceList{"cpu": resource.MustParse("1"), "nvidia.com/gpu": resource.MustParse("1")}
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: name, UID: k8stypes.UID("uid-" + name),
				Labels: map[string]string{translate.KeyQueue: queue}},
			Spec: corev1.PodSpec{SchedulerName: "default-scheduler", NodeName: node, Containers: []corev1.Container{{
				Name: "main", Resources: corev1.ResourceRequirements{Requests: req}}}},
			Status: corev1.PodStatus{Phase: corev1.PodPending},
		}
		if node != "" {
			p.Status.Phase = corev1.PodRunning
		}
		return p
	}
	for i := 0; i < running; i++ {
		create(pod(fmt.Sprintf("run-%d", i), fmt.Sprintf("q%d", i%4), names[i%nodes]))
	}
	for i := 0; i < b.N; i++ {
		create(pod(fmt.Sprintf("new-%d", i), fmt.Sprintf("q%d", i%4), ""))
	}

	arbiter, err := client.Dial(client.Config{Target: e2e.ArbiterServer(b), Timeout: 60 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	defer arbiter.Close()
	s, err := shim.New(shim.Config{SchedulerName: "default-scheduler"}, shim.Deps{Kube: kube, Scheduler: arbiter})
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Start(ctx); err != nil {
		b.Fatal(err)
	}
	m := NewMetrics(nil)
	ext := New(Config{}, s, kube, m, nil)
	if err := ext.Start(ctx); err != nil {
		b.Fatal(err)
	}

	latencies := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		p, err := ext.pods.Pods("ml").Get(fmt.Sprintf("new-%d", i))
		if err != nil {
			b.Fatal(err)
		}
		args := &extenderv1.ExtenderArgs{Pod: p, NodeNames: &names}
		b.StartTimer()
		start := time.Now()
		res := ext.Filter(ctx, args)
		latencies = append(latencies, time.Since(start))
		b.StopTimer()
		if res.Error != "" || res.NodeNames == nil {
			b.Fatalf("filter %s: %+v", p.Name, res)
		}
		if kept := *res.NodeNames; len(kept) == 1 {
			bound := p.DeepCopy()
			bound.Spec.NodeName, bound.Status.Phase = kept[0], corev1.PodRunning
			if _, err := kube.CoreV1().Pods("ml").Update(ctx, bound, metav1.UpdateOptions{}); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
	}
	b.StopTimer()
	sort.Slice(latencies, func(i, j int) bool { return latencies[i] < latencies[j] })
	q := func(f float64) float64 {
		return float64(latencies[int(f*float64(len(latencies)-1))].Microseconds()) / 1000
	}
	b.ReportMetric(q(0.5), "p50-ms")
	b.ReportMetric(q(0.99), "p99-ms")
	b.ReportMetric(q(1), "max-ms")
	b.ReportMetric(testutil.ToFloat64(m.Answers.WithLabelValues("asked")), "answers-asked")
}
