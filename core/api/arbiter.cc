#include "core/api/arbiter.h"

#include "absl/strings/str_cat.h"
#include "core/cancel_poll.h"
#include "core/kai/fair_share_answer.h"
#include "core/kai/kai_fair_share.h"
#include "core/kai/kai_schedule.h"
#include "core/kueue/kueue.h"
#include "core/status_macros.h"
#include "core/validated_snapshot.h"

namespace arbiter {
namespace {

bool IsKueue(const Policy& policy) { return policy.fairness_model == FairnessModel::kKueue; }

// The one validation of a call: the request checked and interned, for either model.
absl::StatusOr<ValidatedSnapshot> Validate(const Snapshot& snapshot, const Policy& policy,
                                           RequestKind kind, const CycleHooks& hooks,
                                           const RequestBounds& bounds) {
  RETURN_IF_ERROR(hooks.CheckCancelled("validate"));
  CancelPoll poll(&hooks.cancelled);
  poll.set_phase("validate");
  absl::StatusOr<ValidatedSnapshot> request =
      ValidatedSnapshot::Validate(snapshot, policy, kind, &poll, bounds);
  if (request.ok()) hooks.PhaseDone("validate");
  return request;
}

}  // namespace

absl::StatusOr<FairShareResult> ComputeFairShares(const Snapshot& snapshot, const Policy& policy,
                                                  const CycleHooks& hooks,
                                                  const RequestBounds& bounds) {
  ASSIGN_OR_RETURN(const ValidatedSnapshot request,
                   Validate(snapshot, policy, RequestKind::kFairShares, hooks, bounds));
  RETURN_IF_ERROR(hooks.CheckCancelled("fair_share"));
  CancelPoll poll(&hooks.cancelled);
  poll.set_phase("fair_share");
  FairShareResult result;
  if (IsKueue(policy)) {
    result.queues = kueue::ComputeKueueShares(request, &poll);
  } else {
    kai::KaiFairShare shares = kai::ComputeKaiFairShare(request, &poll);
    if (!poll.cancelled()) result.rows = kai::ToQueueShareRows(shares);
  }
  if (poll.cancelled()) return poll.status();
  hooks.PhaseDone("fair_share");
  return result;
}

absl::StatusOr<ScheduleResult> Schedule(const Snapshot& snapshot, const Policy& policy,
                                        const CycleHooks& hooks, const RequestBounds& bounds) {
  ASSIGN_OR_RETURN(const ValidatedSnapshot request,
                   Validate(snapshot, policy, RequestKind::kSchedule, hooks, bounds));
  if (IsKueue(policy)) return kueue::ScheduleKueue(request, hooks);
  return kai::ScheduleKai(request, hooks);
}

}  // namespace arbiter
