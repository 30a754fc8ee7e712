#include "core/kai/reclaim.h"

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/echoed_name.h"
#include "core/kai/eviction_action.h"
#include "core/kai/eviction_loop.h"
#include "core/kai/kai_fair_share.h"
#include "core/kai/solver.h"
#include "core/kai/victims.h"
#include "core/quantity_format.h"

namespace arbiter::kai {
namespace {

// a <= b in every resource, -1 in b read as +infinity.
bool AllWithin(const std::vector<double>& a, Row b) {
  for (size_t r = 0; r < a.size(); ++r) {
    if (b[r] != -1 && !(a[r] <= b[r])) return false;
  }
  return true;
}

// The first resource where a > b (-1 in b = +infinity), or -1.
int FirstAbove(const std::vector<double>& a, Row b) {
  for (size_t r = 0; r < a.size(); ++r) {
    if (b[r] != -1 && !(a[r] <= b[r])) return static_cast<int>(r);
  }
  return -1;
}

// One run of ValidateReclaim over a try. `rem` holds, per queue the run has read, its
// allocations at the start of the search less the victim units judged so far; `involved`, per
// queue a victim unit left, the resources that unit requested. The run judges the units of
// `victims` (S, draw order) that `left_out` does not mark (the moved ones, for the validator).
// `explained`, when not null, receives each judged unit's reason and message; null: the run only
// judges.
class ReclaimValidation {
 public:
  ReclaimValidation(const Session& session, const Solver& solver, int preemptor,
                    const std::vector<double>& unit_requests,
                    const std::vector<EvictionUnit>& victims, const std::vector<bool>& left_out,
                    Attempt* explained)
      : session_(session),
        cluster_(session.cluster()),
        tree_(cluster_.tree()),
        shares_(session.shares()),
        r_count_(cluster_.num_resources()),
        preemptor_(preemptor),
        leaf_(cluster_.group(preemptor).queue),
        a_(unit_requests),
        start_(solver.start_allocated()),
        start_np_(solver.start_allocated_np()),
        victims_(victims),
        left_out_(left_out),
        explained_(explained) {}

  // The strategies, for each evicted (not moved) victim unit: victim leaves in name order, each
  // one's units in draw order. Sets each unit's reason and message and takes it out of `rem` up
  // its leaf's path; false as soon as a unit fails both strategies.
  bool JudgeVictims() {
    std::map<int, std::vector<size_t>> by_leaf;
    for (size_t k = 0; k < victims_.size(); ++k) {
      if (!left_out_[k]) by_leaf[cluster_.group(victims_[k].group).queue].push_back(k);
    }
    for (const auto& [victim_leaf, units] : by_leaf) {
      const int lca = tree_.LowestCommonAncestor(leaf_, victim_leaf);
      const int x = tree_.ChildOnPath(lca, leaf_);
      const int y = tree_.ChildOnPath(lca, victim_leaf);
      for (size_t k : units) {
        if (!JudgeVictimUnit(x, y, k)) return false;
        TakeOut(victim_leaf, victims_[k]);
      }
    }
    return true;
  }

  // On the reclaimer's path, leaf up: the saturation guard against every sibling the victims
  // touched, and for a non-preemptible reclaimer, its non-preemptible work within deserved.
  bool CheckReclaimerPath() {
    double m = session_.policy().reclaimer_utilization_multiplier;
    if (m == 0) m = 1;
    const bool non_preemptible = !cluster_.group(preemptor_).preemptible;
    for (int x = leaf_; x >= 0; x = tree_.parent(x)) {
      if (!SaturationGuardHolds(x, m)) return false;
      if (non_preemptible) {
        std::vector<double> np(&start_np_[x * r_count_], &start_np_[x * r_count_] + r_count_);
        for (int r = 0; r < r_count_; ++r) np[r] += a_[r];
        if (!AllWithin(np, shares_.queues[x].deserved)) return false;
      }
    }
    return true;
  }

 private:
  std::vector<double>& Read(int q) {
    auto it = rem_.find(q);
    if (it == rem_.end()) {
      it = rem_.emplace(q, StartOf(q)).first;
    }
    return it->second;
  }
  std::vector<double> StartOf(int q) const {
    return std::vector<double>(&start_[q * r_count_], &start_[q * r_count_] + r_count_);
  }

