package report

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"google.golang.org/protobuf/proto"
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	"sigs.k8s.io/yaml"

	arbiterv1 "arbiter.dev/clients/go/arbiterv1"
	"arbiter.dev/clients/go/client"
	kueuemodel "arbiter.dev/clients/go/k8s/kueue"
)

// Labels Kueue's job integrations read.
const (
	QueueNameLabel     = "kueue.x-k8s.io/queue-name"
	PriorityClassLabel = "kueue.x-k8s.io/priority-class"
)

// Priorities resolves priority class names as Kueue does when it creates a Workload.
type Priorities struct {
	// Workload holds the values of the WorkloadPriorityClasses, by name.
	Workload map[string]int32
	// Pod holds the values of the PriorityClasses, by name.
	Pod map[string]int32
	// PodDefault is the value of the PriorityClass marked globalDefault, if any.
	PodDefault *int32
}

// resolve is the priority of a workload with the kueue.x-k8s.io/priority-class label value
// wpc and the pod priority class name pc: the WorkloadPriorityClass first, else the
// PriorityClass, else the global default, else 0.
func (p Priorities) resolve(wpc, pc string) (*kueue.PriorityClassRef, int32, error) {
	if wpc != "" {
		v, ok := p.Workload[wpc]
		if !ok {
			return nil, 0, fmt.Errorf("WorkloadPriorityClass %q does not exist", wpc)
		}
		return kueue.NewWorkloadPriorityClassRef(wpc), v, nil
	}
	if pc != "" {
		v, ok := p.Pod[pc]
		if !ok {
			return nil, 0, fmt.Errorf("PriorityClass %q does not exist", pc)
		}
		return kueue.NewPodPriorityClassRef(pc), v, nil
	}
	if p.PodDefault != nil {
		return nil, *p.PodDefault, nil
	}
	return nil, 0, nil
}

// jobSet is the part of a JobSet (jobset.x-k8s.io) Kueue reads to build its Workload.
type jobSet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              struct {
		ReplicatedJobs []struct {
			Name     string                  `json:"name"`
			Replicas *int32                  `json:"replicas,omitempty"`
			Template batchv1.JobTemplateSpec `json:"template"`
		} `json:"replicatedJobs"`
	} `json:"spec"`
}

// WorkloadsFromManifests turns every document of a YAML or JSON stream into the Workload Kueue's
// integration would create for it: a batch/v1 Job (one pod set "main" of min(parallelism,
// completions) pods), a JobSet (one pod set per replicated job, of replicas × that) or a
// kueue.x-k8s.io Workload as it is. Objects without a namespace go to namespace.
func WorkloadsFromManifests(data []byte, namespace string, prio Priorities) ([]*kueue.Workload, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []*kueue.Workload
	for doc := 1; ; doc++ {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err == io.EOF {
			break
		} else if err != nil {
			return nil, fmt.Errorf("document %d: %w", doc, err)
		}
		if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
			continue
		}
		w, err := workloadFrom(raw, namespace, prio)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", doc, err)
		}
		out = append(out, w)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no Job, JobSet or Workload in the manifest")
	}
	return out, nil
}

func workloadFrom(raw []byte, namespace string, prio Priorities) (*kueue.Workload, error) {
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(raw, &tm); err != nil {
		return nil, err
	}
	group, _, _ := strings.Cut(tm.APIVersion, "/")
	var w *kueue.Workload
	var podPriorityClass string
	switch {
	case tm.Kind == "Job" && tm.APIVersion == "batch/v1":
		var job batchv1.Job
		if err := yaml.UnmarshalStrict(raw, &job); err != nil {
			return nil, fmt.Errorf("Job: %w", err)
		}
		w = &kueue.Workload{ObjectMeta: job.ObjectMeta}
		w.Spec.QueueName = kueue.LocalQueueName(job.Labels[QueueNameLabel])
		w.Spec.PodSets = []kueue.PodSet{{Name: kueue.DefaultPodSetName, Template: job.Spec.Template, Count: jobPods(&job.Spec)}}
		podPriorityClass = job.Spec.Template.Spec.PriorityClassName
	case tm.Kind == "JobSet" && group == "jobset.x-k8s.io":
		var js jobSet
		if err := yaml.Unmarshal(raw, &js); err != nil {
			return nil, fmt.Errorf("JobSet: %w", err)
		}
		w = &kueue.Workload{ObjectMeta: js.ObjectMeta}
		w.Spec.QueueName = kueue.LocalQueueName(js.Labels[QueueNameLabel])
		for _, rj := range js.Spec.ReplicatedJobs {
			replicas := int32(1)
			if rj.Replicas != nil {
				replicas = *rj.Replicas
			}
			w.Spec.PodSets = append(w.Spec.PodSets, kueue.PodSet{
				Name: kueue.NewPodSetReference(rj.Name), Template: rj.Template.Spec.Template, Count: replicas * jobPods(&rj.Template.Spec),
			})
			if podPriorityClass == "" {
				podPriorityClass = rj.Template.Spec.Template.Spec.PriorityClassName
			}
		}
	case tm.Kind == "Workload" && group == kueue.GroupVersion.Group:
		if tm.APIVersion != kueue.GroupVersion.String() {
			return nil, fmt.Errorf("Workload: apiVersion %s: only %s is read", tm.APIVersion, kueue.GroupVersion)
		}
		w = &kueue.Workload{}
		if err := yaml.UnmarshalStrict(raw, w); err != nil {
			return nil, fmt.Errorf("Workload: %w", err)
		}
		w.Status = kueue.WorkloadStatus{}
		if ref := w.Spec.PriorityClassRef; ref != nil && w.Spec.Priority == nil {
			if ref.Kind == kueue.WorkloadPriorityClassKind {
				_, v, err := prio.resolve(ref.Name, "")
				if err != nil {
					return nil, err
				}
				w.Spec.Priority = &v
			} else {
				podPriorityClass = ref.Name
			}
		}
	default:
		return nil, fmt.Errorf("%s %s: want a batch/v1 Job, a jobset.x-k8s.io JobSet or a %s Workload", tm.APIVersion, tm.Kind, kueue.GroupVersion)
	}
	if w.Spec.Priority == nil {
		ref, v, err := prio.resolve(w.Labels[PriorityClassLabel], podPriorityClass)
		if err != nil {
			return nil, err
		}
		w.Spec.PriorityClassRef, w.Spec.Priority = ref, &v
	}
	return w, finishCandidate(w, namespace)
}

