#include "core/kai/kai_schedule.h"

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/kai/allocate.h"
#include "core/kai/consolidate.h"
#include "core/kai/kai_fair_share.h"
#include "core/kai/preempt.h"
#include "core/kai/reclaim.h"
#include "core/kai/response.h"
#include "core/kai/session.h"
#include "core/status_macros.h"

namespace arbiter::kai {
namespace {

absl::Status CheckCancelled(const CycleHooks& hooks, std::string_view next_phase) {
  if (hooks.cancelled && hooks.cancelled()) {
    return absl::CancelledError(absl::StrCat("cancelled before phase ", std::string(next_phase)));
  }
  return absl::OkStatus();
}

void PhaseDone(const CycleHooks& hooks, std::string_view phase) {
  if (hooks.phase_done) hooks.phase_done(phase);
}

std::vector<Action> ActionsOf(const Policy& policy) {
  if (!policy.actions.empty()) return policy.actions;
  return {Action::kAllocate, Action::kConsolidate, Action::kReclaim, Action::kPreempt};
}

std::string_view ActionName(Action action) {
  switch (action) {
    case Action::kAllocate:
      return "allocate";
    case Action::kConsolidate:
      return "consolidate";
    case Action::kReclaim:
      return "reclaim";
    case Action::kPreempt:
      return "preempt";
    default:
      return "unspecified";
  }
}

}  // namespace

absl::StatusOr<ScheduleResult> ScheduleKai(const Snapshot& snapshot, const Policy& policy,
                                           const CycleHooks& hooks) {
  RETURN_IF_ERROR(CheckCancelled(hooks, "fair_share"));
  const KaiFairShare shares = ComputeKaiFairShare(snapshot, policy);
  // The "fair_share" phase also covers interning the snapshot for the cycle.
  Session session(snapshot, policy, shares);
  PhaseDone(hooks, "fair_share");

  for (Action action : ActionsOf(policy)) {
    const std::string_view name = ActionName(action);
    RETURN_IF_ERROR(CheckCancelled(hooks, name));
    switch (action) {
      case Action::kAllocate:
        Allocate(session);
        break;
      case Action::kConsolidate:
        Consolidate(session);
        break;
      case Action::kReclaim:
        Reclaim(session);
        break;
      case Action::kPreempt:
        Preempt(session);
        break;
      default:
        break;  // validation rejects other values
    }
    PhaseDone(hooks, name);
  }

  RETURN_IF_ERROR(CheckCancelled(hooks, "respond"));
  ScheduleResult result = BuildResponse(session);
  result.queues = ToQueueShares(shares);
  PhaseDone(hooks, "respond");
  return result;
}

}  // namespace arbiter::kai
