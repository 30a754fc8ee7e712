// Command arbiter-extender is arbiter as a scheduler extender of stock kube-scheduler (package
// extender): a sidecar that answers kube-scheduler's filter, prioritize, preempt and bind calls
// with arbiter-server's decisions. kube-scheduler names it in KubeSchedulerConfiguration.extenders
// (deploy/README.md, "Extender for kube-scheduler").
//
// It serves the verbs, /healthz, /readyz and /metrics on --addr.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"arbiter.dev/clients/go/client"
	"arbiter.dev/clients/go/internal/serve"
	"arbiter.dev/clients/go/k8s/extender"
	"arbiter.dev/clients/go/k8s/shim"
	"arbiter.dev/clients/go/k8s/usage"
)

type options struct {
	kubeconfig, server, addr, logLevel, usageConfigMap, kaiQueues string
	cfg                                                           shim.Config
	ext                                                           extender.Config
}

func parseFlags(args []string) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("arbiter-extender", flag.ContinueOnError)
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig file; empty = in-cluster configuration")
	fs.StringVar(&o.server, "server", "localhost:50051", "arbiter-server gRPC target (the sidecar beside it)")
	fs.StringVar(&o.addr, "addr", ":8888", "address of the extender verbs, /healthz, /readyz and /metrics")
	fs.StringVar(&o.cfg.SchedulerName, "scheduler-name", "default-scheduler",
		"the kube-scheduler profile whose pods arbiter decides (spec.schedulerName)")
	fs.StringVar(&o.cfg.Namespace, "namespace", "arbiter-system", "namespace of the queue and usage ConfigMaps")
	fs.StringVar(&o.cfg.QueueConfigMap, "queue-configmap", "arbiter-queues", "ConfigMap holding queues.yaml")
	fs.StringVar(&o.usageConfigMap, "usage-configmap", "arbiter-extender-usage", "ConfigMap persisting the queues' decayed usage")
	fs.StringVar(&o.cfg.DefaultQueue, "default-queue", "", "queue of pods that name none; empty lets them pass untouched")
	fs.DurationVar(&o.cfg.Usage.HalfLife, "usage-half-life", 0, "half-life of the usage of time-aware fairness; 0 = no decay")
	fs.DurationVar(&o.ext.MaxAge, "max-answer-age", 2*time.Second, "longest time one Schedule answer serves kube-scheduler's calls")
	fs.BoolVar(&o.ext.Bind, "bind", false, "serve the bind verb: bind gangs whole (name bindVerb in the configuration too)")
	fs.DurationVar(&o.ext.GangWait, "gang-wait", 20*time.Second, "how long a gang member's bind waits for the rest of its gang")
	fs.DurationVar(&o.ext.CacheWait, "cache-wait", 2*time.Second, "how long a call about a pod kube-scheduler saw first waits for arbiter's caches to have it")
	fs.StringVar(&o.kaiQueues, "kai-queues", "auto", "read KAI Queue resources (scheduling.run.ai/v2): auto, true or false")
	fs.StringVar(&o.logLevel, "log-level", "info", "debug, info, warn or error")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	switch o.kaiQueues {
	case "auto", "true", "false":
	default:
		return nil, fmt.Errorf("--kai-queues=%q: want auto, true or false", o.kaiQueues)
	}
	return o, nil
}

func main() {
	o, err := parseFlags(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "arbiter-extender:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		slog.Error("arbiter-extender stopped", "err", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o *options) error {
	var level slog.Level
	if err := level.UnmarshalText([]byte(o.logLevel)); err != nil {
		return fmt.Errorf("--log-level: %w", err)
	}
	log := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	slog.SetDefault(log)

	restCfg, err := clientcmd.BuildConfigFromFlags("", o.kubeconfig)
	if err != nil {
		return fmt.Errorf("kubernetes config: %w", err)
	}
	restCfg.UserAgent = "arbiter-extender"
	restCfg.QPS, restCfg.Burst = 100, 200
	kube, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(restCfg)
	if err != nil {
		return err
	}
	if o.cfg.KAIQueues, err = shim.KAIQueuesEnabled(o.kaiQueues, kube); err != nil {
		return err
	}
	arbiter, err := client.Dial(client.Config{Target: o.server})
	if err != nil {
		return err
	}
	defer arbiter.Close()

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	decider, err := shim.New(o.cfg, shim.Deps{
		Kube: kube, Dynamic: dyn, Scheduler: arbiter, Metrics: shim.NewMetrics(nil), Log: log,
		Store: &usage.ConfigMapStore{Client: kube, Namespace: o.cfg.Namespace, Name: o.usageConfigMap},
	})
	if err != nil {
		return err
	}
	ext := extender.New(o.ext, decider, kube, extender.NewMetrics(reg), log)

	mux := http.NewServeMux()
	mux.Handle("/", ext.Handler())
	ready := make(chan struct{})
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		select {
		case <-ready:
			_, _ = w.Write([]byte("ok\n"))
		default:
			http.Error(w, "informer caches not synced", http.StatusServiceUnavailable)
		}
	})
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	listening, stopHTTP, err := serve.Start(o.addr, mux, log)
	if err != nil {
		return err
	}
	defer func() { _ = stopHTTP() }() // on an error below; Shutdown again at the end is a no-op
	log.Info("arbiter-extender starting", "addr", listening.String(), "server", o.server,
		"scheduler", o.cfg.SchedulerName, "bind", o.ext.Bind)

	if err := decider.Start(ctx); err != nil {
		return err
	}
	if err := ext.Start(ctx); err != nil {
		return err
	}
	close(ready)
	<-ctx.Done()
	return stopHTTP()
}
