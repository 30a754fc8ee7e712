package client

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/manual"
	"google.golang.org/grpc/status"

	arbiterv1 "arbiter.dev/clients/go/arbiterv1"
)

// fakeArbiter answers Schedule with the scripted errors first, then with an empty response.
type fakeArbiter struct {
	arbiterv1.UnimplementedArbiterServer
	mu       sync.Mutex
	failures []error
	delay    time.Duration
	calls    atomic.Int32
	// deadlines records, per call, whether the call arrived with a deadline.
	deadlines []bool
}

func (f *fakeArbiter) Schedule(ctx context.Context, _ *arbiterv1.ScheduleRequest) (*arbiterv1.ScheduleResponse, error) {
	f.calls.Add(1)
	f.mu.Lock()
	_, has := ctx.Deadline()
	f.deadlines = append(f.deadlines, has)
	var err error
	if len(f.failures) > 0 {
		err, f.failures = f.failures[0], f.failures[1:]
	}
	f.mu.Unlock()
	if f.delay > 0 {
		select {
		case <-time.After(f.delay):
		case <-ctx.Done():
			return nil, status.FromContextError(ctx.Err()).Err()
		}
	}
	if err != nil {
		return nil, err
	}
	return &arbiterv1.ScheduleResponse{}, nil
}

// serve starts srv on a loopback port and returns its address.
func serve(t *testing.T, impl arbiterv1.ArbiterServer, opts ...grpc.ServerOption) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(opts...)
	arbiterv1.RegisterArbiterServer(srv, impl)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return lis.Addr().String()
}

// dial returns a client whose backoff waits are recorded instead of slept.
func dial(t *testing.T, cfg Config, extra ...grpc.DialOption) (*Client, *[]time.Duration) {
	t.Helper()
	c, err := Dial(cfg, extra...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	var waits []time.Duration
	c.sleep = func(ctx context.Context, d time.Duration) error {
		waits = append(waits, d)
		return ctx.Err()
	}
	return c, &waits
}

func TestRetryPolicy(t *testing.T) {
	unavailable := status.Error(codes.Unavailable, "server draining")
	tests := []struct {
		name         string
		failures     []error
		maxAttempts  int
		wantCode     codes.Code
		wantAttempts int32
	}{
		{"RetriesUnavailableUntilSuccess", []error{unavailable, unavailable}, 4, codes.OK, 3},
		{"GivesUpAfterMaxAttempts", []error{unavailable, unavailable, unavailable, unavailable}, 3, codes.Unavailable, 3},
		{"DoesNotRetryInvalidArgument", []error{status.Error(codes.InvalidArgument, "snapshot.queues[0].name: empty")}, 4, codes.InvalidArgument, 1},
		{"DoesNotRetryResourceExhausted", []error{status.Error(codes.ResourceExhausted, "too many pods")}, 4, codes.ResourceExhausted, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fake := &fakeArbiter{failures: tc.failures}
			c, waits := dial(t, Config{Target: serve(t, fake), MaxAttempts: tc.maxAttempts})
			_, err := c.Schedule(context.Background(), &arbiterv1.ScheduleRequest{})
			if got := status.Code(err); got != tc.wantCode {
				t.Fatalf("code = %v (%v), want %v", got, err, tc.wantCode)
			}
			if got := fake.calls.Load(); got != tc.wantAttempts {
				t.Errorf("attempts = %d, want %d", got, tc.wantAttempts)
			}
			if got, want := len(*waits), int(tc.wantAttempts)-1; got != want {
				t.Errorf("backoff waits = %d, want %d", got, want)
			}
		})
	}
}

func TestBackoffDoublesUpToTheMaximum(t *testing.T) {
	unavailable := status.Error(codes.Unavailable, "down")
	fake := &fakeArbiter{failures: []error{unavailable, unavailable, unavailable, unavailable}}
	c, waits := dial(t, Config{Target: serve(t, fake), MaxAttempts: 5,
		InitialBackoff: 100 * time.Millisecond, MaxBackoff: 300 * time.Millisecond})
	if _, err := c.Schedule(context.Background(), &arbiterv1.ScheduleRequest{}); err != nil {
		t.Fatal(err)
	}
	base := []time.Duration{100, 200, 300, 300}
	if len(*waits) != len(base) {
		t.Fatalf("waits = %v, want %d of them", *waits, len(base))
	}
	for i, w := range *waits {
		lo := base[i] * time.Millisecond
		if w < lo || w > lo+lo/5 {
			t.Errorf("wait %d = %v, want within [%v, %v]", i, w, lo, lo+lo/5)
		}
	}
}