  // Victim unit k, with x and y the children of the lowest common ancestor on the reclaimer's
  // and the victim's side: fair-share reclaim when y is above its allocatable share, else quota
  // reclaim when x with the unit stays within deserved and y is above its deserved.
  bool JudgeVictimUnit(int x, int y, size_t k) {
    std::vector<double>& rem_y = Read(y);
    const QueueAmounts& ay = shares_.queues[y];
    std::vector<double> x_with(StartOf(x));
    for (int r = 0; r < r_count_; ++r) x_with[r] += a_[r];
    const bool fair = !AllWithin(rem_y, ay.allocatable_share);
    const bool quota =
        AllWithin(x_with, shares_.queues[x].deserved) && !AllWithin(rem_y, ay.deserved);
    if (!fair && !quota) return false;
    if (explained_ == nullptr) return true;
    const std::string y_name = CappedName(tree_.queue(y).name);
    const std::string p_name = CappedName(cluster_.group_name(preemptor_));
    if (fair) {
      const int r = FirstAbove(rem_y, ay.allocatable_share);
      explained_->reasons[k] = EvictionReason::kFairShareReclaim;
      explained_->messages[k] =
          absl::StrCat("reclaimed for ", p_name, ": queue ", y_name, " holds ",
                       FormatQuantity(rem_y[r]), " ", CappedName(cluster_.resources().name(r)),
                       ", above its allocatable share ", FormatQuantity(ay.allocatable_share[r]));
    } else {
      const int r = FirstAbove(rem_y, ay.deserved);
      explained_->reasons[k] = EvictionReason::kQuotaReclaim;
      explained_->messages[k] =
          absl::StrCat("reclaimed for ", p_name, ": queue ", y_name, " holds ",
                       FormatQuantity(rem_y[r]), " ", CappedName(cluster_.resources().name(r)),
                       ", above its deserved ", FormatQuantity(ay.deserved[r]));
    }
    return true;
  }

  // Takes `unit`'s requests out of `rem` on every queue from `victim_leaf` up, marking the
  // resources it requested as involved there.
  void TakeOut(int victim_leaf, const EvictionUnit& unit) {
    std::vector<double> unit_requests(r_count_, 0.0);
    for (int pod : unit.pods) {
      const double* requests = cluster_.requests(pod);
      for (int r = 0; r < r_count_; ++r) unit_requests[r] += requests[r];
    }
    for (int q = victim_leaf; q >= 0; q = tree_.parent(q)) {
      std::vector<double>& rem_q = Read(q);
      std::vector<bool>& inv = involved_[q];
      inv.resize(r_count_, false);
      for (int r = 0; r < r_count_; ++r) {
        rem_q[r] -= unit_requests[r];
        if (unit_requests[r] > 0) inv[r] = true;
      }
    }
  }

  // The saturation guard at x: false when, on a resource the unit requests or a victim freed,
  // x with the unit is over its fair share and, times m, at least as saturated as a sibling z
  // the victims left (with a fair share above 0).
  bool SaturationGuardHolds(int x, double m) {
    std::vector<double> x_with = Read(x);
    for (int r = 0; r < r_count_; ++r) x_with[r] += a_[r];
    const std::vector<int>& siblings =
        tree_.parent(x) < 0 ? tree_.roots() : tree_.children(tree_.parent(x));
    for (int z : siblings) {
      if (z == x || rem_.find(z) == rem_.end()) continue;
      const std::vector<double>& rem_z = rem_.at(z);
      const std::vector<bool>* inv = involved_.count(z) ? &involved_.at(z) : nullptr;
      for (int r = 0; r < r_count_; ++r) {
        if (!(a_[r] > 0) && (inv == nullptr || !(*inv)[r])) continue;
        const double fs_x = shares_.queues[x].fair_share[r];
        const double fs_z = shares_.queues[z].fair_share[r];
        const double rho_x = Saturation(x_with[r], fs_x);
        const double rho_z = Saturation(rem_z[r], fs_z);
        if (rho_x > 1 && fs_z > 0 && rho_x * m >= rho_z) return false;
      }
    }
    return true;
  }

