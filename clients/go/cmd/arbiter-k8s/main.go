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
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/record"

	"arbiter.dev/clients/go/client"
	"arbiter.dev/clients/go/internal/leader"
	"arbiter.dev/clients/go/k8s/shim"
	"arbiter.dev/clients/go/k8s/translate"
	"arbiter.dev/clients/go/k8s/usage"
)

type options struct {
	kubeconfig     string
	server         string
	tls            client.TLSFiles
	useTLS         bool
	cfg            shim.Config
	usageConfigMap string
	ignore         string
	kaiQueues      string
	leaderElect    bool
	leaseName      string
	leaseDuration  time.Duration
	renewDeadline  time.Duration
	retryPeriod    time.Duration
	httpAddr       string
	logLevel       string
	kubeQPS        float64
	kubeBurst      int
	checkAccess    bool
	profiling      bool
}

func parseFlags(args []string) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("arbiter-k8s", flag.ContinueOnError)
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig file; empty = in-cluster configuration")
	fs.StringVar(&o.server, "server", "localhost:50051",
		"arbiter-server gRPC target; dns:///NAME:PORT balances over every address of a headless Service")
	fs.StringVar(&o.tls.CA, "tls-ca", "", "CA bundle that verifies the server (enables TLS)")
	fs.StringVar(&o.tls.Cert, "tls-cert", "", "client certificate for mutual TLS (enables TLS)")
	fs.StringVar(&o.tls.Key, "tls-key", "", "client key for mutual TLS")
	fs.StringVar(&o.tls.ServerName, "tls-server-name", "", "name to verify in the server's certificate")
	fs.BoolVar(&o.useTLS, "tls", false, "use TLS with the system roots (implied by --tls-ca or --tls-cert)")
	fs.StringVar(&o.cfg.SchedulerName, "scheduler-name", "arbiter", "schedule the pods whose spec.schedulerName is this")
	fs.StringVar(&o.cfg.Namespace, "namespace", envOr("POD_NAMESPACE", "arbiter-system"),
		"namespace of the queue and usage ConfigMaps and of the leader Lease")
	fs.StringVar(&o.cfg.QueueConfigMap, "queue-configmap", "arbiter-queues", "ConfigMap holding "+translate.QueueConfigKey)
	fs.StringVar(&o.usageConfigMap, "usage-configmap", "arbiter-usage", "ConfigMap persisting the queues' decayed usage")
	fs.StringVar(&o.cfg.DefaultQueue, "default-queue", "", "queue of pods that name none; empty leaves them unscheduled")
	fs.DurationVar(&o.cfg.Period, "period", time.Second, "time between scheduling cycles")
	fs.DurationVar(&o.cfg.ScheduleTimeout, "schedule-timeout", 30*time.Second, "bound on one Schedule call, retries included")
	fs.DurationVar(&o.cfg.Usage.HalfLife, "usage-half-life", 0, "half-life of the usage of time-aware fairness; 0 = no decay")
	fs.DurationVar(&o.cfg.Usage.Tumbling, "usage-window", 0, "tumbling window that resets the usage; 0 = none")
	fs.DurationVar(&o.cfg.UsageSaveInterval, "usage-save-interval", 30*time.Second, "how often the usage is written to its ConfigMap")
	fs.StringVar(&o.cfg.DumpDir, "dump-snapshot", "", "write every ScheduleRequest sent to this directory (proto3 JSON)")
	fs.StringVar(&o.ignore, "ignore-resources", "pods", "comma-separated resources never sent to arbiter")
	fs.StringVar(&o.kaiQueues, "kai-queues", "auto", "read KAI Queue resources (scheduling.run.ai/v2): auto, true or false")
	fs.BoolVar(&o.leaderElect, "leader-elect", true, "schedule only while holding the leader Lease")
	fs.StringVar(&o.leaseName, "lease-name", "arbiter-k8s", "name of the leader Lease")
	fs.DurationVar(&o.leaseDuration, "lease-duration", 15*time.Second, "leader Lease duration")
	fs.DurationVar(&o.renewDeadline, "renew-deadline", 10*time.Second, "leader renew deadline")
	fs.DurationVar(&o.retryPeriod, "retry-period", 2*time.Second, "leader election retry period")
	fs.Float64Var(&o.kubeQPS, "kube-api-qps", 200, "Kubernetes API requests per second (client-side limit; Events have a limit of their own, the same)")
	fs.IntVar(&o.kubeBurst, "kube-api-burst", 400, "Kubernetes API request burst above --kube-api-qps")
	fs.IntVar(&o.cfg.BindWorkers, "bind-workers", 0,
		"bindings in flight at once; 0 = --kube-api-qps / 3 (at least 16), enough to keep the rate limit busy while a binding takes up to 1/3 s")
	fs.BoolVar(&o.checkAccess, "check-access", true, "check the RBAC permissions at start and name any that is missing")
	fs.StringVar(&o.httpAddr, "http-addr", ":8080", "address of /healthz, /readyz and /metrics")
	fs.BoolVar(&o.profiling, "profiling", false, "also serve Go's profiles under /debug/pprof/ on --http-addr")
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

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

