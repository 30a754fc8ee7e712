// ScheduleKueue (SEMANTICS.md §5.4, §5.5, §6 KUEUE): admission rounds and fair-sharing
// preemption in one call, answered as admissions, per-pod evictions and pending reasons.
#include <algorithm>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/kueue/admission.h"
#include "core/kueue/kueue.h"
#include "core/kueue/queue_shares.h"
#include "core/status_macros.h"

namespace arbiter::kueue {
absl::StatusOr<ScheduleResult> ScheduleKueue(const ValidatedSnapshot& request,
                                             const CycleHooks& hooks) {
  RETURN_IF_ERROR(hooks.CheckCancelled("fair_share"));
  CancelPoll poll(&hooks.cancelled);
  poll.set_phase("fair_share");
  QuotaTree tree = QuotaTree::Build(request, &poll);
  if (poll.cancelled()) return poll.status();
  const std::vector<Workload> workloads = CollectWorkloads(request);
  hooks.PhaseDone("fair_share");

  RETURN_IF_ERROR(hooks.CheckCancelled("admission"));
  ASSIGN_OR_RETURN(AdmissionOutcome outcome,
                   RunAdmission(tree, workloads, ResolveStrategies(request.policy()), hooks));
  hooks.PhaseDone("admission");

  RETURN_IF_ERROR(hooks.CheckCancelled("respond"));
  ScheduleResult result;
  result.queues = BuildQueueShares(tree, workloads, outcome.holds_quota);
  for (const AdmissionDecision& decision : outcome.admissions) {
    const Workload& w = workloads[decision.workload];
    result.admissions.push_back(Admission{w.name(), w.group->queue, decision.after_evictions});
  }
  std::vector<const Pod*> pods;
  for (const EvictionDecision& decision : outcome.evictions) {
    const Workload& w = workloads[decision.workload];
    pods.clear();
    for (const Pod& pod : w.group->pods) pods.push_back(&pod);
    std::sort(pods.begin(), pods.end(),
              [](const Pod* a, const Pod* b) { return a->name < b->name; });
    for (const Pod* pod : pods) {
      Eviction eviction;
      eviction.pod_group = w.name();
      eviction.pod = pod->name;
      eviction.node = pod->node_name;
      eviction.reason = decision.reason;
      eviction.preemptor_pod_group = workloads[decision.preemptor].name();
      eviction.message = decision.message;
      result.evictions.push_back(std::move(eviction));
    }
  }
  for (PendingDecision& decision : outcome.pending) {
    result.pending.push_back(PendingPodGroup{workloads[decision.workload].name(),
                                             std::move(decision.reason),
                                             std::move(decision.message)});
  }
  hooks.PhaseDone("respond");
  return result;
}

}  // namespace arbiter::kueue
