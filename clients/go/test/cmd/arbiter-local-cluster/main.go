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
	"net"
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
	"sigs.k8s.io/yaml"

	"arbiter.dev/clients/go/internal/cmdutil"
	"arbiter.dev/clients/go/test/controlplane"
)

// TrialQueues replaces the chart's queue ConfigMap in the trial: the same queues, reclaimable
// 5 s after a pod starts instead of the chart's 600 s, so that reclaim shows within seconds.
const TrialQueues = "tests/k8s/local-queues.yaml"

type options struct {
	dir, repo, arbiterServer, arbiterK8s, arbiterExtender string
	extender                                              bool
	nodes, gpus                                           int
	cpu, memory                                           string
	check                                                 []string
	timeout                                               time.Duration
}

func parseFlags(args []string) (options, error) {
	o := options{}
	fs := flag.NewFlagSet("arbiter-local-cluster", flag.ContinueOnError)
	fs.StringVar(&o.dir, "dir", filepath.Join(os.TempDir(), "arbiter-local"), "folder for the cluster's data, kubeconfig and logs (emptied first)")
	fs.StringVar(&o.repo, "repo", ".", "the repository's root (for deploy/kustomize/base)")
	fs.StringVar(&o.arbiterServer, "arbiter-server", "build/bin/arbiter-server", "the arbiter-server binary")
	fs.StringVar(&o.arbiterK8s, "arbiter-k8s", "", "the arbiter-k8s binary (required without --extender)")
	fs.BoolVar(&o.extender, "extender", false,
		"run arbiter as kube-scheduler's extender instead of arbiter-k8s: kube-scheduler's profile \"arbiter\" asks arbiter-extender")
	fs.StringVar(&o.arbiterExtender, "arbiter-extender", "", "the arbiter-extender binary (required with --extender)")
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
	scheduler := &o.arbiterK8s
	switch {
	case o.extender && o.arbiterExtender == "":
		return errors.New("--arbiter-extender is required with --extender")
	case o.extender:
		scheduler = &o.arbiterExtender
	case o.arbiterK8s == "":
		return errors.New("--arbiter-k8s is required")
	}
	for _, bin := range []*string{&o.arbiterServer, scheduler} {
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
	cpOpts := controlplane.Options{Dir: o.dir, KeepDir: true, Scheduler: true}
	extenderPort := 0
	var extenderListener net.Listener // holds the port until arbiter-extender takes it
	if o.extender {
		sa = controlplane.ServiceAccount("arbiter-system", extenderServiceAccount)
		var err error
		if extenderListener, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			return err
		}
		defer extenderListener.Close()
		extenderPort = extenderListener.Addr().(*net.TCPAddr).Port
		if cpOpts.SchedulerConfig, err = writeSchedulerConfig(o, extenderPort); err != nil {
			return err
		}
	}
	cpOpts.Users = []controlplane.User{sa}
	cp, err := controlplane.Start(ctx, cpOpts)
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
	manifests := []string{filepath.Join(base, "namespace.yaml"), filepath.Join(base, "configmaps.yaml"),
		filepath.Join(base, "scheduler-rbac.yaml"), filepath.Join(o.repo, TrialQueues)}
	if o.extender {
		overlay := filepath.Join(o.repo, "deploy", "kustomize", "overlays", "extender")
		manifests = append(manifests, filepath.Join(overlay, "extender-configmaps.yaml"), filepath.Join(overlay, "extender-rbac.yaml"))
	}
	if _, err := cp.Apply(ctx, manifests...); err != nil {
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
	schedulerLog, metrics := "", ""
	if o.extender {
		// The chart's extender flags, with the trial's profile name and addresses.
		metrics = fmt.Sprintf("arbiter-extender metrics: http://127.0.0.1:%d/metrics", extenderPort)
		extenderListener.Close()
		schedulerLog, err = cp.StartProcess("arbiter-extender", o.arbiterExtender, "--kubeconfig", saConfig,
			"--server", addr, "--addr", fmt.Sprintf("127.0.0.1:%d", extenderPort), "--scheduler-name", "arbiter",
			"--namespace", "arbiter-system", "--usage-configmap", "arbiter-extender-usage")
	} else {
		metrics = fmt.Sprintf("arbiter-k8s metrics: http://127.0.0.1:%d/metrics", httpPort)
		schedulerLog, err = cp.StartProcess("arbiter-k8s", o.arbiterK8s, "--kubeconfig", saConfig, "--server", addr,
			"--http-addr", fmt.Sprintf("127.0.0.1:%d", httpPort), "--namespace", "arbiter-system",
			"--lease-duration", "4s", "--renew-deadline", "3s", "--retry-period", "1s")
	}
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
	how := "arbiter-k8s"
	if o.extender {
		how = `kube-scheduler's profile "arbiter", with arbiter-extender as its extender`
	}
	fmt.Printf("arbiter runs on a local control plane (%d kwok nodes, %s), ready in %.1fs.\n\n", o.nodes, how, time.Since(start).Seconds())
	fmt.Printf("  export KUBECONFIG=%s\n  export PATH=%s:$PATH\n", kubeconfig, cp.BinDir())
	fmt.Printf("  kubectl apply -f examples/k8s/two-teams.yaml\n  kubectl get pods -A -o wide\n\n")
	fmt.Printf("%s\nlogs: %s/*.log\n", metrics, o.dir)

	if len(o.check) == 0 {
		fmt.Println("Ctrl-C stops everything.")
		<-ctx.Done()
		return nil
	}
	return checkBound(ctx, cp, kube, o, schedulerLog)
}

// extenderServiceAccount is the chart's identity of kube-scheduler and arbiter-extender
// (deploy/kustomize/overlays/extender/extender-rbac.yaml); the trial's arbiter-extender acts as
// it. The trial's kube-scheduler keeps its own identity.
const extenderServiceAccount = "arbiter-kube-scheduler"

// writeSchedulerConfig writes the trial's kube-scheduler configuration in extender mode: the
// chart's (overlays/extender/extender-configmaps.yaml), with the profile named "arbiter" so that
// the examples serve both modes, the extender at 127.0.0.1:port, and no leader election (one
// kube-scheduler). Returns its path.
func writeSchedulerConfig(o options, port int) (string, error) {
	path := filepath.Join(o.repo, "deploy", "kustomize", "overlays", "extender", "extender-configmaps.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	var config string
	for _, doc := range strings.Split(string(data), "\n---") {
		var cm corev1.ConfigMap
		if err := yaml.Unmarshal([]byte(doc), &cm); err != nil {
			return "", fmt.Errorf("%s: %w", path, err)
		}
		if c, ok := cm.Data["kube-scheduler.yaml"]; ok {
			config = c
		}
	}
	var cfg map[string]any
	if err := yaml.Unmarshal([]byte(config), &cfg); err != nil || cfg == nil {
		return "", fmt.Errorf("%s: no kube-scheduler.yaml (%v)", path, err)
	}
	cfg["clientConnection"] = map[string]any{"kubeconfig": "KUBECONFIG"} // filled in by controlplane
	cfg["leaderElection"] = map[string]any{"leaderElect": false}
	cfg["profiles"] = []any{map[string]any{"schedulerName": "arbiter"}}
	extenders, _ := cfg["extenders"].([]any)
	if len(extenders) != 1 {
		return "", fmt.Errorf("%s: want one extender in kube-scheduler.yaml, found %d", path, len(extenders))
	}
	ext, _ := extenders[0].(map[string]any)
	if ext == nil {
		return "", fmt.Errorf("%s: the extender is not a mapping", path)
	}
	ext["urlPrefix"] = fmt.Sprintf("http://127.0.0.1:%d", port)
	out, err := yaml.Marshal(cfg)
	if err != nil {
		return "", err
	}
	file := filepath.Join(o.dir, "kube-scheduler-extender.yaml")
	return file, os.WriteFile(file, out, 0o644)
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