func main() {
	o, err := parseFlags(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "arbiter-k8s:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		slog.Error("arbiter-k8s stopped", "err", err)
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
	restCfg.UserAgent = "arbiter-k8s"
	restCfg.QPS, restCfg.Burst = float32(o.kubeQPS), o.kubeBurst
	// Built-in kinds travel as protobuf, as between Kubernetes' own components: cheaper for the API
	// server to encode (every pod watch event) and for the shim to decode. The dynamic client
	// (KAI's Queue, a custom resource) speaks JSON.
	kubeCfg := rest.CopyConfig(restCfg)
	kubeCfg.ContentType = runtime.ContentTypeProtobuf
	kubeCfg.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	kube, err := kubernetes.NewForConfig(kubeCfg)
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(restCfg)
	if err != nil {
		return err
	}
	o.cfg.KAIQueues, err = shim.KAIQueuesEnabled(o.kaiQueues, kube)
	if err != nil {
		return err
	}

	if o.checkAccess {
		lease := ""
		if o.leaderElect {
			lease = o.leaseName
		}
		if err := shim.CheckAccess(ctx, kube, shim.RequiredAccess(o.cfg, o.usageConfigMap, lease)); err != nil {
			return err
		}
	}

	ccfg := client.Config{Target: o.server}
	if o.useTLS || o.tls.CA != "" || o.tls.Cert != "" {
		if ccfg.TLS, err = client.TLSConfig(o.tls); err != nil {
			return err
		}
	}
	arbiter, err := client.Dial(ccfg)
	if err != nil {
		return err
	}
	defer arbiter.Close()

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	metrics := shim.NewMetrics(reg)

	// Events go through a client of their own, with its own rate limiter, as kube-scheduler's do,
	// so that they never take tokens from the bindings; several at a time (eventSink).
	eventKube, err := kubernetes.NewForConfig(rest.CopyConfig(kubeCfg))
	if err != nil {
		return err
	}
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartRecordingToSink(newEventSink(ctx, &typedcorev1.EventSinkImpl{Interface: eventKube.CoreV1().Events("")}, log))
	defer broadcaster.Shutdown()
	recorder := broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: o.cfg.SchedulerName})

	s, err := shim.New(o.cfg, shim.Deps{
		Kube: kube, Dynamic: dyn, Scheduler: arbiter, Recorder: recorder, Metrics: metrics, Log: log,
		Store: &usage.ConfigMapStore{Client: kube, Namespace: o.cfg.Namespace, Name: o.usageConfigMap},
	})
	if err != nil {
		return err
	}

	srv := &http.Server{Addr: o.httpAddr, Handler: httpHandler(s, reg), ReadHeaderTimeout: 5 * time.Second}
	if o.profiling {
		srv.Handler = withProfiling(srv.Handler)
	}
	lis, err := net.Listen("tcp", o.httpAddr)
	if err != nil {
		return err
	}
	go func() {
		if err := srv.Serve(lis); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("http server", "err", err)
		}
	}()
	defer srv.Close()
	log.Info("arbiter-k8s starting", "scheduler", o.cfg.SchedulerName, "server", o.server,
		"http", lis.Addr().String(), "kaiQueues", o.cfg.KAIQueues, "leaderElect", o.leaderElect)

	if err := s.Start(ctx); err != nil {
		return err
	}
	if !o.leaderElect {
		s.Run(ctx)
		return nil
	}
	cfg := leader.Config(kube, o.cfg.Namespace, o.leaseName, o.leaseDuration, o.renewDeadline, o.retryPeriod)
	if leader.Run(ctx, cfg, log, s.Run) {
		return errors.New("lost the leader lease") // restart with a clean state
	}
	return nil
}

// eventSink queues each new Event and returns at once; eventWriters goroutines write them. The
// broadcaster of k8s.io/client-go/tools/record writes Events one by one and drops those that
// overflow its queue of 1000, and a cycle records the Scheduled events of all its bindings at
// once: a cycle of thousands lost most of them. (kube-scheduler's events library writes each in
// a goroutine of its own.) Patches of a repeated event stay synchronous. Events are best effort:
// beyond eventQueue waiting, they are dropped, and logged.
type eventSink struct {
	record.EventSink
	queue chan *corev1.Event
	log   *slog.Logger
}

const (
	eventQueue   = 1 << 14
	eventWriters = 16
)

// newEventSink starts the writers, which stop with ctx.
func newEventSink(ctx context.Context, sink record.EventSink, log *slog.Logger) *eventSink {
	s := &eventSink{EventSink: sink, queue: make(chan *corev1.Event, eventQueue), log: log}
	for i := 0; i < eventWriters; i++ {
		go func() {
			for {
				select {
				case <-ctx.Done():
					return
				case e := <-s.queue:
					if _, err := s.EventSink.Create(e); err != nil && !apierrors.IsAlreadyExists(err) && ctx.Err() == nil {
						log.Warn("writing an event failed", "object", e.InvolvedObject.Namespace+"/"+e.InvolvedObject.Name,
							"reason", e.Reason, "err", err)
					}
				}
			}
		}()
	}
	return s
}

func (s *eventSink) Create(e *corev1.Event) (*corev1.Event, error) {
	select {
	case s.queue <- e:
	default:
		s.log.Warn("event dropped: too many waiting", "object", e.InvolvedObject.Namespace+"/"+e.InvolvedObject.Name, "reason", e.Reason)
	}
	return e, nil
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
