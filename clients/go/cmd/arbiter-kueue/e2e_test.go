package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	kueueclient "sigs.k8s.io/kueue/client-go/clientset/versioned"

	arbiterv1 "arbiter.dev/clients/go/arbiterv1"
	"arbiter.dev/clients/go/k8s/usage"
	"arbiter.dev/clients/go/test/controlplane"
	"arbiter.dev/clients/go/test/e2e"

	"arbiter.dev/clients/go/test/kueuetest"

	kueuemodel "arbiter.dev/clients/go/k8s/kueue"
	"arbiter.dev/clients/go/k8s/kueue/report"
	"arbiter.dev/clients/go/k8s/kueue/timeaware"
)

// realKueue is a control plane with Kueue's own controller manager, an arbiter-server, and
// clients of both APIs.
type realKueue struct {
	cp         *controlplane.ControlPlane
	kueue      *controlplane.Kueue
	kc         kueueclient.Interface
	kube       kubernetes.Interface
	server     string
	kubeconfig string
}

func startRealKueue(t *testing.T, scheduler bool) *realKueue {
	t.Helper()
	server := e2e.ArbiterServer(t)
	cp, k := e2e.ControlPlaneWithKueue(t, controlplane.Options{Scheduler: scheduler, Dir: os.Getenv("KQ_DEBUG_DIR"), KeepDir: os.Getenv("KQ_DEBUG_DIR") != ""}, controlplane.KueueOptions{Args: strings.Fields(os.Getenv("KQ_DEBUG_ARGS"))})
	cfg := cp.RESTConfig(controlplane.Admin)
	r := &realKueue{cp: cp, kueue: k, server: server}
	var err error
	if r.kc, err = kueueclient.NewForConfig(cfg); err != nil {
		t.Fatal(err)
	}
	if r.kube, err = kubernetes.NewForConfig(cfg); err != nil {
		t.Fatal(err)
	}
	if r.kubeconfig, err = cp.Kubeconfig(controlplane.Admin); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := r.kc.KueueV1beta2().ResourceFlavors().Create(ctx, &kueue.ResourceFlavor{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			r.logWorkloads(t)
		}
	})
	return r
}

// logWorkloads writes every Workload's conditions and check states to the test's log.
func (r *realKueue) logWorkloads(t *testing.T) {
	list, err := r.kc.KueueV1beta2().Workloads(metav1.NamespaceAll).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Logf("list workloads: %v", err)
		return
	}
	for _, w := range list.Items {
		var b strings.Builder
		fmt.Fprintf(&b, "workload %s:", kueuemodel.WorkloadKey(&w))
		for _, c := range w.Status.Conditions {
			fmt.Fprintf(&b, "\n    %s=%s %s %s (%s)", c.Type, c.Status, c.LastTransitionTime.Format(time.TimeOnly), c.Reason, c.Message)
		}
		for _, st := range w.Status.AdmissionChecks {
			fmt.Fprintf(&b, "\n    check %s=%s retries=%d (%s)", st.Name, st.State, ptr.Deref(st.RetryCount, 0), st.Message)
		}
		t.Log(b.String())
	}
}

