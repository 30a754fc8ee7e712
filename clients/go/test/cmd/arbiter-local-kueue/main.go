// Command arbiter-local-kueue runs Kueue with arbiter's time-aware AdmissionCheck on a
// Kubernetes control plane of its own, on loopback, to try it without a cluster: etcd,
// kube-apiserver, kube-controller-manager, kube-scheduler, kwok (fake GPU nodes that run every pod
// bound to them), Kueue's own controller manager, arbiter-server, the queues of
// examples/kueue/queues.yaml, and `arbiter-kueue check` acting as the chart's ServiceAccount
// arbiter-system/arbiter-kueue, with the chart's RBAC.
//
// tests/k8s/local-kueue.sh builds everything and runs it; see clients/go/k8s/kueue/README.md,
// "Try it on a local control plane". With --check it applies examples/kueue/backlog.yaml with
// short jobs, waits until four of them were admitted, prints which ClusterQueue each came from
// and `arbiter-kueue explain`, and fails unless the two ClusterQueues took turns.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	kueueclient "sigs.k8s.io/kueue/client-go/clientset/versioned"

	"arbiter.dev/clients/go/internal/cmdutil"
	"arbiter.dev/clients/go/test/controlplane"
)

type options struct {
	dir, repo, arbiterServer, arbiterKueue string
	nodes, gpus                            int
	cpu, memory                            string
	kValue                                 float64
	halfLife                               time.Duration
	check                                  bool
	checkRun, timeout                      time.Duration
}

// checkNamespace holds the check's ServiceAccount, Lease and usage ConfigMap, as the chart has it.
const checkNamespace = "arbiter-system"

func parseFlags(args []string) (options, error) {
	o := options{}
	fs := flag.NewFlagSet("arbiter-local-kueue", flag.ContinueOnError)
	fs.StringVar(&o.dir, "dir", filepath.Join(os.TempDir(), "arbiter-local-kueue"), "folder for the cluster's data, kubeconfig and logs (emptied first)")
	fs.StringVar(&o.repo, "repo", ".", "the repository's root (for examples/kueue)")
	fs.StringVar(&o.arbiterServer, "arbiter-server", "build/bin/arbiter-server", "the arbiter-server binary")
	fs.StringVar(&o.arbiterKueue, "arbiter-kueue", "", "the arbiter-kueue binary (required)")
	fs.IntVar(&o.nodes, "nodes", 1, "kwok nodes to create")
	fs.StringVar(&o.cpu, "node-cpu", "64", "each node's CPUs")
	fs.StringVar(&o.memory, "node-memory", "512Gi", "each node's memory")
	fs.IntVar(&o.gpus, "node-gpus", 8, "each node's nvidia.com/gpu")
	fs.Float64Var(&o.kValue, "k-value", 1, "the check's --k-value: how strongly past usage lowers a ClusterQueue's share; 0 = Kueue alone")
	fs.DurationVar(&o.halfLife, "usage-half-life", 30*time.Second, "the check's --usage-half-life (its own default is 0, no decay): the team that ran longest ago deserves the pool next")
	fs.BoolVar(&o.check, "check", false, "apply examples/kueue/backlog.yaml with short jobs, wait for four admissions, and exit non-zero unless the ClusterQueues took turns")
	fs.DurationVar(&o.checkRun, "check-job-duration", 2*time.Second, "how long each job of --check runs")
	fs.DurationVar(&o.timeout, "check-timeout", 4*time.Minute, "how long --check waits for four admissions")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %v", fs.Args())
	}
	return o, nil
}

func main() { cmdutil.Main("arbiter-local-kueue", parseFlags, run) }

// cluster is what run started, for the --check story.
type cluster struct {
	cp         *controlplane.ControlPlane
	kube       kubernetes.Interface
	kueue      kueueclient.Interface
	kubeconfig string // the admin's
	server     string // arbiter-server's gRPC address
	// arbiterKueue is the binary; checkLog is the log of its check.
	arbiterKueue, checkLog string
}

