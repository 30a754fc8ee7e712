package timeaware

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
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

	kueuemodel "arbiter.dev/clients/go/k8s/kueue"

	"arbiter.dev/clients/go/test/kueuetest"
)

// checkerFixture is a Checker on fake clients holding s, the two AdmissionChecks and the ledger.
type checkerFixture struct {
	c     *Checker
	kc    *kueuefake.Clientset
	store *usage.ConfigMapStore
	done  chan error
	stop  context.CancelFunc
	// clock is how far the checker's clock has moved past its start, in nanoseconds.
	clock *atomic.Int64
}

func startChecker(t *testing.T, s *kueuemodel.State, ledger *usage.Ledger) *checkerFixture {
	t.Helper()
	objects := []runtime.Object{
		&kueue.AdmissionCheck{ObjectMeta: metav1.ObjectMeta{Name: "time-aware"}, Spec: kueue.AdmissionCheckSpec{ControllerName: CheckControllerName}},
		&kueue.AdmissionCheck{ObjectMeta: metav1.ObjectMeta{Name: "someone-elses"}, Spec: kueue.AdmissionCheckSpec{ControllerName: "example.com/other"}},
	}
	for i := range s.Workloads {
		objects = append(objects, &s.Workloads[i])
	}
	for i := range s.Cohorts {
		objects = append(objects, &s.Cohorts[i])
	}
	for i := range s.ClusterQueues {
		objects = append(objects, &s.ClusterQueues[i])
	}
	for i := range s.LocalQueues {
		objects = append(objects, &s.LocalQueues[i])
	}
	kc := kueuefake.NewSimpleClientset(objects...)
	saved, _ := json.Marshal(ledger)
	kube := kubefake.NewSimpleClientset(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "b"}}, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "arbiter-system", Name: "usage"},
		Data:       map[string]string{usage.DataKey: string(saved)},
	})
	store := &usage.ConfigMapStore{Client: kube, Namespace: "arbiter-system", Name: "usage"}
	reg := prometheus.NewRegistry()
	c := NewChecker(CheckConfig{KValue: 1, Period: 20 * time.Millisecond, RetryAfter: 1500 * time.Millisecond},
		kc, kube, kueuetest.ArbiterClient(t), store, slog.New(slog.NewTextHandler(io.Discard, nil)), reg)
	clock := &atomic.Int64{}
	c.now = func() time.Time { return kueuetest.T0.Add(2*time.Hour + time.Minute + time.Duration(clock.Load())) }
	ctx, cancel := context.WithCancel(context.Background())
	f := &checkerFixture{c: c, kc: kc, store: store, done: make(chan error, 1), stop: cancel, clock: clock}
	go func() { f.done <- c.Run(ctx) }()
	t.Cleanup(cancel)
	return f
}

// decided waits until the check of namespace/name is no longer Pending and returns its state.
func (f *checkerFixture) decided(t *testing.T, namespace, name string) kueue.AdmissionCheckState {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for ; time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		got, err := f.kc.KueueV1beta2().Workloads(namespace).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if st := got.Status.AdmissionChecks[0]; st.State != kueue.CheckStatePending {
			return st
		}
	}
	t.Fatal("the check was not decided within 20s")
	return kueue.AdmissionCheckState{}
}

