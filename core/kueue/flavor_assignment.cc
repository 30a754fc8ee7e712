#include "core/kueue/flavor_assignment.h"

#include <algorithm>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/echoed_name.h"
#include "core/kueue/nomination.h"
#include "core/kueue/pending_reasons.h"
#include "core/taints.h"

namespace arbiter::kueue {
namespace {

// How a flavor's quota of one resource would be reached (§5.8.6), best last.
enum class Kind { kNoCandidates = 1, kPreempt = 2, kReclaim = 3, kFit = 4 };

struct Mode {
  Kind kind = Kind::kFit;
  int level = 0;  // Kueue's borrowing level: the height of the node the quota comes from
};

// NoFit outcomes of one flavor, by severity (§5.8.6): a higher value is more severe.
enum Severity { kNone = 0, kInsufficient = 1, kExceeds = 2, kIncompatible = 3 };

const char* ReasonOf(Severity severity) {
  switch (severity) {
    case kInsufficient:
      return kInsufficientQuota;
    case kExceeds:
      return kExceedsMaxQuota;
    case kIncompatible:
      return kNoMatchingFlavor;
    case kNone:
      break;
  }
  return "";
}

// One resource of one flavor: a mode, or a NoFit severity with its sentence.
struct Classified {
  Mode mode;
  Severity no_fit = kNone;
  std::string why;
  // Only the preemption oracle can tell the mode, and it has not run (Assigner::AssignGroup):
  // `mode` is then a placeholder that is not a fit, and `cell`, `amount` what to ask.
  bool deferred = false;
  int cell = -1;
  double amount = 0;
};

// One flavor tried for one (pod set, group).
struct Attempt {
  int flavor = -1;        // index in the group's flavors
  Mode mode;              // the worst over the group's resources (once none is deferred)
  bool deferred = false;  // some resource waits for the oracle
  std::vector<Classified> per_resource;
};

std::string PodSetLabel(std::string_view name) {
  return absl::StrCat("pod set \"", CappedName(name), "\"");
}

std::string TaintText(const Taint& taint) {
  return absl::StrCat(CappedName(taint.key), taint.value.empty() ? "" : "=",
                      CappedName(taint.value), ":", taint.effect);
}

class Assigner {
 public:
  Assigner(const PreemptionContext& context, const Workload& w, const FlavorPin* pin)
      : context_(context),
        tree_(*context.tree),
        cells_(tree_.cells()),
        w_(w),
        x_(w.cq),
        queue_(tree_.queues().queue(x_)),
        pin_(pin) {
    const FlavorFungibility& fungibility = queue_.flavor_fungibility;
    borrow_tries_next_ = fungibility.when_can_borrow == WhenCanBorrow::kTryNextFlavor;
    preempt_tries_next_ = fungibility.when_can_preempt != WhenCanPreempt::kMayStopSearch;
    preemption_first_ = fungibility.preference == FlavorPreference::kPreemptionOverBorrowing;
    const ReclaimWithinCohort reclaim = queue_.kueue_preemption.reclaim_within_cohort;
    reclaims_while_borrowing_ =
        reclaim != ReclaimWithinCohort::kUnspecified && reclaim != ReclaimWithinCohort::kNever;
    group_of_.assign(cells_.resource_count(), -1);
    for (size_t g = 0; g < queue_.resource_groups.size(); ++g) {
      for (const std::string& name : queue_.resource_groups[g].covered_resources) {
        const int r = tree_.resources().Find(name);
        if (r >= 0) group_of_[r] = static_cast<int>(g);
      }
    }
  }

  FlavorAssignment Run();

 private:
  std::tuple<bool, int, int> Key(const Mode& m) const {
    const int rank = static_cast<int>(m.kind);
    if (preemption_first_) return {m.kind != Kind::kNoCandidates, -m.level, rank};
    return {m.kind != Kind::kNoCandidates, rank, -m.level};
  }
  bool Better(const Mode& a, const Mode& b) const { return Key(a) > Key(b); }
  bool TryNext(const Mode& m) const {
    return m.kind == Kind::kNoCandidates ||
           ((m.kind == Kind::kPreempt || m.kind == Kind::kReclaim) && preempt_tries_next_) ||
           (m.level > 0 && borrow_tries_next_);
  }

