#include "core/api/arbiter.h"

#include "absl/strings/str_cat.h"
#include "core/cancel_poll.h"
#include "core/kai/kai_fair_share.h"
#include "core/kai/kai_schedule.h"
#include "core/kueue/kueue.h"
#include "core/status_macros.h"
#include "core/validation.h"

namespace arbiter {
namespace {

bool IsKueue(const Policy& policy) { return policy.fairness_model == FairnessModel::kKueue; }

absl::Status Validate(const Snapshot& snapshot, const Policy& policy, RequestKind kind,
                      const CycleHooks& hooks) {
  CancelPoll poll(&hooks.cancelled);
  poll.set_phase("validate");
  return ValidateRequest(snapshot, policy, kind, &poll);
}

}  // namespace

absl::StatusOr<FairShareResult> ComputeFairShares(const Snapshot& snapshot, const Policy& policy,
                                                  const CycleHooks& hooks) {
  RETURN_IF_ERROR(hooks.CheckCancelled("validate"));
  RETURN_IF_ERROR(Validate(snapshot, policy, RequestKind::kFairShares, hooks));
  hooks.PhaseDone("validate");
  RETURN_IF_ERROR(hooks.CheckCancelled("fair_share"));
  CancelPoll poll(&hooks.cancelled);
  poll.set_phase("fair_share");
  FairShareResult result;
  if (IsKueue(policy)) {
    result.queues = kueue::ComputeKueueShares(snapshot, &poll);
  } else {
    kai::KaiFairShare shares = kai::ComputeKaiFairShare(snapshot, policy, &poll);
    if (!poll.cancelled()) result.queues = kai::ToQueueShares(shares);
  }
  if (poll.cancelled()) return poll.status();
  hooks.PhaseDone("fair_share");
  return result;
}

absl::StatusOr<ScheduleResult> Schedule(const Snapshot& snapshot, const Policy& policy,
                                        const CycleHooks& hooks) {
  RETURN_IF_ERROR(hooks.CheckCancelled("validate"));
  RETURN_IF_ERROR(Validate(snapshot, policy, RequestKind::kSchedule, hooks));
  hooks.PhaseDone("validate");
  if (IsKueue(policy)) return kueue::ScheduleKueue(snapshot, policy, hooks);
  return kai::ScheduleKai(snapshot, policy, hooks);
}

}  // namespace arbiter
