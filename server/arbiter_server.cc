#include "server/arbiter_server.h"

#include <chrono>
#include <limits>
#include <utility>

#include "absl/memory/memory.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/health_check_service_interface.h"

namespace arbiter::server {
namespace {

constexpr char kServiceName[] = "arbiter.v1.Arbiter";
// Calls whose request and model took at most this much leave too little behind to trim for.
constexpr int64_t kTrimAfterBytes = int64_t{256} << 10;

std::string HostPort(const std::string& host, int port) {
  if (absl::StrContains(host, ':')) return absl::StrCat("[", host, "]:", port);
  return absl::StrCat(host, ":", port);
}

absl::Status CheckOptions(const ServerOptions& options) {
  if (options.host.empty()) return absl::InvalidArgumentError("host: must not be empty");
  if (options.port < 0 || options.port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("port: ", options.port, " is not 0..65535"));
  }
  if (options.metrics_port < -1 || options.metrics_port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("metrics_port: ", options.metrics_port, " is not -1..65535"));
  }
  if (absl::Status limits = edge::CheckLimitOptions(options.limits); !limits.ok()) return limits;
  if (options.workers < 0 || options.workers > kMaxWorkers) {
    return absl::InvalidArgumentError(
        absl::StrCat("--workers: ", options.workers, " is not 0..", kMaxWorkers));
  }
  if (options.small_lane_workers < 0 || options.small_lane_workers > kMaxWorkers) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--small-lane-workers: ", options.small_lane_workers, " is not 0..", kMaxWorkers));
  }
  if (options.small_request_bytes < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--small-request-bytes: ", options.small_request_bytes, " is negative"));
  }
  if (options.max_queued_calls < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--max-queued-calls: ", options.max_queued_calls, " is not at least 1"));
  }
  if (options.max_queued_bytes < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--max-queued-bytes: ", options.max_queued_bytes, " is not at least 1"));
  }
  if (options.max_message_bytes < 1 ||
      options.max_message_bytes > std::numeric_limits<int32_t>::max()) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_message_bytes: ", options.max_message_bytes, " is not 1..", INT32_MAX));
  }
  return absl::OkStatus();
}

// Why the gRPC port could not be opened. With TLS, gRPC says only that it failed: when the same
// address binds without TLS, the certificate and key are what it refused.
absl::Status ListenError(const ServerOptions& options) {
  const std::string address = HostPort(options.host, options.port);
  if (rpc::UsesTls(options.tls)) {
    grpc::ServerBuilder probe;
    int bound = 0;
    probe.AddListeningPort(address, grpc::InsecureServerCredentials(), &bound);
    std::unique_ptr<grpc::Server> plain = probe.BuildAndStart();
    const bool plain_binds = plain != nullptr && bound != 0;
    if (plain != nullptr) plain->Shutdown(std::chrono::system_clock::now());
    if (plain_binds) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--tls-cert ", options.tls.cert, ", --tls-key ", options.tls.key,
          ": gRPC cannot serve TLS with them (is the key the certificate's private key, and "
          "are both PEM?)"));
    }
  }
  return absl::UnavailableError(
      absl::StrCat("cannot listen on ", address, " (is the port in use, or the host not local?)"));
}

}  // namespace

