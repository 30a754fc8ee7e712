// Package controlplane starts a real Kubernetes control plane on loopback for end-to-end tests,
// benchmarks and local trials: etcd, kube-apiserver (token authentication, RBAC, an audit log of
// bindings and evictions), kube-controller-manager (the controllers a scheduler's users rely on:
// disruption budgets, garbage collection, namespaces, ReplicaSets, Jobs), optionally
// kube-scheduler, and kwok, which runs the fake nodes and moves bound pods to Running.
// StartKueue adds Kueue's own controller manager (kueue.go).
//
// The binaries come from tests/k8s/control-plane/build.sh, which builds them from the Go module
// proxy into a cache folder; Options.BinDir (or $ARBITER_K8S_BIN_DIR) names that folder. Kueue
// comes from tests/k8s/kueue/build.sh, into a folder of its own ($ARBITER_KUEUE_DIR).
//
// Every process runs in the control plane's folder, logs to a file there, and dies with the
// process that started it (Linux parent-death signal), so a crashed test leaves nothing behind.
package controlplane

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// BinDirEnv names the environment variable that points at the built binaries.
const BinDirEnv = "ARBITER_K8S_BIN_DIR"

// Admin is the identity with every permission (group system:masters).
const Admin = "arbiter-admin"

// KwokNodeAnnotation marks the nodes kwok manages; NewNode sets it.
const KwokNodeAnnotation = "kwok.x-k8s.io/node"

// User is an identity the API server accepts by bearer token. A ServiceAccount is named
// "system:serviceaccount:NAMESPACE:NAME" with the groups "system:serviceaccounts" and
// "system:serviceaccounts:NAMESPACE", exactly as RBAC bindings to a ServiceAccount expect.
type User struct {
	Name   string
	Groups []string
}

// ServiceAccount returns the User a pod running as namespace/name would be.
func ServiceAccount(namespace, name string) User {
	return User{
		Name:   "system:serviceaccount:" + namespace + ":" + name,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace},
	}
}

// Options configure Start. The zero value starts etcd, kube-apiserver, kube-controller-manager
// and kwok from $ARBITER_K8S_BIN_DIR in a new temporary folder.
type Options struct {
	// BinDir holds the binaries; default $ARBITER_K8S_BIN_DIR.
	BinDir string
	// Dir is the working folder (data, certificates, logs); default a new temporary folder,
	// removed by Stop unless KeepDir.
	Dir     string
	KeepDir bool
	// Users are extra identities to accept, each with its own token (Token, Kubeconfig).
	Users []User
	// Scheduler starts kube-scheduler (its default profile unless SchedulerConfig names a
	// KubeSchedulerConfiguration file; its clientConnection.kubeconfig is filled in).
	Scheduler       bool
	SchedulerConfig string
	// NoKwok leaves kwok out.
	NoKwok bool
	// Controllers are kube-controller-manager's --controllers; default ControllersDefault.
	// "none" leaves kube-controller-manager out.
	Controllers string
	// KubeAPIQPS and KubeAPIBurst bound the client rate of kube-scheduler, kube-controller-manager
	// and kwok; 0 keeps each program's own default.
	KubeAPIQPS   float64
	KubeAPIBurst int
	// Timeout bounds the start; default 90s.
	Timeout time.Duration
}

// ControllersDefault are the controllers started unless Options.Controllers says otherwise.
const ControllersDefault = "disruption-controller,garbage-collector-controller,namespace-controller," +
	"deployment-controller,replicaset-controller,job-controller,serviceaccount-controller"

// ControlPlane is a running control plane. Stop it when done.
type ControlPlane struct {
	// Dir is the working folder; each process logs to Dir/NAME.log.
	Dir string
	// URL is the API server's address, https://127.0.0.1:PORT.
	URL string
	// CAFile verifies the API server's certificate.
	CAFile string
	// AuditLog holds one JSON audit event per line for every binding and eviction (Audit).
	AuditLog string

	opts   Options
	tokens map[string]string // user name -> token
	users  map[string]User

	mu    sync.Mutex
	procs []*process
	temp  bool
}

