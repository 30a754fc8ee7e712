// The arbiter.v1.Arbiter gRPC service on the callback API.
//
// Each call is received as raw bytes and handed whole to a WorkerPool; gRPC's own threads only
// hand calls over. The worker, in phases (each timed for the metrics and the log):
//   decode      the bytes straight into the core's model (edge/request_decoder.h); then the
//               size limits;
//   ...         the core's phases (CycleHooks::phase_done: validate, fair_share, ...);
//   to_proto    the core's answer into the response message (a KAI fair-share answer is written
//               as bytes straight from the core's rows instead: edge/answer_writer.h);
//   serialize   protobuf's deterministic serialisation (map entries in key order, SEMANTICS.md
//               §0.5); the generated handlers would serialise maps in hash order.
// The call is answered before the request and the core's model are freed.
//
// Errors: bytes that do not parse as the request message answer INVALID_ARGUMENT; a snapshot over
// a RequestLimits bound answers RESOURCE_EXHAUSTED (INVALID_ARGUMENT for a name over
// --max-name-bytes), checked while decoding, and a queue tree over --max-queue-depth answers
// INVALID_ARGUMENT from validation (core/validation.h, RequestBounds); a call that
// finds the pool's queue full answers UNAVAILABLE at once; an answer over the message limit
// answers RESOURCE_EXHAUSTED; the core's errors are mapped by ToGrpcStatus
// (edge/grpc_status.h); a call whose deadline passes before a phase answers DEADLINE_EXCEEDED,
// one the client cancelled CANCELLED.
//
// Every call gets a request id (the caller's `x-request-id` metadata when acceptable, a fresh one
// otherwise; edge/request_id.h), echoed in the `x-request-id` trailing metadata, and gives one
// log line (server/call_log.h) and one RpcMetrics::RecordCall.
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>

#include "absl/status/status.h"
#include "arbiter/v1/arbiter.grpc.pb.h"
#include "edge/request_limits.h"
#include "grpcpp/grpcpp.h"
#include "server/call_log.h"
#include "server/call_record.h"
#include "server/idle_trimmer.h"
#include "server/rpc_metrics.h"
#include "server/worker_pool.h"

namespace arbiter::server {

// Called on the worker thread when a phase of a call ends, with the method's short name and the
// phase's name; the call waits for it to return. For tests (to hold a call between two phases)
// and tracing. Must be thread-safe.
using PhaseObserver = std::function<void(std::string_view method, std::string_view phase)>;

using ArbiterRawService = v1::Arbiter::WithRawCallbackMethod_ComputeFairShares<
    v1::Arbiter::WithRawCallbackMethod_Schedule<v1::Arbiter::Service>>;

class ArbiterService final : public ArbiterRawService {
 public:
  // `pool` runs the decisions, `metrics` counts the calls, `logger` writes their lines and
  // `trimmer` is told when each call starts and ends (it gives freed memory back once the server
  // is idle); all four must outlive the service and every call it has accepted. `phase_observer`
  // may be empty. `limits` bound each request; answers over `max_response_bytes` are refused
  // with RESOURCE_EXHAUSTED rather than sent.
  ArbiterService(WorkerPool* pool, RpcMetrics* metrics, Logger* logger, IdleTrimmer* trimmer,
                 edge::RequestLimits limits, int64_t max_response_bytes,
                 PhaseObserver phase_observer = {});

  grpc::ServerUnaryReactor* ComputeFairShares(grpc::CallbackServerContext* context,
                                              const grpc::ByteBuffer* request,
                                              grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* Schedule(grpc::CallbackServerContext* context,
                                     const grpc::ByteBuffer* request,
                                     grpc::ByteBuffer* response) override;

 private:
  template <typename Method>
  grpc::ServerUnaryReactor* Dispatch(grpc::CallbackServerContext* context,
                                     const grpc::ByteBuffer* request, grpc::ByteBuffer* response);

  WorkerPool* pool_;
  RpcMetrics* metrics_;
  Logger* logger_;
  IdleTrimmer* trimmer_;
  const edge::RequestLimits limits_;
  const int64_t max_response_bytes_;
  const PhaseObserver phase_observer_;
};

}  // namespace arbiter::server
