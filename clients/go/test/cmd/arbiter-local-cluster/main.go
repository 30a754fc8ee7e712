// Command arbiter-local-cluster runs arbiter on a Kubernetes control plane of its own, on
// loopback, to try it without a cluster: etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler and kwok (fake nodes that run every pod bound to them), the chart's namespace,
// queues (with the trial's short reclaim min-runtime, TrialQueues) and RBAC, arbiter-server, and
// arbiter-k8s acting as the chart's ServiceAccount.
//
// tests/k8s/local-cluster.sh builds everything and runs it; see deploy/README.md, "Try it on a
// local control plane". With --check it applies the given manifests, waits until every pod
// they make for arbiter is bound, prints where each went, and stops.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"arbiter.dev/clients/go/internal/cmdutil"
	"arbiter.dev/clients/go/test/controlplane"
)

// TrialQueues replaces the chart's queue ConfigMap in the trial: the same queues, reclaimable
// 5 s after a pod starts instead of the chart's 600 s, so that reclaim shows within seconds.
const TrialQueues = "tests/k8s/local-queues.yaml"

type options struct {
	dir, repo, arbiterServer, arbiterK8s string
	nodes, gpus                          int
	cpu, memory                          string
	check                                []string
	timeout                              time.Duration
}

func parseFlags(args []string) (options, error) {
	o := options{}
	fs := flag.NewFlagSet("arbiter-local-cluster", flag.ContinueOnError)
	fs.StringVar(&o.dir, "dir", filepath.Join(os.TempDir(), "arbiter-local"), "folder for the cluster's data, kubeconfig and logs (emptied first)")
	fs.StringVar(&o.repo, "repo", ".", "the repository's root (for deploy/kustomize/base)")
	fs.StringVar(&o.arbiterServer, "arbiter-server", "build/bin/arbiter-server", "the arbiter-server binary")
	fs.StringVar(&o.arbiterK8s, "arbiter-k8s", "", "the arbiter-k8s binary (required)")
	fs.IntVar(&o.nodes, "nodes", 4, "kwok nodes to create")
	fs.StringVar(&o.cpu, "node-cpu", "32", "each node's CPUs")
	fs.StringVar(&o.memory, "node-memory", "256Gi", "each node's memory")
	fs.IntVar(&o.gpus, "node-gpus", 8, "each node's nvidia.com/gpu")
	fs.DurationVar(&o.timeout, "check-timeout", 2*time.Minute, "how long --check waits for the pods to be bound")
	check := fs.String("check", "", "comma-separated manifests to apply; exit once their arbiter pods are bound")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %v", fs.Args())
	}
	if *check != "" {
		o.check = strings.Split(*check, ",")
	}
	return o, nil
}

func main() { cmdutil.Main("arbiter-local-cluster", parseFlags, run) }

