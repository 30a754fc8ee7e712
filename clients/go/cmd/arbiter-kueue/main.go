// Command arbiter-kueue delegates Kueue's decisions to arbiter.
//
//	arbiter-kueue explain  [--namespace NS] [--workload NAME] [--format table|json]
//	arbiter-kueue what-if  -f job.yaml [--namespace NS] [--format table|json]
//	arbiter-kueue check    [--k-value K] [--usage-half-life D] ...
//
// explain shows, for every pending Workload, what arbiter's Kueue model would do (admit, preempt
// which workloads by which rule, or why not), and every ClusterQueue's and Cohort's weighted
// share beside the one Kueue publishes. what-if says what a Job, JobSet or Workload manifest
// would get if it were submitted now, changing nothing. check runs the arbiter.dev/time-aware
// AdmissionCheck controller. See k8s/kueue/README.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	kueueclient "sigs.k8s.io/kueue/client-go/clientset/versioned"

	arbiterv1 "arbiter.dev/clients/go/arbiterv1"
	"arbiter.dev/clients/go/client"
	"arbiter.dev/clients/go/internal/leader"
	"arbiter.dev/clients/go/internal/replay"
	"arbiter.dev/clients/go/internal/serve"
	"arbiter.dev/clients/go/k8s/kueue"
	"arbiter.dev/clients/go/k8s/kueue/report"
	"arbiter.dev/clients/go/k8s/kueue/timeaware"
	"arbiter.dev/clients/go/k8s/usage"
)

const usageText = `arbiter-kueue: Kueue decisions, explained and gated by arbiter

Usage:
  arbiter-kueue explain [flags]          what arbiter would admit or preempt now, and every share
  arbiter-kueue what-if -f FILE [flags]  what a Job, JobSet or Workload would get if submitted now
  arbiter-kueue check [flags]            run the arbiter.dev/time-aware AdmissionCheck controller

Run "arbiter-kueue COMMAND -h" for the flags of a command.
`

// common are the flags of every command.
type common struct {
	kubeconfig string
	server     string
	tls        client.TLSFiles
	useTLS     bool
	timeout    time.Duration
	dumpDir    string
	strategies string
	logLevel   string
}

func (c *common) register(fs *flag.FlagSet) {
	fs.StringVar(&c.kubeconfig, "kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig file; empty = in-cluster configuration")
	fs.StringVar(&c.server, "server", "localhost:50051", "arbiter-server gRPC target")
	fs.StringVar(&c.tls.CA, "tls-ca", "", "CA bundle that verifies the server (enables TLS)")
	fs.StringVar(&c.tls.Cert, "tls-cert", "", "client certificate for mutual TLS (enables TLS)")
	fs.StringVar(&c.tls.Key, "tls-key", "", "client key for mutual TLS")
	fs.StringVar(&c.tls.ServerName, "tls-server-name", "", "name to verify in the server's certificate")
	fs.BoolVar(&c.useTLS, "tls", false, "use TLS with the system roots (implied by --tls-ca or --tls-cert)")
	fs.DurationVar(&c.timeout, "timeout", 30*time.Second, "bound on each call to arbiter")
	fs.StringVar(&c.dumpDir, "dump-snapshot", "", "write every request sent to arbiter to this directory (proto3 JSON, replayable with: arbiter schedule FILE)")
	fs.StringVar(&c.strategies, "preemption-strategies", "",
		"Kueue's fairSharing.preemptionStrategies, comma-separated (LessThanOrEqualToFinalShare, LessThanInitialShare); empty = Kueue's default")
}

// policyStrategies parses --preemption-strategies.
func (c *common) policyStrategies() ([]arbiterv1.KueuePreemptionStrategy, error) {
	var out []arbiterv1.KueuePreemptionStrategy
	for _, s := range strings.Split(c.strategies, ",") {
		switch strings.TrimSpace(s) {
		case "":
		case "LessThanOrEqualToFinalShare":
			out = append(out, arbiterv1.KueuePreemptionStrategy_LESS_THAN_OR_EQUAL_TO_FINAL_SHARE)
		case "LessThanInitialShare":
			out = append(out, arbiterv1.KueuePreemptionStrategy_LESS_THAN_INITIAL_SHARE)
		default:
			return nil, fmt.Errorf("--preemption-strategies: unknown strategy %q", s)
		}
	}
	return out, nil
}

