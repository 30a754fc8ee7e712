package kueue

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	kueuefake "sigs.k8s.io/kueue/client-go/clientset/versioned/fake"

	"arbiter.dev/clients/go/k8s/usage"
)

func TestCheckerActivatesItsCheckDecidesAndSavesTheLedger(t *testing.T) {
	s := storyOne("a/job-1")
	objects := []runtime.Object{
		&kueue.AdmissionCheck{ObjectMeta: metav1.ObjectMeta{Name: "time-aware"}, Spec: kueue.AdmissionCheckSpec{ControllerName: CheckControllerName}},
		&kueue.AdmissionCheck{ObjectMeta: metav1.ObjectMeta{Name: "someone-elses"}, Spec: kueue.AdmissionCheckSpec{ControllerName: "example.com/other"}},
		&s.Cohorts[0], &s.ClusterQueues[0], &s.ClusterQueues[1], &s.LocalQueues[0], &s.LocalQueues[1],
	}
	for i := range s.Workloads {
		objects = append(objects, &s.Workloads[i])
	}
	kc := kueuefake.NewSimpleClientset(objects...)
	saved, _ := json.Marshal(ledgerAfter(1, 0))
	kube := kubefake.NewSimpleClientset(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "b"}}, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "arbiter-system", Name: "usage"},
		Data:       map[string]string{usage.DataKey: string(saved)},
	})
	store := &usage.ConfigMapStore{Client: kube, Namespace: "arbiter-system", Name: "usage"}
	reg := prometheus.NewRegistry()
	c := NewChecker(CheckConfig{KValue: 1, Period: 20 * time.Millisecond, RetryAfter: 1500 * time.Millisecond},
		kc, kube, arbiterClient(t), store, slog.New(slog.NewTextHandler(io.Discard, nil)), reg)
	c.now = func() time.Time { return t0.Add(2*time.Hour + time.Minute) }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()

	var w *kueue.Workload
	deadline := time.Now().Add(20 * time.Second)
	for ; time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		got, err := kc.KueueV1beta2().Workloads("a").Get(ctx, "job-1", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Status.AdmissionChecks[0].State != kueue.CheckStatePending {
			w = got
			break
		}
	}
	if w == nil {
		t.Fatal("the check was not decided within 20s")
	}
	st := w.Status.AdmissionChecks[0]
	if st.State != kueue.CheckStateRetry || st.RequeueAfterSeconds == nil || *st.RequeueAfterSeconds != 2 || st.Message == "" {
		t.Errorf("check state %+v, want Retry after 2s with a message", st)
	}
	ac, err := kc.KueueV1beta2().AdmissionChecks().Get(ctx, "time-aware", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !apimeta.IsStatusConditionTrue(ac.Status.Conditions, kueue.AdmissionCheckActive) {
		t.Errorf("own AdmissionCheck not Active: %+v", ac.Status.Conditions)
	}
	other, err := kc.KueueV1beta2().AdmissionChecks().Get(ctx, "someone-elses", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(other.Status.Conditions) != 0 {
		t.Errorf("another controller's AdmissionCheck was touched: %+v", other.Status.Conditions)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	// The fake clientset does not refuse a write on a stale version as the API server does, so a
	// pass that ran before the cache saw the first write may have written it again.
	if n := testutil.ToFloat64(c.metrics.decisions.WithLabelValues("Retry")); n < 1 {
		t.Errorf("%g Retry decisions counted, want at least 1", n)
	}
	l, err := store.Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// The loaded history was advanced to the checker's clock and saved on the way out.
	if !l.Updated.Equal(t0.Add(2*time.Hour+time.Minute)) || l.Queues["team-a"]["nvidia.com/gpu"] != 8*3600 {
		t.Errorf("saved ledger %+v, want team-a's hour kept and the clock advanced", l)
	}
}
