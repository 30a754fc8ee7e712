// Package serve runs an adapter's HTTP endpoints (health, metrics, webhooks) in the background.
package serve

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// Start listens on addr and serves h until stop is called; it returns the address it listens on.
// stop shuts the server down gracefully, waiting at most 5 s for calls in flight. Serving errors
// after the start are logged.
func Start(addr string, h http.Handler, log *slog.Logger) (listening net.Addr, stop func() error, err error) {
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(lis); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("http server", "err", err)
		}
	}()
	return lis.Addr(), func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return srv.Shutdown(ctx)
	}, nil
}
