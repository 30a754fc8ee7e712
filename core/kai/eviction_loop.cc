#include "core/kai/eviction_loop.h"

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/kai/pending_reasons.h"
#include "core/kai/placement.h"
#include "core/kai/queue_order.h"
#include "core/kai/quota_check.h"
#include "core/kai/solver.h"
#include "core/kai/victims.h"
#include "core/timestamp_format.h"

namespace arbiter::kai {
namespace {

// `action` with min-runtime left out: every victim it could take if no min-runtime protected
// them, in a fresh order per preemptor (the action's shared order when it shares one). Only
// searched, never committed (MinRuntimeOutcome).
class IgnoringMinRuntime final : public EvictionAction {
 public:
  explicit IgnoringMinRuntime(const EvictionAction& action) : action_(action) {}

  std::string_view name() const override { return action_.name(); }
  bool IsCandidate(int group) const override { return action_.IsCandidate(group); }
  EvictionReason reason() const override { return action_.reason(); }
  bool ReplacesVictims() const override { return action_.ReplacesVictims(); }
  int max_victim_groups() const override { return action_.max_victim_groups(); }
  bool MayEvict(int preemptor, int victim) const override {
    return action_.MayEvictIgnoringMinRuntime(preemptor, victim);
  }
  // The action's shared order serves this search too, with only what min-runtime does not
  // decide taken out.
  bool SharesVictimOrder() const override { return action_.SharesVictimOrder(); }
  void PrepareSharedOrder(int preemptor, VictimOrder& order) const override {
    action_.PrepareSharedOrderIgnoringMinRuntime(preemptor, order);
  }
  bool Validate(const Solver& solver, Attempt& attempt) const override {
    return action_.Validate(solver, attempt);
  }
  // The same validator, so the same certainty: the search stops and skips the tries it rejects.
  bool RejectsEveryTryEvicting(const Solver& solver, int preemptor,
                               const std::vector<double>& unit_requests,
                               const std::vector<EvictionUnit>& victims,
                               const std::vector<bool>& open) const override {
    return action_.RejectsEveryTryEvicting(solver, preemptor, unit_requests, victims, open);
  }

