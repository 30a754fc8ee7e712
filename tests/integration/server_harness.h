// Helpers for tests that talk to a real arbiter-server: start one in-process on 127.0.0.1:0,
// wait on its health check, make raw gRPC calls, probe health and reflection, scrape /metrics.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "google/protobuf/message.h"
#include "grpcpp/grpcpp.h"
#include "server/arbiter_server.h"

namespace arbiter::testing {

// `relative` under the source tree (ARBITER_SOURCE_DIR).
std::string SourcePath(const std::string& relative);

// Reads a JSON or .pb file of the source tree into `message`; aborts the test binary on failure
// (the files are part of the repository).
void ReadSourceMessage(const std::string& relative, google::protobuf::Message* message);

// A channel without gRPC's 4 MB message limits.
std::shared_ptr<grpc::Channel> Connect(const std::string& address);

// grpc.health.v1.Health/Check: the ServingStatus number (1 SERVING, 2 NOT_SERVING,
// 3 SERVICE_UNKNOWN), or -1 when the call failed.
struct HealthAnswer {
  grpc::Status status;
  int serving_status = -1;
};
HealthAnswer CheckHealth(const std::shared_ptr<grpc::Channel>& channel,
                         const std::string& service, absl::Duration timeout = absl::Seconds(10));

// Waits until the health service answers SERVING for the whole server (service ""), the calls
// themselves waiting for the channel to connect. False if `timeout` passes first.
bool WaitUntilServing(const std::shared_ptr<grpc::Channel>& channel,
                      absl::Duration timeout = absl::Seconds(20));

// A unary call of `method` ("/package.Service/Method") with raw request bytes.
struct RawAnswer {
  grpc::Status status;
  std::string bytes;
};
RawAnswer CallRaw(const std::shared_ptr<grpc::Channel>& channel, const std::string& method,
                  const std::string& request, absl::Duration timeout = absl::Seconds(60));

// The services that server reflection (grpc.reflection.v1alpha) lists.
absl::StatusOr<std::vector<std::string>> ListServicesByReflection(
    const std::shared_ptr<grpc::Channel>& channel);

// The body of http://127.0.0.1:PORT/PATH.
absl::StatusOr<std::string> HttpGet(int port, const std::string& path);

// arbiter-server on 127.0.0.1:0, already SERVING; metrics on a free port when `metrics`.
std::unique_ptr<server::ArbiterServer> StartTestServer(bool metrics = false);

}  // namespace arbiter::testing
