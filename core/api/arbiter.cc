#include "core/api/arbiter.h"

#include "absl/strings/str_cat.h"
#include "core/kai/kai_fair_share.h"
#include "core/kai/kai_schedule.h"
#include "core/kueue/kueue.h"
#include "core/status_macros.h"
#include "core/validation.h"

namespace arbiter {
namespace {

bool IsKueue(const Policy& policy) { return policy.fairness_model == FairnessModel::kKueue; }

}  // namespace

absl::StatusOr<FairShareResult> ComputeFairShares(const Snapshot& snapshot, const Policy& policy,
                                                  const CycleHooks& hooks) {
  RETURN_IF_ERROR(hooks.CheckCancelled("validate"));
  RETURN_IF_ERROR(ValidateRequest(snapshot, policy, RequestKind::kFairShares));
  hooks.PhaseDone("validate");
  RETURN_IF_ERROR(hooks.CheckCancelled("fair_share"));
  FairShareResult result;
  if (IsKueue(policy)) {
    result.queues = kueue::ComputeKueueShares(snapshot);
  } else {
    result.queues = kai::ToQueueShares(kai::ComputeKaiFairShare(snapshot, policy));
  }
  hooks.PhaseDone("fair_share");
  return result;
}

absl::StatusOr<ScheduleResult> Schedule(const Snapshot& snapshot, const Policy& policy,
                                        const CycleHooks& hooks) {
  RETURN_IF_ERROR(hooks.CheckCancelled("validate"));
  RETURN_IF_ERROR(ValidateRequest(snapshot, policy, RequestKind::kSchedule));
  hooks.PhaseDone("validate");
  if (IsKueue(policy)) return kueue::ScheduleKueue(snapshot, policy, hooks);
  return kai::ScheduleKai(snapshot, policy, hooks);
}

}  // namespace arbiter