// Start starts the control plane and waits until the API server is ready and, with kwok, until
// kwok runs. On error everything started is stopped again.
func Start(ctx context.Context, opts Options) (_ *ControlPlane, err error) {
	if opts.BinDir == "" {
		opts.BinDir = os.Getenv(BinDirEnv)
	}
	if opts.BinDir == "" {
		return nil, fmt.Errorf("controlplane: no binaries: set %s to the folder tests/k8s/control-plane/build.sh prints", BinDirEnv)
	}
	if opts.Controllers == "" {
		opts.Controllers = ControllersDefault
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 90 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()

	cp := &ControlPlane{Dir: opts.Dir, opts: opts, tokens: map[string]string{}, users: map[string]User{}}
	if cp.Dir == "" {
		if cp.Dir, err = os.MkdirTemp("", "arbiter-controlplane-"); err != nil {
			return nil, err
		}
		cp.temp = !opts.KeepDir
	} else if err := os.MkdirAll(cp.Dir, 0o755); err != nil {
		return nil, err
	}
	// Every process runs in Dir and is given paths inside it: they must not be relative to it.
	if cp.Dir, err = filepath.Abs(cp.Dir); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			err = fmt.Errorf("controlplane: %w", err)
			cp.Stop()
		}
	}()
	cp.AuditLog = filepath.Join(cp.Dir, "audit.log")
	cp.CAFile = filepath.Join(cp.Dir, "certs", "apiserver.crt")

	users := append([]User{
		{Name: Admin, Groups: []string{"system:masters"}},
		{Name: "system:kube-scheduler", Groups: []string{"system:masters"}},
		{Name: "system:kube-controller-manager", Groups: []string{"system:masters"}},
		{Name: "kwok", Groups: []string{"system:masters"}},
		{Name: KueueUser, Groups: []string{"system:masters"}}, // for StartKueue
	}, opts.Users...)
	if err := cp.writeFiles(users); err != nil {
		return nil, err
	}

	etcdURL, err := cp.startEtcd(ctx)
	if err != nil {
		return nil, err
	}
	if err := cp.startAPIServer(ctx, etcdURL); err != nil {
		return nil, err
	}
	if opts.Controllers != "none" {
		if err := cp.startControllerManager(ctx); err != nil {
			return nil, err
		}
	}
	if opts.Scheduler {
		if err := cp.startScheduler(ctx); err != nil {
			return nil, err
		}
	}
	if !opts.NoKwok {
		if err := cp.startKwok(ctx); err != nil {
			return nil, err
		}
	}
	return cp, nil
}

// Stop stops every process (SIGTERM, then SIGKILL after 10s), in reverse order, and removes a
// temporary folder. It is safe to call twice.
func (cp *ControlPlane) Stop() {
	cp.mu.Lock()
	procs := cp.procs
	cp.procs = nil
	cp.mu.Unlock()
	for i := len(procs) - 1; i >= 0; i-- {
		procs[i].stop(10 * time.Second)
	}
	if cp.temp {
		_ = os.RemoveAll(cp.Dir)
		cp.temp = false
	}
}

// Token returns the bearer token of a user given in Options.Users (or Admin).
func (cp *ControlPlane) Token(user string) string { return cp.tokens[user] }

// RESTConfig returns a client configuration for user, with client-go's default rate limits
// unless the caller raises them.
func (cp *ControlPlane) RESTConfig(user string) *rest.Config {
	return &rest.Config{
		Host:            cp.URL,
		BearerToken:     cp.tokens[user],
		TLSClientConfig: rest.TLSClientConfig{CAFile: cp.CAFile},
	}
}

// Kubeconfig writes a kubeconfig file for user into Dir and returns its path.
func (cp *ControlPlane) Kubeconfig(user string) (string, error) {
	token, ok := cp.tokens[user]
	if !ok {
		return "", fmt.Errorf("controlplane: unknown user %q", user)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["local"] = &clientcmdapi.Cluster{Server: cp.URL, CertificateAuthority: cp.CAFile}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["local"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: user}
	cfg.CurrentContext = "local"
	path := filepath.Join(cp.Dir, "kubeconfig-"+safeName(user))
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return "", err
	}
	return path, nil
}

func safeName(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '.' {
			return r
		}
		return '_'
	}, s)
}

// writeFiles writes the token file, the service-account signing key, the audit policy and
// kwok's stages.
func (cp *ControlPlane) writeFiles(users []User) error {
	if err := os.MkdirAll(filepath.Join(cp.Dir, "certs"), 0o700); err != nil {
		return err
	}
	var tokens strings.Builder
	for i, u := range users {
		if _, dup := cp.tokens[u.Name]; dup {
			return fmt.Errorf("user %q given twice", u.Name)
		}
		b := make([]byte, 16)
		if _, err := rand.Read(b); err != nil {
			return err
		}
		token := hex.EncodeToString(b)
		cp.tokens[u.Name], cp.users[u.Name] = token, u
		// token,user,uid,"group1,group2"
		fmt.Fprintf(&tokens, "%s,%s,uid-%d,\"%s\"\n", token, u.Name, i, strings.Join(u.Groups, ","))
	}
	if err := os.WriteFile(filepath.Join(cp.Dir, "tokens.csv"), []byte(tokens.String()), 0o600); err != nil {
		return err
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	if err := os.WriteFile(filepath.Join(cp.Dir, "certs", "sa.key"), keyPEM, 0o600); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(cp.Dir, "audit-policy.yaml"), []byte(auditPolicy), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(cp.Dir, "kwok.yaml"), []byte(kwokConfig), 0o644)
}

