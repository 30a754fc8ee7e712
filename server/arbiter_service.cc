#include "server/arbiter_service.h"

#include <chrono>
#include <string>

#include "absl/strings/str_cat.h"
#include "google/protobuf/arena.h"
#include "google/protobuf/io/coded_stream.h"
#include "grpcpp/support/proto_buffer_reader.h"
#include "grpcpp/support/proto_buffer_writer.h"
#include "server/calls.h"
#include "server/grpc_status.h"

namespace arbiter::server {
namespace {

using Clock = std::chrono::steady_clock;

// The caller's deadline and cancellation, checked by the core between the phases of a cycle.
CycleHooks HooksFor(grpc::CallbackServerContext* context) {
  CycleHooks hooks;
  hooks.cancelled = [context] {
    return context->IsCancelled() || std::chrono::system_clock::now() > context->deadline();
  };
  return hooks;
}

// A Cancelled answer from the core means the hooks stopped it: say why in the client's terms.
absl::Status ExplainCancellation(const absl::Status& status,
                                 grpc::CallbackServerContext* context) {
  if (status.code() != absl::StatusCode::kCancelled) return status;
  if (std::chrono::system_clock::now() > context->deadline()) {
    return absl::DeadlineExceededError(
        absl::StrCat("the call's deadline passed: ", status.message()));
  }
  return status;
}

template <typename Request>
absl::Status ParseRequest(const grpc::ByteBuffer& bytes, Request* request) {
  grpc::ByteBuffer copy(bytes);  // shares the slices; the reader needs a mutable buffer
  grpc::ProtoBufferReader reader(&copy);
  if (!reader.status().ok() || !request->ParseFromZeroCopyStream(&reader)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "request: not a valid binary ", Request::descriptor()->full_name(), " (",
        bytes.Length(), " bytes)"));
  }
  return absl::OkStatus();
}

absl::Status WriteResponse(const google::protobuf::Message& message, grpc::ByteBuffer* out) {
  const size_t size = message.ByteSizeLong();  // also caches the sizes for the write below
  if (size > static_cast<size_t>(INT32_MAX)) {
    return absl::ResourceExhaustedError(
        absl::StrCat("the response would take ", size, " bytes, over protobuf's 2 GiB limit"));
  }
  {
    grpc::ProtoBufferWriter writer(out, grpc::kProtoBufferWriterMaxBufferLength,
                                   static_cast<int>(size));
    google::protobuf::io::CodedOutputStream coded(&writer);
    coded.SetSerializationDeterministic(true);
    message.SerializeWithCachedSizes(&coded);
    if (coded.HadError()) return absl::InternalError("serialising the response failed");
  }
  return absl::OkStatus();
}

template <typename Request, typename Response,
          absl::StatusOr<Response> (*kCall)(const Request&, const CycleHooks&)>
absl::Status DecideCall(const grpc::ByteBuffer& bytes, grpc::CallbackServerContext* context,
                    grpc::ByteBuffer* out) {
  google::protobuf::Arena arena;
  Request* request = google::protobuf::Arena::CreateMessage<Request>(&arena);
  if (absl::Status parsed = ParseRequest(bytes, request); !parsed.ok()) return parsed;
  absl::StatusOr<Response> response = kCall(*request, HooksFor(context));
  if (!response.ok()) return ExplainCancellation(response.status(), context);
  return WriteResponse(*response, out);
}

}  // namespace

ArbiterService::ArbiterService(WorkerPool* pool, RpcMetrics* metrics)
    : pool_(pool), metrics_(metrics) {}

grpc::ServerUnaryReactor* ArbiterService::ComputeFairShares(grpc::CallbackServerContext* context,
                                                            const grpc::ByteBuffer* request,
                                                            grpc::ByteBuffer* response) {
  return Dispatch("ComputeFairShares",
                  &DecideCall<v1::FairShareRequest, v1::FairShareResponse, &CallComputeFairShares>,
                  context, request, response);
}

grpc::ServerUnaryReactor* ArbiterService::Schedule(grpc::CallbackServerContext* context,
                                                   const grpc::ByteBuffer* request,
                                                   grpc::ByteBuffer* response) {
  return Dispatch("Schedule", &DecideCall<v1::ScheduleRequest, v1::ScheduleResponse, &CallSchedule>,
                  context, request, response);
}

grpc::ServerUnaryReactor* ArbiterService::Dispatch(std::string_view method, Decide decide,
                                                   grpc::CallbackServerContext* context,
                                                   const grpc::ByteBuffer* request,
                                                   grpc::ByteBuffer* response) {
  const Clock::time_point start = Clock::now();
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  // The request, response and context stay valid until Finish; the pool and metrics outlive
  // every accepted call (see the constructor's contract).
  pool_->Submit([this, method, decide, context, request, response, reactor, start] {
    const absl::Status status = decide(*request, context, response);
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    metrics_->RecordCall(method, status.code(), seconds);
    reactor->Finish(ToGrpcStatus(status));
  });
  return reactor;
}

}  // namespace arbiter::server
