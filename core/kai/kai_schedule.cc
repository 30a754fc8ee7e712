#include "core/kai/kai_schedule.h"

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/cancel_poll.h"
#include "core/kai/allocate.h"
#include "core/kai/consolidate.h"
#include "core/kai/fair_share_answer.h"
#include "core/kai/kai_fair_share.h"
#include "core/kai/preempt.h"
#include "core/kai/reclaim.h"
#include "core/kai/response.h"
#include "core/kai/session.h"
#include "core/status_macros.h"

namespace arbiter::kai {
namespace {

std::vector<Action> ActionsOf(const Policy& policy) {
  if (!policy.actions.empty()) return policy.actions;
  return {Action::kAllocate, Action::kConsolidate, Action::kReclaim, Action::kPreempt};
}

const char* ActionName(Action action) {
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

absl::StatusOr<ScheduleResult> ScheduleKai(const ValidatedSnapshot& request,
                                           const CycleHooks& hooks) {
  const Policy& policy = request.policy();
  RETURN_IF_ERROR(hooks.CheckCancelled("fair_share"));
  CancelPoll poll(&hooks.cancelled);
  poll.set_phase("fair_share");
  const KaiFairShare shares = ComputeKaiFairShare(request, &poll);
  if (poll.cancelled()) return poll.status();
  // The "fair_share" phase also covers laying out the cycle's state.
  Session session(shares, &poll);
  session.set_reference_search(hooks.reference_search);
  session.set_unbounded_search(hooks.unbounded_search);
  session.placer().SetReference(hooks.reference_search);
  session.set_attempt_hook(&hooks.attempt);
  hooks.PhaseDone("fair_share");

  WorkingState::DeviceCounters devices_before;
  for (Action action : ActionsOf(policy)) {
    const char* name = ActionName(action);
    RETURN_IF_ERROR(hooks.CheckCancelled(name));
    poll.set_phase(name);
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
    // The action stopped early and left its answer incomplete.
    if (poll.cancelled()) return poll.status();
    std::vector<std::pair<std::string_view, int64_t>> counters;
    if (action != Action::kAllocate) counters = session.counters().List();
    if (session.cluster().any_sharing()) {
      // GPU sharing's device work in this phase (§4.13).
      const WorkingState::DeviceCounters now = session.state().device_counters();
      counters.push_back({"device_choices", now.choices - devices_before.choices});
      counters.push_back({"devices_joined", now.joined - devices_before.joined});
      counters.push_back({"devices_opened", now.opened - devices_before.opened});
      devices_before = now;
    }
    if (!counters.empty()) hooks.PhaseCounters(name, counters);
    hooks.PhaseDone(name);
  }

  RETURN_IF_ERROR(hooks.CheckCancelled("respond"));
  ScheduleResult result = BuildResponse(session);
  result.queues = ToQueueShares(shares);
  hooks.PhaseDone("respond");
  return result;
}

}  // namespace arbiter::kai
