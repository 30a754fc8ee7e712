// Package client is a typed client for the arbiter.v1 gRPC API.
//
// A Client wraps one gRPC channel. Dial configures it for production use:
//
//   - round-robin load balancing over every address the target resolves to, so a target such as
//     "dns:///arbiter-server-grpc.arbiter-system.svc.cluster.local:50051" spreads calls over all
//     pods behind a headless Service (the dns resolver re-resolves when a backend goes away);
//   - TLS or mutual TLS when Config.TLS is set, plaintext otherwise;
//   - HTTP/2 keepalive pings while calls are in flight;
//   - a deadline on every attempt and retries with exponential backoff on UNAVAILABLE;
//   - reconnection to a server that went away within a few seconds of its return
//     (Config.ReconnectBackoff), not gRPC's two minutes.
//
// Retrying is safe because both RPCs are pure functions of their request: arbiter keeps no state.
// A Client is safe for concurrent use; Close releases the channel.
package client

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/status"

	arbiterv1 "arbiter.dev/clients/go/arbiterv1"
)

// roundRobinServiceConfig makes the channel keep a subchannel to every resolved address and
// rotate calls over the ready ones.
const roundRobinServiceConfig = `{"loadBalancingConfig":[{"round_robin":{}}]}`

// Config says where arbiter is and how to call it. The zero value of every field but Target
// takes the default documented on the field.
type Config struct {
	// Target is a gRPC target: "host:port", or "dns:///name:port" for a headless Service.
	Target string
	// TLS enables transport security; nil means plaintext (loopback, sidecar, or a mesh).
	TLS *tls.Config
	// Timeout bounds each attempt; default 10s. The caller's context bounds the whole call.
	Timeout time.Duration
	// MaxAttempts is the number of attempts on UNAVAILABLE, the first included; default 4.
	MaxAttempts int
	// InitialBackoff is the wait before the first retry, doubled on each retry up to
	// MaxBackoff, with up to 20% random jitter; defaults 100ms and 2s.
	InitialBackoff time.Duration
	MaxBackoff     time.Duration
	// KeepaliveTime is the idle time after which the client pings the server while calls are in
	// flight; default 5m, which the gRPC C++ server accepts without extra settings.
	KeepaliveTime time.Duration
	// KeepaliveTimeout is how long a ping may go unanswered before the connection is closed;
	// default 20s.
	KeepaliveTimeout time.Duration
	// MaxMessageBytes caps the size of a received response; default 64 MiB.
	MaxMessageBytes int
	// ReconnectBackoff caps the wait between the channel's attempts to reconnect to a server that
	// went away; default 2s. gRPC's own cap is 120s: after an outage of a few minutes, the first
	// call would then wait up to two minutes after the server is back.
	ReconnectBackoff time.Duration
}

func (c Config) withDefaults() Config {
	if c.Timeout <= 0 {
		c.Timeout = 10 * time.Second
	}
	if c.MaxAttempts <= 0 {
		c.MaxAttempts = 4
	}
	if c.InitialBackoff <= 0 {
		c.InitialBackoff = 100 * time.Millisecond
	}
	if c.MaxBackoff <= 0 {
		c.MaxBackoff = 2 * time.Second
	}
	if c.KeepaliveTime <= 0 {
		c.KeepaliveTime = 5 * time.Minute
	}
	if c.KeepaliveTimeout <= 0 {
		c.KeepaliveTimeout = 20 * time.Second
	}
	if c.MaxMessageBytes <= 0 {
		c.MaxMessageBytes = 64 << 20
	}
	if c.ReconnectBackoff <= 0 {
		c.ReconnectBackoff = DefaultReconnectBackoff
	}
	return c
}

// Client calls arbiter over one gRPC channel.
type Client struct {
	cfg  Config
	conn *grpc.ClientConn
	api  arbiterv1.ArbiterClient
	// sleep waits between attempts; replaced in tests.
	sleep func(context.Context, time.Duration) error
}

