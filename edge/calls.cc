#include "edge/calls.h"

#include <string>
#include <utility>

#include "core/api/arbiter.h"
#include "edge/proto_convert.h"
#include "edge/request_decoder.h"
#include "edge/request_limits.h"

namespace arbiter::edge {
namespace {

// The request in `bytes` decoded into `snapshot` and `policy`, then "decode" reported.
absl::Status Decode(std::string_view bytes, std::string_view type_name, const CycleHooks& hooks,
                    Snapshot* snapshot, Policy* policy) {
  absl::Status decoded =
      DecodeRequest(bytes, RequestLimits::Unlimited(), type_name, snapshot, policy);
  if (!decoded.ok()) return decoded;
  hooks.PhaseDone("decode");
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<v1::FairShareResponse> CallComputeFairShares(std::string_view request_bytes,
                                                            const CycleHooks& hooks) {
  Snapshot snapshot;
  Policy policy;
  absl::Status decoded = Decode(request_bytes, v1::FairShareRequest::descriptor()->full_name(),
                                hooks, &snapshot, &policy);
  if (!decoded.ok()) return decoded;
  absl::StatusOr<FairShareResult> result = ComputeFairShares(snapshot, policy, hooks);
  if (!result.ok()) return result.status();
  v1::FairShareResponse response;
  ToProto(*std::move(result), &response);
  return response;
}

absl::StatusOr<v1::ScheduleResponse> CallSchedule(std::string_view request_bytes,
                                                  const CycleHooks& hooks) {
  Snapshot snapshot;
  Policy policy;
  absl::Status decoded = Decode(request_bytes, v1::ScheduleRequest::descriptor()->full_name(),
                                hooks, &snapshot, &policy);
  if (!decoded.ok()) return decoded;
  absl::StatusOr<ScheduleResult> result = Schedule(snapshot, policy, hooks);
  if (!result.ok()) return result.status();
  v1::ScheduleResponse response;
  ToProto(*std::move(result), &response);
  return response;
}

absl::StatusOr<v1::FairShareResponse> CallComputeFairShares(const v1::FairShareRequest& request,
                                                            const CycleHooks& hooks) {
  return CallComputeFairShares(request.SerializeAsString(), hooks);
}

absl::StatusOr<v1::ScheduleResponse> CallSchedule(const v1::ScheduleRequest& request,
                                                  const CycleHooks& hooks) {
  return CallSchedule(request.SerializeAsString(), hooks);
}

}  // namespace arbiter::edge
