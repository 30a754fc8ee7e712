package controlplane

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// KueueDirEnv names the environment variable that points at the folder tests/k8s/kueue/build.sh
// prints: Kueue's controller manager (kueue) and its CRDs (crds/*.yaml).
const KueueDirEnv = "ARBITER_KUEUE_DIR"

// KueueNamespace is the namespace Kueue is configured to run in: its webhook certificate Secret
// lives there, and it leaves the jobs of that namespace alone.
const KueueNamespace = "kueue-system"

// KueueUser is the identity Kueue's manager acts as (group system:masters).
const KueueUser = "kueue"

// KueueOptions configure StartKueue. The zero value runs $ARBITER_KUEUE_DIR/kueue.
type KueueOptions struct {
	// Dir holds the binary kueue and the CRDs crds/*.yaml; default $ARBITER_KUEUE_DIR.
	Dir string
	// FeatureGates override Kueue's feature gates. VisibilityOnDemand is off unless set here:
	// its API server would need an APIService and a port of its own.
	FeatureGates map[string]bool
	// Timeout bounds the start; default 90s.
	Timeout time.Duration
	// Args are extra flags of the manager, e.g. --zap-log-level=3 for its scheduler's decisions.
	Args []string
}

// Kueue is a Kueue controller manager running as a process of the control plane. Stop stops it
// with the rest; Stop, Kill and Restart act on it alone (ControlPlane.Restart("kueue") and
// ControlPlane.Kill("kueue") do the same as the last two, without waiting for readiness).
type Kueue struct {
	// Log is the manager's log file, Dir/kueue.log.
	Log string
	// Config is the Configuration file (config.kueue.x-k8s.io/v1beta2) it runs with.
	Config string
	// MetricsURL serves Kueue's Prometheus metrics over HTTPS to a client the API server
	// authorizes (Admin's token will do).
	MetricsURL string

	p        *process
	readyURL string
	timeout  time.Duration
}

// StartKueue installs Kueue's CRDs, starts its controller manager and waits until it is ready:
// until its /readyz answers, which Kueue bases on its webhook server; its controllers may still
// be syncing their caches for a second after that, so wait for Kueue's effects, not on time.
//
// The manager runs as Kueue's own deployment would, with these differences: no webhook
// configuration is installed, so the API server calls none of its admission webhooks; leader
// election is off; only the batch/job integration is enabled, without
// manageJobsWithoutQueueName; fair sharing is on (preemption strategies
// LessThanOrEqualToFinalShare then LessThanInitialShare, Kueue's documented default), so
// ClusterQueues publish status.fairSharing.weightedShare; its ports are free loopback ports.
//
// Without the webhooks, objects get only the defaults of the CRDs' schemas and only their CEL
// validation: ClusterQueues and ResourceFlavors lack the finalizer
// kueue.x-k8s.io/resource-in-use (their deletion does not wait for the Workloads using them),
// and a mistake the webhooks would refuse is taken. A ClusterQueue's namespaceSelector must be
// set ({} for every namespace) as with the webhooks: nil selects no namespace.
//
// The CRDs serve v1beta2, the version they store, and not the deprecated v1beta1: Kueue and
// this package's callers use v1beta2 only, and the API server then never converts an object.
//
// Kueue's internal certificate management stays on, because with it off the manager insists on
// a metrics certificate at the fixed path /etc/kueue/metrics/certs. StartKueue therefore plays
// the parts of Kueue's installer and of the kubelet: it creates KueueNamespace and the webhook
// Secret, seeded with a certificate it generates, writes the same certificate into the folder
// the webhook server reads (Dir/kueue/certs), and gives the five CRDs that Kueue's manifests
// convert through its webhook the same conversion stanza, so that the certificate rotator finds
// what it expects and reports ready. With one version served the stanza is never used (the
// Service it names does not exist).
//
// It fails if Kueue was started on this control plane before; on any other error the manager is
// stopped again.
func (cp *ControlPlane) StartKueue(ctx context.Context, opts KueueOptions) (_ *Kueue, err error) {
	if opts.Dir == "" {
		opts.Dir = os.Getenv(KueueDirEnv)
	}
	if opts.Dir == "" {
		return nil, fmt.Errorf("controlplane: no Kueue: set %s to the folder tests/k8s/kueue/build.sh prints", KueueDirEnv)
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 90 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	defer func() {
		if err != nil {
			err = fmt.Errorf("controlplane: kueue: %w", err)
		}
	}()

	bin := filepath.Join(opts.Dir, "kueue")
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("%w (build it with tests/k8s/kueue/build.sh)", err)
	}
	cp.mu.Lock()
	for _, p := range cp.procs {
		if p.name == "kueue" {
			cp.mu.Unlock()
			return nil, errors.New("started already on this control plane")
		}
	}
	cp.mu.Unlock()

	dir := filepath.Join(cp.Dir, "kueue")
	if err := cp.installKueue(ctx, opts.Dir, dir); err != nil {
		return nil, err
	}
	ports, err := freePorts(3)
	if err != nil {
		return nil, err
	}
	health, metrics, webhook := ports[0], ports[1], ports[2]
	config := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(config, []byte(cp.kueueConfig(opts, dir, health, metrics, webhook)), 0o644); err != nil {
		return nil, err
	}
	kubeconfig, err := cp.Kubeconfig(KueueUser)
	if err != nil {
		return nil, err
	}
	p, err := cp.startBinary("kueue", bin, append([]string{
		"--config=" + config,
		"--kubeconfig=" + kubeconfig,
		"--zap-encoder=console",
	}, opts.Args...)...)
	if err != nil {
		return nil, err
	}
	k := &Kueue{
		Log:        p.log,
		Config:     config,
		MetricsURL: fmt.Sprintf("https://127.0.0.1:%d/metrics", metrics),
		p:          p,
		readyURL:   fmt.Sprintf("http://127.0.0.1:%d/readyz", health),
		timeout:    opts.Timeout,
	}
	if err := p.waitHTTP(ctx, k.readyURL, ""); err != nil {
		p.stop(10 * time.Second)
		return nil, err
	}
	return k, nil
}

