// The arbiter.v1.Arbiter gRPC service on the callback API.
//
// Each call is received as raw bytes and handed whole to a WorkerPool: the worker parses the
// request on an arena, runs the decision (server/calls.h), and writes the answer with protobuf's
// deterministic serialisation (map entries in key order, SEMANTICS.md §0.5) — the generated
// message handlers would serialise maps in hash order. gRPC's own threads only hand calls over.
//
// Errors: bytes that do not parse as the request message answer INVALID_ARGUMENT; the core's
// errors are mapped by ToGrpcStatus (server/grpc_status.h); a call whose client deadline passes
// between two phases of the cycle answers DEADLINE_EXCEEDED, one the client cancelled CANCELLED.
#pragma once

#include <string_view>

#include "absl/status/status.h"
#include "arbiter/v1/arbiter.grpc.pb.h"
#include "core/api/arbiter.h"
#include "grpcpp/grpcpp.h"
#include "server/rpc_metrics.h"
#include "server/worker_pool.h"

namespace arbiter::server {

using ArbiterRawService = v1::Arbiter::WithRawCallbackMethod_ComputeFairShares<
    v1::Arbiter::WithRawCallbackMethod_Schedule<v1::Arbiter::Service>>;

class ArbiterService final : public ArbiterRawService {
 public:
  // `pool` runs the decisions and `metrics` counts the calls; both must outlive the service and
  // every call it has accepted.
  ArbiterService(WorkerPool* pool, RpcMetrics* metrics);

  grpc::ServerUnaryReactor* ComputeFairShares(grpc::CallbackServerContext* context,
                                              const grpc::ByteBuffer* request,
                                              grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* Schedule(grpc::CallbackServerContext* context,
                                     const grpc::ByteBuffer* request,
                                     grpc::ByteBuffer* response) override;

 private:
  // Hands the call to the pool; `decide(bytes, context, response)` does the work.
  using Decide = absl::Status (*)(const grpc::ByteBuffer& request,
                                  grpc::CallbackServerContext* context,
                                  grpc::ByteBuffer* response);
  grpc::ServerUnaryReactor* Dispatch(std::string_view method, Decide decide,
                                     grpc::CallbackServerContext* context,
                                     const grpc::ByteBuffer* request,
                                     grpc::ByteBuffer* response);

  WorkerPool* pool_;
  RpcMetrics* metrics_;
};

}  // namespace arbiter::server
