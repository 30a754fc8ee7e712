#include "core/kai/preempt.h"

#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/echoed_name.h"
#include "core/kai/eviction_action.h"
#include "core/kai/victims.h"
#include "core/quantity_format.h"

namespace arbiter::kai {

void Preempt(Session& session) {
  const Cluster& cluster = session.cluster();
  EvictionAction action;
  action.name = "preempt";
  action.candidate = [](int) { return true; };
  // A non-preemptible preemptor must keep non-preemptible work within deserved at every level.
  action.precheck = [&session, &cluster](int group,
                                         const Unit& unit) -> std::optional<std::string> {
    if (cluster.group(group).preemptible) return std::nullopt;
    const QueueTree& tree = cluster.tree();
    for (int q = cluster.group(group).queue; q >= 0; q = tree.parent(q)) {
      const std::vector<double>& deserved = session.shares().queues[q].deserved;
      const double* np = session.state().allocated_np(q);
      for (int r = 0; r < cluster.num_resources(); ++r) {
        if (!(unit.requests[r] > 0) || deserved[r] == -1) continue;
        if (!(np[r] + unit.requests[r] <= deserved[r])) {
          return absl::StrCat("queue ", CappedName(tree.queue(q).name),
                              " would exceed its deserved ",
                              CappedName(cluster.resources().name(r)),
                              " with non-preemptible work: ", FormatQuantity(np[r]),
                              " allocated + ", FormatQuantity(unit.requests[r]),
                              " requested > deserved ", FormatQuantity(deserved[r]));
        }
      }
    }
    return std::nullopt;
  };
  action.options = [&session, &cluster](int group) {
    SolverOptions options;
    options.reason = EvictionReason::kPriorityPreemption;
    const int leaf = cluster.group(group).queue;
    const int priority = cluster.group(group).group->priority;
    options.is_protected = [&session, &cluster](int g) {
      return Protected(session, g, PreemptMinRuntime(session, cluster.group(g).queue));
    };
    options.eligible = [&session, &cluster, leaf, priority, protect = options.is_protected](int g) {
      if (cluster.group(g).queue != leaf) return false;                  // the same leaf only
      if (!(cluster.group(g).group->priority < priority)) return false;  // strictly lower
      const bool elastic = session.state().active(g) > cluster.group(g).gang;
      return elastic || !protect(g);
    };
    options.validate = [&cluster, group, priority](const Solver&, Attempt& attempt) {
      for (size_t k = 0; k < attempt.victims.size(); ++k) {
        const int victim = attempt.victims[k].group;
        attempt.messages[k] =
            absl::StrCat("preempted for ", CappedName(cluster.group_name(group)), ": priority ",
                         priority, " over ", cluster.group(victim).group->priority, " in queue ",
                         CappedName(cluster.tree().queue(cluster.group(victim).queue).name));
      }
      return true;
    };
    return options;
  };
  RunEvictionAction(session, action);
}

}  // namespace arbiter::kai
