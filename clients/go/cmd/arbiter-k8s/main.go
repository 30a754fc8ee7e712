// Command arbiter-k8s is arbiter's Kubernetes scheduler: a secondary scheduler for the pods whose
// spec.schedulerName matches --scheduler-name, which asks arbiter-server for every decision.
//
// It serves /healthz, /readyz and /metrics on --http-addr, and with --leader-elect (the default)
// only the replica holding the Lease schedules, so several replicas can run safely.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/http/pprof"
	"os"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"

	"arbiter.dev/clients/go/internal/cmdutil"
	"arbiter.dev/clients/go/internal/leader"
	"arbiter.dev/clients/go/internal/serve"
	"arbiter.dev/clients/go/k8s/shim"
	"arbiter.dev/clients/go/k8s/translate"
	"arbiter.dev/clients/go/k8s/usage"
)

type options struct {
	kube           cmdutil.KubeFlags
	server         cmdutil.ServerFlags
	leader         cmdutil.LeaderFlags
	log            cmdutil.LogFlags
	cfg            shim.Config
	usageConfigMap string
	ignore         string
	kaiQueues      string
	httpAddr       string
	kubeQPS        float64
	kubeBurst      int
	checkAccess    bool
	profiling      bool
}

func parseFlags(args []string) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("arbiter-k8s", flag.ContinueOnError)
	o.kube.Register(fs, "")
	o.server.Register(fs, "arbiter-server gRPC target; dns:///NAME:PORT balances over every address of a headless Service")
	o.server.RegisterTLS(fs)
	fs.StringVar(&o.cfg.SchedulerName, "scheduler-name", "arbiter", "schedule the pods whose spec.schedulerName is this")
	fs.StringVar(&o.cfg.Namespace, "namespace", cmdutil.EnvOr("POD_NAMESPACE", "arbiter-system"),
		"namespace of the queue and usage ConfigMaps and of the leader Lease")
	fs.StringVar(&o.cfg.QueueConfigMap, "queue-configmap", "arbiter-queues", "ConfigMap holding "+translate.QueueConfigKey)
	fs.StringVar(&o.usageConfigMap, "usage-configmap", "arbiter-usage", "ConfigMap persisting the queues' decayed usage")
	fs.StringVar(&o.cfg.DefaultQueue, "default-queue", "", "queue of pods that name none; empty leaves them unscheduled")
	fs.DurationVar(&o.cfg.Period, "period", time.Second, "time between scheduling cycles when nothing causes one sooner")
	fs.DurationVar(&o.cfg.MinCycleGap, "min-cycle-gap", 50*time.Millisecond,
		"least time between the end of a cycle and the start of the next that a new pod or freed room causes (at most --period)")
	fs.DurationVar(&o.cfg.ScheduleTimeout, "schedule-timeout", 30*time.Second, "bound on one Schedule call, retries included")
	fs.DurationVar(&o.cfg.Usage.HalfLife, "usage-half-life", 0, "half-life of the usage of time-aware fairness; 0 = no decay")
	fs.DurationVar(&o.cfg.Usage.Tumbling, "usage-window", 0, "tumbling window that resets the usage; 0 = none")
	fs.DurationVar(&o.cfg.UsageSaveInterval, "usage-save-interval", 30*time.Second, "how often the usage is written to its ConfigMap")
	fs.StringVar(&o.cfg.DumpDir, "dump-snapshot", "", "write every ScheduleRequest sent to this directory (proto3 JSON)")
	fs.StringVar(&o.ignore, "ignore-resources", "", "comma-separated resources never sent to arbiter; \"pods\" stops counting pods against each node's pods allocatable")
	fs.StringVar(&o.kaiQueues, "kai-queues", "auto", "read KAI Queue resources (scheduling.run.ai/v2): auto, true or false")
	o.leader.Register(fs, "arbiter-k8s", "schedule only while holding the leader Lease")
	fs.Float64Var(&o.kubeQPS, "kube-api-qps", 200, "Kubernetes API requests per second (client-side limit; Events have a limit of their own, the same)")
	fs.IntVar(&o.kubeBurst, "kube-api-burst", 400, "Kubernetes API request burst above --kube-api-qps")
	fs.IntVar(&o.cfg.BindWorkers, "bind-workers", 0,
		"bindings in flight at once; 0 = --kube-api-qps / 3 (at least 16), enough to keep the rate limit busy while a binding takes up to 1/3 s")
	fs.StringVar(&o.cfg.ReservationNamespace, "gpu-reservation-namespace", "",
		"namespace of the reservation pods that hold shared GPU devices; default --namespace (another one is created when missing, if permitted)")
	fs.StringVar(&o.cfg.ReservationImage, "gpu-reservation-image", "registry.k8s.io/pause:3.10",
		"image of the reservation pods' one container, which only sleeps")
	fs.BoolVar(&o.checkAccess, "check-access", true, "check the RBAC permissions at start and name any that is missing")
	fs.StringVar(&o.httpAddr, "http-addr", ":8080", "address of /healthz, /readyz and /metrics")
	fs.BoolVar(&o.profiling, "profiling", false, "also serve Go's profiles under /debug/pprof/ on --http-addr")
	o.log.Register(fs)
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
	if o.cfg.MinCycleGap <= 0 {
		return nil, fmt.Errorf("--min-cycle-gap=%v: must be positive", o.cfg.MinCycleGap)
	}
	if o.cfg.BindWorkers <= 0 {
		// A loaded API server takes tens to hundreds of milliseconds per binding; too few
		// workers then bind below the client's rate (16 bound 160/s at 200 QPS in
		// tests/load/k8s-scale.sh while the API server was busy creating pods).
		o.cfg.BindWorkers = max(16, int(math.Ceil(o.kubeQPS/3)))
	}
	o.cfg.IgnoredResources = []string{}
	for _, r := range strings.Split(o.ignore, ",") {
		if r = strings.TrimSpace(r); r != "" {
			o.cfg.IgnoredResources = append(o.cfg.IgnoredResources, r)
		}
	}
	return o, nil
}