 private:
  const EvictionAction& action_;
};

// The outcome of a failed attempt when min-runtime is what protects the victims: a search that
// leaves min-runtime out finds victims for `unit`. Names the action's min-runtime field and when
// the protection of those victims ends (the latest end among them: from then on they may be
// taken). nullopt when no victim the action could take is protected, or when even without
// min-runtime no set of victims lets the unit fit. Leaves the state as it was. `searched`: whether
// the search without min-runtime ran. `failed`: what the failed search did (Solver::Record).
// `shared`: the action's shared victim order when it has one (null: none), used and reset.
std::optional<std::string> MinRuntimeOutcome(Session& session, const QueueChain& chain,
                                             const EvictionAction& action, int group,
                                             const Unit& unit, const Solver::Record& failed,
                                             VictimOrder* shared, bool* searched) {
  *searched = false;
  if (!action.MayProtect()) return std::nullopt;
  const Cluster& cluster = session.cluster();
  bool any_protected = false;
  for (int v = 0; v < cluster.num_groups() && !any_protected; ++v) {
    any_protected =
        v != group && action.MayEvictIgnoringMinRuntime(group, v) && action.IsProtected(group, v);
  }
  if (!any_protected) return std::nullopt;
  IgnoringMinRuntime without(action);
  Solver solver(session, chain, without, without.SharesVictimOrder() ? shared : nullptr,
                /*place_without_victims=*/session.allocate_ran());
  // The failed search's tries that this one would make again, with the same verdict, are not.
  solver.Replay(&failed);
  std::vector<EvictionUnit> chosen;
  *searched = true;
  if (solver.Search(group, unit, &chosen) != Solver::Outcome::kPlaced) return std::nullopt;
  std::optional<Timestamp> until;
  for (const EvictionUnit& victim : chosen) {
    const std::optional<Timestamp> end = action.ProtectedUntil(group, victim.group);
    if (end.has_value() && (!until.has_value() || *until < *end)) until = end;
  }
  if (!until.has_value()) return std::nullopt;
  return absl::StrCat("the victims that would let it fit are protected by ",
                      std::string(action.min_runtime_field()), " until ", FormatTimestamp(*until));
}

}  // namespace

PendingReason ExplainUnitFailure(Session& session, int group, const Unit& unit) {
  const Cluster& cluster = session.cluster();
  WorkingState& state = session.state();
  if (auto breach = CheckQuota(cluster, session.shares(), state, group, unit.requests.data())) {
    return QuotaReason(cluster, *breach);
  }
  const WorkingState::Mark mark = state.Checkpoint();
  const int placed =
      PlaceUnit(session.placer(), state, unit, /*all_pipelined=*/true, &session.poll());
  state.Rollback(mark);
  return ExplainPlacementFailure(cluster, session.feasibility(), session.index(), session.placer(),
                                 unit, placed);
}

void RunEvictionAction(Session& session, const EvictionAction& action) {
  const Cluster& cluster = session.cluster();
  QueueOrder order(cluster, session.shares(), session.state());
  std::vector<int> groups;
  for (int g = 0; g < cluster.num_groups(); ++g) {
    if (action.IsCandidate(g)) groups.push_back(g);
  }
  order.AddAll(groups);
  std::vector<int> victims;
  Solver::Record record;                // what a search that may need explaining did
  std::unique_ptr<VictimOrder> shared;  // built lazily, refreshed when the state changes
  CancelPoll& poll = session.poll();
  SearchCounters& counters = session.counters();
  counters = SearchCounters{};
  for (int group = order.Next(); group >= 0; group = order.Next()) {
    // Cancelled: stop between candidates (the solver rolls back its own tries).
    if (poll.Tick(PlacementWork(cluster, group))) break;
    const Unit unit = order.unit(group);
    const int pods = static_cast<int>(unit.pods.size());
    const size_t notes_before = session.evictions().size();  // the notes this attempt adds
    ++counters.candidates;
    if (std::optional<std::string> skip = action.Precheck(group, unit)) {
      session.reasons().AppendOutcome(group, action.name(), *skip);
      session.TraceAttempt(action.name(), group, pods, "refused", notes_before);
      order.Update(group, /*keep=*/false);
      continue;
    }
    if (action.SharesVictimOrder() && shared == nullptr) {
      shared = std::make_unique<VictimOrder>(
          session, order.chain(), [](int) { return true; }, std::vector<EvictionUnit>{});
      ++counters.victim_orders;
    }
    // A unit that fits with no victim is ALLOCATE's while ALLOCATE is still to run, and stays
    // pending when ALLOCATE is not listed (§4.1). Once ALLOCATE has run, it can only fit thanks
    // to this response's evictions (capacity they release, allocation they lower): the action
    // places it then, pipelined, as §4.8's solver takes a scenario that needs no victim.
    Solver solver(session, order.chain(), action, shared.get(),
                  /*place_without_victims=*/session.allocate_ran());
    victims.clear();
    if (action.MayProtect()) solver.KeepRecord(&record);
    const Solver::Outcome outcome = solver.Solve(group, unit, &victims);
    if (poll.cancelled()) break;  // a failure may only mean "stopped": record nothing
    if (outcome == Solver::Outcome::kPlaced) {
      ++counters.placed;
      if (shared != nullptr) shared->Refresh(solver.touched());
      order.Update(group, /*keep=*/true);
      for (int victim : victims) order.Update(victim, /*keep=*/false);
      session.TraceAttempt(action.name(), group, pods, "placed", notes_before, &solver.restored());
      continue;
    }
    if (outcome == Solver::Outcome::kNeedsNoVictims) {
      session.TraceAttempt(action.name(), group, pods, "fits without victims", notes_before);
      order.Update(group, /*keep=*/false);
      continue;
    }
    ++counters.failed;
    // The counters describe the action's own search; the search that explains a failure by
    // min-runtime is counted apart.
    const SearchCounters search = counters;
    bool searched = false;
    std::optional<std::string> protection = MinRuntimeOutcome(
        session, order.chain(), action, group, unit, record, shared.get(), &searched);
    const int64_t explanation_tries = counters.tries - search.tries;
    const int64_t replayed =
        counters.explanation_tries_replayed - search.explanation_tries_replayed;
    counters = search;
    if (searched) {
      ++counters.explanations;
      counters.explanation_tries += explanation_tries;
      counters.explanation_tries_replayed += replayed;
    }
    if (poll.cancelled()) break;
    session.reasons().RecordOutcome(group, action.name(),
                                    protection.value_or("no set of victims lets it fit"),
                                    ExplainUnitFailure(session, group, unit));
    session.TraceAttempt(action.name(), group, pods, "pending", notes_before);
    order.Update(group, /*keep=*/false);
  }
}

}  // namespace arbiter::kai