func run(ctx context.Context, o options) error {
	if o.arbiterK8s == "" {
		return errors.New("--arbiter-k8s is required")
	}
	for _, bin := range []*string{&o.arbiterServer, &o.arbiterK8s} {
		abs, err := filepath.Abs(*bin)
		if err != nil {
			return err
		}
		if _, err := os.Stat(abs); err != nil {
			return fmt.Errorf("%w (build it first: make build)", err)
		}
		*bin = abs
	}
	if err := controlplane.ResetDir(o.dir, "arbiter-local-cluster"); err != nil {
		return err
	}
	start := time.Now()
	sa := controlplane.ServiceAccount("arbiter-system", "arbiter-k8s")
	cp, err := controlplane.Start(ctx, controlplane.Options{
		Dir: o.dir, KeepDir: true, Scheduler: true, Users: []controlplane.User{sa},
	})
	if err != nil {
		return err
	}
	defer cp.Stop()
	kube, err := kubernetes.NewForConfig(cp.RESTConfig(controlplane.Admin))
	if err != nil {
		return err
	}
	if err := controlplane.CreateUniformNodes(ctx, kube, o.nodes, o.cpu, o.memory, o.gpus); err != nil {
		return err
	}
	base := filepath.Join(o.repo, "deploy", "kustomize", "base")
	if _, err := cp.Apply(ctx, filepath.Join(base, "namespace.yaml"), filepath.Join(base, "configmaps.yaml"),
		filepath.Join(base, "scheduler-rbac.yaml"), filepath.Join(o.repo, TrialQueues)); err != nil {
		return err
	}

	port, err := controlplane.FreePort()
	if err != nil {
		return err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	if _, err := cp.StartProcess("arbiter-server", o.arbiterServer, "--host", "127.0.0.1",
		"--port", fmt.Sprint(port), "--metrics-port", "-1"); err != nil {
		return err
	}
	saConfig, err := cp.Kubeconfig(sa.Name)
	if err != nil {
		return err
	}
	httpPort, err := controlplane.FreePort()
	if err != nil {
		return err
	}
	shimLog, err := cp.StartProcess("arbiter-k8s", o.arbiterK8s, "--kubeconfig", saConfig, "--server", addr,
		"--http-addr", fmt.Sprintf("127.0.0.1:%d", httpPort), "--namespace", "arbiter-system",
		"--lease-duration", "4s", "--renew-deadline", "3s", "--retry-period", "1s")
	if err != nil {
		return err
	}
	admin, err := cp.Kubeconfig(controlplane.Admin)
	if err != nil {
		return err
	}
	kubeconfig := filepath.Join(o.dir, "kubeconfig")
	if err := os.Rename(admin, kubeconfig); err != nil {
		return err
	}
	fmt.Printf("arbiter runs on a local control plane (%d kwok nodes), ready in %.1fs.\n\n", o.nodes, time.Since(start).Seconds())
	fmt.Printf("  export KUBECONFIG=%s\n  export PATH=%s:$PATH\n", kubeconfig, cp.BinDir())
	fmt.Printf("  kubectl apply -f examples/k8s/two-teams.yaml\n  kubectl get pods -A -o wide\n\n")
	fmt.Printf("arbiter-k8s metrics: http://127.0.0.1:%d/metrics\nlogs: %s/*.log\n", httpPort, o.dir)

	if len(o.check) == 0 {
		fmt.Println("Ctrl-C stops everything.")
		<-ctx.Done()
		return nil
	}
	return checkBound(ctx, cp, kube, o, shimLog)
}

// checkBound applies the manifests, then waits until every pod in their namespaces that names
// arbiter as its scheduler is bound, and prints where each went.
func checkBound(ctx context.Context, cp *controlplane.ControlPlane, kube kubernetes.Interface, o options, shimLog string) error {
	objs, err := cp.Apply(ctx, o.check...)
	if err != nil {
		return err
	}
	namespaces := map[string]bool{}
	want := 0 // the arbiter pods the manifests make
	for _, obj := range objs {
		if obj.GetNamespace() != "" {
			namespaces[obj.GetNamespace()] = true
		}
		want += arbiterPods(obj)
	}
	var pods []corev1.Pod // as last seen whole
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, o.timeout, true, func(ctx context.Context) (bool, error) {
		var seen []corev1.Pod
		for ns := range namespaces {
			list, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, nil
			}
			for _, p := range list.Items {
				if p.Spec.SchedulerName == "arbiter" {
					seen = append(seen, p)
				}
			}
		}
		pods = seen
		if len(pods) < want || len(pods) == 0 {
			return false, nil
		}
		for _, p := range pods {
			if p.Spec.NodeName == "" || p.Status.Phase != corev1.PodRunning {
				return false, nil
			}
		}
		return true, nil
	})
	sort.Slice(pods, func(i, j int) bool {
		return pods[i].Namespace+"/"+pods[i].Name < pods[j].Namespace+"/"+pods[j].Name
	})
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "\nPOD\tQUEUE\tNODE\tPHASE")
	for _, p := range pods {
		fmt.Fprintf(w, "%s/%s\t%s\t%s\t%s\n", p.Namespace, p.Name, p.Labels["arbiter.dev/queue"], p.Spec.NodeName, p.Status.Phase)
	}
	w.Flush()
	if err != nil {
		return fmt.Errorf("not every arbiter pod was bound and running within %s: %w\n%s", o.timeout, err,
			controlplane.Tail(shimLog, 3000))
	}
	fmt.Printf("all %d arbiter pods bound and running\n", len(pods))
	return nil
}

// arbiterPods is how many pods for arbiter obj makes: a Pod one, a Job its parallelism, a
// Deployment, ReplicaSet or StatefulSet its replicas (1 when unset).
func arbiterPods(obj *unstructured.Unstructured) int {
	scheduler := func(fields ...string) bool {
		name, _, _ := unstructured.NestedString(obj.Object, fields...)
		return name == "arbiter"
	}
	count := func(field string) int {
		v, _, _ := unstructured.NestedFieldNoCopy(obj.Object, "spec", field)
		switch n := v.(type) { // YAML read through JSON gives float64; typed clients give int64
		case float64:
			return int(n)
		case int64:
			return int(n)
		}
		return 1
	}
	switch obj.GetKind() {
	case "Pod":
		if scheduler("spec", "schedulerName") {
			return 1
		}
	case "Job":
		if scheduler("spec", "template", "spec", "schedulerName") {
			return count("parallelism")
		}
	case "Deployment", "ReplicaSet", "StatefulSet":
		if scheduler("spec", "template", "spec", "schedulerName") {
			return count("replicas")
		}
	}
	return 0
}