  int Level(int cell, double v) const;
  // classify(s, f, r, acc) of §5.8.6 for `cell`, `amount` = acc[cell] + req(s, r). With `quick`
  // (an earlier resource of the flavor is NoFit already) the oracle is not run: only whether the
  // result is NoFit, and why, matters.
  // With `defer`, a result that needs the oracle is returned `deferred`, for Oracle later.
  Classified Classify(int cell, double amount, bool quick, bool defer) const;
  // The oracle's part of classify: the §5.5 search for a probe of w whose usage is `amount` of
  // `cell` alone, on the tree as it is; its targets give the kind and the level after them.
  Mode Oracle(int cell, double amount) const;
  // One (pod set s, group g) of the assignment: the flavors in order (or the pinned one), each
  // tried with TryFlavor, the first that need not try the next or else the best; fills
  // `assigned` and `modes` at the group's resources and `result.pin`. False, with `result`'s
  // NoFit reason and message, when no flavor can hold the pod set's part of the group.
  bool AssignGroup(size_t s, int g, const std::vector<double>& taken, std::vector<int>& assigned,
                   std::vector<Mode>& modes, FlavorAssignment& result);
  // The flavor's outcome for the group's resources `members` (positions in the pod set's
  // request): kNone with the worst mode in `attempt`, or the most severe NoFit and `why`.
  // With `defer`, the oracle is left for later: `attempt` is marked deferred.
  Severity TryFlavor(const PodSet& set, const std::string& flavor, const std::vector<int>& members,
                     const std::vector<double>& taken, bool defer, Attempt* attempt,
                     std::string* why) const;
  // Runs the deferred oracles of `attempt` and folds its worst mode again.
  void Resolve(Attempt* attempt) const;
  // Why flavor `flavor` does not suit pod set `set` (§5.8.5), or "" when it does.
  std::string Incompatibility(const PodSet& set, const std::string& flavor) const;

