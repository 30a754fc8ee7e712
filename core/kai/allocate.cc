#include "core/kai/allocate.h"

#include <vector>

#include "core/kai/queue_order.h"
#include "core/kai/quota_check.h"

namespace arbiter::kai {
namespace {

// One attempt for G's unit; true when it was placed and committed.
bool TryUnit(Session& session, int group, const Unit& unit) {
  const Cluster& cluster = session.cluster();
  WorkingState& state = session.state();
  if (auto breach = CheckQuota(cluster, session.shares(), state, group, unit.requests.data())) {
    session.reasons().Record(group, QuotaReason(cluster, *breach));
    return false;
  }
  const WorkingState::Mark mark = state.Checkpoint();
  const int placed =
      PlaceUnit(session.placer(), state, unit, /*all_pipelined=*/false, &session.poll());
  if (placed < static_cast<int>(unit.pods.size())) {
    state.Rollback(mark);
    if (session.poll().cancelled()) return false;  // the answer is discarded: explain nothing
    session.reasons().Record(
        group, ExplainPlacementFailure(cluster, session.feasibility(), session.index(),
                                       session.placer(), unit, placed));
    return false;
  }
  // KAI pipelines a gang as a whole: once G has a pipelined pod, a unit that leaves fewer than g
  // pods running or bound now becomes pipelined too (§4.5).
  const bool has_pipelined = state.bound(group) - state.bound_now(group) + state.moved(group) > 0;
  if (has_pipelined && state.running(group) + state.bound_now(group) < cluster.group(group).gang) {
    for (int pod : unit.pods) state.MarkPipelined(pod);
  }
  state.Commit(mark);
  return true;
}

}  // namespace

void Allocate(Session& session) {
  const Cluster& cluster = session.cluster();
  QueueOrder order(cluster, session.shares(), session.state());
  std::vector<int> groups;
  groups.reserve(cluster.num_groups());
  for (int g = 0; g < cluster.num_groups(); ++g) groups.push_back(g);
  order.AddAll(groups);
  for (int group = order.Next(); group >= 0; group = order.Next()) {
    // Cancelled: stop between attempts, every statement closed.
    if (session.poll().Tick(PlacementWork(cluster, group))) break;
    const int pods = static_cast<int>(order.unit(group).pods.size());
    const bool placed = TryUnit(session, group, order.unit(group));
    if (session.poll().cancelled()) break;
    // ALLOCATE evicts nothing: no note is the attempt's.
    session.TraceAttempt("allocate", group, pods, placed ? "placed" : "pending",
                         session.evictions().size());
    order.Update(group, /*keep=*/placed);
  }
  session.set_allocate_ran();
}

}  // namespace arbiter::kai
