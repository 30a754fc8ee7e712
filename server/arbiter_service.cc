#include "server/arbiter_service.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "core/api/arbiter.h"
#include "core/status_macros.h"
#include "edge/answer_writer.h"
#include "edge/proto_convert.h"
#include "edge/request_decoder.h"
#include "edge/rpc/grpc_status.h"
#include "edge/rpc/request_id.h"
#include "google/protobuf/arena.h"
#include "google/protobuf/io/coded_stream.h"
#include "grpcpp/support/proto_buffer_writer.h"

namespace arbiter::server {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::duration duration) { return std::chrono::duration<double>(duration).count(); }

// Times consecutive phases into a CallRecord, each from the end of the one before, and tells
// the observer (if any) that a phase ended.
class PhaseClock {
 public:
  PhaseClock(Clock::time_point start, CallRecord* record, const PhaseObserver& observer)
      : last_(start), record_(record), observer_(observer) {}

  void Mark(std::string_view phase) {
    const Clock::time_point now = Clock::now();
    record_->phase_seconds.emplace_back(std::string(phase), Seconds(now - last_));
    last_ = now;
    if (observer_) observer_(record_->method, phase);
  }

 private:
  Clock::time_point last_;
  CallRecord* record_;
  const PhaseObserver& observer_;
};

// The server's view of the deadline starts when the call arrives, so the client's own timer
// fires a little earlier and cancels the call: a cancellation this close to the deadline is the
// deadline passing.
constexpr std::chrono::milliseconds kDeadlineSlack(250);

// Why the caller no longer waits for the answer: kOk while it does, kDeadlineExceeded when its
// deadline passed, kCancelled when it cancelled the call.
absl::StatusCode CallerGaveUp(grpc::CallbackServerContext* context) {
  const std::chrono::system_clock::time_point now = std::chrono::system_clock::now();
  const std::chrono::system_clock::time_point deadline = context->deadline();
  if (now > deadline) return absl::StatusCode::kDeadlineExceeded;
  if (!context->IsCancelled()) return absl::StatusCode::kOk;
  if (now > deadline - kDeadlineSlack) return absl::StatusCode::kDeadlineExceeded;
  return absl::StatusCode::kCancelled;
}

// OK while the caller still waits for the answer; checked before each of the server's phases.
absl::Status CheckStillWanted(grpc::CallbackServerContext* context, const char* phase) {
  switch (CallerGaveUp(context)) {
    case absl::StatusCode::kOk:
      return absl::OkStatus();
    case absl::StatusCode::kDeadlineExceeded:
      return absl::DeadlineExceededError(
          absl::StrCat("the call's deadline passed before phase ", phase));
    default:
      return absl::CancelledError(absl::StrCat("the caller cancelled before phase ", phase));
  }
}

// The caller's deadline and cancellation, checked by the core between the phases of a cycle.
bool StoppedByCaller(grpc::CallbackServerContext* context) {
  return CallerGaveUp(context) != absl::StatusCode::kOk;
}

// A Cancelled answer from the core means the hooks stopped it: say why in the caller's terms.
absl::Status ExplainCancellation(const absl::Status& status, grpc::CallbackServerContext* context) {
  if (status.code() != absl::StatusCode::kCancelled) return status;
  if (CallerGaveUp(context) == absl::StatusCode::kDeadlineExceeded) {
    return absl::DeadlineExceededError(
        absl::StrCat("the call's deadline passed: ", status.message()));
  }
  return status;
}

// Decodes the request's bytes into the core's model within `limits`
// (edge/request_decoder.h); the queue tree's depth is validation's (RequestBounds).
absl::Status DecodeRequestBytes(const grpc::ByteBuffer& bytes, std::string_view type_name,
                                const edge::RequestLimits& limits, Snapshot* snapshot,
                                Policy* policy, int64_t* decoded_bytes) {
  // The bytes in one piece: gRPC's own slice when it delivered one, a copy otherwise.
  grpc::Slice flat;
  const bool whole = bytes.Length() == 0 || bytes.TrySingleSlice(&flat).ok() ||
                     bytes.DumpToSingleSlice(&flat).ok();
  if (!whole) {
    return edge::NotARequest(type_name, bytes.Length());
  }
  const std::string_view view(reinterpret_cast<const char*>(flat.begin()), flat.size());
  return edge::DecodeRequest(view, limits, type_name, snapshot, policy, decoded_bytes);
}