  const PreemptionContext& context_;
  QuotaTree& tree_;
  const FlavorCells& cells_;
  const Workload& w_;
  int x_;
  const Queue& queue_;
  const FlavorPin* pin_;
  bool borrow_tries_next_ = false;
  bool preempt_tries_next_ = true;
  bool preemption_first_ = false;
  bool reclaims_while_borrowing_ = false;
  std::vector<int> group_of_;  // per resource of R: the group of x covering it, -1 when none
};

int Assigner::Level(int cell, double v) const {
  const int parent = tree_.parent(x_);
  if (parent < 0 || tree_.usage(x_, cell) + v <= tree_.nominal(x_, cell)) return 0;
  double need = v - tree_.LocalAvailable(x_, cell);
  int node = parent;
  while (true) {
    if (tree_.usage(node, cell) + need <= tree_.subtree_quota(node, cell)) {
      return tree_.height(node);
    }
    need -= tree_.LocalAvailable(node, cell);
    if (tree_.parent(node) < 0) return tree_.height(node);
    node = tree_.parent(node);
  }
}

Classified Assigner::Classify(int cell, double amount, bool quick, bool defer) const {
  Classified out;
  const double potential = tree_.PotentialAvailable(x_, cell);
  if (amount > potential) {
    out.no_fit = kExceeds;
    out.why =
        absl::StrCat(NodeLabel(tree_, x_), " can reach at most ", FormatQuantity(potential), " ",
                     tree_.CellName(cell), ", the workload requests ", FormatQuantity(amount));
    return out;
  }
  if (amount <= tree_.Available(x_, cell)) {
    out.mode = Mode{Kind::kFit, Level(cell, amount)};
    return out;
  }
  if (!(tree_.nominal(x_, cell) >= amount || reclaims_while_borrowing_ ||
        MayReclaimInHierarchy(tree_, x_, cell, amount))) {
    out.no_fit = kInsufficient;
    out.why = ShortfallMessage(tree_, x_, cell, amount);
    return out;
  }
  if (quick) return out;
  if (defer) {
    out.mode = Mode{Kind::kNoCandidates, 0};
    out.deferred = true;
    out.cell = cell;
    out.amount = amount;
    return out;
  }
  out.mode = Oracle(cell, amount);
  return out;
}

Mode Assigner::Oracle(int cell, double amount) const {
  Workload probe = w_;
  probe.usage = {ResourceAmount{cell, amount}};
  const std::vector<PreemptionTarget> targets = FindFairSharingTargets(context_, probe, {cell});
  if (targets.empty()) return Mode{Kind::kNoCandidates, Level(cell, amount)};
  bool in_own_queue = false;
  const size_t mark = tree_.Mark();
  for (const PreemptionTarget& target : targets) {
    const Workload& victim = (*context_.workloads)[target.workload];
    in_own_queue = in_own_queue || victim.cq == x_;
    tree_.RemoveUsage(victim.cq, victim.usage);
  }
  const Mode mode{in_own_queue ? Kind::kPreempt : Kind::kReclaim, Level(cell, amount)};
  tree_.Rollback(mark);
  return mode;
}

std::string Assigner::Incompatibility(const PodSet& set, const std::string& flavor) const {
  const ResourceFlavor* declared = cells_.Declared(flavor);
  if (declared == nullptr) return "";
  for (const Pod* pod : set.pods) {
    for (const auto& [key, value] : pod->node_selector) {
      const auto label = declared->node_labels.find(key);
      if (label == declared->node_labels.end() || label->second == value) continue;
      return absl::StrCat("pod ", CappedName(pod->name), " selects ", CappedName(key), "=",
                          CappedName(value), ", the flavor's nodes have ", CappedName(key), "=",
                          CappedName(label->second));
    }
    for (const Taint& taint : declared->node_taints) {
      if (taint.effect != "NoSchedule" && taint.effect != "NoExecute") continue;
      const auto tolerates = [&taint](const Toleration& t) { return Tolerates(t, taint); };
      if (std::any_of(pod->tolerations.begin(), pod->tolerations.end(), tolerates) ||
          std::any_of(declared->tolerations.begin(), declared->tolerations.end(), tolerates)) {
        continue;
      }
      return absl::StrCat("pod ", CappedName(pod->name), " does not tolerate the taint ",
                          TaintText(taint));
    }
  }
  return "";
}

bool Assigner::AssignGroup(size_t s, int g, const std::vector<double>& taken,
                           std::vector<int>& assigned, std::vector<Mode>& modes,
                           FlavorAssignment& result) {
  const PodSet& set = w_.pod_sets[s];
  const Usage& request = set.request;
  const ResourceGroup& group = queue_.resource_groups[g];
  std::vector<int> members;  // positions in `request` of the group's resources, name order
  for (size_t i = 0; i < request.size(); ++i) {
    if (group_of_[request[i].resource] == g) members.push_back(static_cast<int>(i));
  }
  // The oracle's answer only ranks a flavor against others. It is deferred, so that it runs only
  // when that ranking is made:
  // - under the default fungibility and preference (a flavor that needs preemption tries the
  //   next, and any fit beats any preemption), a resource that needs the oracle makes its
  //   flavor's worst mode one that tries the next flavor, whatever the oracle says;
  // - the last flavor that can be tried, with no earlier one left to compare, is taken whatever
  //   its mode.
  // If a later flavor stops the search, or a single flavor remains, no oracle runs; otherwise
  // the flavors that did not stop are resolved and compared in order, as if it had run in place.
  const bool defer_all = preempt_tries_next_ && !preemption_first_;
  const size_t last =
      pin_ != nullptr ? static_cast<size_t>((*pin_)[s][g]) : group.flavors.size() - 1;
  bool found = false;
  Attempt best;
  std::vector<Attempt> passed;  // the flavors that did not stop the search, in order
  Severity least = kNone;       // the least severe NoFit outcome over the flavors tried
  std::vector<std::string> obstacles;
  for (size_t f = 0; f < group.flavors.size(); ++f) {
    if (pin_ != nullptr && (*pin_)[s][g] != static_cast<int>(f)) continue;
    const std::string& flavor = group.flavors[f].flavor;
    Attempt attempt;
    attempt.flavor = static_cast<int>(f);
    std::string why;
    const bool defer = defer_all || (f == last && passed.empty());
    const Severity outcome = TryFlavor(set, flavor, members, taken, defer, &attempt, &why);
    if (outcome != kNone) {
      if (least == kNone || outcome < least) least = outcome;
      obstacles.push_back(absl::StrCat("flavor ", CappedName(flavor), ": ", why));
      continue;
    }
    if (!attempt.deferred && !TryNext(attempt.mode)) {
      best = std::move(attempt);
      found = true;
      break;
    }
    passed.push_back(std::move(attempt));
  }
  if (!found && passed.size() == 1) {
    best = std::move(passed.front());  // its mode ranks it against nothing
    found = true;
  } else if (!found) {
    for (Attempt& attempt : passed) {
      Resolve(&attempt);
      if (!found || Better(attempt.mode, best.mode)) {
        best = std::move(attempt);
        found = true;
      }
    }
  }
  if (!found) {
    std::vector<std::string> names;
    for (int i : members) {
      names.push_back(CappedName(tree_.resources().name(request[i].resource)));
    }
    result.reason = ReasonOf(least);
    result.message =
        absl::StrCat(PodSetLabel(set.name), ": no flavor of ", absl::StrJoin(names, ", "),
                     " can hold it: ", absl::StrJoin(obstacles, "; "));
    return false;
  }
  result.pin[s][g] = best.flavor;
  const std::string& flavor = group.flavors[best.flavor].flavor;
  for (size_t k = 0; k < members.size(); ++k) {
    const int i = members[k];
    assigned[i] = cells_.Find(flavor, request[i].resource);
    modes[i] = best.per_resource[k].mode;
  }
  return true;
}

Severity Assigner::TryFlavor(const PodSet& set, const std::string& flavor,
                             const std::vector<int>& members, const std::vector<double>& taken,
                             bool defer, Attempt* attempt, std::string* why) const {
  *why = Incompatibility(set, flavor);
  if (!why->empty()) return kIncompatible;
  Severity outcome = kNone;
  for (int i : members) {
    const int cell = cells_.Find(flavor, set.request[i].resource);
    Classified c = Classify(cell, taken[cell] + set.request[i].amount, outcome != kNone, defer);
    if (c.no_fit != kNone) {
      if (c.no_fit > outcome) {
        outcome = c.no_fit;
        *why = std::move(c.why);
      }
    } else if (c.deferred) {
      attempt->deferred = true;
    } else if (Better(attempt->mode, c.mode)) {
      attempt->mode = c.mode;
    }
    attempt->per_resource.push_back(std::move(c));
  }
  return outcome;
}

void Assigner::Resolve(Attempt* attempt) const {
  if (!attempt->deferred) return;
  attempt->deferred = false;
  attempt->mode = Mode{Kind::kFit, 0};
  for (Classified& c : attempt->per_resource) {
    if (c.deferred) {
      c.mode = Oracle(c.cell, c.amount);
      c.deferred = false;
    }
    if (Better(attempt->mode, c.mode)) attempt->mode = c.mode;
  }
}

FlavorAssignment Assigner::Run() {
  FlavorAssignment result;
  const std::vector<ResourceGroup>& groups = queue_.resource_groups;
  const std::vector<PodSet>& sets = w_.pod_sets;
  std::vector<double> taken(cells_.size(), 0.0);  // acc: what earlier pod sets take, per cell
  result.cells.resize(sets.size());
  result.pin.assign(sets.size(), std::vector<int>(groups.size(), -1));
  std::vector<char> contested(cells_.size(), 0);
  for (size_t s = 0; s < sets.size(); ++s) {
    const PodSet& set = sets[s];
    const Usage& request = set.request;
    for (const ResourceAmount& amount : request) {
      if (group_of_[amount.resource] >= 0) continue;
      result.reason = kResourceNotCovered;
      result.message = absl::StrCat(NodeLabel(tree_, x_), " has no quota for ",
                                    CappedName(tree_.resources().name(amount.resource)),
                                    ", requested by ", PodSetLabel(set.name));
      return result;
    }
    std::vector<int>& assigned = result.cells[s];
    assigned.assign(request.size(), -1);
    std::vector<Mode> modes(request.size());
    // The groups the pod set requests from, by the smallest name each covers of its request.
    std::vector<int> order;
    for (const ResourceAmount& amount : request) {
      const int g = group_of_[amount.resource];
      if (std::find(order.begin(), order.end(), g) == order.end()) order.push_back(g);
    }
    for (int g : order) {
      if (!AssignGroup(s, g, taken, assigned, modes, result)) return result;
    }
    for (size_t i = 0; i < request.size(); ++i) {
      taken[assigned[i]] += request[i].amount;
      if (modes[i].kind != Kind::kFit) contested[assigned[i]] = 1;
    }
  }
  // usage = Σ over pod sets in name order, per cell.
  std::vector<double> sums(cells_.size(), 0.0);
  for (size_t s = 0; s < sets.size(); ++s) {
    for (size_t i = 0; i < sets[s].request.size(); ++i) {
      sums[result.cells[s][i]] += sets[s].request[i].amount;
    }
  }
  for (int cell = 0; cell < cells_.size(); ++cell) {
    if (sums[cell] > 0) result.usage.push_back(ResourceAmount{cell, sums[cell]});
    if (contested[cell]) result.contested.push_back(cell);
  }
  result.mode =
      result.contested.empty() ? FlavorAssignment::Mode::kFit : FlavorAssignment::Mode::kPreempt;
  return result;
}

}  // namespace

FlavorAssignment AssignFlavors(const PreemptionContext& context, const Workload& workload,
                               const FlavorPin* pin) {
  return Assigner(context, workload, pin).Run();
}

PodSetCells ImplicitCells(const Workload& workload) {
  PodSetCells cells(workload.pod_sets.size());
  for (size_t s = 0; s < workload.pod_sets.size(); ++s) {
    for (const ResourceAmount& amount : workload.pod_sets[s].request) {
      cells[s].push_back(amount.resource);
    }
  }
  return cells;
}

}  // namespace arbiter::kueue