func run(ctx context.Context, o options) error {
	if o.arbiterKueue == "" {
		return errors.New("--arbiter-kueue is required")
	}
	for _, bin := range []*string{&o.arbiterServer, &o.arbiterKueue} {
		abs, err := filepath.Abs(*bin)
		if err != nil {
			return err
		}
		if _, err := os.Stat(abs); err != nil {
			return fmt.Errorf("%w (build it first: make build)", err)
		}
		*bin = abs
	}
	repo, err := filepath.Abs(o.repo)
	if err != nil {
		return err
	}
	queues := filepath.Join(repo, "examples", "kueue", "queues.yaml")
	if _, err := os.Stat(queues); err != nil {
		return fmt.Errorf("%w (--repo names the repository's root)", err)
	}
	if err := controlplane.ResetDir(o.dir, "arbiter-local-kueue"); err != nil {
		return err
	}
	start := time.Now()
	sa := controlplane.ServiceAccount(checkNamespace, "arbiter-kueue")
	cp, err := controlplane.Start(ctx, controlplane.Options{
		Dir: o.dir, KeepDir: true, Scheduler: true, Users: []controlplane.User{sa},
	})
	if err != nil {
		return err
	}
	defer cp.Stop()
	c := &cluster{cp: cp, arbiterKueue: o.arbiterKueue}
	cfg := cp.RESTConfig(controlplane.Admin)
	if c.kube, err = kubernetes.NewForConfig(cfg); err != nil {
		return err
	}
	if c.kueue, err = kueueclient.NewForConfig(cfg); err != nil {
		return err
	}
	if err := controlplane.CreateUniformNodes(ctx, c.kube, o.nodes, o.cpu, o.memory, o.gpus); err != nil {
		return err
	}
	k, err := cp.StartKueue(ctx, controlplane.KueueOptions{})
	if err != nil {
		return err
	}

	port, err := controlplane.FreePort()
	if err != nil {
		return err
	}
	c.server = fmt.Sprintf("127.0.0.1:%d", port)
	if _, err := cp.StartProcess("arbiter-server", o.arbiterServer, "--host", "127.0.0.1",
		"--port", fmt.Sprint(port), "--metrics-port", "-1"); err != nil {
		return err
	}
	// The chart's namespace, and its RBAC and usage ConfigMap for arbiter-kueue.
	base := filepath.Join(repo, "deploy", "kustomize", "base")
	overlay := filepath.Join(repo, "deploy", "kustomize", "overlays", "kueue")
	if _, err := cp.Apply(ctx, filepath.Join(base, "namespace.yaml"), filepath.Join(overlay, "kueue-rbac.yaml"),
		filepath.Join(overlay, "kueue-configmaps.yaml"), queues); err != nil {
		return err
	}
	saConfig, err := cp.Kubeconfig(sa.Name)
	if err != nil {
		return err
	}
	admin, err := cp.Kubeconfig(controlplane.Admin)
	if err != nil {
		return err
	}
	c.kubeconfig = filepath.Join(o.dir, "kubeconfig")
	if err := os.Rename(admin, c.kubeconfig); err != nil {
		return err
	}
	httpPort, err := controlplane.FreePort()
	if err != nil {
		return err
	}
	checkArgs := []string{"check", "--kubeconfig", saConfig, "--server", c.server,
		"--k-value", fmt.Sprint(o.kValue), "--usage-half-life", o.halfLife.String(),
		"--namespace", checkNamespace, "--http-addr", fmt.Sprintf("127.0.0.1:%d", httpPort),
		"--lease-duration", "4s", "--renew-deadline", "3s", "--retry-period", "1s"}
	c.checkLog, err = cp.StartProcess("arbiter-kueue-check", o.arbiterKueue, checkArgs...)
	if err != nil {
		return err
	}
	// Kueue keeps a ClusterQueue inactive until the check marks its AdmissionCheck Active.
	if err := waitActive(ctx, c.kueue, "team-a", "team-b"); err != nil {
		return fmt.Errorf("%w\n%s", err, controlplane.Tail(c.checkLog, 3000))
	}

	fmt.Printf("Kueue and arbiter's time-aware check (k=%g, usage half-life %s) run on a local control plane, ready in %.1fs.\n",
		o.kValue, o.halfLife, time.Since(start).Seconds())
	fmt.Printf("Kwok plays %d node(s) of %d GPUs; the queues are %s.\n\n", o.nodes, o.gpus, show(queues))
	fmt.Printf("  export KUBECONFIG=%s\n  export PATH=%s:%s:$PATH\n", c.kubeconfig, cp.BinDir(), filepath.Dir(o.arbiterKueue))
	backlog := show(filepath.Join(repo, "examples", "kueue", "backlog.yaml"))
	fmt.Printf("  kubectl apply -f %s -l team=team-a; sleep 1; kubectl apply -f %s -l team=team-b\n", backlog, backlog)
	fmt.Printf("  kubectl get workloads -A -w\n")
	fmt.Printf("  arbiter-kueue explain --kubeconfig %s --server %s\n", c.kubeconfig, c.server)
	fmt.Printf("  arbiter-kueue what-if -f %s --kubeconfig %s --server %s\n\n",
		show(filepath.Join(repo, "examples", "kueue", "train.yaml")), c.kubeconfig, c.server)
	fmt.Printf("the check's decisions: %s\nKueue's log: %s\nthe check's metrics: http://127.0.0.1:%d/metrics\n", c.checkLog, k.Log, httpPort)

	if !o.check {
		fmt.Println("Ctrl-C stops everything.")
		<-ctx.Done()
		return nil
	}
	return checkTurns(ctx, c, o, filepath.Join(repo, "examples", "kueue", "backlog.yaml"))
}

// waitActive waits, for at most a minute, until Kueue reports every named ClusterQueue Active.
func waitActive(ctx context.Context, kc kueueclient.Interface, names ...string) error {
	var inactive string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		for _, name := range names {
			cq, err := kc.KueueV1beta2().ClusterQueues().Get(ctx, name, metav1.GetOptions{})
			if err != nil || !apimeta.IsStatusConditionTrue(cq.Status.Conditions, kueue.ClusterQueueActive) {
				inactive = name
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("ClusterQueue %s not Active: %w", inactive, err)
	}
	return nil
}

// show is path relative to the working folder when it lies under it, else path.
func show(path string) string {
	wd, err := os.Getwd()
	if err != nil {
		return path
	}
	rel, err := filepath.Rel(wd, path)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return path
	}
	return rel
}