// Dial creates a Client for cfg.Target. It does not wait for a connection: the channel connects
// on the first call, and a target that cannot be reached surfaces as UNAVAILABLE (retried).
// extra options are appended after the ones Dial derives from cfg.
func Dial(cfg Config, extra ...grpc.DialOption) (*Client, error) {
	if cfg.Target == "" {
		return nil, errors.New("client: empty target")
	}
	cfg = cfg.withDefaults()
	creds := insecure.NewCredentials()
	if cfg.TLS != nil {
		creds = credentials.NewTLS(cfg.TLS)
	}
	opts := []grpc.DialOption{
		grpc.WithTransportCredentials(creds),
		grpc.WithDefaultServiceConfig(roundRobinServiceConfig),
		grpc.WithKeepaliveParams(keepalive.ClientParameters{
			Time:    cfg.KeepaliveTime,
			Timeout: cfg.KeepaliveTimeout,
		}),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(cfg.MaxMessageBytes)),
		grpc.WithConnectParams(connectParams(cfg.ReconnectBackoff)),
	}
	conn, err := grpc.NewClient(cfg.Target, append(opts, extra...)...)
	if err != nil {
		return nil, fmt.Errorf("client: dial %q: %w", cfg.Target, err)
	}
	return &Client{cfg: cfg, conn: conn, api: arbiterv1.NewArbiterClient(conn), sleep: sleepCtx}, nil
}

// DefaultReconnectBackoff is Config.ReconnectBackoff's default.
const DefaultReconnectBackoff = 2 * time.Second

// connectParams are gRPC's connection backoff (base 1s, factor 1.6, jitter 0.2, at least 20s per
// connection attempt) with its wait capped at max, and its base too when max is below 1s.
func connectParams(max time.Duration) grpc.ConnectParams {
	b := backoff.DefaultConfig
	b.MaxDelay = max
	b.BaseDelay = min(b.BaseDelay, max)
	return grpc.ConnectParams{Backoff: b, MinConnectTimeout: 20 * time.Second}
}

// Close releases the channel. Calls in flight fail with CANCELED.
func (c *Client) Close() error { return c.conn.Close() }

// Schedule runs one scheduling cycle on the server. Errors carry the gRPC status of the last
// attempt (status.Code(err) works on them): INVALID_ARGUMENT for a snapshot the server rejects,
// UNAVAILABLE once the attempts are used up, DEADLINE_EXCEEDED or CANCELED from ctx.
func (c *Client) Schedule(ctx context.Context, req *arbiterv1.ScheduleRequest) (*arbiterv1.ScheduleResponse, error) {
	return call(ctx, c, func(ctx context.Context) (*arbiterv1.ScheduleResponse, error) {
		return c.api.Schedule(ctx, req)
	})
}

// ComputeFairShares returns the fair shares of a snapshot; errors as for Schedule.
func (c *Client) ComputeFairShares(ctx context.Context, req *arbiterv1.FairShareRequest) (*arbiterv1.FairShareResponse, error) {
	return call(ctx, c, func(ctx context.Context) (*arbiterv1.FairShareResponse, error) {
		return c.api.ComputeFairShares(ctx, req)
	})
}

// call runs one attempt after another while the server answers UNAVAILABLE, each attempt
// bounded by cfg.Timeout, the whole by ctx.
func call[T any](ctx context.Context, c *Client, attempt func(context.Context) (T, error)) (T, error) {
	var zero T
	backoff := c.cfg.InitialBackoff
	for n := 1; ; n++ {
		actx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
		resp, err := attempt(actx)
		cancel()
		if err == nil {
			return resp, nil
		}
		if status.Code(err) != codes.Unavailable || n >= c.cfg.MaxAttempts {
			return zero, err
		}
		wait := backoff + time.Duration(rand.Int64N(int64(backoff)/5+1))
		if err := c.sleep(ctx, wait); err != nil {
			return zero, status.FromContextError(err).Err()
		}
		backoff = min(2*backoff, c.cfg.MaxBackoff)
	}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// TLSFiles names PEM files for TLSConfig.
type TLSFiles struct {
	// CA verifies the server; empty uses the system roots.
	CA string
	// Cert and Key are the client's certificate for mutual TLS; both or neither.
	Cert, Key string
	// ServerName overrides the name checked in the server's certificate.
	ServerName string
}

// TLSConfig loads the files into a TLS configuration for Config.TLS.
func TLSConfig(f TLSFiles) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: f.ServerName}
	if f.CA != "" {
		pem, err := os.ReadFile(f.CA)
		if err != nil {
			return nil, fmt.Errorf("client: read CA: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("client: %s holds no PEM certificate", f.CA)
		}
		cfg.RootCAs = pool
	}
	if (f.Cert == "") != (f.Key == "") {
		return nil, errors.New("client: a client certificate needs both cert and key")
	}
	if f.Cert != "" {
		pair, err := tls.LoadX509KeyPair(f.Cert, f.Key)
		if err != nil {
			return nil, fmt.Errorf("client: load client certificate: %w", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}
