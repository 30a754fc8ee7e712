package timeaware

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"arbiter.dev/clients/go/k8s/usage"

	kueuemodel "arbiter.dev/clients/go/k8s/kueue"

	"arbiter.dev/clients/go/test/kueuetest"
)

// BenchmarkTimeAwareDecision measures one decision of the time-aware check in a cohort of 100
// ClusterQueues with 20 Workloads each (half with quota reserved), against a real arbiter-server:
// the model built from the objects, the two divisions, and the fit test of the rival. Each
// iteration decides the workload of a ClusterQueue that used more than its rivals, so every
// decision goes as far as the fit test.
func BenchmarkTimeAwareDecision(b *testing.B) {
	arb := kueuetest.ArbiterClient(b)
	const queues, perQueue = 100, 20
	s := &kueuemodel.State{Now: kueuetest.T0.Add(time.Hour), Cohorts: []kueue.Cohort{kueuetest.Cohort("pool", "", kueuetest.Quota("cpu", fmt.Sprint(queues*4)))}}
	ledger := &usage.Ledger{Queues: map[string]map[string]float64{}, Capacity: map[string]float64{"cpu": queues * 4000 * 3600}}
	for q := 0; q < queues; q++ {
		name := fmt.Sprintf("cq-%03d", q)
		s.ClusterQueues = append(s.ClusterQueues, kueuetest.ClusterQueue(name, "pool", kueuetest.Quota("cpu", "2")))
		ns := fmt.Sprintf("ns-%03d", q)
		s.LocalQueues = append(s.LocalQueues, kueuetest.LocalQueue(ns, "lq", name))
		for i := 0; i < perQueue; i++ {
			w := kueuetest.Pending(ns, fmt.Sprintf("w-%02d", i), "lq", time.Duration(i)*time.Second, 1, "cpu", "400m")
			if i < perQueue/2 {
				w = kueuetest.Reserve(w, name, time.Minute, i > 0)
			}
			s.Workloads = append(s.Workloads, w)
		}
		ledger.Queues[name] = map[string]float64{"cpu": float64(q) * 1e6}
	}
	m, err := kueuemodel.Build(s, kueuemodel.Options{})
	if err != nil {
		b.Fatal(err)
	}
	ledger.Queues["pool"] = map[string]float64{"cpu": 1e9}
	key := "ns-099/w-00" // the ClusterQueue that used the most
	b.ResetTimer()
	var took []time.Duration
	for i := 0; i < b.N; i++ {
		start := time.Now()
		if _, err := kueuemodel.Build(s, kueuemodel.Options{}); err != nil {
			b.Fatal(err)
		}
		d, _, err := Decide(context.Background(), arb, m, ledger, 1, key)
		if err != nil {
			b.Fatal(err)
		}
		took = append(took, time.Since(start))
		if i == 0 {
			b.Logf("decision: %s (%s)", d.State, d.Message)
		}
	}
	sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
	b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(took[len(took)*99/100].Microseconds())/1000, "p99-ms")
}
