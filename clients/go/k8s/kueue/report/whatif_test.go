package report

import (
	"context"
	"strings"
	"testing"

	"k8s.io/utils/ptr"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	kueuemodel "arbiter.dev/clients/go/k8s/kueue"

	"arbiter.dev/clients/go/test/kueuetest"
)

const manifests = `
apiVersion: batch/v1
kind: Job
metadata:
  name: train
  labels:
    kueue.x-k8s.io/queue-name: lq
    kueue.x-k8s.io/priority-class: urgent
spec:
  parallelism: 4
  completions: 3
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: c
        image: busybox
        resources:
          requests:
            cpu: 500m
            nvidia.com/gpu: "1"
---
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata:
  name: ps
  namespace: other
  labels:
    kueue.x-k8s.io/queue-name: lq
spec:
  replicatedJobs:
  - name: Driver
    template:
      spec:
        template:
          spec:
            priorityClassName: high
            containers:
            - name: c
              resources:
                requests:
                  cpu: "1"
  - name: workers
    replicas: 2
    template:
      spec:
        parallelism: 3
        template:
          spec:
            containers:
            - name: c
              resources:
                requests:
                  cpu: "2"
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata:
  name: plain
spec:
  queueName: lq
  priority: 9
  podSets:
  - name: main
    count: 1
    template:
      spec:
        containers:
        - name: c
          resources:
            requests:
              memory: 1Gi
`

func TestWorkloadsFromManifestsBuildsWhatKueuesIntegrationsBuild(t *testing.T) {
	prio := Priorities{Workload: map[string]int32{"urgent": 1000}, Pod: map[string]int32{"high": 50}, PodDefault: ptr.To[int32](7)}
	ws, err := WorkloadsFromManifests([]byte(manifests), "team", prio)
	if err != nil {
		t.Fatal(err)
	}
	if len(ws) != 3 {
		t.Fatalf("%d workloads, want 3", len(ws))
	}
	job, js, plain := ws[0], ws[1], ws[2]
	if kueuemodel.WorkloadKey(job) != "team/train" || job.Spec.QueueName != "lq" || *job.Spec.Priority != 1000 ||
		len(job.Spec.PodSets) != 1 || job.Spec.PodSets[0].Name != kueue.DefaultPodSetName || job.Spec.PodSets[0].Count != 3 {
		t.Errorf("Job: %s queue %s priority %d pod sets %+v; want team/train, lq, 1000, one pod set main of min(4, 3) pods",
			kueuemodel.WorkloadKey(job), job.Spec.QueueName, *job.Spec.Priority, job.Spec.PodSets)
	}
	if kueuemodel.WorkloadKey(js) != "other/ps" || *js.Spec.Priority != 50 || len(js.Spec.PodSets) != 2 ||
		js.Spec.PodSets[0].Name != "driver" || js.Spec.PodSets[0].Count != 1 || js.Spec.PodSets[1].Count != 6 {
		t.Errorf("JobSet: %s priority %d pod sets %+v; want other/ps, 50, driver×1 and workers×(2·3)", kueuemodel.WorkloadKey(js), *js.Spec.Priority, js.Spec.PodSets)
	}
	if kueuemodel.WorkloadKey(plain) != "team/plain" || *plain.Spec.Priority != 9 {
		t.Errorf("Workload: %s priority %v", kueuemodel.WorkloadKey(plain), plain.Spec.Priority)
	}
	m, err := kueuemodel.Build(&kueuemodel.State{
		Now:           kueuetest.T0,
		ClusterQueues: []kueue.ClusterQueue{kueuetest.ClusterQueue("cq", "", kueuetest.Quota("cpu", "100"))},
		LocalQueues:   []kueue.LocalQueue{kueuetest.LocalQueue("team", "lq", "cq"), kueuetest.LocalQueue("other", "lq", "cq")},
	}, kueuemodel.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := kueuemodel.Describe(pendingRequests(t, m, job)); got != "cpu=1500, nvidia.com/gpu=3" {
		t.Errorf("Job requests %s", got)
	}
	if got := kueuemodel.Describe(pendingRequests(t, m, js)); got != "cpu=13000" {
		t.Errorf("JobSet requests %s", got)
	}
}

// pendingRequests is what w requests as the model would hold it pending.
func pendingRequests(t *testing.T, m *kueuemodel.Model, w *kueue.Workload) map[string]float64 {
	t.Helper()
	_, wl, skip := m.PodGroup(w)
	if skip != nil {
		t.Fatalf("%s left out: %s", kueuemodel.WorkloadKey(w), skip.Message)
	}
	return wl.Requests
}

func TestWorkloadsFromManifestsRefusesWhatKueueWouldNotQueue(t *testing.T) {
	for name, c := range map[string]struct{ doc, want string }{
		"no queue":       {"apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\nspec: {template: {spec: {containers: [{name: c}]}}}", "no LocalQueue"},
		"unknown kind":   {"apiVersion: v1\nkind: Pod\nmetadata: {name: p}", "want a batch/v1 Job"},
		"unknown class":  {"apiVersion: batch/v1\nkind: Job\nmetadata: {name: j, labels: {kueue.x-k8s.io/queue-name: lq, kueue.x-k8s.io/priority-class: nope}}\nspec: {template: {spec: {containers: [{name: c}]}}}", `WorkloadPriorityClass "nope" does not exist`},
		"typo in a Job":  {"apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\nspec: {paralelism: 2}", "paralelism"},
		"empty":          {"---\n", "no Job, JobSet or Workload"},
		"no name at all": {"apiVersion: batch/v1\nkind: Job\nmetadata: {labels: {kueue.x-k8s.io/queue-name: lq}}\nspec: {template: {spec: {containers: [{name: c}]}}}", "metadata.name"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := WorkloadsFromManifests([]byte(c.doc), "ns", Priorities{})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want it to contain %q", err, c.want)
			}
		})
	}
}