// Serialises `message` deterministically into `out`. ResourceExhausted when it would take more
// than `max_bytes` (the client would refuse it; saying so here keeps the log and the metrics
// truthful).
absl::Status WriteResponse(const google::protobuf::Message& message, int64_t max_bytes,
                           grpc::ByteBuffer* out) {
  const size_t size = message.ByteSizeLong();  // also caches the sizes for the write below
  if (size > static_cast<size_t>(max_bytes) || size > static_cast<size_t>(INT32_MAX)) {
    return absl::ResourceExhaustedError(
        absl::StrCat("the response would take ", size, " bytes; this server sends at most ",
                     std::min<int64_t>(max_bytes, INT32_MAX), " (--max-message-bytes)"));
  }
  if (size == 0) {
    // An empty message is zero bytes on the wire. gRPC's buffer writer asserts on a zero size and
    // a default ByteBuffer is no message at all: send one empty slice.
    grpc::Slice empty;
    *out = grpc::ByteBuffer(&empty, 1);
    return absl::OkStatus();
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

// Sends `bytes`, already serialised, without copying them; the checks of WriteResponse.
absl::Status SendBytes(std::string bytes, int64_t max_bytes, grpc::ByteBuffer* out) {
  if (bytes.size() > static_cast<size_t>(max_bytes) ||
      bytes.size() > static_cast<size_t>(INT32_MAX)) {
    return absl::ResourceExhaustedError(
        absl::StrCat("the response would take ", bytes.size(), " bytes; this server sends at most ",
                     std::min<int64_t>(max_bytes, INT32_MAX), " (--max-message-bytes)"));
  }
  if (bytes.empty()) {
    grpc::Slice empty;
    *out = grpc::ByteBuffer(&empty, 1);
    return absl::OkStatus();
  }
  auto* owned = new std::string(std::move(bytes));
  grpc::Slice slice(
      owned->data(), owned->size(), [](void* data) { delete static_cast<std::string*>(data); },
      owned);
  *out = grpc::ByteBuffer(&slice, 1);
  return absl::OkStatus();
}

// ---- Decision counts for the log line and arbiter_decisions_total ----

// A reason code as a metric label: the code itself when it is a short lower-case code such as
// "gang-does-not-fit" (SEMANTICS.md §6 fixes them), "other" for anything else, so that no caller
// input can widen the label's range.
std::string ReasonLabel(std::string_view code) {
  if (code.empty() || code.size() > 40) return "other";
  for (const char c : code) {
    if (!absl::ascii_islower(static_cast<unsigned char>(c)) &&
        !absl::ascii_isdigit(static_cast<unsigned char>(c)) && c != '-') {
      return "other";
    }
  }
  return std::string(code);
}

// FAIR_SHARE_RECLAIM -> "fair-share-reclaim"; "other" for a value outside the enum.
std::string EvictionReasonLabel(v1::EvictionReason reason) {
  std::string name = v1::EvictionReason_Name(reason);
  if (name.empty()) return "other";
  for (char& c : name) c = c == '_' ? '-' : absl::ascii_tolower(static_cast<unsigned char>(c));
  return name;
}

void CountDecisions(const v1::FairShareResponse&, DecisionCounts*) {}

void CountDecisions(const v1::ScheduleResponse& response, DecisionCounts* counts) {
  auto& by = counts->by_kind_and_reason;
  counts->bindings = response.bindings_size();
  for (const v1::Binding& binding : response.bindings()) {
    ++by[{"bind", binding.after_evictions() ? "after-evictions" : "free-capacity"}];
  }
  counts->evictions = response.evictions_size();
  for (const v1::Eviction& eviction : response.evictions()) {
    ++by[{"evict", EvictionReasonLabel(eviction.reason())}];
  }
  counts->pending = response.pending_size();
  for (const v1::PendingPodGroup& pending : response.pending()) {
    ++by[{"pending", ReasonLabel(pending.reason())}];
  }
  counts->admissions = response.admissions_size();
  for (const v1::Admission& admission : response.admissions()) {
    ++by[{"admit", admission.after_evictions() ? "after-evictions" : "fits-quota"}];
  }
}

// ---- The two methods ----

struct FairShareMethod {
  using Request = v1::FairShareRequest;
  using Response = v1::FairShareResponse;
  using Result = FairShareResult;
  static constexpr std::string_view kName = "ComputeFairShares";
  static absl::StatusOr<Result> Decide(const Snapshot& snapshot, const Policy& policy,
                                       const CycleHooks& hooks, const RequestBounds& bounds) {
    return arbiter::ComputeFairShares(snapshot, policy, hooks, bounds);
  }
  // The answer's bytes straight from the result (edge/answer_writer.h); true when written.
  static bool WriteBytes(const Result& result, std::string* out) {
    edge::AppendFairShareResponse(result, out);
    return true;
  }
};

struct ScheduleMethod {
  using Request = v1::ScheduleRequest;
  using Response = v1::ScheduleResponse;
  using Result = ScheduleResult;
  static constexpr std::string_view kName = "Schedule";
  static absl::StatusOr<Result> Decide(const Snapshot& snapshot, const Policy& policy,
                                       const CycleHooks& hooks, const RequestBounds& bounds) {
    return arbiter::Schedule(snapshot, policy, hooks, bounds);
  }
  static bool WriteBytes(const Result&, std::string*) { return false; }
};

// Everything large that one call builds. Freed only after the call is answered, so that the
// caller does not wait for the request, the model and the answer to be torn down.
template <typename Method>
class Workspace {
 public:
  // Runs the phases of the file comment in arbiter_service.h, writing the answer to `out` and
  // what happened to `record`.
  absl::Status Run(const grpc::ByteBuffer& bytes, grpc::CallbackServerContext* context,
                   const edge::RequestLimits& limits, int64_t max_response_bytes,
                   const PhaseObserver& observer, Clock::time_point start, CallRecord* record,
                   grpc::ByteBuffer* out) {
    PhaseClock clock(start, record, observer);
    if (absl::Status wanted = CheckStillWanted(context, "decode"); !wanted.ok()) return wanted;
    RETURN_IF_ERROR(DecodeRequestBytes(bytes, Method::Request::descriptor()->full_name(), limits,
                                       &snapshot_, &policy_, &record->decoded_bytes));
    record->size = edge::SizeOf(snapshot_);
    record->parsed = true;
    clock.Mark("decode");

    CycleHooks hooks;
    hooks.cancelled = [context] { return StoppedByCaller(context); };
    hooks.phase_done = [&clock](std::string_view phase) { clock.Mark(phase); };
    hooks.phase_counters = [record](
                               std::string_view phase,
                               const std::vector<std::pair<std::string_view, int64_t>>& counters) {
      std::string text;
      for (const auto& [name, value] : counters) {
        absl::StrAppend(&text, text.empty() ? "" : ",", absl::string_view(name.data(), name.size()),
                        "=", value);
      }
      record->phase_counters.emplace_back(std::string(phase), std::move(text));
    };
    RequestBounds bounds;
    bounds.max_queue_depth = limits.max_queue_depth;
    bounds.max_queue_depth_name = "--max-queue-depth";
    bounds.max_gpu_devices_per_pod = limits.max_gpu_devices_per_pod;
    bounds.max_gpu_devices_per_pod_name = "--max-gpu-devices-per-pod";
    result_ = Method::Decide(snapshot_, policy_, hooks, bounds);
    if (!result_->ok()) return ExplainCancellation(result_->status(), context);

    if (absl::Status wanted = CheckStillWanted(context, "to_proto"); !wanted.ok()) return wanted;
    if (std::string answer; Method::WriteBytes(**result_, &answer)) {
      clock.Mark("to_proto");
      RETURN_IF_ERROR(SendBytes(std::move(answer), max_response_bytes, out));
      record->response_bytes = static_cast<int64_t>(out->Length());
      clock.Mark("serialize");
      return absl::OkStatus();
    }
    auto* response = google::protobuf::Arena::CreateMessage<typename Method::Response>(&arena_);
    edge::ToProto(*std::move(*result_), response);
    CountDecisions(*response, &record->decisions);
    clock.Mark("to_proto");

    RETURN_IF_ERROR(WriteResponse(*response, max_response_bytes, out));
    record->response_bytes = static_cast<int64_t>(out->Length());
    clock.Mark("serialize");
    return absl::OkStatus();
  }

 private:
  google::protobuf::Arena arena_;  // the response
  Snapshot snapshot_;
  Policy policy_;
  std::optional<absl::StatusOr<typename Method::Result>> result_;
};

// The caller's x-request-id when acceptable, a fresh id otherwise.
std::string RequestIdFor(const grpc::CallbackServerContext& context) {
  const auto& metadata = context.client_metadata();
  const auto found = metadata.find(rpc::kRequestIdKey);
  if (found == metadata.end()) return rpc::NewRequestId();
  return rpc::ChooseRequestId(std::string_view(found->second.data(), found->second.size()));
}

// The record of a call as it arrives: its method, request id and size.
CallRecord NewRecord(std::string_view method, const grpc::CallbackServerContext& context,
                     int64_t request_bytes) {
  CallRecord record;
  record.method = method;
  record.request_id = RequestIdFor(context);
  record.request_bytes = request_bytes;
  return record;
}

}  // namespace

ArbiterService::ArbiterService(WorkerPool* pool, RpcMetrics* metrics, Logger* logger,
                               IdleTrimmer* trimmer, edge::RequestLimits limits,
                               int64_t max_response_bytes, PhaseObserver phase_observer)
    : pool_(pool),
      metrics_(metrics),
      logger_(logger),
      trimmer_(trimmer),
      limits_(limits),
      max_response_bytes_(max_response_bytes),
      phase_observer_(std::move(phase_observer)) {}

grpc::ServerUnaryReactor* ArbiterService::ComputeFairShares(grpc::CallbackServerContext* context,
                                                            const grpc::ByteBuffer* request,
                                                            grpc::ByteBuffer* response) {
  return Dispatch<FairShareMethod>(context, request, response);
}

grpc::ServerUnaryReactor* ArbiterService::Schedule(grpc::CallbackServerContext* context,
                                                   const grpc::ByteBuffer* request,
                                                   grpc::ByteBuffer* response) {
  return Dispatch<ScheduleMethod>(context, request, response);
}

template <typename Method>
grpc::ServerUnaryReactor* ArbiterService::Dispatch(grpc::CallbackServerContext* context,
                                                   const grpc::ByteBuffer* request,
                                                   grpc::ByteBuffer* response) {
  const Clock::time_point start = Clock::now();
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  metrics_->CallStarted();
  const int64_t request_bytes = static_cast<int64_t>(request->Length());
  // Answers the call with what `record` says; the call's objects are not touched after Finish.
  auto finish = [metrics = metrics_, logger = logger_, context, reactor,
                 start](CallRecord* record) {
    record->seconds = Seconds(Clock::now() - start);
    // Out of the in-flight gauge before into the request counters, so that the two never count
    // one call twice.
    metrics->CallFinished();
    metrics->RecordCall(*record);
    logger->LogCall(*record);
    context->AddTrailingMetadata(rpc::kRequestIdKey, record->request_id);
    reactor->Finish(rpc::ToGrpcStatus(record->status));
  };
  // The request, response and context stay valid until Finish. The pool, metrics and logger
  // outlive every accepted call (see the constructor's contract), but the service itself may be
  // destroyed once the last call is answered: the task copies what it needs before Finish.
  // Counted as waiting before it is queued, so that a worker taking it at once never makes the
  // gauge negative.
  metrics_->CallQueued();
  const bool queued = pool_->TrySubmit(
      [metrics = metrics_, logger = logger_, trimmer = trimmer_, limits = limits_,
       max_response_bytes = max_response_bytes_, observer = phase_observer_, context, request,
       response, start, request_bytes, finish] {
        metrics->CallDequeued();
        CallRecord record = NewRecord(Method::kName, *context, request_bytes);
        if (logger->Enabled(LogLevel::kDebug)) {
          logger->Log(LogLevel::kDebug, "call started",
                      {{"method", std::string(Method::kName)},
                       {"request_id", record.request_id},
                       {"request_bytes", absl::StrCat(record.request_bytes)}});
        }
        trimmer->CallStarted();
        auto workspace = std::make_unique<Workspace<Method>>();
        record.status = workspace->Run(*request, context, limits, max_response_bytes, observer,
                                       start, &record, response);
        finish(&record);
        workspace.reset();  // after answering: the caller does not wait for the memory to be freed
        // The freed memory is kept for the next call, and given back once the server is idle.
        trimmer->CallEnded(record.decoded_bytes + record.request_bytes);
      },
      request_bytes);
  if (!queued) {
    metrics_->CallDequeued();
    CallRecord record = NewRecord(Method::kName, *context, request_bytes);
    record.status = absl::UnavailableError(
        absl::StrCat("the server is busy: its queue of waiting calls is full (--max-queued-calls ",
                     pool_->options().max_queued_tasks, ", --max-queued-bytes ",
                     pool_->options().max_queued_bytes, "); retry with backoff"));
    finish(&record);
  }
  return reactor;
}

}  // namespace arbiter::server
