#include "core/kai/eviction_loop.h"

#include <memory>
#include <utility>
#include <vector>

#include "core/kai/pending_reasons.h"
#include "core/kai/placement.h"
#include "core/kai/queue_order.h"
#include "core/kai/quota_check.h"
#include "core/kai/solver.h"
#include "core/kai/victims.h"

namespace arbiter::kai {

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
  std::unique_ptr<VictimOrder> shared;  // built lazily, refreshed when the state changes
  CancelPoll& poll = session.poll();
  SearchCounters& counters = session.counters();
  counters = SearchCounters{};
  for (int group = order.Next(); group >= 0; group = order.Next()) {
    // Cancelled: stop between candidates (the solver rolls back its own tries).
    if (poll.Tick(PlacementWork(cluster, group))) break;
    const Unit unit = order.unit(group);
    ++counters.candidates;
    if (std::optional<std::string> skip = action.Precheck(group, unit)) {
      session.reasons().AppendOutcome(group, action.name(), *skip);
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
    const Solver::Outcome outcome = solver.Solve(group, unit, &victims);
    if (poll.cancelled()) break;  // a failure may only mean "stopped": record nothing
    if (outcome == Solver::Outcome::kPlaced) {
      ++counters.placed;
      if (shared != nullptr) shared->Refresh(solver.touched());
      order.Update(group, /*keep=*/true);
      for (int victim : victims) order.Update(victim, /*keep=*/false);
      continue;
    }
    if (outcome == Solver::Outcome::kNeedsNoVictims) {
      order.Update(group, /*keep=*/false);
      continue;
    }
    ++counters.failed;
    session.reasons().RecordOutcome(group, action.name(), "no set of victims lets it fit",
                                    ExplainUnitFailure(session, group, unit));
    order.Update(group, /*keep=*/false);
  }
}

}  // namespace arbiter::kai
