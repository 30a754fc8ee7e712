// Command arbiter-k8s-bench measures how fast a scheduler binds pods on a real local control plane
// (etcd, kube-apiserver, kube-controller-manager and kwok, from package controlplane).
//
// One run starts a fresh control plane, creates --nodes kwok nodes, then creates --pods pending
// pods in parallel, and measures from the first pod created to the last pod bound:
//
//	arbiter-k8s-bench --scheduler kube-scheduler --out ks.json
//	arbiter-k8s-bench --scheduler arbiter --arbiter-server build/bin/arbiter-server \
//	    --arbiter-k8s /tmp/arbiter-k8s --out arbiter.json
//	arbiter-k8s-bench compare ks.json arbiter.json     # the runs side by side, and the ratios
//
// With --scheduler kube-scheduler the control plane runs kube-scheduler (its client QPS set by
// --kube-scheduler-qps, else its own default of 50) and the pods use the default scheduler. With
// --scheduler arbiter it runs arbiter-server and arbiter-k8s with a queue ConfigMap of one parent
// queue and one leaf queue per namespace, and the pods name "arbiter" as their scheduler.
//
// With --one-by-one it measures latency instead: it creates the pods one at a time, each once
// the previous one is bound and a random pause has passed (so that pods arrive at any moment of
// a scheduler's cycle), and reports each pod's time from its create call to its binding: p50,
// p90, p99 and the slowest.
//
// Besides pods per second, a run records the time to create the pods and to the first binding,
// the pods bound each second, the CPU seconds of every process of the control plane and of the
// scheduler, and, for arbiter, the shim's cycle and the server's Schedule call from their
// /metrics. --gang-size N makes groups of N pods that must run together (arbiter.dev/pod-group,
// arbiter.dev/min-member) and checks that every group is bound whole or not at all.
//
// Every wait is bounded, and every process started is stopped on the way out, on an error or
// on SIGINT/SIGTERM too (and killed by the kernel should this program die first).
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"arbiter.dev/clients/go/internal/cmdutil"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "compare" {
		if err := compare(os.Stdout, os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "arbiter-k8s-bench:", err)
			os.Exit(1)
		}
		return
	}
	cfg, err := parseFlags(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "arbiter-k8s-bench:", err)
		os.Exit(2)
	}
	ctx, stop := cmdutil.SignalContext()
	res, err := run(ctx, cfg)
	stop()
	if res != nil {
		printResult(os.Stdout, res)
		if cfg.Out != "" {
			if werr := writeJSON(cfg.Out, res); werr != nil {
				fmt.Fprintln(os.Stderr, "arbiter-k8s-bench:", werr)
				if err == nil {
					err = werr
				}
			} else {
				fmt.Fprintln(os.Stdout, "results written to", cfg.Out)
			}
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "arbiter-k8s-bench:", err)
		os.Exit(1)
	}
}

// config is one run's settings.
type config struct {
	Scheduler  string // "kube-scheduler" or "arbiter"
	Label      string
	Nodes      int
	Pods       int
	Namespaces int
	GangSize   int

	NodeCPU, NodeMemory string
	NodePods            int
	PodCPU, PodMemory   string

	KubeSchedulerQPS   float64
	KubeSchedulerBurst int

	ServerBin   string
	ShimBin     string
	ShimQPS     float64
	ShimBurst   int
	BindWorkers int
	Period      time.Duration
	ShimArgs    []string

	BinDir        string
	CreateWorkers int
	OneByOne      bool
	Pause         time.Duration
	Seed          int64
	Timeout       time.Duration
	Settle        time.Duration
	ProfileDir    string
	KeepDir       bool
	Out           string
}

type stringList []string

func (s *stringList) String() string     { return fmt.Sprint(*s) }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

