// RoomBound::MayHold keeps, per node, the rows of the other nodes its fresh victims free room on,
// and extends them as victims are drawn (solver_bounds.h). Its answers must equal those of a
// bound that sums the rows afresh: a new bound, given the same draws, asked once. Checked over
// generated KAI requests, with every RUNNING preemptible group drawn in group order, one unit per
// group, and the pending groups' units as parts. The quota bound's kept rows and a try's
// evictions of a unit at once are held to their from-scratch forms the same way.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "clients/generator/random.h"
#include "core/kai/kai_fair_share.h"
#include "core/kai/quota_check.h"
#include "core/kai/session.h"
#include "core/kai/solver_bounds.h"
#include "core/kai/unit.h"
#include "core/validation.h"
#include "gtest/gtest.h"
#include "tests/property/kai_case.h"
#include "tests/property/property_support.h"
#include "tests/support/validated.h"

namespace arbiter::testing {
namespace {

using generator::GeneratorModel;
using kai::EvictionUnit;
using kai::PodState;
using kai::RoomBound;
using kai::Session;
using kai::WorkingState;

constexpr int kCases = 200;
constexpr size_t kMaxDraws = 24;

// One unit per RUNNING preemptible group, in group order: its RUNNING pods.
std::vector<EvictionUnit> Victims(const Session& session) {
  const kai::Cluster& cluster = session.cluster();
  const WorkingState& state = session.state();
  std::vector<EvictionUnit> units;
  for (int g = 0; g < cluster.num_groups() && units.size() < kMaxDraws; ++g) {
    if (!cluster.group(g).preemptible || state.running(g) == 0) continue;
    EvictionUnit unit{g, {}};
    const kai::ClusterGroup& info = cluster.group(g);
    for (int p = info.first_pod; p < info.first_pod + info.pod_count; ++p) {
      if (state.pod_state(p) == PodState::kRunning) unit.pods.push_back(p);
    }
    units.push_back(unit);
  }
  return units;
}

// Each group with a PENDING unit, with that unit, in group order.
std::vector<std::pair<int, kai::Unit>> PendingUnits(const Session& session) {
  std::vector<std::pair<int, kai::Unit>> units;
  for (int g = 0; g < session.cluster().num_groups(); ++g) {
    kai::Unit unit;
    if (kai::NextUnit(session.cluster(), session.state(), g, &unit) && !unit.pods.empty()) {
      units.emplace_back(g, std::move(unit));
    }
  }
  return units;
}

std::vector<int> NodesOf(const WorkingState& state, const EvictionUnit& unit) {
  std::vector<int> nodes;
  for (int pod : unit.pods) nodes.push_back(state.pod_node(pod));
  std::sort(nodes.begin(), nodes.end());
  nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
  return nodes;
}

// One try's count to check: a bound kept across the draws of one part (`kept`), and a bound
// given the same draws once (`once`, its rows summed from the start), both for the try on `node`
// after the draw of `fresh`'s last unit (`indices`: the draw indices of `fresh`).
struct TryCount {
  std::string where;
  RoomBound& kept;
  RoomBound& once;
  int part;
  int node;
  const std::vector<int>& indices;
  const std::vector<const EvictionUnit*>& fresh;
};

// Over generated KAI requests, each pending group's unit as the part, with every RUNNING
// preemptible group drawn in group order (one unit each): calls `check` for the try on each node
// of each drawn unit. Parts whose bound does not track tries are left out when `tracking`. Stops
// at the first fatal failure.
void ForEachTryCount(bool tracking, const std::function<void(const TryCount&)>& check) {
  for (uint64_t index = 0; index < kCases; ++index) {
    KaiCase c(index);
    Session& session = c.session;
    const kai::Cluster& cluster = session.cluster();
    const WorkingState& state = session.state();
    const std::vector<EvictionUnit> victims = Victims(session);
    const std::vector<EvictionUnit> none;
    auto eligible = [](int) { return true; };
    for (const auto& pending : PendingUnits(session)) {
      const int g = pending.first;
      const kai::Unit& unit = pending.second;
      const int part = static_cast<int>(unit.pods.size());
      RoomBound kept(session, unit, part, none, eligible, &session.room_scratch());
      if (tracking && !kept.TracksTries()) continue;
      std::vector<std::vector<int>> on_node(cluster.num_nodes());
      for (size_t d = 0; d < victims.size(); ++d) {
        const std::vector<int> nodes = NodesOf(state, victims[d]);
        kept.AddDrawn(victims[d], nodes);
        for (int node : nodes) on_node[node].push_back(static_cast<int>(d));
        for (int node : nodes) {
          std::vector<const EvictionUnit*> fresh;
          for (int k : on_node[node]) fresh.push_back(&victims[k]);
          RoomBound once(session, unit, part, none, eligible, &session.room_scratch());
          for (size_t e = 0; e <= d; ++e) once.AddDrawn(victims[e], NodesOf(state, victims[e]));
          const std::string where = absl::StrCat(DescribeCase(index, c.options), " group ", g,
                                                 " draw ", d, " node ", node);
          check(TryCount{where, kept, once, part, node, on_node[node], fresh});
          if (::testing::Test::HasFatalFailure()) return;
        }
      }
    }
  }
}

TEST(RoomBound, KeptRowsOfOtherNodesAnswerAsRowsSummedAfresh) {
  int compared = 0;
  int ruled_out = 0;
  ForEachTryCount(/*tracking=*/false, [&](const TryCount& t) {
    const bool answer = t.kept.MayHold(t.node, t.indices, t.fresh);
    ASSERT_EQ(answer, t.once.MayHold(t.node, t.indices, t.fresh)) << t.where;
    ++compared;
    if (!answer) ++ruled_out;
  });
  // The comparison means something only when the rows decide some answers.
  EXPECT_GE(compared, kCases);
  EXPECT_GE(ruled_out, kCases / 4);
}

// RoomOrBelow may answer a count below the part from the drawn rows alone, without folding the
// other nodes' rows; the search compares it with the part and uses it only when it is not below.
// So it must be Room exactly when Room reaches the part, and below the part, yet not below Room,
// when Room is. Room is asked of a bound given the same draws once (its rows summed afresh).
TEST(RoomBound, RoomOrBelowIsRoomAtThePartAndBoundsItBelow) {
  int64_t below = 0;
  int64_t at_part = 0;
  int64_t bounded = 0;  // below the part, answered above Room: the drawn rows decided
  ForEachTryCount(/*tracking=*/true, [&](const TryCount& t) {
    const int answer = t.kept.RoomOrBelow(t.node, t.indices, t.fresh);
    const int room = t.once.Room(t.node, t.indices, t.fresh);
    if (room >= t.part) {
      ASSERT_EQ(answer, room) << t.where;
      ++at_part;
      return;
    }
    ASSERT_LT(answer, t.part) << t.where;
    ASSERT_GE(answer, room) << t.where;
    ++below;
    if (answer > room) ++bounded;
  });
  EXPECT_GE(below, kCases / 4);
  EXPECT_GE(at_part, kCases / 4);
  // 485 in these cases: the drawn rows decide some of the counts below the part.
  EXPECT_GE(bounded, 100);
}

// The count with every victim evicted walks the groups (a preemptor whose victims lie in its own
// leaf) or the nodes (the others); both must rule out the same parts, for any filter, with or
// without recorded victims, and after committed changes have made nodes leave the node list.
TEST(RoomBound, TheGroupWalkAndTheNodeWalkRuleOutTheSameParts) {
  int compared = 0;
  int ruled_out = 0;
  for (uint64_t index = 0; index < kCases; ++index) {
    KaiCase c(index);
    Session& session = c.session;
    const kai::Cluster& cluster = session.cluster();
    WorkingState& state = session.state();
    generator::Rng rng(index * 7919 + 3);
    if (cluster.num_pods() == 0) continue;
    for (int round = 0; round < 3; ++round) {
      const std::vector<EvictionUnit> victims = Victims(session);
      for (const auto& pending : PendingUnits(session)) {
        const int g = pending.first;
        const kai::Unit& unit = pending.second;
        const int leaf = cluster.group(g).queue;
        const std::function<bool(int)> filters[] = {
            [](int) { return true; },
            [&](int v) { return v != g && cluster.group(v).queue == leaf; },
            [&](int v) { return v != g && (v * 7 + g) % 3 != 0; },
        };
        for (const std::function<bool(int)>& eligible : filters) {
          for (const bool with_r : {false, true}) {
            std::vector<EvictionUnit> chosen;
            if (with_r && !victims.empty()) chosen.push_back(victims[(g + round) % victims.size()]);
            for (int part = 1; part <= static_cast<int>(unit.pods.size()); ++part) {
              const RoomBound by_groups(session, unit, part, chosen, eligible,
                                        &session.room_scratch(), /*one_leaf=*/true);
              const RoomBound by_nodes(session, unit, part, chosen, eligible,
                                       &session.room_scratch(), /*one_leaf=*/false);
              ASSERT_EQ(by_groups.AnyVictimSetMayHold(), by_nodes.AnyVictimSetMayHold())
                  << DescribeCase(index, c.options) << " group " << g << " part " << part
                  << " round " << round;
              ++compared;
              if (!by_nodes.AnyVictimSetMayHold()) ++ruled_out;
            }
          }
        }
      }
      // Committed evictions (as a solution commits them): RUNNING only falls, so the walks may
      // drop nodes and groups for good.
      for (int k = 0; k < 6; ++k) {
        const int pod = static_cast<int>(rng.Below(static_cast<uint64_t>(cluster.num_pods())));
        if (state.pod_state(pod) == PodState::kRunning) state.Evict(pod);
      }
    }
  }
  // The comparison means something only when the count rules some parts out.
  EXPECT_GE(compared, kCases);
  EXPECT_GE(ruled_out, kCases / 4);
}

uint64_t Bits(double value) {
  uint64_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

// QuotaBound::BreachAfter sums, on P's queues, what evicting the victims would take off their
// allocations, without evicting them. Its breach must equal, field for field and bit for bit, the
// one CheckQuota finds once the victims are evicted in a statement. Checked for every pending
// unit and every prefix of the victims (one unit per RUNNING preemptible group, group order).
TEST(QuotaBound, TheBreachAfterVictimsIsTheOneEvictingThemGives) {
  int compared = 0;
  int breaches = 0;
  int lifted = 0;
  for (uint64_t index = 0; index < kCases; ++index) {
    KaiCase c(index);
    Session& session = c.session;
    const kai::Cluster& cluster = session.cluster();
    WorkingState& state = session.state();
    const std::vector<EvictionUnit> victims = Victims(session);
    for (const auto& pending : PendingUnits(session)) {
      const int g = pending.first;
      const kai::Unit& unit = pending.second;
      const int part = static_cast<int>(unit.pods.size());
      const kai::QuotaBound bound(session, g, unit, part, {});
      const std::vector<double> requests = kai::SumRequests(cluster, unit.pods.data(), part);
      bool breached_alone = false;  // a breach with no victim evicted
      for (size_t k = 0; k <= victims.size(); ++k) {
        const std::vector<EvictionUnit> prefix(victims.begin(), victims.begin() + k);
        const WorkingState::Mark mark = state.Checkpoint();
        for (const EvictionUnit& victim : prefix) {
          for (int pod : victim.pods) state.Evict(pod);
        }
        const std::optional<kai::QuotaBreach> evicted =
            kai::CheckQuota(cluster, session.shares(), state, g, requests.data());
        state.Rollback(mark);
        const std::optional<kai::QuotaBreach> summed = bound.BreachAfter(prefix);
        ASSERT_EQ(evicted.has_value(), summed.has_value())
            << "case " << index << " group " << g << " victims " << k;
        ++compared;
        if (k == 0) breached_alone = evicted.has_value();
        if (!evicted.has_value()) {
          if (breached_alone) ++lifted;
          continue;
        }
        ++breaches;
        EXPECT_EQ(evicted->kind, summed->kind);
        EXPECT_EQ(evicted->queue, summed->queue);
        EXPECT_EQ(evicted->resource, summed->resource);
        EXPECT_EQ(Bits(evicted->allocated), Bits(summed->allocated))
            << "case " << index << " group " << g << " victims " << k;
        EXPECT_EQ(evicted->requested, summed->requested);
        EXPECT_EQ(evicted->bound, summed->bound);
      }
    }
  }
  // The comparison means something only with breaches, some of them lifted by victims.
  EXPECT_GE(compared, kCases * 10);
  EXPECT_GE(breaches, kCases);
  EXPECT_GE(lifted, kCases / 4) << "breaches lifted by victims: " << lifted;
}

// QuotaBound::MayLiftOn keeps, per node, R's rows less the node's fresh victims taken off so far.
// Its answers must equal MayLift and LiftedBy, which sum the rows of R and the fresh victims
// afresh. R is the first victim unit; the others are drawn in group order, and every node of each
// draw is asked, as the search asks.
TEST(QuotaBound, KeptRowsOfEachNodeAnswerAsRowsSummedAfresh) {
  int compared = 0;
  int ruled_out = 0;
  int lifted = 0;
  for (uint64_t index = 0; index < kCases; ++index) {
    KaiCase c(index);
    Session& session = c.session;
    const kai::Cluster& cluster = session.cluster();
    const WorkingState& state = session.state();
    const std::vector<EvictionUnit> victims = Victims(session);
    if (victims.empty()) continue;
    const std::vector<EvictionUnit> chosen(victims.begin(), victims.begin() + 1);
    for (const auto& pending : PendingUnits(session)) {
      const int g = pending.first;
      const kai::Unit& unit = pending.second;
      const int part = static_cast<int>(unit.pods.size());
      kai::QuotaBound kept(session, g, unit, part, chosen);
      const kai::QuotaBound afresh(session, g, unit, part, chosen);
      std::vector<std::vector<const EvictionUnit*>> on_node(cluster.num_nodes());
      for (size_t d = 1; d < victims.size(); ++d) {
        for (int node : NodesOf(state, victims[d])) {
          std::vector<const EvictionUnit*>& fresh = on_node[node];
          fresh.push_back(&victims[d]);
          std::vector<EvictionUnit> candidate = chosen;
          for (const EvictionUnit* victim : fresh) candidate.push_back(*victim);
          const bool summed = afresh.MayLift(fresh) && afresh.LiftedBy(candidate);
          ASSERT_EQ(kept.MayLiftOn(node, fresh), summed)
              << DescribeCase(index, c.options) << " group " << g << " draw " << d << " node "
              << node;
          ++compared;
          if (!summed) ++ruled_out;
          if (summed && !afresh.LiftedBy(chosen)) ++lifted;
        }
      }
    }
  }
  // The comparison means something only when breaches rule tries out and some are lifted.
  EXPECT_GE(compared, kCases * 10);
  EXPECT_GE(ruled_out, kCases) << "tries ruled out: " << ruled_out;
  EXPECT_GE(lifted, kCases / 4) << "breaches lifted by drawn victims: " << lifted;
}

// Everything of the working state a try's evictions change, as bits: every queue's allocations,
// every group's RUNNING and evicted counts, every pod's state, every node's idle and releasing
// amounts.
std::vector<uint64_t> StateBits(const WorkingState& state) {
  const kai::Cluster& cluster = state.cluster();
  std::vector<uint64_t> bits;
  for (int q = 0; q < cluster.tree().size(); ++q) {
    for (int r = 0; r < cluster.num_resources(); ++r) {
      bits.push_back(Bits(state.allocated(q)[r]));
      bits.push_back(Bits(state.allocated_np(q)[r]));
    }
  }
  for (int g = 0; g < cluster.num_groups(); ++g) {
    bits.push_back(static_cast<uint64_t>(state.running(g)));
    bits.push_back(static_cast<uint64_t>(state.evicted(g)));
  }
  for (int p = 0; p < cluster.num_pods(); ++p) {
    bits.push_back(static_cast<uint64_t>(state.pod_state(p)));
  }
  for (int n = 0; n < cluster.num_nodes(); ++n) {
    for (int k = 0; k < cluster.num_node_resources(); ++k) {
      bits.push_back(Bits(state.idle(n, k)));
      bits.push_back(Bits(state.releasing(n, k)));
    }
  }
  return bits;
}

// Scales every pod's cpu and memory by 0.9: sums of such amounts round, so the order in which
// they are taken off shows in their bits.
void ScaleRequests(generator::GeneratedRequest* request) {
  for (PodGroup& group : request->snapshot.pod_groups) {
    for (Pod& pod : group.pods) {
      for (auto& [name, amount] : pod.requests) {
        if (name == "cpu" || name == "memory") amount *= 0.9;
      }
    }
  }
}

// A try evicts each victim unit's pods at once (WorkingState::EvictPods), journaling each queue
// amount once. The state must be, bit for bit, the one evicting the pods one by one leaves, and
// rolling back must give the state before. Checked for every prefix of the victim units, with
// requests whose sums round.
TEST(WorkingState, EvictingAUnitsPodsAtOnceLeavesTheStateEvictingEachLeaves) {
  int compared = 0;
  for (uint64_t index = 0; index < kCases; ++index) {
    KaiCase c(index, ScaleRequests);
    WorkingState& state = c.session.state();
    const std::vector<EvictionUnit> victims = Victims(c.session);
    const std::vector<uint64_t> before = StateBits(state);
    for (size_t k = 1; k <= victims.size(); ++k) {
      WorkingState::Mark mark = state.Checkpoint();
      for (size_t v = 0; v < k; ++v) {
        for (int pod : victims[v].pods) state.Evict(pod);
      }
      const std::vector<uint64_t> one_by_one = StateBits(state);
      state.Rollback(mark);
      mark = state.Checkpoint();
      for (size_t v = 0; v < k; ++v) state.EvictPods(victims[v].group, victims[v].pods);
      ASSERT_EQ(StateBits(state), one_by_one) << "case " << index << " units " << k;
      state.Rollback(mark);
      ASSERT_EQ(StateBits(state), before) << "case " << index << " units " << k;
      ++compared;
    }
  }
  EXPECT_GE(compared, kCases);
}

}  // namespace
}  // namespace arbiter::testing