func TestEveryAttemptCarriesTheTimeoutAsDeadline(t *testing.T) {
	fake := &fakeArbiter{delay: time.Second}
	c, _ := dial(t, Config{Target: serve(t, fake), Timeout: 50 * time.Millisecond})
	start := time.Now()
	_, err := c.Schedule(context.Background(), &arbiterv1.ScheduleRequest{})
	if status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("err = %v, want DEADLINE_EXCEEDED", err)
	}
	if elapsed := time.Since(start); elapsed > 900*time.Millisecond {
		t.Errorf("call took %v: the per-attempt timeout was not applied", elapsed)
	}
	fake.mu.Lock()
	defer fake.mu.Unlock()
	if len(fake.deadlines) != 1 || !fake.deadlines[0] {
		t.Errorf("server saw deadlines %v, want one call with a deadline", fake.deadlines)
	}
}

func TestCanceledContextStopsRetrying(t *testing.T) {
	unavailable := status.Error(codes.Unavailable, "down")
	fake := &fakeArbiter{failures: []error{unavailable, unavailable, unavailable}}
	c, _ := dial(t, Config{Target: serve(t, fake)})
	ctx, cancel := context.WithCancel(context.Background())
	c.sleep = func(context.Context, time.Duration) error { cancel(); return context.Canceled }
	_, err := c.Schedule(ctx, &arbiterv1.ScheduleRequest{})
	if status.Code(err) != codes.Canceled {
		t.Fatalf("err = %v, want CANCELED", err)
	}
	if got := fake.calls.Load(); got != 1 {
		t.Errorf("attempts = %d, want 1", got)
	}
}

// TestRoundRobinSpreadsCallsOverEveryAddress resolves one target to two servers (as DNS does for
// a headless Service) and expects both to receive calls.
func TestRoundRobinSpreadsCallsOverEveryAddress(t *testing.T) {
	a, b := &fakeArbiter{}, &fakeArbiter{}
	r := manual.NewBuilderWithScheme("test")
	r.InitialState(resolver.State{Addresses: []resolver.Address{{Addr: serve(t, a)}, {Addr: serve(t, b)}}})
	c, _ := dial(t, Config{Target: "test:///arbiter"}, grpc.WithResolvers(r))
	for i := 0; i < 200 && (a.calls.Load() == 0 || b.calls.Load() == 0); i++ {
		if _, err := c.Schedule(context.Background(), &arbiterv1.ScheduleRequest{}); err != nil {
			t.Fatal(err)
		}
	}
	if a.calls.Load() == 0 || b.calls.Load() == 0 {
		t.Fatalf("calls: %d and %d, want both servers used", a.calls.Load(), b.calls.Load())
	}
}

func TestMutualTLS(t *testing.T) {
	dir := t.TempDir()
	ca := newCA(t)
	serverCert := ca.issue(t, "arbiter-server", true)
	clientCert := ca.issue(t, "arbiter-k8s", false)
	caFile := writePEM(t, dir, "ca.pem", "CERTIFICATE", ca.cert.Raw)
	certFile := writePEM(t, dir, "client.pem", "CERTIFICATE", clientCert.Certificate[0])
	keyDER, err := x509.MarshalPKCS8PrivateKey(clientCert.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	keyFile := writePEM(t, dir, "client-key.pem", "PRIVATE KEY", keyDER)

	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	addr := serve(t, &fakeArbiter{}, grpc.Creds(credentials.NewTLS(&tls.Config{
		Certificates: []tls.Certificate{serverCert},
		ClientCAs:    pool,
		ClientAuth:   tls.RequireAndVerifyClientCert,
	})))

	tests := []struct {
		name     string
		files    TLSFiles
		wantCode codes.Code
	}{
		{"ClientWithCertificateIsServed", TLSFiles{CA: caFile, Cert: certFile, Key: keyFile, ServerName: "arbiter-server"}, codes.OK},
		{"ClientWithoutCertificateIsRefused", TLSFiles{CA: caFile, ServerName: "arbiter-server"}, codes.Unavailable},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := TLSConfig(tc.files)
			if err != nil {
				t.Fatal(err)
			}
			c, _ := dial(t, Config{Target: addr, TLS: cfg, MaxAttempts: 1})
			_, err = c.Schedule(context.Background(), &arbiterv1.ScheduleRequest{})
			if got := status.Code(err); got != tc.wantCode {
				t.Fatalf("code = %v (%v), want %v", got, err, tc.wantCode)
			}
		})
	}
}

func TestTLSConfigRejectsCertificateWithoutKey(t *testing.T) {
	if _, err := TLSConfig(TLSFiles{Cert: "client.pem"}); err == nil {
		t.Fatal("TLSConfig accepted a certificate without its key")
	}
}

func TestDialRejectsEmptyTarget(t *testing.T) {
	if _, err := Dial(Config{}); err == nil {
		t.Fatal("Dial accepted an empty target")
	}
}

type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

func newCA(t *testing.T) testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "arbiter test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		KeyUsage:              x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return testCA{cert: cert, key: key}
}

func (ca testCA) issue(t *testing.T, name string, server bool) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	usage := x509.ExtKeyUsageClientAuth
	if server {
		usage = x509.ExtKeyUsageServerAuth
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: name},
		DNSNames:     []string{name},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

func writePEM(t *testing.T, dir, name, kind string, der []byte) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
