#include "edge/calls.h"

#include "edge/proto_convert.h"

namespace arbiter::server {

absl::StatusOr<v1::FairShareResponse> CallComputeFairShares(const v1::FairShareRequest& request,
                                                            const CycleHooks& hooks) {
  absl::StatusOr<FairShareResult> result =
      ComputeFairShares(FromProto(request.snapshot()), FromProto(request.policy()), hooks);
  if (!result.ok()) return result.status();
  return ToProto(*result);
}

absl::StatusOr<v1::ScheduleResponse> CallSchedule(const v1::ScheduleRequest& request,
                                                  const CycleHooks& hooks) {
  absl::StatusOr<ScheduleResult> result =
      Schedule(FromProto(request.snapshot()), FromProto(request.policy()), hooks);
  if (!result.ok()) return result.status();
  return ToProto(*result);
}

}  // namespace arbiter::server