func (cp *ControlPlane) startEtcd(ctx context.Context) (string, error) {
	ports, err := freePorts(2)
	if err != nil {
		return "", err
	}
	client := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	peer := fmt.Sprintf("http://127.0.0.1:%d", ports[1])
	p, err := cp.start("etcd",
		"--name=default",
		"--data-dir="+filepath.Join(cp.Dir, "etcd"),
		"--listen-client-urls="+client, "--advertise-client-urls="+client,
		"--listen-peer-urls="+peer, "--initial-advertise-peer-urls="+peer,
		"--initial-cluster=default="+peer,
		// A test cluster lives minutes: durability buys nothing and costs every write an fsync.
		"--unsafe-no-fsync",
		"--quota-backend-bytes=4294967296",
		"--log-level=warn",
	)
	if err != nil {
		return "", err
	}
	return client, p.waitHTTP(ctx, client+"/health", "")
}

func (cp *ControlPlane) startAPIServer(ctx context.Context, etcdURL string) error {
	ports, err := freePorts(1)
	if err != nil {
		return err
	}
	cp.URL = fmt.Sprintf("https://127.0.0.1:%d", ports[0])
	certs := filepath.Join(cp.Dir, "certs")
	p, err := cp.start("kube-apiserver",
		"--etcd-servers="+etcdURL,
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", ports[0]),
		"--cert-dir="+certs,
		"--token-auth-file="+filepath.Join(cp.Dir, "tokens.csv"),
		"--authorization-mode=RBAC",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file="+filepath.Join(certs, "sa.key"),
		"--service-account-signing-key-file="+filepath.Join(certs, "sa.key"),
		"--service-cluster-ip-range=10.96.0.0/16",
		// Pods run on kwok nodes without a kubelet, so nothing would mount a token volume; and
		// no node-lifecycle controller runs to lift the not-ready taint new nodes are given.
		"--disable-admission-plugins=ServiceAccount,TaintNodesByCondition",
		"--allow-privileged=true",
		// The loopback address cannot back the kubernetes Service's endpoints.
		"--endpoint-reconciler-type=none",
		"--audit-policy-file="+filepath.Join(cp.Dir, "audit-policy.yaml"),
		"--audit-log-path="+cp.AuditLog,
		"--audit-log-format=json",
		"--audit-log-maxsize=0",
		"--max-requests-inflight=800", "--max-mutating-requests-inflight=400",
		"--v=0",
	)
	if err != nil {
		return err
	}
	return p.waitHTTP(ctx, cp.URL+"/readyz", cp.tokens[Admin])
}

// startComponent starts a kube-controller-manager or kube-scheduler acting as user: its own
// kubeconfig, a secure port on loopback (authenticated and authorized through the API server),
// then args(kubeconfig); it returns once /healthz answers.
func (cp *ControlPlane) startComponent(ctx context.Context, name, user string, args func(kubeconfig string) ([]string, error)) error {
	kubeconfig, err := cp.Kubeconfig(user)
	if err != nil {
		return err
	}
	ports, err := freePorts(1)
	if err != nil {
		return err
	}
	own, err := args(kubeconfig)
	if err != nil {
		return err
	}
	all := append([]string{
		"--leader-elect=false", "--bind-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", ports[0]),
		"--authentication-kubeconfig=" + kubeconfig, "--authorization-kubeconfig=" + kubeconfig, "--v=0",
	}, own...)
	p, err := cp.start(name, all...)
	if err != nil {
		return err
	}
	return p.waitHTTP(ctx, fmt.Sprintf("https://127.0.0.1:%d/healthz", ports[0]), "")
}

func (cp *ControlPlane) startControllerManager(ctx context.Context) error {
	return cp.startComponent(ctx, "kube-controller-manager", "system:kube-controller-manager", func(kubeconfig string) ([]string, error) {
		return append([]string{
			"--kubeconfig=" + kubeconfig,
			"--controllers=" + cp.opts.Controllers,
			"--use-service-account-credentials=false",
			"--service-account-private-key-file=" + filepath.Join(cp.Dir, "certs", "sa.key"),
			"--root-ca-file=" + cp.CAFile,
			"--concurrent-gc-syncs=5",
		}, cp.qpsArgs("--kube-api-qps", "--kube-api-burst")...), nil
	})
}

