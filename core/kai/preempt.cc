#include "core/kai/preempt.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/echoed_name.h"
#include "core/kai/eviction_action.h"
#include "core/kai/eviction_loop.h"
#include "core/kai/victims.h"
#include "core/quantity_format.h"

namespace arbiter::kai {
namespace {

// §4.11: within one leaf, a group may evict preemptible groups of strictly lower priority,
// outside their preempt min-runtime.
class PreemptAction final : public EvictionAction {
 public:
  explicit PreemptAction(Session& session) : session_(session), cluster_(session.cluster()) {
    const QueueTree& tree = cluster_.tree();
    for (int q = 0; q < tree.size() && !any_min_runtime_; ++q) {
      any_min_runtime_ = tree.queue(q).preempt_min_runtime.has_value();
    }
  }

  std::string_view name() const override { return "preempt"; }
  // A non-preemptible preemptor must keep non-preemptible work within deserved at every level.
  std::optional<std::string> Precheck(int group, const Unit& unit) const override;

  EvictionReason reason() const override { return EvictionReason::kPriorityPreemption; }
  bool VictimsInOwnLeaf() const override { return true; }
  bool MayEvict(int preemptor, int victim) const override {
    if (!MayEvictIgnoringMinRuntime(preemptor, victim)) return false;
    // A protected group is a victim only if elastic (§0: more than g pods not RELEASING), and
    // then a scenario must leave it g active pods (§4.7, the solver's validation).
    return cluster_.group(victim).elastic() || !IsProtected(preemptor, victim);
  }
  bool MayEvictIgnoringMinRuntime(int preemptor, int victim) const override {
    if (cluster_.group(victim).queue != cluster_.group(preemptor).queue) return false;  // same leaf
    return priority(victim) < priority(preemptor);  // strictly lower
  }
  std::optional<Timestamp> ProtectedUntil(int /*preemptor*/, int victim) const override {
    return kai::ProtectedUntil(session_, victim,
                               PreemptMinRuntime(session_, cluster_.group(victim).queue));
  }
  bool MayProtect() const override { return any_min_runtime_; }
  std::string_view min_runtime_field() const override { return "preempt_min_runtime"; }
  // Every victim's message names the priorities.
  bool Validate(const Solver& solver, Attempt& attempt) const override;

 private:
  int32_t priority(int group) const { return cluster_.group(group).group->priority; }

  Session& session_;
  const Cluster& cluster_;
  bool any_min_runtime_ = false;  // some queue sets a preempt min-runtime
};

std::optional<std::string> PreemptAction::Precheck(int group, const Unit& unit) const {
  if (cluster_.group(group).preemptible) return std::nullopt;
  const QueueTree& tree = cluster_.tree();
  for (int q = cluster_.group(group).queue; q >= 0; q = tree.parent(q)) {
    const Row deserved = session_.shares().queues[q].deserved;
    const double* np = session_.state().allocated_np(q);
    for (int r = 0; r < cluster_.num_resources(); ++r) {
      if (!(unit.requests[r] > 0) || deserved[r] == -1) continue;
      if (!(np[r] + unit.requests[r] <= deserved[r])) {
        return absl::StrCat("queue ", CappedName(tree.queue(q).name), " would exceed its deserved ",
                            CappedName(cluster_.resources().name(r)),
                            " with non-preemptible work: ", FormatQuantity(np[r]), " allocated + ",
                            FormatQuantity(unit.requests[r]), " requested > deserved ",
                            FormatQuantity(deserved[r]));
      }
    }
  }
  return std::nullopt;
}

bool PreemptAction::Validate(const Solver& /*solver*/, Attempt& attempt) const {
  const int preemptor = attempt.preemptor;
  for (size_t k = 0; k < attempt.victims.size(); ++k) {
    const int victim = attempt.victims[k].group;
    attempt.messages[k] =
        absl::StrCat("preempted for ", CappedName(cluster_.group_name(preemptor)), ": priority ",
                     priority(preemptor), " over ", priority(victim), " in queue ",
                     CappedName(cluster_.tree().queue(cluster_.group(victim).queue).name));
  }
  return true;
}

}  // namespace

void Preempt(Session& session) { RunEvictionAction(session, PreemptAction(session)); }

}  // namespace arbiter::kai