  const Session& session_;
  const Cluster& cluster_;
  const QueueTree& tree_;
  const KaiFairShare& shares_;
  const int r_count_;
  const int preemptor_;
  const int leaf_;                    // the reclaimer's leaf
  const std::vector<double>& a_;      // unitReq(P)
  const std::vector<double>& start_;  // queues × R at the start of the search
  const std::vector<double>& start_np_;
  const std::vector<EvictionUnit>& victims_;
  const std::vector<bool>& left_out_;
  Attempt* explained_;
  std::map<int, std::vector<double>> rem_;
  std::map<int, std::vector<bool>> involved_;
};

}  // namespace

bool ValidateReclaim(const Session& session, const Solver& solver, Attempt& attempt) {
  ReclaimValidation validation(session, solver, attempt.preemptor, attempt.unit_requests,
                               attempt.victims, attempt.moved, &attempt);
  return validation.JudgeVictims() && validation.CheckReclaimerPath();
}

bool ReclaimRejectsEveryTryEvicting(const Session& session, const Solver& solver, int preemptor,
                                    const std::vector<double>& unit_requests,
                                    const std::vector<EvictionUnit>& victims,
                                    const std::vector<bool>& open) {
  // The strategies alone, which only get stricter as more units are evicted: a unit is judged on
  // `rem` of its side, the start allocations less the units judged before it (victim leaves in
  // name order, each leaf's units in the order of S). A try that evicts more units judges each
  // evicted one here after the same units and maybe more, each request non-negative, so its `rem`
  // is at most this run's (a difference rounds monotonically); neither strategy holds for a smaller
  // `rem` when it fails for a larger one, and the try fails at that unit or before it. The
  // saturation guard is left out: fewer units left in a queue on the reclaimer's side can make
  // it pass.
  ReclaimValidation validation(session, solver, preemptor, unit_requests, victims, open, nullptr);
  return !validation.JudgeVictims();
}

namespace {

// §4.10: a group whose leaf stays within its fair share with the unit may evict groups of other
// leaves, outside their reclaim min-runtime unless elastic, when ValidateReclaim accepts the try.
class ReclaimAction final : public EvictionAction {
 public:
  explicit ReclaimAction(Session& session);

  std::string_view name() const override { return "reclaim"; }
  // The reclaimer's leaf must stay within its fair share with the unit, and a non-preemptible
  // reclaimer's non-preemptible work within deserved.
  std::optional<std::string> Precheck(int group, const Unit& unit) const override;

  EvictionReason reason() const override { return EvictionReason::kFairShareReclaim; }
  bool ReplacesVictims() const override {
    return session_.policy().consolidating_reclaim.value_or(true);
  }
  bool MayEvict(int preemptor, int victim) const override {
    if (!MayEvictIgnoringMinRuntime(preemptor, victim)) return false;
    // A protected group is a victim only if elastic (§0: more than g pods not RELEASING), and
    // then a scenario must leave it g active pods (§4.7, the solver's validation).
    return cluster_.group(victim).elastic() || !IsProtected(preemptor, victim);
  }
  bool MayEvictIgnoringMinRuntime(int preemptor, int victim) const override {
    return cluster_.group(victim).queue != cluster_.group(preemptor).queue;
  }
  std::optional<Timestamp> ProtectedUntil(int preemptor, int victim) const override {
    const int victim_leaf = cluster_.group(victim).queue;
    if (!under_min_runtime_[victim_leaf]) return std::nullopt;
    return kai::ProtectedUntil(
        session_, victim,
        ReclaimMinRuntime(session_, cluster_.group(preemptor).queue, victim_leaf));
  }
  bool MayProtect() const override { return !protectable_.empty(); }
  std::string_view min_runtime_field() const override { return "reclaim_min_runtime"; }
  // A victim's eligibility depends on the reclaimer only through its leaf and, for groups a
  // reclaim min-runtime may protect, through the min-runtime resolved from both leaves. So one
  // order over every victim is shared, and each reclaimer takes out its own leaf and the groups
  // protected from it.
  bool SharesVictimOrder() const override { return true; }
  void PrepareSharedOrder(int preemptor, VictimOrder& order) const override;
  // Without min-runtime a victim's eligibility depends on the reclaimer only through its leaf.
  void PrepareSharedOrderIgnoringMinRuntime(int preemptor, VictimOrder& order) const override {
    order.ExcludeLeaf(cluster_.group(preemptor).queue);
  }
  bool Validate(const Solver& solver, Attempt& attempt) const override {
    return ValidateReclaim(session_, solver, attempt);
  }
  bool RejectsEveryTryEvicting(const Solver& solver, int preemptor,
                               const std::vector<double>& unit_requests,
                               const std::vector<EvictionUnit>& victims,
                               const std::vector<bool>& open) const override {
    return ReclaimRejectsEveryTryEvicting(session_, solver, preemptor, unit_requests, victims,
                                          open);
  }