func (r *realKueue) namespace(t *testing.T, names ...string) {
	t.Helper()
	for _, ns := range names {
		if _, err := r.kube.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// queues creates the Cohort, ClusterQueues and a LocalQueue "lq" per ClusterQueue in the
// namespace named like the ClusterQueue's suffix (team-a: namespace a).
func (r *realKueue) queues(t *testing.T, cohort *kueue.Cohort, cqs ...kueue.ClusterQueue) {
	t.Helper()
	ctx := context.Background()
	api := r.kc.KueueV1beta2()
	if cohort != nil {
		if _, err := api.Cohorts().Create(ctx, cohort, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range cqs {
		if _, err := api.ClusterQueues().Create(ctx, &cqs[i], metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		ns := strings.TrimPrefix(cqs[i].Name, "team-")
		r.namespace(t, ns)
		lq := kueuetest.LocalQueue(ns, "lq", cqs[i].Name)
		if _, err := api.LocalQueues(ns).Create(ctx, &lq, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// holdLocalQueue sets the stopPolicy of the LocalQueue lq of namespace ns.
func (r *realKueue) holdLocalQueue(t *testing.T, ns string, policy kueue.StopPolicy) {
	t.Helper()
	api := r.kc.KueueV1beta2().LocalQueues(ns)
	// Kueue writes the LocalQueue's status as it goes: read it again on a conflict.
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		lq, err := api.Get(context.Background(), "lq", metav1.GetOptions{})
		if err != nil {
			return err
		}
		lq.Spec.StopPolicy = &policy
		_, err = api.Update(context.Background(), lq, metav1.UpdateOptions{})
		return err
	}); err != nil {
		t.Fatal(err)
	}
}

// workloads lists every Workload, by key.
func (r *realKueue) workloads(t *testing.T) map[string]*kueue.Workload {
	t.Helper()
	list, err := r.kc.KueueV1beta2().Workloads(metav1.NamespaceAll).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*kueue.Workload{}
	for i := range list.Items {
		out[kueuemodel.WorkloadKey(&list.Items[i])] = &list.Items[i]
	}
	return out
}

// arbiterKueue runs the arbiter-kueue command line against the cluster and arbiter-server.
func (r *realKueue) arbiterKueue(t *testing.T, bin string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(bin, append(args, "--kubeconfig", r.kubeconfig, "--server", r.server)...)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("arbiter-kueue %v: %v\n%s", args, err, out)
	}
	return out
}

// releaseEvicted plays the part of a job integration for plain Workloads until ctx ends: an
// evicted workload that still holds its quota gives it back, as Kueue's integrations do once the
// job has stopped.
func (r *realKueue) releaseEvicted(ctx context.Context) {
	api := r.kc.KueueV1beta2()
	for ctx.Err() == nil {
		list, err := api.Workloads(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
		if err == nil {
			for i := range list.Items {
				w := &list.Items[i]
				if !apimeta.IsStatusConditionTrue(w.Status.Conditions, kueue.WorkloadEvicted) || !kueuemodel.HasQuotaReservation(w) {
					continue
				}
				apimeta.SetStatusCondition(&w.Status.Conditions, metav1.Condition{
					Type: kueue.WorkloadQuotaReserved, Status: metav1.ConditionFalse, Reason: "Pending", Message: "the job stopped", ObservedGeneration: w.Generation,
				})
				apimeta.SetStatusCondition(&w.Status.Conditions, metav1.Condition{
					Type: kueue.WorkloadAdmitted, Status: metav1.ConditionFalse, Reason: "NoReservation", Message: "the job stopped", ObservedGeneration: w.Generation,
				})
				w.Status.Admission = nil
				_, _ = api.Workloads(w.Namespace).UpdateStatus(ctx, w, metav1.UpdateOptions{})
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (r *realKueue) createWorkload(t *testing.T, w kueue.Workload) {
	t.Helper()
	w.CreationTimestamp = metav1.Time{}
	if _, err := r.kc.KueueV1beta2().Workloads(w.Namespace).Create(context.Background(), &w, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func waitFor(t *testing.T, what string, timeout time.Duration, done func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !done() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, timeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func withReclaim(cq kueue.ClusterQueue) kueue.ClusterQueue {
	cq.Spec.Preemption = &kueue.ClusterQueuePreemption{ReclaimWithinCohort: kueue.PreemptionPolicyAny, WithinClusterQueue: kueue.PreemptionPolicyNever}
	return cq
}

// TestRealExplainAndWhatIfMatchWhatKueueDoes: team-a borrows the quota of team-b and team-c;
// with team-b's LocalQueue held, team-b submits three workloads; arbiter-kueue explain says what Kueue will
// do (a reclamation, a fair-sharing preemption, one left pending); Kueue, once the LocalQueue is released, does
// exactly that, and publishes the weighted shares arbiter computes. Then what-if predicts the
// fate of three manifests, each of which Kueue then treats as predicted.
func TestRealExplainAndWhatIfMatchWhatKueueDoes(t *testing.T) {
	r := startRealKueue(t, false)
	bin := e2e.Binary(t, "arbiter.dev/clients/go/cmd/arbiter-kueue")
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	go r.releaseEvicted(ctx)

	r.queues(t, &kueue.Cohort{ObjectMeta: metav1.ObjectMeta{Name: "org"}},
		withReclaim(kueuetest.ClusterQueue("team-a", "org", kueuetest.Quota("cpu", "2"))),
		withReclaim(kueuetest.ClusterQueue("team-b", "org", kueuetest.Quota("cpu", "2"))),
		withReclaim(kueuetest.ClusterQueue("team-c", "org", kueuetest.Quota("cpu", "4"))))
	// team-a takes the whole cohort, one workload at a time, so that their reservation times
	// (seconds in the API) differ and the order of victims is Kueue's, not a tie.
	for i := 1; i <= 4; i++ {
		w := kueuetest.Pending("a", fmt.Sprintf("a-%d", i), "lq", 0, 1, "cpu", "2")
		r.createWorkload(t, w)
		if _, err := controlplane.WaitForWorkloadCondition(ctx, r.kc, "a", w.Name, kueue.WorkloadQuotaReserved, time.Minute); err != nil {
			t.Fatal(err)
		}
		time.Sleep(1100 * time.Millisecond)
	}
	// team-b's LocalQueue holds its Workloads while explain looks (Kueue keeps them pending; the
	// model explains them as if released). Holding is safer than stopping Kueue: a restarted Kueue
	// may schedule before its cache holds the Workloads admitted earlier.
	r.holdLocalQueue(t, "b", kueue.Hold)
	for i := 1; i <= 3; i++ {
		w := kueuetest.Pending("b", fmt.Sprintf("b-%d", i), "lq", 0, 1, "cpu", "2")
		// Kueue admits b-1 and b-2 in one cycle, so their reservation times (in seconds) tie,
		// and Kueue breaks that tie between preemption candidates by UID, which no one can
		// predict. A priority apart settles which of them a later reclamation takes.
		w.Spec.Priority = ptr.To(int32(10 - i))
		r.createWorkload(t, w)
		time.Sleep(1100 * time.Millisecond) // distinct creation seconds: Kueue's queue order
	}

	dumps := t.TempDir()
	var explained report.Report
	if err := json.Unmarshal(r.arbiterKueue(t, bin, "explain", "--format", "json", "--dump-snapshot", dumps), &explained); err != nil {
		t.Fatal(err)
	}
	replayed := replayDump(t, dumps)
	predicted := map[string]string{} // victim -> rule
	admit := map[string]bool{}
	for _, v := range explained.Workloads {
		t.Logf("arbiter: %s %s %s %v", v.Workload, v.Verdict, v.Reason, v.Preempts)
		if v.Verdict != report.VerdictPending {
			admit[v.Workload] = true
		}
		for _, p := range v.Preempts {
			predicted[p.Workload] = p.Rule
		}
	}
	rules := map[string]int{}
	for _, rule := range predicted {
		rules[rule]++
	}
	// The dumped request, replayed by the CLI, gives the answer explain read.
	for key := range admit {
		found := false
		for _, a := range replayed.GetAdmissions() {
			found = found || a.GetPodGroup() == key
		}
		if !found {
			t.Errorf("the replayed snapshot does not admit %s: %v", key, replayed.GetAdmissions())
		}
	}
	for _, e := range replayed.GetEvictions() {
		if predicted[e.GetPodGroup()] != report.Rule(e.GetReason()) {
			t.Errorf("the replayed snapshot evicts %s by %s; explain said %q", e.GetPodGroup(), report.Rule(e.GetReason()), predicted[e.GetPodGroup()])
		}
	}
	if rules["InCohortReclamation"] == 0 || rules["InCohortFairSharing"] == 0 || len(admit) == 3 {
		t.Fatalf("the scenario should need a reclamation, a fair-sharing preemption and leave a workload pending; arbiter says %v, admits %v", predicted, admit)
	}

	r.holdLocalQueue(t, "b", kueue.None)
	// Kueue settles when every predicted admission has its quota and every victim is evicted.
	waitFor(t, "Kueue to admit and preempt as predicted", 2*time.Minute, func() bool {
		ws := r.workloads(t)
		for key := range admit {
			if !kueuemodel.HasQuotaReservation(ws[key]) {
				return false
			}
		}
		for key := range predicted {
			if kueuemodel.HasQuotaReservation(ws[key]) {
				return false
			}
		}
		return true
	})
	time.Sleep(3 * time.Second) // nothing else may move
	ws := r.workloads(t)
	for _, key := range slices.Sorted(maps.Keys(ws)) {
		w := ws[key]
		preempted := apimeta.FindStatusCondition(w.Status.Conditions, kueue.WorkloadPreempted)
		switch {
		case predicted[key] != "":
			if preempted == nil || preempted.Status != metav1.ConditionTrue || preempted.Reason != predicted[key] {
				t.Errorf("%s: Kueue's Preempted condition %+v, arbiter predicted %s", key, preempted, predicted[key])
			}
		case preempted != nil && preempted.Status == metav1.ConditionTrue:
			t.Errorf("%s: Kueue preempted it (%s), arbiter did not predict it", key, preempted.Reason)
		}
		wantReserved := admit[key] || (strings.HasPrefix(key, "a/") && predicted[key] == "")
		if kueuemodel.HasQuotaReservation(w) != wantReserved {
			t.Errorf("%s: quota reserved %v, arbiter predicted %v", key, kueuemodel.HasQuotaReservation(w), wantReserved)
		}
	}

	// The shares Kueue publishes are arbiter's (Kueue updates its status as it goes).
	waitFor(t, "Kueue's weighted shares to equal arbiter's", time.Minute, func() bool {
		var now report.Report
		if err := json.Unmarshal(r.arbiterKueue(t, bin, "explain", "--format", "json"), &now); err != nil {
			t.Fatal(err)
		}
		published := 0
		for _, q := range now.Queues {
			if q.Differs {
				return false
			}
			if q.Kueue != nil {
				published++
			}
		}
		return published == 4 // three ClusterQueues and the cohort
	})

	t.Run("what-if", func(t *testing.T) {
		dir := t.TempDir()
		manifests := map[string]string{
			// team-c lends everything it has: it may take back what is its own.
			"c-small": "apiVersion: batch/v1\nkind: Job\nmetadata: {name: c-small, namespace: c, labels: {kueue.x-k8s.io/queue-name: lq}}\nspec: {suspend: true, template: {spec: {restartPolicy: Never, containers: [{name: c, image: busybox, resources: {requests: {cpu: \"2\"}}}]}}}\n",
			// More than the cohort holds.
			"c-huge": "apiVersion: kueue.x-k8s.io/v1beta2\nkind: Workload\nmetadata: {name: c-huge, namespace: c}\nspec: {queueName: lq, podSets: [{name: main, count: 5, template: {spec: {containers: [{name: c, resources: {requests: {cpu: \"2\"}}}]}}}]}\n",
			// team-a borrows already: it may not take more from team-b.
			"a-more": "apiVersion: kueue.x-k8s.io/v1beta2\nkind: Workload\nmetadata: {name: a-more, namespace: a}\nspec: {queueName: lq, podSets: [{name: main, count: 1, template: {spec: {containers: [{name: c, resources: {requests: {cpu: \"2\"}}}]}}}]}\n",
		}
		for _, name := range []string{"c-huge", "a-more", "c-small"} {
			path := filepath.Join(dir, name+".yaml")
			if err := os.WriteFile(path, []byte(manifests[name]), 0o644); err != nil {
				t.Fatal(err)
			}
			var predictions []report.Prediction
			if err := json.Unmarshal(r.arbiterKueue(t, bin, "what-if", "-f", path, "--format", "json"), &predictions); err != nil {
				t.Fatal(err)
			}
			p := predictions[0]
			t.Logf("what-if %s: %+v", name, p)
			// Submit it as predicted (a Workload as it is; the Job as the Workload Kueue would
			// make of it) and see what Kueue does.
			ws, err := report.WorkloadsFromManifests([]byte(manifests[name]), "default", report.Priorities{})
			if err != nil {
				t.Fatal(err)
			}
			w := *ws[0]
			w.ResourceVersion = ""
			r.createWorkload(t, w)
			key := kueuemodel.WorkloadKey(&w)
			if p.Verdict == report.VerdictPending {
				time.Sleep(3 * time.Second)
				if got := r.workloads(t)[key]; kueuemodel.HasQuotaReservation(got) {
					t.Errorf("%s: predicted pending (%s), Kueue admitted it", key, p.Reason)
				}
				continue
			}
			if _, err := controlplane.WaitForWorkloadCondition(context.Background(), r.kc, w.Namespace, w.Name, kueue.WorkloadQuotaReserved, time.Minute); err != nil {
				t.Errorf("%s: predicted %s, but %v", key, p.Verdict, err)
			}
			for _, victim := range p.Preempts {
				if kueuemodel.HasQuotaReservation(r.workloads(t)[victim.Workload]) {
					t.Errorf("%s: predicted to preempt %s, which still has its quota", key, victim.Workload)
				}
			}
		}
	})
}

// replayDump runs `arbiter schedule` (the CLI built next to arbiter-server) on the one request
// dumped into dir and returns its answer.
func replayDump(t *testing.T, dir string) *arbiterv1.ScheduleResponse {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "explain-*.json"))
	if err != nil || len(files) != 1 {
		t.Fatalf("dumps = %v (%v), want 1", files, err)
	}
	out, err := exec.Command(e2e.ArbiterCLI(t), "schedule", files[0], "--format", "json").Output()
	if err != nil {
		t.Fatalf("arbiter schedule %s: %v", files[0], err)
	}
	resp := &arbiterv1.ScheduleResponse{}
	if err := protojson.Unmarshal(out, resp); err != nil {
		t.Fatalf("CLI output is not a ScheduleResponse: %v\n%s", err, out)
	}
	return resp
}

// backlog submits n Jobs of one pod with requests cpu to LocalQueue lq of ns, each running for
// run once started.
func (r *realKueue) backlog(t *testing.T, ns string, n int, cpu string, run time.Duration) {
	t.Helper()
	for i := 0; i < n; i++ {
		job := &batchv1.Job{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("%s-%d", ns, i), Labels: map[string]string{report.QueueNameLabel: "lq"}},
			Spec: batchv1.JobSpec{
				Suspend: ptr.To(true), // Kueue's webhook would set it; none runs here
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{controlplane.CompleteAfterAnnotation: run.String()}},
					Spec: corev1.PodSpec{
						RestartPolicy: corev1.RestartPolicyNever,
						Containers: []corev1.Container{{Name: "work", Image: "busybox", Resources: corev1.ResourceRequirements{
							Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)},
						}}},
					},
				},
			},
		}
		if _, err := r.kube.BatchV1().Jobs(ns).Create(context.Background(), job, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// admissionOrder is the namespaces of the workloads Kueue admitted (every check Ready), in the
// order of their Admitted condition.
func (r *realKueue) admissionOrder(t *testing.T) []string {
	t.Helper()
	type admitted struct {
		ns string
		at time.Time
	}
	var all []admitted
	for _, w := range r.workloads(t) {
		if c := apimeta.FindStatusCondition(w.Status.Conditions, kueue.WorkloadAdmitted); c != nil && c.Status == metav1.ConditionTrue ||
			apimeta.IsStatusConditionTrue(w.Status.Conditions, kueue.WorkloadFinished) {
			c := apimeta.FindStatusCondition(w.Status.Conditions, kueue.WorkloadQuotaReserved)
			all = append(all, admitted{w.Namespace, c.LastTransitionTime.Time})
		}
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].at.Before(all[j].at) })
	out := make([]string, len(all))
	for i, a := range all {
		out[i] = a.ns
	}
	return out
}

// storyOneOnKueue: a cohort of 8 CPUs shared by team-a and team-b, which own none, both behind
// the arbiter.dev/time-aware check; each has a backlog of jobs that take all 8 CPUs for run,
// team-a's submitted first.
func storyOneOnKueue(t *testing.T, r *realKueue, jobs int, run time.Duration) {
	t.Helper()
	ctx := context.Background()
	if err := controlplane.CreateNodes(ctx, r.kube, controlplane.NewNode("node-0", corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("64"), corev1.ResourceMemory: resource.MustParse("256Gi"), corev1.ResourcePods: resource.MustParse("110"),
	})); err != nil {
		t.Fatal(err)
	}
	if _, err := r.kc.KueueV1beta2().AdmissionChecks().Create(ctx, &kueue.AdmissionCheck{
		ObjectMeta: metav1.ObjectMeta{Name: "time-aware"}, Spec: kueue.AdmissionCheckSpec{ControllerName: timeaware.CheckControllerName},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var cqs []kueue.ClusterQueue
	for _, name := range []string{"team-a", "team-b"} {
		cq := kueuetest.ClusterQueue(name, "pool", kueuetest.Quota("cpu", "0"))
		cq.Spec.AdmissionChecksStrategy = &kueue.AdmissionChecksStrategy{AdmissionChecks: []kueue.AdmissionCheckStrategyRule{{Name: "time-aware"}}}
		cqs = append(cqs, cq)
	}
	pool := kueuetest.Cohort("pool", "", kueuetest.Quota("cpu", "8"))
	r.queues(t, &pool, cqs...)
	r.namespace(t, "arbiter-system")
	r.backlog(t, "a", jobs, "8", run)
	time.Sleep(1100 * time.Millisecond) // team-a's backlog is older, to the second
	r.backlog(t, "b", jobs, "8", run)
}

// testHandoverGrace is the checks' --handover-grace: longer than the handovers Kueue makes here
// (1-10 s), short enough that one it does not make costs the test little.
const testHandoverGrace = 20 * time.Second

// startCheck runs `arbiter-kueue check` with k (leader election on) until the test ends or stop
// is called; its log goes to the file logPath.
func (r *realKueue) startCheck(t *testing.T, bin string, k float64) (stop func(), logPath string) {
	t.Helper()
	cmd := exec.Command(bin, "check", "--kubeconfig", r.kubeconfig, "--server", r.server,
		"--k-value", fmt.Sprint(k), "--period", "200ms", "--usage-save-interval", "500ms",
		"--handover-grace", testHandoverGrace.String(),
		"--namespace", "arbiter-system", "--http-addr", "127.0.0.1:0")
	log, err := os.Create(filepath.Join(t.TempDir(), "check.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
		if t.Failed() {
			data, _ := os.ReadFile(log.Name())
			t.Logf("--- arbiter-kueue check log:\n%s", data)
		}
	}
	t.Cleanup(stop)
	return stop, log.Name()
}

// TestRealTimeAwareCheckAlternatesTheClusterQueuesAndHandsItsLedgerToTheNextLeader is the seed's
// story 1 on a real Kueue: with k > 0 the two ClusterQueues take turns, where Kueue alone runs
// team-a's whole backlog first. Half-way, a second replica waits for the Lease, deciding nothing,
// and takes over from the saved ledger when the first one stops.
func TestRealTimeAwareCheckAlternatesTheClusterQueuesAndHandsItsLedgerToTheNextLeader(t *testing.T) {
	r := startRealKueue(t, true)
	bin := e2e.Binary(t, "arbiter.dev/clients/go/cmd/arbiter-kueue")
	const jobs = 3
	storyOneOnKueue(t, r, jobs, 2*time.Second)
	stopLeader, _ := r.startCheck(t, bin, 1)
	waitFor(t, "three jobs admitted", 3*time.Minute, func() bool { return len(r.admissionOrder(t)) >= 3 })
	// A second replica waits for the Lease and decides nothing meanwhile.
	_, followerLog := r.startCheck(t, bin, 1)
	time.Sleep(2 * time.Second)
	if log, _ := os.ReadFile(followerLog); strings.Contains(string(log), "msg=decided") {
		t.Errorf("the second replica decided while the first held the Lease:\n%s", log)
	}
	// The leader stops: it saves its ledger, then releases the Lease to the second replica.
	stopLeader()
	store := &usage.ConfigMapStore{Client: r.kube, Namespace: "arbiter-system", Name: "arbiter-kueue-usage"}
	before, err := store.Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if before.Queues["team-a"]["cpu"] <= 0 || before.Queues["team-b"]["cpu"] <= 0 {
		t.Fatalf("saved ledger %+v: both ClusterQueues ran, both should have usage", before.Queues)
	}
	waitFor(t, "every job admitted", 3*time.Minute, func() bool { return len(r.admissionOrder(t)) == 2*jobs })
	if log, _ := os.ReadFile(followerLog); !strings.Contains(string(log), "msg=leading") {
		t.Errorf("the second replica never led:\n%s", log)
	}
	after, err := store.Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if after.Queues["team-a"]["cpu"] < before.Queues["team-a"]["cpu"] || after.Updated.Before(before.Updated) {
		t.Errorf("the ledger did not go on from the saved one: before %+v, after %+v", before, after)
	}
	order := r.admissionOrder(t)
	t.Logf("admission order with k=1: %v", order)
	retried, unclaimed := 0, []string{}
	for key, w := range r.workloads(t) {
		for _, st := range w.Status.AdmissionChecks {
			retried += int(ptr.Deref(st.RetryCount, 0))
			if strings.Contains(st.Message, "has not taken the quota") {
				unclaimed = append(unclaimed, key)
			}
		}
	}
	switch {
	case len(unclaimed) > 0:
		// Kueue kept reserving the quota for the workload sent back and never tried the rival's
		// (its requeue of other ClusterQueues' workloads comes in batches); the grace ended the
		// wait, so the order is Kueue's, not the check's. Every job still ran: nothing stalled.
		t.Logf("Kueue did not hand the quota over for %v within %s; the order is not checked", unclaimed, testHandoverGrace)
	case len(order) < 2 || order[0] != "a" || order[1] != "b":
		// Kueue alone runs team-a's whole backlog first (the k = 0 test). With the check, team-b
		// gets the cohort second.
		t.Errorf("admission order %v: team-b should follow team-a's first job", order)
	default:
		// No ClusterQueue keeps the cohort for more than two jobs in a row: when their usage is
		// even, Kueue's own order (the evicted workload queues last) decides.
		for i := 2; i < len(order); i++ {
			if order[i] == order[i-1] && order[i] == order[i-2] {
				t.Errorf("admission order %v: one ClusterQueue kept the cohort for three jobs", order)
				break
			}
		}
	}
	if retried == 0 {
		t.Error("no workload was ever sent back: the check did not act")
	}
	t.Logf("%d Retry answers in all", retried)
}

// TestRealTimeAwareCheckWithKZeroChangesNothing: the same backlog with k = 0 runs as Kueue alone
// runs it, team-a's backlog first, and no workload is ever sent back.
func TestRealTimeAwareCheckWithKZeroChangesNothing(t *testing.T) {
	r := startRealKueue(t, true)
	bin := e2e.Binary(t, "arbiter.dev/clients/go/cmd/arbiter-kueue")
	const jobs = 3
	storyOneOnKueue(t, r, jobs, time.Second)
	r.startCheck(t, bin, 0)
	waitFor(t, "every job admitted", 3*time.Minute, func() bool { return len(r.admissionOrder(t)) == 2*jobs })
	order := r.admissionOrder(t)
	if want := []string{"a", "a", "a", "b", "b", "b"}; fmt.Sprint(order) != fmt.Sprint(want) {
		t.Errorf("admission order with k=0 %v, want Kueue's own %v", order, want)
	}
	for key, w := range r.workloads(t) {
		for _, st := range w.Status.AdmissionChecks {
			if ptr.Deref(st.RetryCount, 0) > 0 || st.State != kueue.CheckStateReady {
				t.Errorf("%s: check %+v, want Ready and never retried", key, st)
			}
		}
	}
}

// TestRealExplainAndWhatIfNameTheFlavorsKueueAssigns: ClusterQueue team-f offers cpu in
// on-demand (2) then spot (4, tainted). With its LocalQueue held, three workloads of 2 CPUs
// wait: f-1 and f-2 tolerate spot's taint, f-3 does not. explain says f-1 goes to on-demand, f-2
// to spot once on-demand is full, and f-3 stays pending; Kueue, once the LocalQueue is
// released, assigns exactly those flavors, and explain then finds Kueue's flavors its own. what-if
// predicts spot for one more CPU, and Kueue puts it there.
func TestRealExplainAndWhatIfNameTheFlavorsKueueAssigns(t *testing.T) {
	r := startRealKueue(t, false)
	bin := e2e.Binary(t, "arbiter.dev/clients/go/cmd/arbiter-kueue")
	ctx := context.Background()
	for _, rf := range []kueue.ResourceFlavor{
		kueuetest.ResourceFlavor("on-demand", map[string]string{"tier": "on-demand"}),
		kueuetest.ResourceFlavor("spot", map[string]string{"tier": "spot"}, corev1.Taint{Key: "spot", Value: "true", Effect: corev1.TaintEffectNoSchedule}),
	} {
		if _, err := r.kc.KueueV1beta2().ResourceFlavors().Create(ctx, &rf, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	cq := kueuetest.ClusterQueue("team-f", "", nil)
	cq.Spec.ResourceGroups = []kueue.ResourceGroup{kueuetest.ResourceGroup(kueuetest.Flavor("on-demand", "cpu", "2"), kueuetest.Flavor("spot", "cpu", "4"))}
	r.queues(t, nil, cq)
	r.holdLocalQueue(t, "f", kueue.Hold)
	tolerant := func(w kueue.Workload) kueue.Workload {
		w.Spec.PodSets[0].Template.Spec.Tolerations = []corev1.Toleration{{Key: "spot", Operator: corev1.TolerationOpExists}}
		return w
	}
	for _, w := range []kueue.Workload{
		tolerant(kueuetest.Pending("f", "f-1", "lq", 0, 1, "cpu", "2")),
		tolerant(kueuetest.Pending("f", "f-2", "lq", 0, 1, "cpu", "2")),
		kueuetest.Pending("f", "f-3", "lq", 0, 1, "cpu", "2"),
	} {
		r.createWorkload(t, w)
		time.Sleep(1100 * time.Millisecond) // distinct creation seconds: Kueue's queue order
	}

	var explained report.Report
	if err := json.Unmarshal(r.arbiterKueue(t, bin, "explain", "--format", "json"), &explained); err != nil {
		t.Fatal(err)
	}
	predicted := map[string]string{} // workload -> flavor of its cpu
	for _, v := range explained.Workloads {
		t.Logf("arbiter: %s %s %s %+v", v.Workload, v.Verdict, v.Reason, v.Flavors)
		if v.Verdict == report.VerdictAdmit && len(v.Flavors) == 1 {
			predicted[v.Workload] = v.Flavors[0].Flavors["cpu"]
		}
	}
	if want := map[string]string{"f/f-1": "on-demand", "f/f-2": "spot"}; !maps.Equal(predicted, want) {
		t.Fatalf("arbiter assigns %v, want %v (and f/f-3 pending)", predicted, want)
	}
	if table := r.arbiterKueue(t, bin, "explain"); !strings.Contains(string(table), "main: spot") {
		t.Errorf("explain's table does not name the flavor:\n%s", table)
	}

	r.holdLocalQueue(t, "f", kueue.None)
	waitFor(t, "Kueue to reserve quota for f-1 and f-2", 2*time.Minute, func() bool {
		ws := r.workloads(t)
		return kueuemodel.HasQuotaReservation(ws["f/f-1"]) && kueuemodel.HasQuotaReservation(ws["f/f-2"])
	})
	time.Sleep(2 * time.Second) // nothing else may move
	ws := r.workloads(t)
	for key, flavor := range predicted {
		psa := ws[key].Status.Admission.PodSetAssignments
		if len(psa) != 1 || string(psa[0].Flavors[corev1.ResourceCPU]) != flavor {
			t.Errorf("%s: Kueue assigned %+v, arbiter predicted cpu in %s", key, psa, flavor)
		}
	}
	if kueuemodel.HasQuotaReservation(ws["f/f-3"]) {
		t.Errorf("f/f-3: Kueue reserved quota (%+v), arbiter predicted it pending", ws["f/f-3"].Status.Admission)
	}

	// Kueue's flavors, seen by explain beside arbiter's own choice: the same.
	var after report.Report
	if err := json.Unmarshal(r.arbiterKueue(t, bin, "explain", "--format", "json"), &after); err != nil {
		t.Fatal(err)
	}
	if len(after.Reserved) != 2 {
		t.Errorf("explain checks the flavors of %+v, want f/f-1 and f/f-2", after.Reserved)
	}
	for _, c := range after.Reserved {
		t.Logf("reserved %s: Kueue %+v, arbiter %+v", c.Workload, c.Kueue, c.Arbiter)
		if c.Differs || len(c.Kueue) != 1 || c.Kueue[0].Flavors["cpu"] != predicted[c.Workload] {
			t.Errorf("%s: %+v, want Kueue's %s, arbiter's the same", c.Workload, c, predicted[c.Workload])
		}
	}
	for _, q := range after.Queues {
		if q.Name == "team-f" {
			t.Logf("team-f by flavor: %+v", q.Flavors)
			want := []report.FlavorUsage{
				{Flavor: "on-demand", Resource: "cpu", Nominal: 2000, SubtreeQuota: 2000, Usage: 2000},
				{Flavor: "spot", Resource: "cpu", Nominal: 4000, SubtreeQuota: 4000, Usage: 2000},
			}
			if !slices.Equal(q.Flavors, want) {
				t.Errorf("team-f by flavor %+v, want %+v", q.Flavors, want)
			}
		}
	}

	// what-if: one more CPU, tolerating spot's taint, goes to spot; Kueue puts it there.
	manifest := "apiVersion: kueue.x-k8s.io/v1beta2\nkind: Workload\nmetadata: {name: f-more, namespace: f}\nspec: {queueName: lq, podSets: [{name: main, count: 1, template: {spec: {tolerations: [{key: spot, operator: Exists}], containers: [{name: c, resources: {requests: {cpu: \"1\"}}}]}}}]}\n"
	path := filepath.Join(t.TempDir(), "f-more.yaml")
	if err := os.WriteFile(path, []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	var predictions []report.Prediction
	if err := json.Unmarshal(r.arbiterKueue(t, bin, "what-if", "-f", path, "--format", "json"), &predictions); err != nil {
		t.Fatal(err)
	}
	p := predictions[0]
	t.Logf("what-if f-more: %+v", p)
	if p.Verdict != report.VerdictAdmit || len(p.Flavors) != 1 || p.Flavors[0].Flavors["cpu"] != "spot" {
		t.Fatalf("what-if f-more: %+v, want admitted on spot", p)
	}
	if table := r.arbiterKueue(t, bin, "what-if", "-f", path); !strings.Contains(string(table), "main: spot") {
		t.Errorf("what-if's table does not name the flavor:\n%s", table)
	}
	more, err := report.WorkloadsFromManifests([]byte(manifest), "default", report.Priorities{})
	if err != nil {
		t.Fatal(err)
	}
	r.createWorkload(t, *more[0])
	got, err := controlplane.WaitForWorkloadCondition(ctx, r.kc, "f", "f-more", kueue.WorkloadQuotaReserved, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if psa := got.Status.Admission.PodSetAssignments; len(psa) != 1 || psa[0].Flavors[corev1.ResourceCPU] != "spot" {
		t.Errorf("f/f-more: Kueue assigned %+v, arbiter predicted spot", psa)
	}
}
