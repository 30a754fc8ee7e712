// Command arbiter-extender is arbiter as a scheduler extender of stock kube-scheduler (package
// extender): a sidecar that answers kube-scheduler's filter, prioritize, preempt and bind calls
// with arbiter-server's decisions. kube-scheduler names it in KubeSchedulerConfiguration.extenders
// (deploy/README.md, "Extender for kube-scheduler").
//
// It serves the verbs, /healthz, /readyz and /metrics on --addr.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"arbiter.dev/clients/go/internal/cmdutil"
	"arbiter.dev/clients/go/internal/serve"
	"arbiter.dev/clients/go/k8s/extender"
	"arbiter.dev/clients/go/k8s/shim"
	"arbiter.dev/clients/go/k8s/usage"
)

type options struct {
	kube                      cmdutil.KubeFlags
	server                    cmdutil.ServerFlags
	log                       cmdutil.LogFlags
	addr, usageConfigMap, kai string
	cfg                       shim.Config
	ext                       extender.Config
}

func parseFlags(args []string) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("arbiter-extender", flag.ContinueOnError)
	o.kube.Register(fs, "")
	o.server.Register(fs, "arbiter-server gRPC target (the sidecar beside it)")
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
	fs.StringVar(&o.kai, "kai-queues", "auto", "read KAI Queue resources (scheduling.run.ai/v2): auto, true or false")
	o.log.Register(fs)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	switch o.kai {
	case "auto", "true", "false":
	default:
		return nil, fmt.Errorf("--kai-queues=%q: want auto, true or false", o.kai)
	}
	return o, nil
}

func main() { cmdutil.Main("arbiter-extender", parseFlags, run) }

func run(ctx context.Context, o *options) error {
	log, err := o.log.NewLogger(os.Stderr, cmdutil.JSON)
	if err != nil {
		return err
	}
	slog.SetDefault(log)

	restCfg, err := o.kube.RESTConfig("arbiter-extender")
	if err != nil {
		return err
	}
	restCfg.QPS, restCfg.Burst = 100, 200
	kube, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(restCfg)
	if err != nil {
		return err
	}
	if o.cfg.KAIQueues, err = shim.KAIQueuesEnabled(o.kai, kube); err != nil {
		return err
	}
	arbiter, err := o.server.Dial(0)
	if err != nil {
		return err
	}
	defer arbiter.Close()

	reg := cmdutil.NewRegistry()
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
	log.Info("arbiter-extender starting", "addr", listening.String(), "server", o.server.Target,
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
