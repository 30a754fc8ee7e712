package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/client-go/kubernetes"
	kueueclient "sigs.k8s.io/kueue/client-go/clientset/versioned"

	"arbiter.dev/clients/go/internal/cmdutil"
	"arbiter.dev/clients/go/internal/leader"
	"arbiter.dev/clients/go/internal/serve"
	"arbiter.dev/clients/go/k8s/kueue/timeaware"
	"arbiter.dev/clients/go/k8s/usage"
)

// checkOptions are the flags of check.
type checkOptions struct {
	common
	cfg                            timeaware.CheckConfig
	lead                           cmdutil.LeaderFlags
	namespace, configMap, httpAddr string
}

// parseCheck reads check's flags; a bad value is a usageError.
func parseCheck(args []string, stderr io.Writer) (*checkOptions, error) {
	o := &checkOptions{}
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o.register(fs)
	cfg := &o.cfg
	fs.StringVar(&cfg.ControllerName, "controller-name", timeaware.CheckControllerName, "serve the AdmissionChecks whose spec.controllerName is this")
	fs.Float64Var(&cfg.KValue, "k-value", 1, "time-aware fairness k: how strongly past usage lowers a ClusterQueue's share; 0 = never hold back a workload")
	fs.DurationVar(&cfg.Window.HalfLife, "usage-half-life", 0, "half-life of the usage; 0 = no decay")
	fs.DurationVar(&cfg.Window.Tumbling, "usage-window", 0, "tumbling window that resets the usage; 0 = none")
	fs.DurationVar(&cfg.Period, "period", time.Second, "time between passes when nothing changes")
	fs.DurationVar(&cfg.SaveInterval, "usage-save-interval", 30*time.Second, "how often the usage is written to its ConfigMap")
	fs.DurationVar(&cfg.RetryAfter, "retry-after", 0,
		"requeueAfterSeconds set with Retry; Kueue keeps the quota reserved that long before it evicts the workload, so 0 (the default) hands the quota over soonest")
	fs.DurationVar(&cfg.HandoverGrace, "handover-grace", time.Minute,
		"once a workload has been sent back this long for a rival workload that still waits (Kueue keeps reserving the quota for the same workload), it is Ready, so that the quota is not left idle; negative = never")
	fs.StringVar(&o.namespace, "namespace", cmdutil.EnvOr("POD_NAMESPACE", "arbiter-system"), "namespace of the usage ConfigMap")
	fs.StringVar(&o.configMap, "usage-configmap", "arbiter-kueue-usage", "ConfigMap persisting the ClusterQueues' decayed usage")
	fs.StringVar(&o.httpAddr, "http-addr", ":8080", "address of /healthz and /metrics")
	o.log.Register(fs)
	o.lead.Register(fs, "arbiter-kueue", "decide only while holding the leader Lease (in --namespace), so that replicas never write answers or the ledger twice")
	if err := parse(fs, args); err != nil {
		return nil, err
	}
	if cfg.KValue < 0 {
		return nil, usageError{fmt.Errorf("--k-value=%g: must be 0 or more", cfg.KValue)}
	}
	var err error
	if cfg.Strategies, err = o.policyStrategies(); err != nil {
		return nil, usageError{err}
	}
	cfg.DumpDir, cfg.CallTimeout = o.dumpDir, o.timeout
	return o, nil
}

// check runs the time-aware AdmissionCheck controller until ctx ends, as leader only with
// --leader-elect; it serves /healthz and /metrics meanwhile.
func check(ctx context.Context, args []string, _, stderr io.Writer) error {
	o, err := parseCheck(args, stderr)
	if err != nil {
		return err
	}
	log, err := o.log.NewLogger(stderr, cmdutil.Text)
	if err != nil {
		return usageError{err}
	}
	restCfg, err := o.kube.RESTConfig("arbiter-kueue-check")
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
	arb, err := o.server.Dial(o.timeout)
	if err != nil {
		return err
	}
	defer arb.Close()
	reg := cmdutil.NewRegistry()
	checker := timeaware.NewChecker(o.cfg, kc, kube, arb, &usage.ConfigMapStore{Client: kube, Namespace: o.namespace, Name: o.configMap}, log, reg)

	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	listening, stopHTTP, err := serve.Start(o.httpAddr, mux, log)
	if err != nil {
		return err
	}
	defer func() { _ = stopHTTP() }()
	log.Info("arbiter-kueue check starting", "server", o.server.Target, "http", listening.String(),
		"usageConfigMap", o.namespace+"/"+o.configMap, "leaderElect", o.lead.Elect)
	if !o.lead.Elect {
		return checker.Run(ctx)
	}
	// The checker loads the ledger when it starts leading and saves it when it stops, before the
	// Lease is released; a lost Lease ends the process, to start again with a clean state.
	var runErr error
	if leader.Run(ctx, o.lead.Config(kube, o.namespace), log, func(ctx context.Context) { runErr = checker.Run(ctx) }) {
		return errors.Join(errors.New("lost the leader lease"), runErr)
	}
	return runErr
}