func (c *common) restConfig(agent string) (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", c.kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("kubernetes config: %w", err)
	}
	cfg.UserAgent = agent
	return cfg, nil
}

func (c *common) dial() (*client.Client, error) {
	cfg := client.Config{Target: c.server, Timeout: c.timeout}
	if c.useTLS || c.tls.CA != "" || c.tls.Cert != "" {
		var err error
		if cfg.TLS, err = client.TLSConfig(c.tls); err != nil {
			return nil, err
		}
	}
	return client.Dial(cfg)
}

func (c *common) logger(w io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(c.logLevel)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level})), nil
}

// clusterView is what explain and what-if share: clients, and the model of the cluster now.
type clusterView struct {
	kueue   kueueclient.Interface
	kube    kubernetes.Interface
	arbiter *client.Client
	state   *kueue.State
	model   *kueue.Model
}

func (c *common) open(ctx context.Context, agent string) (*clusterView, error) {
	strategies, err := c.policyStrategies()
	if err != nil {
		return nil, err
	}
	cfg, err := c.restConfig(agent)
	if err != nil {
		return nil, err
	}
	s := &clusterView{}
	if s.kueue, err = kueueclient.NewForConfig(cfg); err != nil {
		return nil, err
	}
	if s.kube, err = kubernetes.NewForConfig(cfg); err != nil {
		return nil, err
	}
	if s.state, err = kueue.Read(ctx, s.kueue, s.kube, time.Now()); err != nil {
		return nil, err
	}
	if s.model, err = kueue.Build(s.state, kueue.Options{Strategies: strategies}); err != nil {
		return nil, err
	}
	if s.arbiter, err = c.dial(); err != nil {
		return nil, err
	}
	return s, nil
}

func (c *common) dump(stem string, req *arbiterv1.ScheduleRequest, stderr io.Writer) error {
	if c.dumpDir == "" {
		return nil
	}
	path, err := replay.Write(c.dumpDir, stem, time.Now(), req)
	if err != nil {
		return fmt.Errorf("--dump-snapshot: %w", err)
	}
	fmt.Fprintf(stderr, "request written to %s (replay: arbiter schedule %s)\n", path, path)
	return nil
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// run is the command line; it returns the exit code: 0 done, 1 failed, 2 bad usage.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stderr, usageText)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	commands := map[string]func(context.Context, []string, io.Writer, io.Writer) error{
		"explain": explain, "what-if": whatIf, "check": check,
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "arbiter-kueue: unknown command %q\n\n%s", args[0], usageText)
		return 2
	}
	err := cmd(ctx, args[1:], stdout, stderr)
	var usageErr usageError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &usageErr):
		fmt.Fprintf(stderr, "arbiter-kueue %s: %v\n", args[0], err)
		return 2
	default:
		fmt.Fprintf(stderr, "arbiter-kueue %s: %v\n", args[0], err)
		return 1
	}
}

type usageError struct{ error }

func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected arguments: %v", fs.Args())}
	}
	return nil
}

func formatFlag(fs *flag.FlagSet) *string {
	return fs.String("format", "table", "output: table or json")
}

func checkFormat(f string) error {
	if f != "table" && f != "json" {
		return usageError{fmt.Errorf("--format=%q: want table or json", f)}
	}
	return nil
}