func parseFlags(args []string) (*config, error) {
	c := &config{}
	fs := flag.NewFlagSet("arbiter-k8s-bench", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: arbiter-k8s-bench --scheduler kube-scheduler|arbiter [flags]\n       arbiter-k8s-bench compare RESULT.json...")
		fs.PrintDefaults()
	}
	fs.StringVar(&c.Scheduler, "scheduler", "", "scheduler under test: kube-scheduler or arbiter")
	fs.StringVar(&c.Label, "label", "", "name of the run in the summary; default the scheduler's name")
	fs.IntVar(&c.Nodes, "nodes", 1000, "kwok nodes")
	fs.IntVar(&c.Pods, "pods", 10000, "pods to schedule")
	fs.IntVar(&c.Namespaces, "namespaces", 4, "namespaces the pods are spread over, one arbiter leaf queue each")
	fs.IntVar(&c.GangSize, "gang-size", 0, "pods per gang (arbiter.dev/pod-group, arbiter.dev/min-member); 0 = every pod alone")
	fs.StringVar(&c.NodeCPU, "node-cpu", "32", "allocatable cpu of a node")
	fs.StringVar(&c.NodeMemory, "node-memory", "256Gi", "allocatable memory of a node")
	fs.IntVar(&c.NodePods, "node-pods", 110, "allocatable pods of a node")
	fs.StringVar(&c.PodCPU, "pod-cpu", "1", "cpu request of a pod")
	fs.StringVar(&c.PodMemory, "pod-memory", "1Gi", "memory request of a pod")
	fs.Float64Var(&c.KubeSchedulerQPS, "kube-scheduler-qps", 0, "kube-scheduler's clientConnection.qps; 0 = its default (50)")
	fs.IntVar(&c.KubeSchedulerBurst, "kube-scheduler-burst", 0, "kube-scheduler's clientConnection.burst; 0 = its default (100), or 2 x qps when qps is set")
	fs.StringVar(&c.ServerBin, "arbiter-server", "", "arbiter-server binary (arbiter runs)")
	fs.StringVar(&c.ShimBin, "arbiter-k8s", "", "arbiter-k8s binary (arbiter runs)")
	fs.Float64Var(&c.ShimQPS, "shim-qps", 0, "arbiter-k8s --kube-api-qps; 0 = its default")
	fs.IntVar(&c.ShimBurst, "shim-burst", 0, "arbiter-k8s --kube-api-burst; 0 = its default")
	fs.IntVar(&c.BindWorkers, "bind-workers", 0, "arbiter-k8s --bind-workers; 0 = its default")
	fs.DurationVar(&c.Period, "period", 0, "arbiter-k8s --period; 0 = its default")
	fs.Var((*stringList)(&c.ShimArgs), "shim-arg", "extra argument for arbiter-k8s (repeatable)")
	fs.StringVar(&c.BinDir, "bin-dir", os.Getenv("ARBITER_K8S_BIN_DIR"), "control-plane binaries (tests/k8s/control-plane/build.sh prints the folder)")
	fs.IntVar(&c.CreateWorkers, "create-workers", 32, "parallel creates of nodes and pods")
	fs.BoolVar(&c.OneByOne, "one-by-one", false, "create the pods one at a time, each after the previous one is bound and a pause, and measure each one's time from created to bound")
	fs.DurationVar(&c.Pause, "pause", time.Second, "with --one-by-one, the pause before each create is drawn uniformly from [0, this)")
	fs.Int64Var(&c.Seed, "seed", 1, "seed of the pauses of --one-by-one")
	fs.DurationVar(&c.Timeout, "timeout", 20*time.Minute, "bound on the wait for the pods to be bound")
	fs.DurationVar(&c.Settle, "settle", 30*time.Second, "once every pod is created, stop when no pod was bound for this long (pods that cannot fit)")
	fs.StringVar(&c.ProfileDir, "profile-dir", "", "write 30-second CPU profiles of kube-apiserver and arbiter-k8s, from the first pod created, here")
	fs.BoolVar(&c.KeepDir, "keep-dir", false, "keep the control plane's folder (logs, audit log) after the run")
	fs.StringVar(&c.Out, "out", "", "write the results as JSON to this file")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	switch c.Scheduler {
	case "kube-scheduler":
	case "arbiter":
		if c.ServerBin == "" || c.ShimBin == "" {
			return nil, errors.New("--scheduler arbiter needs --arbiter-server and --arbiter-k8s")
		}
	default:
		return nil, fmt.Errorf("--scheduler=%q: want kube-scheduler or arbiter", c.Scheduler)
	}
	if c.Nodes <= 0 || c.Pods <= 0 || c.Namespaces <= 0 || c.CreateWorkers <= 0 {
		return nil, errors.New("--nodes, --pods, --namespaces and --create-workers must be positive")
	}
	if c.GangSize < 0 || c.GangSize > 0 && c.Pods%c.GangSize != 0 {
		return nil, errors.New("--gang-size must divide --pods")
	}
	if c.OneByOne && (c.GangSize > 0 || c.Pause < 0) {
		return nil, errors.New("--one-by-one creates single pods (no --gang-size) after a pause of at least 0")
	}
	if c.BinDir == "" {
		return nil, errors.New("no control-plane binaries: pass --bin-dir or set ARBITER_K8S_BIN_DIR (tests/k8s/control-plane/build.sh prints the folder)")
	}
	if c.KubeSchedulerQPS > 0 && c.KubeSchedulerBurst == 0 {
		c.KubeSchedulerBurst = int(2 * c.KubeSchedulerQPS)
	}
	if c.Label == "" {
		c.Label = c.Scheduler
	}
	return c, nil
}