// finishCandidate names and places a workload that is not submitted yet.
func finishCandidate(w *kueue.Workload, namespace string) error {
	if w.Namespace == "" {
		w.Namespace = namespace
	}
	if w.Name == "" {
		if w.GenerateName == "" {
			return fmt.Errorf("%s: metadata.name or metadata.generateName is required", w.Kind)
		}
		w.Name = w.GenerateName + "what-if"
	}
	if w.Spec.QueueName == "" {
		return fmt.Errorf("%s/%s: no LocalQueue (label %s, or spec.queueName of a Workload)", w.Namespace, w.Name, QueueNameLabel)
	}
	if len(w.Spec.PodSets) == 0 {
		return fmt.Errorf("%s/%s: no pod sets", w.Namespace, w.Name)
	}
	return nil
}

// jobPods is how many pods of a Job Kueue counts: parallelism (default 1), capped by completions.
func jobPods(spec *batchv1.JobSpec) int32 {
	n := int32(1)
	if spec.Parallelism != nil {
		n = *spec.Parallelism
	}
	if spec.Completions != nil && *spec.Completions < n {
		n = *spec.Completions
	}
	return n
}

// Prediction is what would happen to one workload submitted now.
type Prediction struct {
	Workload     string             `json:"workload"`
	ClusterQueue string             `json:"clusterQueue,omitempty"`
	Requests     map[string]float64 `json:"requests,omitempty"`
	// Verdict is admit, preempt or pending, as in explain.
	Verdict  string       `json:"verdict"`
	Reason   string       `json:"reason,omitempty"`
	Message  string       `json:"message,omitempty"`
	Preempts []Preemption `json:"preempts,omitempty"`
	// Flavors are the flavors arbiter assigns to each pod set when it admits the workload.
	Flavors []PodSetFlavors `json:"flavors,omitempty"`
}

// WhatIf predicts, without changing anything, what arbiter's Kueue model decides for candidate
// if it were submitted to the state of model: one Schedule with candidate added as a pending
// workload. A candidate whose LocalQueue leads nowhere is pending with the Skipped reason.
func WhatIf(ctx context.Context, arb kueuemodel.Arbiter, model *kueuemodel.Model, candidate *kueue.Workload) (*Prediction, error) {
	key := kueuemodel.WorkloadKey(candidate)
	if _, exists := model.Workloads[key]; exists {
		return nil, fmt.Errorf("workload %s already exists; give the manifest another name", key)
	}
	group, wl, skip := model.PodGroup(candidate)
	if skip != nil {
		return &Prediction{Workload: key, Verdict: VerdictPending, Reason: skip.Reason, Message: skip.Message}, nil
	}
	trial := proto.Clone(model.Request).(*arbiterv1.ScheduleRequest)
	trial.Snapshot.PodGroups = append(trial.Snapshot.PodGroups, group)
	resp, err := arb.Schedule(ctx, trial)
	if err != nil {
		return nil, fmt.Errorf("schedule: %w", err)
	}
	answer := client.ReadWhatIfAnswer(key, resp)
	p := &Prediction{Workload: key, ClusterQueue: wl.ClusterQueue, Requests: wl.Requests}
	p.Preempts = preemptions(model, resp)[key]
	switch answer.Outcome {
	case client.OutcomePending:
		p.Verdict, p.Reason, p.Message = VerdictPending, answer.Pending.GetReason(), answer.Pending.GetMessage()
	case client.OutcomeAdmitted:
		p.Verdict = VerdictAdmit
		for _, a := range resp.GetAdmissions() {
			if a.GetPodGroup() == key {
				p.Flavors = podSetFlavors(a.GetPodSets())
			}
		}
		if answer.AfterEvictions || len(p.Preempts) > 0 {
			p.Verdict = VerdictPreempt
		}
	default:
		return nil, fmt.Errorf("arbiter neither admitted %s nor left it pending (%s)", key, answer.Outcome)
	}
	return p, nil
}

// WritePredictionsJSON writes predictions as an indented JSON array.
func WritePredictionsJSON(w io.Writer, predictions []*Prediction) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(predictions)
}

// WritePredictionsTable writes one line per prediction.
func WritePredictionsTable(w io.Writer, predictions []*Prediction) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "WORKLOAD\tCLUSTERQUEUE\tREQUESTS\tVERDICT\tFLAVORS\tREASON\tDETAIL")
	for _, p := range predictions {
		detail := p.Message
		if len(p.Preempts) > 0 {
			detail = preemptsText(p.Preempts)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", p.Workload, dash(p.ClusterQueue), dash(kueuemodel.Describe(p.Requests)), p.Verdict, FlavorsText(p.Flavors), dash(p.Reason), detail)
	}
	return tw.Flush()
}
