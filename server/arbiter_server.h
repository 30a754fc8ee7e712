// arbiter-server as a library: the gRPC server (arbiter.v1.Arbiter, the standard health service,
// server reflection) and the Prometheus endpoint, started and stopped as one object so that tests
// run the real thing in-process on 127.0.0.1:0.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "edge/request_limits.h"
#include "edge/rpc/tls.h"
#include "grpcpp/grpcpp.h"
#include "prometheus/registry.h"
#include "server/arbiter_service.h"
#include "server/call_log.h"
#include "server/idle_trimmer.h"
#include "server/metrics_endpoint.h"
#include "server/rpc_metrics.h"
#include "server/worker_pool.h"

namespace arbiter::server {

// The most decision threads a server starts (--workers, --small-lane-workers).
constexpr int kMaxWorkers = 256;

struct ServerOptions {
  std::string host = "0.0.0.0";
  int port = 50051;         // 0 picks a free port
  int metrics_port = 9464;  // 0 picks a free port; -1 serves no metrics
  // Largest request or response, in bytes. 512 MiB holds a 20,000-node, 240,000-pod snapshot
  // with room to spare.
  int64_t max_message_bytes = int64_t{512} << 20;
  int workers = 0;             // general decision threads; 0 = one per core (at most kMaxWorkers)
  int small_lane_workers = 1;  // threads that run only small requests (at most kMaxWorkers)
  int64_t small_request_bytes = int64_t{64} << 10;  // "small": at most this many request bytes
  int64_t max_queued_calls = 256;                 // calls waiting for a worker; UNAVAILABLE beyond
  int64_t max_queued_bytes = int64_t{512} << 20;  // their request bytes; UNAVAILABLE beyond
  edge::RequestLimits limits;                     // --max-nodes, --max-pods, --max-queues, ...
  rpc::ServerTlsFiles tls;  // no files: plaintext; cert and key: TLS; client CA too: mutual TLS
  LogLevel log_level = LogLevel::kInfo;
  Logger::Sink log_sink;         // empty: standard error
  PhaseObserver phase_observer;  // for tests: told when each phase of each call ends
  // Freed memory is given back to the system once no call has run for this long
  // (server/idle_trimmer.h).
  absl::Duration trim_after_idle = absl::Seconds(2);
};

class ArbiterServer {
 public:
  // Builds the service, binds both ports and starts serving. Everything a call needs exists
  // before the gRPC port opens, so health answers SERVING from the first call it can receive.
  // InvalidArgument for bad options, the errors of MakeServerCredentials for the TLS files,
  // Unavailable when a port cannot be bound.
  static absl::StatusOr<std::unique_ptr<ArbiterServer>> Start(const ServerOptions& options);

  // Shuts down (no grace) if Shutdown was not called.
  ~ArbiterServer();

  ArbiterServer(const ArbiterServer&) = delete;
  ArbiterServer& operator=(const ArbiterServer&) = delete;

  // "HOST:PORT" with the port actually bound (IPv6 hosts in brackets).
  const std::string& address() const { return address_; }
  int port() const { return port_; }
  // "HOST:PORT" of /metrics, or "" when metrics are off.
  const std::string& metrics_address() const { return metrics_address_; }
  int metrics_port() const { return metrics_port_; }

  // Starts draining: health reports NOT_SERVING (for the whole server and for
  // arbiter.v1.Arbiter) while calls are still accepted and answered, so that load balancers and
  // readiness probes move traffic away before Shutdown. Idempotent; thread-safe.
  void Drain();

  // Drains, stops accepting calls, and lets the calls in flight finish for up to `grace` before
  // cancelling them. Returns once every call is done. Idempotent; thread-safe.
  void Shutdown(absl::Duration grace);

  // The server's log (calls, start, drain, stop).
  Logger& logger() { return *logger_; }

  // Blocks until Shutdown has completed.
  void Wait();

 private:
  ArbiterServer() = default;
  void DrainLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(shutdown_mutex_);

  std::string address_;
  int port_ = 0;
  std::string metrics_address_;
  int metrics_port_ = -1;

  // Declared in dependency order: destroyed bottom-up, so the gRPC server goes first, then the
  // service it calls, then the pool that still finishes queued calls, then the trimmer, the
  // metrics and the log that those calls tell and write to.
  std::unique_ptr<Logger> logger_;
  std::shared_ptr<prometheus::Registry> registry_;
  std::unique_ptr<MetricsEndpoint> metrics_endpoint_;
  std::unique_ptr<RpcMetrics> metrics_;
  std::unique_ptr<IdleTrimmer> trimmer_;
  std::unique_ptr<WorkerPool> pool_;
  std::unique_ptr<ArbiterService> service_;
  std::unique_ptr<grpc::Server> server_;

  absl::Mutex shutdown_mutex_;
  bool draining_ ABSL_GUARDED_BY(shutdown_mutex_) = false;
  bool shut_down_ ABSL_GUARDED_BY(shutdown_mutex_) = false;
};

}  // namespace arbiter::server