func main() { cmdutil.Main("arbiter-k8s", parseFlags, run) }

func run(ctx context.Context, o *options) error {
	log, err := o.log.NewLogger(os.Stderr, cmdutil.JSON)
	if err != nil {
		return err
	}
	slog.SetDefault(log)

	kubeCfg, kube, dyn, err := kubeClients(o)
	if err != nil {
		return err
	}
	o.cfg.KAIQueues, err = shim.KAIQueuesEnabled(o.kaiQueues, kube)
	if err != nil {
		return err
	}

	if o.checkAccess {
		lease := ""
		if o.leader.Elect {
			lease = o.leader.LeaseName
		}
		if err := shim.CheckAccess(ctx, kube, shim.RequiredAccess(o.cfg, o.usageConfigMap, lease)); err != nil {
			return err
		}
	}

	arbiter, err := o.server.Dial(0)
	if err != nil {
		return err
	}
	defer arbiter.Close()

	reg := cmdutil.NewRegistry()
	metrics := shim.NewMetrics(reg)

	recorder, stopEvents, err := newRecorder(ctx, kubeCfg, o.cfg.SchedulerName, log)
	if err != nil {
		return err
	}
	defer stopEvents()

	s, err := shim.New(o.cfg, shim.Deps{
		Kube: kube, Dynamic: dyn, Scheduler: arbiter, Recorder: recorder, Metrics: metrics, Log: log,
		Store: &usage.ConfigMapStore{Client: kube, Namespace: o.cfg.Namespace, Name: o.usageConfigMap},
	})
	if err != nil {
		return err
	}

	handler := httpHandler(s, reg)
	if o.profiling {
		handler = withProfiling(handler)
	}
	listening, stopHTTP, err := serve.Start(o.httpAddr, handler, log)
	if err != nil {
		return err
	}
	defer func() { _ = stopHTTP() }()
	log.Info("arbiter-k8s starting", "scheduler", o.cfg.SchedulerName, "server", o.server.Target,
		"http", listening.String(), "kaiQueues", o.cfg.KAIQueues, "leaderElect", o.leader.Elect)

	if err := s.Start(ctx); err != nil {
		return err
	}
	if !o.leader.Elect {
		s.Run(ctx)
		return nil
	}
	if leader.Run(ctx, o.leader.Config(kube, o.cfg.Namespace), log, s.Run) {
		return errors.New("lost the leader lease") // restart with a clean state
	}
	return nil
}

// kubeClients are the clients of the Kubernetes API at --kube-api-qps: built-in kinds travel as
// protobuf, as between Kubernetes' own components (cheaper for the API server to encode every pod
// watch event, and for the shim to decode); the dynamic client (KAI's Queue, a custom resource)
// speaks JSON. kubeCfg is the protobuf configuration.
func kubeClients(o *options) (kubeCfg *rest.Config, kube kubernetes.Interface, dyn dynamic.Interface, err error) {
	restCfg, err := o.kube.RESTConfig("arbiter-k8s")
	if err != nil {
		return nil, nil, nil, err
	}
	restCfg.QPS, restCfg.Burst = float32(o.kubeQPS), o.kubeBurst
	kubeCfg = rest.CopyConfig(restCfg)
	kubeCfg.ContentType = runtime.ContentTypeProtobuf
	kubeCfg.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	if kube, err = kubernetes.NewForConfig(kubeCfg); err != nil {
		return nil, nil, nil, err
	}
	if dyn, err = dynamic.NewForConfig(restCfg); err != nil {
		return nil, nil, nil, err
	}
	return kubeCfg, kube, dyn, nil
}

// newRecorder records Events as component. They go through a client of their own, with its own
// rate limiter, as kube-scheduler's do, so that they never take tokens from the bindings; several
// at a time (eventSink). stop shuts the broadcaster down.
func newRecorder(ctx context.Context, kubeCfg *rest.Config, component string, log *slog.Logger) (rec record.EventRecorder, stop func(), err error) {
	eventKube, err := kubernetes.NewForConfig(rest.CopyConfig(kubeCfg))
	if err != nil {
		return nil, nil, err
	}
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartRecordingToSink(newEventSink(ctx, &typedcorev1.EventSinkImpl{Interface: eventKube.CoreV1().Events("")}, log))
	return broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: component}), broadcaster.Shutdown, nil
}

// withProfiling adds Go's profiles under /debug/pprof/ to h.
func withProfiling(h http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	mux.Handle("/", h)
	return mux
}

func httpHandler(s *shim.Shim, reg *prometheus.Registry) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !s.Ready() {
			http.Error(w, "informer caches not synced", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	return mux
}