 private:
  Session& session_;
  const Cluster& cluster_;
  // Per queue: whether some queue from it up to the top sets a reclaim min-runtime. Where none
  // does, no reclaimer's min-runtime reaches its groups (ReclaimMinRuntime walks up from below
  // the LCA).
  std::vector<bool> under_min_runtime_;
  // The groups a reclaim min-runtime could protect: preemptible, some RUNNING pod with a start
  // time, under a queue that sets one. Whether they are protected from a reclaimer is checked
  // per reclaimer.
  std::vector<int> protectable_;
};

ReclaimAction::ReclaimAction(Session& session)
    : session_(session),
      cluster_(session.cluster()),
      under_min_runtime_(cluster_.tree().size(), false) {
  const QueueTree& tree = cluster_.tree();
  for (int q : tree.top_down()) {
    under_min_runtime_[q] = tree.queue(q).reclaim_min_runtime.has_value() ||
                            (tree.parent(q) >= 0 && under_min_runtime_[tree.parent(q)]);
  }
  for (int g = 0; g < cluster_.num_groups(); ++g) {
    const ClusterGroup& info = cluster_.group(g);
    if (!info.preemptible || !under_min_runtime_[info.queue]) continue;
    for (int p = info.first_pod; p < info.first_pod + info.pod_count; ++p) {
      if (cluster_.pod(p).phase == PodPhase::kRunning && cluster_.pod(p).pod->start_time) {
        protectable_.push_back(g);
        break;
      }
    }
  }
}

std::optional<std::string> ReclaimAction::Precheck(int group, const Unit& unit) const {
  const int leaf = cluster_.group(group).queue;
  const QueueAmounts& amounts = session_.shares().queues[leaf];
  const double* allocated = session_.state().allocated(leaf);
  for (int r = 0; r < cluster_.num_resources(); ++r) {
    if (!(allocated[r] + unit.requests[r] <= amounts.fair_share[r])) {
      return absl::StrCat(
          "queue ", CappedName(cluster_.tree().queue(leaf).name),
          " would exceed its fair share of ", CappedName(cluster_.resources().name(r)), ": ",
          FormatQuantity(allocated[r]), " allocated + ", FormatQuantity(unit.requests[r]),
          " requested > ", FormatQuantity(amounts.fair_share[r]));
    }
  }
  // §4.10's validator ends with this test, on every queue from the leaf to the top, and it does
  // not depend on the victims: when it fails, every try fails, so no victim is searched.
  if (!cluster_.group(group).preemptible) {
    for (int q = leaf; q >= 0; q = cluster_.tree().parent(q)) {
      const Row deserved = session_.shares().queues[q].deserved;
      const double* np = session_.state().allocated_np(q);
      for (int r = 0; r < cluster_.num_resources(); ++r) {
        if (deserved[r] != -1 && !(np[r] + unit.requests[r] <= deserved[r])) {
          return absl::StrCat(
              "queue ", CappedName(cluster_.tree().queue(q).name), " would exceed its deserved ",
              CappedName(cluster_.resources().name(r)), " with non-preemptible work");
        }
      }
    }
  }
  return std::nullopt;
}

void ReclaimAction::PrepareSharedOrder(int preemptor, VictimOrder& order) const {
  const int leaf = cluster_.group(preemptor).queue;
  order.ExcludeLeaf(leaf);
  const WorkingState& state = session_.state();
  session_.poll().Tick(1 + static_cast<int64_t>(protectable_.size()));
  for (int g : protectable_) {
    const ClusterGroup& info = cluster_.group(g);
    if (info.queue == leaf || state.running(g) == 0) continue;
    if (info.elastic()) continue;  // §0: may shrink to g (§4.7), however many pods run
    if (Protected(session_, g, ReclaimMinRuntime(session_, leaf, info.queue))) {
      order.ExcludeGroup(g);
    }
  }
}

}  // namespace

void Reclaim(Session& session) { RunEvictionAction(session, ReclaimAction(session)); }

}  // namespace arbiter::kai