func (cp *ControlPlane) startScheduler(ctx context.Context) error {
	return cp.startComponent(ctx, "kube-scheduler", "system:kube-scheduler", func(kubeconfig string) ([]string, error) {
		if cp.opts.SchedulerConfig == "" {
			return append([]string{"--kubeconfig=" + kubeconfig}, cp.qpsArgs("--kube-api-qps", "--kube-api-burst")...), nil
		}
		config, err := cp.schedulerConfig(kubeconfig)
		return []string{"--config=" + config}, err
	})
}

// schedulerConfig copies the given KubeSchedulerConfiguration with its kubeconfig filled in.
func (cp *ControlPlane) schedulerConfig(kubeconfig string) (string, error) {
	data, err := os.ReadFile(cp.opts.SchedulerConfig)
	if err != nil {
		return "", err
	}
	text := strings.ReplaceAll(string(data), "KUBECONFIG", kubeconfig)
	path := filepath.Join(cp.Dir, "kube-scheduler.yaml")
	return path, os.WriteFile(path, []byte(text), 0o644)
}

func (cp *ControlPlane) startKwok(ctx context.Context) error {
	kubeconfig, err := cp.Kubeconfig("kwok")
	if err != nil {
		return err
	}
	ports, err := freePorts(1)
	if err != nil {
		return err
	}
	args := []string{
		"--kubeconfig=" + kubeconfig,
		"--config=" + filepath.Join(cp.Dir, "kwok.yaml"),
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector=" + KwokNodeAnnotation + "=fake",
		"--cidr=10.64.0.0/10",
		"--node-ip=127.0.0.1",
		fmt.Sprintf("--server-address=127.0.0.1:%d", ports[0]),
	}
	p, err := cp.start("kwok", args...)
	if err != nil {
		return err
	}
	return p.waitHTTP(ctx, fmt.Sprintf("http://127.0.0.1:%d/healthz", ports[0]), "")
}

func (cp *ControlPlane) qpsArgs(qps, burst string) []string {
	var out []string
	if cp.opts.KubeAPIQPS > 0 {
		out = append(out, fmt.Sprintf("%s=%g", qps, cp.opts.KubeAPIQPS))
	}
	if cp.opts.KubeAPIBurst > 0 {
		out = append(out, fmt.Sprintf("%s=%d", burst, cp.opts.KubeAPIBurst))
	}
	return out
}

// Restart stops the named process and starts it again with the same arguments (kube-scheduler,
// say, to measure it from a cold start).
func (cp *ControlPlane) Restart(name string) error {
	cp.mu.Lock()
	var p *process
	for _, q := range cp.procs {
		if q.name == name {
			p = q
		}
	}
	cp.mu.Unlock()
	if p == nil {
		return fmt.Errorf("controlplane: %s is not running", name)
	}
	p.stop(10 * time.Second)
	return p.run()
}

// Kill sends SIGKILL to the named process and waits for it to die.
func (cp *ControlPlane) Kill(name string) error {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	for _, p := range cp.procs {
		if p.name == name {
			p.stop(0)
			return nil
		}
	}
	return fmt.Errorf("controlplane: %s is not running", name)
}

// freePorts asks the kernel for n free loopback ports. Another process could take one before
// it is used; on loopback in a test that is rare enough, and the start then fails clearly.
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ports []int
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// waitHTTP polls url until it answers 200, ctx ends, or the process exits; the error then
// carries the end of its log.
func (p *process) waitHTTP(ctx context.Context, url, token string) error {
	c := &http.Client{
		Timeout: 2 * time.Second,
		// Only a readiness probe: the certificate is verified by every real client.
		Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, //nolint:gosec
	}
	var last error
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := c.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = fmt.Errorf("%s answered %s", url, resp.Status)
		} else {
			last = err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not ready (%v): %w\n%s", p.name, last, context.Cause(ctx), Tail(p.log, 3000))
		case <-p.done:
			return fmt.Errorf("%s exited before it was ready:\n%s", p.name, Tail(p.log, 3000))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// FreePort returns a free loopback port (see freePorts for the caveat).
func FreePort() (int, error) {
	ports, err := freePorts(1)
	if err != nil {
		return 0, err
	}
	return ports[0], nil
}

// BinDir is the folder of the control plane's binaries (kubectl among them).
func (cp *ControlPlane) BinDir() string { return cp.opts.BinDir }