func explain(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("explain", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c common
	c.register(fs)
	var opts report.ExplainOptions
	fs.StringVar(&opts.Namespace, "namespace", "", "only the workloads of this namespace; empty = all")
	fs.StringVar(&opts.Workload, "workload", "", "only this workload (with --namespace)")
	format := formatFlag(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := checkFormat(*format); err != nil {
		return err
	}
	if opts.Workload != "" && opts.Namespace == "" {
		return usageError{errors.New("--workload needs --namespace")}
	}
	s, err := c.open(ctx, "arbiter-kueue-explain")
	if err != nil {
		return err
	}
	defer s.arbiter.Close()
	if err := c.dump("explain", s.model.Request, stderr); err != nil {
		return err
	}
	rep, err := report.Explain(ctx, s.arbiter, s.state, s.model, opts)
	if err != nil {
		return err
	}
	if opts.Workload != "" && len(rep.Workloads) == 0 && len(rep.Skipped) == 0 {
		return fmt.Errorf("no pending workload %s/%s", opts.Namespace, opts.Workload)
	}
	if *format == "json" {
		return rep.WriteJSON(stdout)
	}
	return rep.WriteTable(stdout)
}

func whatIf(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("what-if", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c common
	c.register(fs)
	file := fs.String("f", "", "manifest: a Job, JobSet or Workload (YAML or JSON; several documents allowed; - = standard input)")
	namespace := fs.String("namespace", "default", "namespace of manifests that name none")
	format := formatFlag(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := checkFormat(*format); err != nil {
		return err
	}
	if *file == "" {
		return usageError{errors.New("-f FILE is required")}
	}
	data, err := readManifest(*file)
	if err != nil {
		return err
	}
	s, err := c.open(ctx, "arbiter-kueue-what-if")
	if err != nil {
		return err
	}
	defer s.arbiter.Close()
	prio, err := priorities(ctx, s)
	if err != nil {
		return err
	}
	candidates, err := report.WorkloadsFromManifests(data, *namespace, prio)
	if err != nil {
		return fmt.Errorf("%s: %w", *file, err)
	}
	var predictions []*report.Prediction
	for _, w := range candidates {
		p, err := report.WhatIf(ctx, s.arbiter, s.model, w)
		if err != nil {
			return err
		}
		predictions = append(predictions, p)
	}
	if err := c.dump("what-if", s.model.Request, stderr); err != nil {
		return err
	}
	if *format == "json" {
		return report.WritePredictionsJSON(stdout, predictions)
	}
	return report.WritePredictionsTable(stdout, predictions)
}

// maxManifestBytes bounds what what-if reads of a manifest.
const maxManifestBytes = 64 << 20

// readManifest reads name ("-" = standard input), refusing more than maxManifestBytes.
func readManifest(name string) ([]byte, error) {
	in := io.Reader(os.Stdin)
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		in = f
	}
	data, err := io.ReadAll(io.LimitReader(in, maxManifestBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxManifestBytes {
		return nil, fmt.Errorf("%s: larger than %d MiB", name, maxManifestBytes>>20)
	}
	return data, nil
}

// priorities reads the priority classes a manifest may name.
func priorities(ctx context.Context, s *clusterView) (report.Priorities, error) {
	p := report.Priorities{Workload: map[string]int32{}, Pod: map[string]int32{}}
	wpcs, err := s.kueue.KueueV1beta2().WorkloadPriorityClasses().List(ctx, metav1.ListOptions{})
	if err != nil {
		return p, fmt.Errorf("list WorkloadPriorityClasses: %w", err)
	}
	for _, c := range wpcs.Items {
		p.Workload[c.Name] = c.Value
	}
	pcs, err := s.kube.SchedulingV1().PriorityClasses().List(ctx, metav1.ListOptions{})
	if err != nil {
		return p, fmt.Errorf("list PriorityClasses: %w", err)
	}
	for _, c := range pcs.Items {
		p.Pod[c.Name] = c.Value
		if c.GlobalDefault {
			v := c.Value
			p.PodDefault = &v
		}
	}
	return p, nil
}

func check(ctx context.Context, args []string, _, stderr io.Writer) error {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c common
	c.register(fs)
	var cfg timeaware.CheckConfig
	fs.StringVar(&cfg.ControllerName, "controller-name", timeaware.CheckControllerName, "serve the AdmissionChecks whose spec.controllerName is this")
	fs.Float64Var(&cfg.KValue, "k-value", 1, "time-aware fairness k: how strongly past usage lowers a ClusterQueue's share; 0 = never hold back a workload")
	fs.DurationVar(&cfg.Window.HalfLife, "usage-half-life", 0, "half-life of the usage; 0 = no decay")
	fs.DurationVar(&cfg.Window.Tumbling, "usage-window", 0, "tumbling window that resets the usage; 0 = none")
	fs.DurationVar(&cfg.Period, "period", time.Second, "time between passes when nothing changes")
	fs.DurationVar(&cfg.SaveInterval, "usage-save-interval", 30*time.Second, "how often the usage is written to its ConfigMap")
	fs.DurationVar(&cfg.RetryAfter, "retry-after", 0,
		"requeueAfterSeconds set with Retry; Kueue keeps the quota reserved that long before it evicts the workload, so 0 (the default) hands the quota over soonest")
	namespace := fs.String("namespace", envOr("POD_NAMESPACE", "arbiter-system"), "namespace of the usage ConfigMap")
	configMap := fs.String("usage-configmap", "arbiter-kueue-usage", "ConfigMap persisting the ClusterQueues' decayed usage")
	httpAddr := fs.String("http-addr", ":8080", "address of /healthz and /metrics")
	fs.StringVar(&c.logLevel, "log-level", "info", "debug, info, warn or error")
	leaderElect := fs.Bool("leader-elect", true, "decide only while holding the leader Lease (in --namespace), so that replicas never write answers or the ledger twice")
	leaseName := fs.String("lease-name", "arbiter-kueue", "name of the leader Lease")
	leaseDuration := fs.Duration("lease-duration", 15*time.Second, "leader Lease duration")
	renewDeadline := fs.Duration("renew-deadline", 10*time.Second, "leader renew deadline")
	retryPeriod := fs.Duration("retry-period", 2*time.Second, "leader election retry period")
	if err := parse(fs, args); err != nil {
		return err
	}
	if cfg.KValue < 0 {
		return usageError{fmt.Errorf("--k-value=%g: must be 0 or more", cfg.KValue)}
	}
	var err error
	if cfg.Strategies, err = c.policyStrategies(); err != nil {
		return usageError{err}
	}
	cfg.DumpDir, cfg.CallTimeout = c.dumpDir, c.timeout
	log, err := c.logger(stderr)
	if err != nil {
		return usageError{err}
	}
	restCfg, err := c.restConfig("arbiter-kueue-check")
	if err != nil {
		return err
	}
	kc, err := kueueclient.NewForConfig(restCfg)
	if err != nil {
		return err
	}
	kube, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		return err
	}
	arb, err := c.dial()
	if err != nil {
		return err
	}
	defer arb.Close()
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	checker := timeaware.NewChecker(cfg, kc, kube, arb, &usage.ConfigMapStore{Client: kube, Namespace: *namespace, Name: *configMap}, log, reg)

	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	listening, stopHTTP, err := serve.Start(*httpAddr, mux, log)
	if err != nil {
		return err
	}
	defer func() { _ = stopHTTP() }()
	log.Info("arbiter-kueue check starting", "server", c.server, "http", listening.String(),
		"usageConfigMap", *namespace+"/"+*configMap, "leaderElect", *leaderElect)
	if !*leaderElect {
		return checker.Run(ctx)
	}
	// The checker loads the ledger when it starts leading and saves it when it stops, before the
	// Lease is released; a lost Lease ends the process, to start again with a clean state.
	var runErr error
	election := leader.Config(kube, *namespace, *leaseName, *leaseDuration, *renewDeadline, *retryPeriod)
	if leader.Run(ctx, election, log, func(ctx context.Context) { runErr = checker.Run(ctx) }) {
		return errors.Join(errors.New("lost the leader lease"), runErr)
	}
	return runErr
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