func TestWhatIfPredictsAdmissionPreemptionAndRefusal(t *testing.T) {
	arb := kueuetest.ArbiterClient(t)
	m, err := kueuemodel.Build(borrowedCohort(), kueuemodel.Options{})
	if err != nil {
		t.Fatal(err)
	}
	job := func(name, ns, queue, cpu string, pods int) *kueue.Workload {
		doc := `apiVersion: batch/v1
kind: Job
metadata: {name: ` + name + `, namespace: ` + ns + `, labels: {kueue.x-k8s.io/queue-name: ` + queue + `}}
spec:
  parallelism: ` + string(rune('0'+pods)) + `
  template: {spec: {containers: [{name: c, resources: {requests: {cpu: "` + cpu + `"}}}]}}`
		ws, err := WorkloadsFromManifests([]byte(doc), "default", Priorities{})
		if err != nil {
			t.Fatal(err)
		}
		return ws[0]
	}
	for name, c := range map[string]struct {
		w       *kueue.Workload
		verdict string
		reason  string
		victim  string
	}{
		// team-b runs 6 of the pool's 8 CPUs: 2 are free, to take without preempting.
		"fits":          {job("small", "a", "lq", "1", 2), VerdictAdmit, "", ""},
		"reclaims":      {job("medium", "a", "lq", "3", 1), VerdictPreempt, "", "b/big"},
		"beyond quota":  {job("giant", "a", "lq", "3", 3), VerdictPending, "exceeds-max-quota", ""},
		"no localqueue": {job("lost", "c", "lq", "1", 1), VerdictPending, "local-queue-not-found", ""},
		// After a/reclaimer takes back its 4 CPUs, team-b has 4 left and may not preempt.
		"beyond what is left": {job("more", "b", "lq", "5", 1), VerdictPending, "insufficient-quota", ""},
	} {
		t.Run(name, func(t *testing.T) {
			p, err := WhatIf(context.Background(), arb, m, c.w)
			if err != nil {
				t.Fatal(err)
			}
			if p.Verdict != c.verdict || p.Reason != c.reason {
				t.Errorf("%+v, want %s %s", p, c.verdict, c.reason)
			}
			if c.victim != "" && (len(p.Preempts) != 1 || p.Preempts[0].Workload != c.victim) {
				t.Errorf("preempts %+v, want %s", p.Preempts, c.victim)
			}
		})
	}
	if _, err := WhatIf(context.Background(), arb, m, job("reclaimer", "a", "lq", "1", 1)); err == nil {
		t.Error("a candidate named like an existing workload was accepted")
	}
	if len(m.Request.Snapshot.PodGroups) != 3 {
		t.Errorf("WhatIf changed the model: %d pod groups", len(m.Request.Snapshot.PodGroups))
	}
}
