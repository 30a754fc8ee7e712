// libFuzzer target: bytes -> the core's model -> ValidateRequest -> ComputeFairShares and
// Schedule, the way the server goes: its request decoder (edge/request_decoder.h) reads the
// bytes straight into the model. The same bytes also go through protobuf's parser, and the
// decoder must agree with it: it accepts exactly the bytes protobuf accepts, and the model it
// builds, written back (edge/proto_convert.h), is the message protobuf parsed
// (tests/support/canonical_request.h).
//
// Besides "no crash, no sanitizer report, no hang", every input is held to what SEMANTICS.md
// promises for any request:
// - §1: the entry points answer exactly what validation answers for bad input (InvalidArgument,
//   the message starting with a "snapshot." or "policy." field path), and succeed otherwise;
// - §0.5: the answer holds no NaN, +inf only in saturation and weighted_share, no -0.0;
// - §6: bindings and evictions name pods and nodes of the request; the lists are in order.
// - the server's limits (edge/request_limits.h) only ever refuse with a limit's own error, and
//   the limited decoder otherwise agrees with the unlimited one;
// - a call cancelled (the server's deadline or the client's cancellation, through
//   CycleHooks::cancelled) at any poll answers Cancelled or exactly the uncancelled answer.
// A broken promise aborts with a message, which libFuzzer records as a crash.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "arbiter/v1/arbiter.pb.h"
#include "core/api/arbiter.h"
#include "core/validation.h"
#include "edge/proto_convert.h"
#include "edge/request_decoder.h"
#include "edge/request_limits.h"
#include "edge/wire.h"
#include "google/protobuf/map.h"
#include "google/protobuf/stubs/logging.h"
#include "tests/support/canonical_request.h"