absl::StatusOr<std::unique_ptr<ArbiterServer>> ArbiterServer::Start(const ServerOptions& options) {
  if (absl::Status status = CheckOptions(options); !status.ok()) return status;
  absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> credentials =
      rpc::MakeServerCredentials(options.tls);
  if (!credentials.ok()) return credentials.status();
  // Both are process-wide switches read when a ServerBuilder is created.
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();

  auto server = absl::WrapUnique(new ArbiterServer());
  server->logger_ = options.log_sink ? std::make_unique<Logger>(options.log_level, options.log_sink)
                                     : std::make_unique<Logger>(options.log_level);
  server->registry_ = std::make_shared<prometheus::Registry>();
  server->metrics_ = std::make_unique<RpcMetrics>(*server->registry_);
  if (options.metrics_port >= 0) {
    MetricsEndpointOptions metrics;
    metrics.host = options.host;
    metrics.port = options.metrics_port;
    absl::StatusOr<std::unique_ptr<MetricsEndpoint>> endpoint =
        MetricsEndpoint::Start(metrics, server->registry_);
    if (!endpoint.ok()) return endpoint.status();
    server->metrics_endpoint_ = *std::move(endpoint);
    server->metrics_port_ = server->metrics_endpoint_->port();
    server->metrics_address_ = HostPort(options.host, server->metrics_port_);
  }

  WorkerPoolOptions pool;
  pool.threads = options.workers;
  pool.small_lane_threads = options.small_lane_workers;
  pool.small_task_bytes = options.small_request_bytes;
  pool.max_queued_tasks = options.max_queued_calls;
  pool.max_queued_bytes = options.max_queued_bytes;
  server->trimmer_ = std::make_unique<IdleTrimmer>(
      options.trim_after_idle, kTrimAfterBytes,
      [metrics = server->metrics_.get()] { metrics->MemoryTrimmed(); });
  server->pool_ = std::make_unique<WorkerPool>(pool);
  server->service_ = std::make_unique<ArbiterService>(
      server->pool_.get(), server->metrics_.get(), server->logger_.get(), server->trimmer_.get(),
      options.limits, options.max_message_bytes, options.phase_observer);

  grpc::ServerBuilder builder;
  builder.AddListeningPort(HostPort(options.host, options.port), *credentials, &server->port_);
  builder.RegisterService(server->service_.get());
  builder.SetMaxReceiveMessageSize(static_cast<int>(options.max_message_bytes));
  builder.SetMaxSendMessageSize(static_cast<int>(options.max_message_bytes));
  server->server_ = builder.BuildAndStart();
  if (server->server_ == nullptr || server->port_ == 0) {
    return ListenError(options);
  }
  server->address_ = HostPort(options.host, server->port_);
  if (grpc::HealthCheckServiceInterface* health = server->server_->GetHealthCheckService()) {
    health->SetServingStatus(kServiceName, true);
    health->SetServingStatus("", true);
  }
  server->logger_->Log(
      LogLevel::kInfo, "serving",
      {{"address", server->address_},
       {"metrics", server->metrics_address_.empty() ? "off" : server->metrics_address_},
       {"tls",
        options.tls.client_ca.empty() ? (rpc::UsesTls(options.tls) ? "tls" : "off") : "mutual"},
       {"workers", absl::StrCat(server->pool_->size())},
       {"small_lane_workers", absl::StrCat(options.small_lane_workers)},
       {"max_queued_calls", absl::StrCat(options.max_queued_calls)},
       {"max_nodes", absl::StrCat(options.limits.max_nodes)},
       {"max_pods", absl::StrCat(options.limits.max_pods)},
       {"max_queues", absl::StrCat(options.limits.max_queues)},
       {"max_pod_groups", absl::StrCat(options.limits.max_pod_groups)},
       {"max_resource_names", absl::StrCat(options.limits.max_resource_names)},
       {"max_decoded_bytes", absl::StrCat(options.limits.max_decoded_bytes)},
       {"max_message_bytes", absl::StrCat(options.max_message_bytes)}});
  return server;
}

ArbiterServer::~ArbiterServer() {
  if (server_ != nullptr) Shutdown(absl::ZeroDuration());
}

void ArbiterServer::Drain() {
  absl::MutexLock lock(&shutdown_mutex_);
  DrainLocked();
}

void ArbiterServer::DrainLocked() {
  if (draining_) return;
  draining_ = true;
  if (grpc::HealthCheckServiceInterface* health = server_->GetHealthCheckService()) {
    health->SetServingStatus(false);
  }
  logger_->Log(LogLevel::kInfo, "draining", {{"address", address_}});
}

void ArbiterServer::Shutdown(absl::Duration grace) {
  absl::MutexLock lock(&shutdown_mutex_);
  if (shut_down_) return;
  DrainLocked();
  shut_down_ = true;
  logger_->Log(
      LogLevel::kInfo, "shutting down",
      {{"address", address_}, {"grace_seconds", absl::StrCat(absl::ToDoubleSeconds(grace))}});
  server_->Shutdown(std::chrono::system_clock::now() + absl::ToChronoNanoseconds(grace));
  logger_->Log(LogLevel::kInfo, "stopped", {{"address", address_}});
}

void ArbiterServer::Wait() { server_->Wait(); }

}  // namespace arbiter::server
