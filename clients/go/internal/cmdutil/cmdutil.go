// Package cmdutil is the prologue the commands share: flags → signals → logger → REST config →
// clients. Each command's main parses its own flags into options and hands them to Main with its
// run function; run builds its logger, Kubernetes clients and arbiter client from the flag groups
// here, so that every command spells them, and treats them, alike.
package cmdutil

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/leaderelection"

	"arbiter.dev/clients/go/client"
	"arbiter.dev/clients/go/internal/leader"
)

// Main runs the command name: parse reads the arguments into options (flag.ErrHelp exits 0, any
// other error is printed after the command's name and exits 2); run then runs under a context
// that SIGINT and SIGTERM cancel, and an error it returns is logged and exits 1.
func Main[O any](name string, parse func(args []string) (O, error), run func(ctx context.Context, o O) error) {
	o, err := parse(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	err = run(ctx, o)
	stop()
	if err != nil {
		slog.Error(name+" stopped", "err", err)
		os.Exit(1)
	}
}

// SignalContext is a context that SIGINT and SIGTERM cancel, for commands whose main does more
// than Main does (subcommands, exit codes of their own); stop releases the signals.
func SignalContext() (ctx context.Context, stop context.CancelFunc) {
	return signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
}

// LogFlags is the flag --log-level.
type LogFlags struct {
	Level string
}

// Register adds --log-level (default info) to fs.
func (l *LogFlags) Register(fs *flag.FlagSet) {
	fs.StringVar(&l.Level, "log-level", "info", "debug, info, warn or error")
}

// Log formats of NewLogger.
const (
	JSON = true  // one JSON object a line, for the logs of a cluster
	Text = false // key=value, for a person at a terminal
)

// NewLogger is a logger at l's level writing to w in the format json (JSON or Text). A bad level
// is an error naming --log-level.
func (l LogFlags) NewLogger(w io.Writer, json bool) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(l.Level)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	opts := &slog.HandlerOptions{Level: level}
	if json {
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return slog.New(slog.NewTextHandler(w, opts)), nil
}

// KubeFlags is the flag --kubeconfig.
type KubeFlags struct {
	Kubeconfig string
}

// Register adds --kubeconfig to fs, with def as its default.
func (k *KubeFlags) Register(fs *flag.FlagSet, def string) {
	fs.StringVar(&k.Kubeconfig, "kubeconfig", def, "kubeconfig file; empty = in-cluster configuration")
}

// RESTConfig is the configuration of the Kubernetes API from --kubeconfig (in-cluster when
// empty), with agent as the user agent.
func (k KubeFlags) RESTConfig(agent string) (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", k.Kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("kubernetes config: %w", err)
	}
	cfg.UserAgent = agent
	return cfg, nil
}

// ServerFlags are the flags that reach arbiter-server: --server, --reconnect-backoff and, when
// registered, TLS.
type ServerFlags struct {
	Target           string
	ReconnectBackoff time.Duration
	TLS              client.TLSFiles
	UseTLS           bool
}

// Register adds --server (default localhost:50051, described by help) and --reconnect-backoff to
// fs.
func (s *ServerFlags) Register(fs *flag.FlagSet, help string) {
	fs.StringVar(&s.Target, "server", "localhost:50051", help)
	fs.DurationVar(&s.ReconnectBackoff, "reconnect-backoff", client.DefaultReconnectBackoff,
		"longest wait between attempts to reconnect to arbiter-server after it went away")
}

// RegisterTLS adds --tls, --tls-ca, --tls-cert, --tls-key and --tls-server-name to fs.
func (s *ServerFlags) RegisterTLS(fs *flag.FlagSet) {
	fs.StringVar(&s.TLS.CA, "tls-ca", "", "CA bundle that verifies the server (enables TLS)")
	fs.StringVar(&s.TLS.Cert, "tls-cert", "", "client certificate for mutual TLS (enables TLS)")
	fs.StringVar(&s.TLS.Key, "tls-key", "", "client key for mutual TLS")
	fs.StringVar(&s.TLS.ServerName, "tls-server-name", "", "name to verify in the server's certificate")
	fs.BoolVar(&s.UseTLS, "tls", false, "use TLS with the system roots (implied by --tls-ca or --tls-cert)")
}

// Dial connects to --server, over TLS when --tls, --tls-ca or --tls-cert asks for it; timeout
// bounds each call (0 = the client's default).
func (s ServerFlags) Dial(timeout time.Duration) (*client.Client, error) {
	cfg := client.Config{Target: s.Target, Timeout: timeout, ReconnectBackoff: s.ReconnectBackoff}
	if s.UseTLS || s.TLS.CA != "" || s.TLS.Cert != "" {
		var err error
		if cfg.TLS, err = client.TLSConfig(s.TLS); err != nil {
			return nil, err
		}
	}
	return client.Dial(cfg)
}

// NewRegistry is a metrics registry with the Go runtime's and the process's collectors.
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// EnvOr is the environment variable key, or def when it is unset or empty.
func EnvOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// LeaderFlags are the flags of leader election: --leader-elect, --lease-name, --lease-duration,
// --renew-deadline and --retry-period.
type LeaderFlags struct {
	Elect         bool
	LeaseName     string
	LeaseDuration time.Duration
	RenewDeadline time.Duration
	RetryPeriod   time.Duration
}

// Register adds the flags to fs: leader election on by default (electHelp says what it guards),
// the Lease named lease.
func (l *LeaderFlags) Register(fs *flag.FlagSet, lease, electHelp string) {
	fs.BoolVar(&l.Elect, "leader-elect", true, electHelp)
	fs.StringVar(&l.LeaseName, "lease-name", lease, "name of the leader Lease")
	fs.DurationVar(&l.LeaseDuration, "lease-duration", 15*time.Second, "leader Lease duration")
	fs.DurationVar(&l.RenewDeadline, "renew-deadline", 10*time.Second, "leader renew deadline")
	fs.DurationVar(&l.RetryPeriod, "retry-period", 2*time.Second, "leader election retry period")
}

// Config is the election for the Lease in namespace (leader.Run runs it).
func (l LeaderFlags) Config(kube kubernetes.Interface, namespace string) leaderelection.LeaderElectionConfig {
	return leader.Config(kube, namespace, l.LeaseName, l.LeaseDuration, l.RenewDeadline, l.RetryPeriod)
}