namespace arbiter::fuzz {
namespace {

[[noreturn]] void Fail(const std::string& what) {
  std::fprintf(stderr, "request_fuzzer: %s\n", what.c_str());
  std::fflush(stderr);
  std::abort();
}

void Require(bool holds, const std::string& what) {
  if (!holds) Fail(what);
}

// §1: a rejection is InvalidArgument and names the offending field first.
void CheckRejection(const absl::Status& status, const char* kind) {
  Require(status.code() == absl::StatusCode::kInvalidArgument,
          std::string(kind) + " validation answered " + status.ToString());
  Require(absl::StartsWith(status.message(), "snapshot.") ||
              absl::StartsWith(status.message(), "policy."),
          std::string(kind) + " rejection without a field path: " + status.ToString());
}

// §1: the entry point returns the validator's verdict for bad input, and succeeds for good input.
template <typename T>
void CheckAgreesWithValidation(const absl::StatusOr<T>& answer, const absl::Status& validation,
                               const char* kind) {
  if (validation.ok()) {
    Require(answer.ok(),
            std::string(kind) + " failed on a valid request: " + answer.status().ToString());
  } else {
    Require(answer.status() == validation, std::string(kind) + " answered " +
                                               answer.status().ToString() +
                                               " where validation said " + validation.ToString());
  }
}

// §0.5: no NaN, no -0.0, and +inf only where `infinity_allowed`.
void CheckNumber(double value, bool infinity_allowed, const std::string& where) {
  Require(!std::isnan(value), where + " is NaN");
  Require(infinity_allowed || !std::isinf(value), where + " is infinite");
  Require(!(value == 0 && std::signbit(value)), where + " is -0.0");
}

void CheckNumbers(const google::protobuf::Map<std::string, double>& map, const std::string& where) {
  for (const auto& [resource, value] : map) {
    CheckNumber(value, /*infinity_allowed=*/false, where + "[" + resource + "]");
  }
}

// `items` strictly ascending by `key` (§6 ordering; one entry per pod, group or queue).
template <typename Items, typename KeyFn>
void CheckStrictlyAscending(const Items& items, const KeyFn& key, const std::string& what) {
  for (int i = 1; i < items.size(); ++i) {
    Require(key(items[i - 1]) < key(items[i]),
            what + " out of order or repeated at " + std::to_string(i));
  }
}

// §6: one QueueShare per queue of the request, in name order; §0.5 for every number.
void CheckShares(const google::protobuf::RepeatedPtrField<v1::QueueShare>& shares,
                 const v1::ScheduleRequest& request) {
  Require(shares.size() == request.snapshot().queues_size(),
          std::to_string(shares.size()) + " queue shares for " +
              std::to_string(request.snapshot().queues_size()) + " queues");
  CheckStrictlyAscending(
      shares, [](const v1::QueueShare& q) { return q.queue(); }, "queues");
  for (const v1::QueueShare& share : shares) {
    const std::string where = "queue " + share.queue();
    CheckNumbers(share.deserved(), where + " deserved");
    CheckNumbers(share.fair_share(), where + " fair_share");
    CheckNumbers(share.allocated(), where + " allocated");
    CheckNumbers(share.requested(), where + " requested");
    CheckNumber(share.saturation(), /*infinity_allowed=*/true, where + " saturation");
    CheckNumber(share.weighted_share(), /*infinity_allowed=*/true, where + " weighted_share");
  }
}

// §6: every binding names a pod of the request and a node of the request;
// every eviction names a pod of the request and the node it is on (empty for a Kueue pod without
// one); each list in its documented order.
void CheckScheduleAnswer(const v1::ScheduleRequest& request, const v1::ScheduleResponse& response) {
  std::set<std::string> nodes;
  for (const v1::Node& node : request.snapshot().nodes()) nodes.insert(node.name());
  std::map<std::pair<std::string, std::string>, std::string> pod_nodes;
  for (const v1::PodGroup& group : request.snapshot().pod_groups()) {
    for (const v1::Pod& pod : group.pods()) {
      pod_nodes.emplace(std::make_pair(group.name(), pod.name()), pod.node_name());
    }
  }
  for (const v1::Binding& binding : response.bindings()) {
    Require(pod_nodes.count({binding.pod_group(), binding.pod()}) == 1,
            "binding of unknown pod " + binding.pod_group() + "/" + binding.pod());
    Require(nodes.count(binding.node()) == 1, "binding to unknown node " + binding.node());
  }
  for (const v1::Eviction& eviction : response.evictions()) {
    const auto pod = pod_nodes.find({eviction.pod_group(), eviction.pod()});
    Require(pod != pod_nodes.end(),
            "eviction of unknown pod " + eviction.pod_group() + "/" + eviction.pod());
    Require(eviction.node() == pod->second, "eviction of " + eviction.pod_group() + "/" +
                                                eviction.pod() + " from node \"" + eviction.node() +
                                                "\", not its node \"" + pod->second + "\"");
  }
  const auto by_pod = [](const auto& item) { return std::make_pair(item.pod_group(), item.pod()); };
  const auto by_group = [](const auto& item) { return item.pod_group(); };
  CheckStrictlyAscending(response.bindings(), by_pod, "bindings");
  CheckStrictlyAscending(response.evictions(), by_pod, "evictions");
  CheckStrictlyAscending(response.admissions(), by_group, "admissions");
  CheckStrictlyAscending(response.pending(), by_group, "pending");
}

// The model as deterministic request bytes, to compare two models.
std::string ModelBytes(const Snapshot& snapshot, const Policy& policy) {
  v1::ScheduleRequest request;
  *request.mutable_snapshot() = edge::ToProto(snapshot);
  *request.mutable_policy() = edge::ToProto(policy);
  return edge::SerializeDeterministic(request);
}

// The one answer writer, into a fresh message.
v1::FairShareResponse Answer(FairShareResult result) {
  v1::FairShareResponse proto;
  edge::ToProto(std::move(result), &proto);
  return proto;
}

v1::ScheduleResponse Answer(ScheduleResult result) {
  v1::ScheduleResponse proto;
  edge::ToProto(std::move(result), &proto);
  return proto;
}

// The hooks of a call whose caller gives up at the `after`-th time the core asks.
CycleHooks CancelledAfter(int after, int* asked) {
  CycleHooks hooks;
  hooks.cancelled = [after, asked] { return ++*asked > after; };
  return hooks;
}

// A cancelled call answers Cancelled, or (cancelled after its last poll) the same answer.
template <typename Result>
void CheckCancelled(const absl::StatusOr<Result>& cancelled, const absl::StatusOr<Result>& whole,
                    const char* kind) {
  if (cancelled.status().code() == absl::StatusCode::kCancelled) return;
  Require(cancelled.status() == whole.status(),
          std::string(kind) + " cancelled answered " + cancelled.status().ToString() +
              " where the whole call answered " + whole.status().ToString());
  if (!whole.ok()) return;
  Require(edge::SerializeDeterministic(Answer(*cancelled)) ==
              edge::SerializeDeterministic(Answer(*whole)),
          std::string(kind) + " answered differently after a cancellation that did not stop it");
}

// The server's decoder with its default limits: refused by a limit, or the same as unlimited.
void CheckLimitedDecoder(std::string_view bytes, bool decoded, const std::string& model) {
  Snapshot snapshot;
  Policy policy;
  const absl::Status limited =
      edge::DecodeRequest(bytes, edge::RequestLimits(), "request", &snapshot, &policy);
  if (absl::StrContains(limited.message(), "(--max-")) {
    Require(limited.code() == absl::StatusCode::kResourceExhausted ||
                limited.code() == absl::StatusCode::kInvalidArgument,
            "a limit answered " + limited.ToString());
    return;
  }
  Require(limited.ok() == decoded, "the limited decoder answered " + limited.ToString() +
                                       " where the unlimited one " +
                                       (decoded ? "accepted" : "rejected"));
  if (decoded) {
    Require(ModelBytes(snapshot, policy) == model,
            "the limited decoder built another model than the unlimited one");
  }
}

void Run(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  Snapshot snapshot;
  Policy policy;
  const bool decoded = edge::DecodeRequest(bytes, &snapshot, &policy);
  CheckLimitedDecoder(bytes, decoded, decoded ? ModelBytes(snapshot, policy) : "");
  v1::ScheduleRequest request;
  const bool parsed = request.ParseFromArray(data, static_cast<int>(size));
  Require(decoded == parsed, std::string("the request decoder ") +
                                 (decoded ? "accepted" : "rejected") + " bytes protobuf " +
                                 (parsed ? "accepted" : "rejected"));
  if (!parsed) return;
  Require(ModelBytes(snapshot, policy) == testing::CanonicalRequestBytes(request),
          "the request decoder built another model than the message protobuf parsed");

  const absl::Status fair_share_validation =
      ValidateRequest(snapshot, policy, RequestKind::kFairShares);
  const absl::Status schedule_validation =
      ValidateRequest(snapshot, policy, RequestKind::kSchedule);
  if (!fair_share_validation.ok()) CheckRejection(fair_share_validation, "fair-share");
  if (!schedule_validation.ok()) CheckRejection(schedule_validation, "schedule");
  // Schedule checks everything ComputeFairShares checks, in the same order, then §1 item 6.
  if (!fair_share_validation.ok()) {
    Require(schedule_validation == fair_share_validation,
            "Schedule validation answered " + schedule_validation.ToString() +
                " where fair-share validation said " + fair_share_validation.ToString());
  }

  const absl::StatusOr<FairShareResult> shares = ComputeFairShares(snapshot, policy);
  CheckAgreesWithValidation(shares, fair_share_validation, "ComputeFairShares");
  if (shares.ok()) CheckShares(Answer(*shares).queues(), request);

  const absl::StatusOr<ScheduleResult> result = Schedule(snapshot, policy);
  CheckAgreesWithValidation(result, schedule_validation, "Schedule");
  if (result.ok()) {
    const v1::ScheduleResponse response = Answer(*result);
    CheckShares(response.queues(), request);
    CheckScheduleAnswer(request, response);
  }

  // Cancelled at a poll chosen by the input's size and first bytes: early polls stop between
  // phases, later ones inside the loops.
  const int after = static_cast<int>((size * 31 + (size > 0 ? data[0] : 0)) % 97);
  int asked = 0;
  CheckCancelled(ComputeFairShares(snapshot, policy, CancelledAfter(after, &asked)), shares,
                 "ComputeFairShares");
  asked = 0;
  CheckCancelled(Schedule(snapshot, policy, CancelledAfter(after, &asked)), result, "Schedule");
}

}  // namespace
}  // namespace arbiter::fuzz

// Protobuf logs every string field that is not UTF-8 when parsing; the fuzzer makes many.
extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > (size_t{1} << 30)) return 0;  // far above any -max_len; keeps the int cast exact
  arbiter::fuzz::Run(data, size);
  return 0;
}
