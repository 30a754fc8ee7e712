package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	"sigs.k8s.io/yaml"

	"arbiter.dev/clients/go/test/controlplane"
)

// turns is how many admissions --check waits for: two for each ClusterQueue when they take turns.
const turns = 4

// admission is one Workload that Kueue admitted (quota reserved and the check Ready).
type admission struct {
	job          string // namespace/name of the Job it runs
	clusterQueue string
	at           time.Time // its Admitted condition's transition
	retries      int32     // how often the check sent it back first
}

// checkTurns applies the backlog with jobs that run for o.checkRun, each namespace's a second
// after the one before, waits until turns of them were admitted, prints them in order and
// `arbiter-kueue explain`, and fails unless the two ClusterQueues took turns.
func checkTurns(ctx context.Context, c *cluster, o options, backlog string) error {
	parts, err := splitBacklog(backlog, o.dir, o.checkRun)
	if err != nil {
		return err
	}
	fmt.Printf("\napplying %s with jobs of %s, one namespace a second after the other\n", backlog, o.checkRun)
	applied := time.Now()
	for i, part := range parts {
		if i > 0 {
			// Kueue orders by creation time, in seconds, and breaks ties at random.
			time.Sleep(1100 * time.Millisecond)
		}
		if _, err := c.cp.Apply(ctx, part); err != nil {
			return err
		}
	}
	var order []admission
	seen := map[string]bool{} // the keys of the workloads in order
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, o.timeout, true, func(ctx context.Context) (bool, error) {
		list, err := c.kueue.KueueV1beta2().Workloads(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		// Jobs run for seconds, so two admissions never fall in one poll; if they did, the
		// conditions' times (in seconds), then the names, order them.
		var fresh []admission
		for i := range list.Items {
			w := &list.Items[i]
			key := w.Namespace + "/" + w.Name
			admitted := apimeta.FindStatusCondition(w.Status.Conditions, kueue.WorkloadAdmitted)
			if seen[key] || admitted == nil || admitted.Status != metav1.ConditionTrue || w.Status.Admission == nil {
				continue
			}
			seen[key] = true
			a := admission{job: jobOf(w), clusterQueue: string(w.Status.Admission.ClusterQueue), at: admitted.LastTransitionTime.Time}
			for _, st := range w.Status.AdmissionChecks {
				a.retries += ptr.Deref(st.RetryCount, 0)
			}
			fresh = append(fresh, a)
		}
		sort.Slice(fresh, func(i, j int) bool {
			if !fresh[i].at.Equal(fresh[j].at) {
				return fresh[i].at.Before(fresh[j].at)
			}
			return fresh[i].job < fresh[j].job
		})
		order = append(order, fresh...)
		return len(order) >= turns, nil
	})
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "\n#\tJOB\tCLUSTERQUEUE\tADMITTED\tSENT BACK FIRST")
	for i, a := range order {
		fmt.Fprintf(w, "%d\t%s\t%s\t+%.0fs\t%d×\n", i+1, a.job, a.clusterQueue, a.at.Sub(applied.Truncate(time.Second)).Seconds(), a.retries)
	}
	w.Flush()
	if err != nil {
		return fmt.Errorf("%d of %d admissions within %s: %w\n%s", len(order), turns, o.timeout, err,
			controlplane.Tail(c.checkLog, 3000))
	}

	explain, err := c.explain(ctx)
	fmt.Printf("\n$ arbiter-kueue explain\n%s", explain)
	if err != nil {
		return err
	}
	x, y := order[0].clusterQueue, order[1].clusterQueue
	if x == y || order[2].clusterQueue != x || order[3].clusterQueue != y {
		var cqs []string
		for _, a := range order[:turns] {
			cqs = append(cqs, a.clusterQueue)
		}
		return fmt.Errorf("the ClusterQueues did not take turns: %s\n%s", strings.Join(cqs, ", "),
			controlplane.Tail(c.checkLog, 3000))
	}
	fmt.Printf("\nthe ClusterQueues took turns: %s, %s, %s, %s\n", x, y, x, y)
	return nil
}

// splitBacklog writes the manifests of src into dir, one file per run of documents of one
// namespace, in src's order, with every Job's pods ending after d on kwok
// (controlplane.CompleteAfterAnnotation). It returns the files.
func splitBacklog(src, dir string, d time.Duration) ([]string, error) {
	data, err := os.ReadFile(src)
	if err != nil {
		return nil, err
	}
	var files []string
	var docs []string
	namespace := ""
	flush := func() error {
		if len(docs) == 0 {
			return nil
		}
		path := filepath.Join(dir, fmt.Sprintf("backlog-%d.yaml", len(files)+1))
		files = append(files, path)
		err := os.WriteFile(path, []byte(strings.Join(docs, "---\n")), 0o644)
		docs = nil
		return err
	}
	for _, doc := range strings.Split(string(data), "\n---") {
		obj := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &obj.Object); err != nil {
			return nil, fmt.Errorf("%s: %w", src, err)
		}
		if len(obj.Object) == 0 {
			continue
		}
		if obj.GetKind() == "Job" {
			if err := unstructured.SetNestedField(obj.Object, d.String(),
				"spec", "template", "metadata", "annotations", controlplane.CompleteAfterAnnotation); err != nil {
				return nil, fmt.Errorf("%s: Job %s: %w", src, obj.GetName(), err)
			}
		}
		if obj.GetNamespace() != namespace {
			if err := flush(); err != nil {
				return nil, err
			}
			namespace = obj.GetNamespace()
		}
		out, err := yaml.Marshal(obj.Object)
		if err != nil {
			return nil, err
		}
		docs = append(docs, string(out))
	}
	return files, flush()
}

// jobOf is namespace/name of the Job that owns w, or of w itself if no Job does.
func jobOf(w *kueue.Workload) string {
	for _, ref := range w.OwnerReferences {
		if ref.Kind == "Job" {
			return w.Namespace + "/" + ref.Name
		}
	}
	return w.Namespace + "/" + w.Name
}

// explain runs `arbiter-kueue explain` once, for at most a minute, and returns what it printed.
func (c *cluster) explain(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, c.arbiterKueue, "explain", "--kubeconfig", c.kubeconfig, "--server", c.server).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("arbiter-kueue explain: %w", err)
	}
	return string(out), nil
}
