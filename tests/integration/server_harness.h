// Helpers for tests that talk to a real arbiter-server: start one in-process on 127.0.0.1:0,
// wait on its health check, make raw gRPC calls, probe health and reflection, scrape /metrics.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "google/protobuf/message.h"
#include "grpcpp/grpcpp.h"
#include "server/arbiter_server.h"
#include "tests/support/temp_dir.h"

namespace arbiter::testing {

// `relative` under the source tree (ARBITER_SOURCE_DIR).
std::string SourcePath(const std::string& relative);

// Reads a JSON or .pb file of the source tree into `message`; aborts the test binary on failure
// (the files are part of the repository).
void ReadSourceMessage(const std::string& relative, google::protobuf::Message* message);

// The generator's request for a size preset ("S", "M", "L", "XL"; docs/generator.md), KAI model,
// as binary protobuf; with `allocate_only` its policy lists the allocate action alone (the
// issue-3 cycle), which keeps its cost independent of the eviction actions. Aborts on an unknown
// size.
std::string GeneratedScheduleBytes(const std::string& size, bool allocate_only = true);

// A channel without gRPC's 4 MB message limits.
std::shared_ptr<grpc::Channel> Connect(const std::string& address);

// The same with `credentials` (e.g. TLS); `server_name`, when not empty, is the name the server's
// certificate must carry instead of the address's host.
std::shared_ptr<grpc::Channel> ConnectWith(
    const std::string& address, const std::shared_ptr<grpc::ChannelCredentials>& credentials,
    const std::string& server_name = "");

// grpc.health.v1.Health/Check: the ServingStatus number (1 SERVING, 2 NOT_SERVING,
// 3 SERVICE_UNKNOWN), or -1 when the call failed.
struct HealthAnswer {
  grpc::Status status;
  int serving_status = -1;
};
HealthAnswer CheckHealth(const std::shared_ptr<grpc::Channel>& channel, const std::string& service,
                         absl::Duration timeout = absl::Seconds(10));

// Waits until the health service answers SERVING for the whole server (service ""), the calls
// themselves waiting for the channel to connect. False if `timeout` passes first.
bool WaitUntilServing(const std::shared_ptr<grpc::Channel>& channel,
                      absl::Duration timeout = absl::Seconds(20));

// A unary call of `method` ("/package.Service/Method") with raw request bytes, sending
// `metadata`; the answer keeps the server's trailing metadata.
struct RawAnswer {
  grpc::Status status;
  std::string bytes;
  std::multimap<std::string, std::string> trailers;
};
RawAnswer CallRaw(const std::shared_ptr<grpc::Channel>& channel, const std::string& method,
                  const std::string& request, absl::Duration timeout = absl::Seconds(60),
                  const std::map<std::string, std::string>& metadata = {});

// CallRaw with more of a client's ways: gzip-compressing the request, and cancelling the call
// `cancel_after` after starting it.
struct RawCallOptions {
  absl::Duration timeout = absl::Seconds(60);
  std::map<std::string, std::string> metadata;
  bool gzip = false;
  std::optional<absl::Duration> cancel_after;
};
RawAnswer CallRawWith(const std::shared_ptr<grpc::Channel>& channel, const std::string& method,
                      const std::string& request, const RawCallOptions& options);

// The services that server reflection (grpc.reflection.v1alpha) lists.
absl::StatusOr<std::vector<std::string>> ListServicesByReflection(
    const std::shared_ptr<grpc::Channel>& channel);

// The body of http://127.0.0.1:PORT/PATH.
absl::StatusOr<std::string> HttpGet(int port, const std::string& path);

// arbiter-server on 127.0.0.1:0, already SERVING; metrics on a free port when `metrics`.
std::unique_ptr<server::ArbiterServer> StartTestServer(bool metrics = false);

// arbiter-server with `options` (host and port are overridden to 127.0.0.1:0), already SERVING
// as seen through `channel` made by `connect` (plaintext Connect when empty).
std::unique_ptr<server::ArbiterServer> StartTestServer(
    server::ServerOptions options,
    const std::function<std::shared_ptr<grpc::Channel>(const std::string&)>& connect = {});

// Collects the server's log lines in memory (a ServerOptions::log_sink). Thread-safe.
class LogCapture {
 public:
  // The sink to put in ServerOptions::log_sink; it must not outlive this object.
  server::Logger::Sink Sink();
  std::vector<std::string> Lines() const;
  // The lines that contain every one of `parts`.
  std::vector<std::string> LinesWith(const std::vector<std::string>& parts) const;

 private:
  mutable absl::Mutex mutex_;
  std::vector<std::string> lines_ ABSL_GUARDED_BY(mutex_);
};

// Polls `condition` (every 5 ms) until it holds; false if `timeout` passes first. For conditions
// that the server makes true by itself (a call finishing, a gauge moving), never for timing.
bool PollUntil(const std::function<bool()>& condition, absl::Duration timeout);

// The value of `key` in a logfmt line (server/call_log.h), unquoted; "" when absent.
std::string LogField(const std::string& line, const std::string& key);

// The value of the Prometheus series `series` (name with its labels exactly as exposed, e.g.
// `arbiter_rpc_requests_total{code="OK",method="Schedule"}`) in a /metrics body; -1 if absent.
double MetricValue(const std::string& metrics, const std::string& series);

}  // namespace arbiter::testing