// kueueConfig returns the manager's Configuration.
func (cp *ControlPlane) kueueConfig(opts KueueOptions, dir string, health, metrics, webhook int) string {
	gates := map[string]bool{"VisibilityOnDemand": false}
	for name, on := range opts.FeatureGates {
		gates[name] = on
	}
	names := make([]string, 0, len(gates))
	for name := range gates {
		names = append(names, name)
	}
	sort.Strings(names)
	var featureGates strings.Builder
	for _, name := range names {
		fmt.Fprintf(&featureGates, "  %s: %t\n", name, gates[name])
	}
	var client strings.Builder
	if cp.opts.KubeAPIQPS > 0 || cp.opts.KubeAPIBurst > 0 {
		client.WriteString("clientConnection:\n")
		if cp.opts.KubeAPIQPS > 0 {
			fmt.Fprintf(&client, "  qps: %g\n", cp.opts.KubeAPIQPS)
		}
		if cp.opts.KubeAPIBurst > 0 {
			fmt.Fprintf(&client, "  burst: %d\n", cp.opts.KubeAPIBurst)
		}
	}
	return fmt.Sprintf(`apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
namespace: %s
health:
  healthProbeBindAddress: 127.0.0.1:%d
metrics:
  bindAddress: 127.0.0.1:%d
webhook:
  host: 127.0.0.1
  port: %d
  certDir: %s
leaderElection:
  leaderElect: false
internalCertManagement:
  enable: true
  webhookServiceName: %s
  webhookSecretName: %s
manageJobsWithoutQueueName: false
integrations:
  frameworks:
  - batch/job
fairSharing:
  preemptionStrategies: [LessThanOrEqualToFinalShare, LessThanInitialShare]
%sfeatureGates:
%s`, KueueNamespace, health, metrics, webhook, filepath.Join(dir, "certs"),
		kueueWebhookService, kueueWebhookSecret, client.String(), featureGates.String())
}

// Stop stops the manager (SIGTERM, then SIGKILL after 10s) and waits for it to exit.
func (k *Kueue) Stop() { k.p.stop(10 * time.Second) }

// Kill sends the manager SIGKILL and waits for it to die.
func (k *Kueue) Kill() { k.p.stop(0) }

// Restart stops the manager, starts it again with the same configuration and waits until it is
// ready, within the Timeout it was started with.
func (k *Kueue) Restart(ctx context.Context) error {
	k.p.stop(10 * time.Second)
	if err := k.p.run(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, k.timeout)
	defer cancel()
	return k.p.waitHTTP(ctx, k.readyURL, "")
}