func TestCheckerActivatesItsCheckDecidesAndSavesTheLedger(t *testing.T) {
	f := startChecker(t, storyOne("a/job-1"), ledgerAfter(1, 0))
	c, kc, store, ctx := f.c, f.kc, f.store, context.Background()
	st := f.decided(t, "a", "job-1")
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
	f.stop()
	if err := <-f.done; err != nil {
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
	if !l.Updated.Equal(kueuetest.T0.Add(2*time.Hour+time.Minute)) || l.Queues["team-a"]["nvidia.com/gpu"] != 8*3600 {
		t.Errorf("saved ledger %+v, want team-a's hour kept and the clock advanced", l)
	}
}

func TestCheckerLetsEverythingThroughWhatArbiterCannotModel(t *testing.T) {
	s := storyOne("a/job-1")
	// The cohort's parents form a cycle, which Kueue leaves inactive and arbiter refuses.
	s.Cohorts[0].Spec.ParentName = "loop"
	s.Cohorts = append(s.Cohorts, kueuetest.Cohort("loop", "pool", nil))
	f := startChecker(t, s, ledgerAfter(1, 0))
	st := f.decided(t, "a", "job-1")
	if st.State != kueue.CheckStateReady || !strings.Contains(st.Message, "passed through") || !strings.Contains(st.Message, "cycle") {
		t.Errorf("check %+v, want Ready, passed through with the reason", st)
	}
}

// reserveAgain is Kueue reserving the quota of namespace/name again after a Retry: its check is
// Pending once more.
func (f *checkerFixture) reserveAgain(t *testing.T, namespace, name string) {
	t.Helper()
	ctx := context.Background()
	w, err := f.kc.KueueV1beta2().Workloads(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w.Status.AdmissionChecks[0].State = kueue.CheckStatePending
	if _, err := f.kc.KueueV1beta2().Workloads(namespace).UpdateStatus(ctx, w, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestCheckerLetsAWorkloadRunWhenItsRivalDoesNotTakeTheQuota: team-b deserves the quota more, but
// Kueue keeps reserving it for a/job-1 again. Within the handover grace each reservation is sent
// back; once the grace has passed with b/job-0 still waiting, the check is Ready, so that the
// quota is not left idle.
func TestCheckerLetsAWorkloadRunWhenItsRivalDoesNotTakeTheQuota(t *testing.T) {
	f := startChecker(t, storyOne("a/job-1"), ledgerAfter(1, 0))
	if st := f.decided(t, "a", "job-1"); st.State != kueue.CheckStateRetry {
		t.Fatalf("first reservation: check %+v, want Retry", st)
	}
	f.clock.Add(int64(10 * time.Second))
	f.reserveAgain(t, "a", "job-1")
	if st := f.decided(t, "a", "job-1"); st.State != kueue.CheckStateRetry {
		t.Fatalf("reserved again 10s later: check %+v, want Retry within the grace", st)
	}
	f.clock.Add(int64(55 * time.Second))
	f.reserveAgain(t, "a", "job-1")
	st := f.decided(t, "a", "job-1")
	if st.State != kueue.CheckStateReady || !strings.Contains(st.Message, "team-b has not taken the quota") || !strings.Contains(st.Message, "b/job-0") {
		t.Fatalf("reserved again 65s after the first Retry: check %+v, want Ready naming team-b and b/job-0", st)
	}
	if n := testutil.ToFloat64(f.c.metrics.unclaimed); n < 1 {
		t.Errorf("%g unclaimed handovers counted, want at least 1", n)
	}
}

// TestHandOverStartsAgainWhenTheRivalOrItsWorkloadChanges: the grace counts one run of Retries
// for the same rival workload; a new rival, a new first workload of the rival, or a Ready of the
// check's own ends the run.
func TestHandOverStartsAgainWhenTheRivalOrItsWorkloadChanges(t *testing.T) {
	c := &Checker{cfg: CheckConfig{HandoverGrace: time.Minute}.withDefaults(), handovers: map[string]handover{}, metrics: newCheckMetrics(nil)}
	t0 := kueuetest.T0
	retry := func(rival, head string) Decision {
		return Decision{State: kueue.CheckStateRetry, Rival: rival, RivalHead: head, Message: "m"}
	}
	steps := []struct {
		at   time.Duration
		d    Decision
		want kueue.CheckState
	}{
		{0, retry("team-b", "b/job-0"), kueue.CheckStateRetry},
		{50 * time.Second, retry("team-b", "b/job-0"), kueue.CheckStateRetry},
		{70 * time.Second, retry("team-b", "b/job-1"), kueue.CheckStateRetry},              // b/job-0 ran: a new run
		{140 * time.Second, retry("team-c", "c/job-0"), kueue.CheckStateRetry},             // another rival: a new run
		{150 * time.Second, Decision{State: kueue.CheckStateReady}, kueue.CheckStateReady}, // Ready on its own
		{215 * time.Second, retry("team-c", "c/job-0"), kueue.CheckStateRetry},             // a new run again
		{275 * time.Second, retry("team-c", "c/job-0"), kueue.CheckStateReady},             // a minute of it
		{276 * time.Second, retry("team-c", "c/job-0"), kueue.CheckStateReady},             // and it stays Ready
	}
	for i, s := range steps {
		if got := c.handOver("a/job-1", s.d, t0.Add(s.at)); got.State != s.want {
			t.Errorf("step %d at %s: %s, want %s", i, s.at, got.State, s.want)
		}
	}
	never := &Checker{cfg: CheckConfig{HandoverGrace: -1}.withDefaults(), handovers: map[string]handover{}, metrics: newCheckMetrics(nil)}
	for _, at := range []time.Duration{0, time.Hour, 24 * time.Hour} {
		if got := never.handOver("a/job-1", retry("team-b", "b/job-0"), t0.Add(at)); got.State != kueue.CheckStateRetry {
			t.Errorf("grace disabled, at %s: %s, want Retry", at, got.State)
		}
	}
}
