// The Prometheus endpoint: GET /metrics over plain HTTP/1.x, on IPv4 or IPv6.
//
// One thread serves every connection with non-blocking sockets, so a slow or idle client never
// holds a scrape up: a connection that has not sent a whole request, or not taken its answer,
// within `idle_timeout` is closed, and at most `max_connections` are open at once (the oldest is
// closed to admit a new one). Each answer closes its connection. (prometheus-cpp's own exposer
// is built on Debian's civetweb, which has no IPv6 and serves one request per thread.)
#pragma once

#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "prometheus/registry.h"

namespace arbiter::server {

struct MetricsEndpointOptions {
  std::string host = "0.0.0.0";  // an IPv4 or IPv6 address or a host name
  int port = 9464;               // 0 picks a free port
  absl::Duration idle_timeout = absl::Seconds(5);
  int max_connections = 64;
};

class MetricsEndpoint {
 public:
  // Binds and starts serving `registry`, which must outlive the endpoint. Unavailable when the
  // address cannot be bound.
  static absl::StatusOr<std::unique_ptr<MetricsEndpoint>> Start(
      const MetricsEndpointOptions& options, std::shared_ptr<prometheus::Registry> registry);

  // Closes every connection and stops the thread.
  ~MetricsEndpoint();

  MetricsEndpoint(const MetricsEndpoint&) = delete;
  MetricsEndpoint& operator=(const MetricsEndpoint&) = delete;

  int port() const { return port_; }

 private:
  MetricsEndpoint() = default;
  void Serve();

  MetricsEndpointOptions options_;
  std::shared_ptr<prometheus::Registry> registry_;
  int listen_fd_ = -1;
  int wake_read_ = -1;  // readable when the destructor wants the thread to stop
  int wake_write_ = -1;
  int port_ = 0;
  std::thread thread_;
};

}  // namespace arbiter::server
