// VictimOrder (core/kai/victims.h) keeps its picks incrementally: a draw re-keys only the drawn
// group and the queues above it, and a re-keyed entry that stays between its neighbours keeps its
// place in its set. Its draws must be those of a pick made afresh over the whole tree at every
// step, as §4.7 reads: from the top, the child served last gives first (the largest chain key,
// with rule 5 on the allocation less what was drawn from the subtree; among equal keys the one
// the tie-break serves last), down to a leaf, whose job served last gives its eviction unit.
// Checked over generated KAI requests, drawing until no victim is left, then again after Reset.
#include <algorithm>
#include <cstdint>
#include <set>
#include <vector>

#include "core/kai/queue_order.h"
#include "core/kai/session.h"
#include "core/kai/victims.h"
#include "gtest/gtest.h"
#include "tests/property/kai_case.h"
#include "tests/property/property_support.h"
#include "tests/property/state_mutation.h"

namespace arbiter::testing {
namespace {

using kai::ChainKey;
using kai::EvictionUnit;
using kai::JobKey;
using kai::PodState;
using kai::Session;
using kai::WorkingState;

constexpr int kCases = 300;

// The victim order of §4.7 picked afresh at every draw, with nothing kept but what was drawn.
class FreshPicks {
 public:
  FreshPicks(const Session& session, const kai::QueueChain& chain)
      : cluster_(session.cluster()),
        state_(session.state()),
        chain_(chain),
        r_(cluster_.num_resources()),
        drawn_pods_(cluster_.num_groups(), 0),
        pod_drawn_(cluster_.num_pods(), 0),
        drawn_(static_cast<size_t>(cluster_.tree().size()) * r_, 0.0) {}

  // The next unit, or false when no victim is left; counts it as drawn.
  bool Next(EvictionUnit* unit) {
    int best = -1;
    for (int q = 0; q < cluster_.tree().size(); ++q) {
      if (cluster_.tree().parent(q) < 0) best = LaterOf(best, q);
    }
    if (best < 0) return false;
    const int group = BestGroup(best);
    *unit = Unit(group);
    for (int pod : unit->pods) {
      pod_drawn_[pod] = 1;
      ++drawn_pods_[group];
      const double* requests = cluster_.requests(pod);
      for (int q = cluster_.group(group).queue; q >= 0; q = cluster_.tree().parent(q)) {
        for (int r = 0; r < r_; ++r) drawn_[q * r_ + r] += requests[r];
      }
    }
    return true;
  }

 private:
  // The group's next eviction unit (no pods: none).
  EvictionUnit Unit(int group) const {
    const kai::ClusterGroup& info = cluster_.group(group);
    EvictionUnit unit{group, {}};
    if (!info.preemptible || state_.running(group) == 0 || state_.bound(group) > 0 ||
        state_.moved(group) > 0) {
      return unit;
    }
    for (int p = info.first_pod; p < info.first_pod + info.pod_count; ++p) {
      if (state_.pod_state(p) == PodState::kRunning && pod_drawn_[p] == 0) unit.pods.push_back(p);
    }
    if (!unit.pods.empty() && state_.active(group) - drawn_pods_[group] > info.gang) {
      unit.pods.assign(1, unit.pods.back());
    }
    return unit;
  }
  JobKey KeyOf(int group) const {
    JobKey key = kai::MakeJobKey(cluster_, state_, group);
    const int active = state_.active(group) - drawn_pods_[group];
    const int gang = cluster_.group(group).gang;
    key.elastic = active < gang ? 0 : active == gang ? 1 : 2;
    return key;
  }
  // The group `queue`'s subtree gives next, -1 when it has no victim.
  int BestGroup(int queue) const {
    const QueueTree& tree = cluster_.tree();
    if (tree.is_leaf(queue)) {
      int best = -1;
      for (int g = 0; g < cluster_.num_groups(); ++g) {
        if (cluster_.group(g).queue != queue || Unit(g).pods.empty()) continue;
        if (best < 0 || KeyOf(best) < KeyOf(g)) best = g;  // the job served last
      }
      return best;
    }
    int best = -1;
    for (int child = 0; child < tree.size(); ++child) {
      if (tree.parent(child) == queue) best = LaterOf(best, child);
    }
    return best < 0 ? -1 : BestGroup(best);
  }
  // Of two sibling queues (`incumbent` may be -1), the one served last among those with a victim.
  int LaterOf(int incumbent, int queue) const {
    const int group = BestGroup(queue);
    if (group < 0) return incumbent;
    if (incumbent < 0) return queue;
    const ChainKey mine = Key(queue, group);
    const ChainKey theirs = Key(incumbent, BestGroup(incumbent));
    if (theirs < mine) return queue;
    if (mine == theirs && chain_.TieBreakBefore(incumbent, queue)) return queue;
    return incumbent;
  }
  ChainKey Key(int queue, int group) const {
    const EvictionUnit unit = Unit(group);
    std::vector<double> requests(r_, 0.0);
    for (int pod : unit.pods) {
      for (int r = 0; r < r_; ++r) requests[r] += cluster_.requests(pod)[r];
    }
    const double* allocated = state_.allocated(queue);
    std::vector<double> rule5(r_);
    for (int r = 0; r < r_; ++r) rule5[r] = allocated[r] - drawn_[queue * r_ + r];
    return chain_.Key(queue, allocated, requests.data(), rule5.data());
  }

  const kai::Cluster& cluster_;
  const WorkingState& state_;
  const kai::QueueChain& chain_;
  int r_;
  std::vector<int> drawn_pods_;
  std::vector<char> pod_drawn_;
  std::vector<double> drawn_;  // per queue × R: requests drawn from the subtree
};

TEST(VictimOrder, DrawsAsAFreshPickOverTheTreeAtEveryStep) {
  int64_t draws = 0;
  for (uint64_t index = 0; index < kCases; ++index) {
    KaiCase c(index);
    const kai::QueueChain chain(c.shares);
    kai::VictimOrder order(c.session, chain, [](int) { return true; }, {});
    // Twice: as constructed, and after Reset undoes every draw (as the shared order is reused).
    for (int round = 0; round < 2; ++round) {
      if (round == 1) order.Reset();
      FreshPicks fresh(c.session, chain);
      EvictionUnit kept;
      EvictionUnit picked;
      for (int step = 0;; ++step) {
        const bool more = order.Next(&kept);
        ASSERT_EQ(more, fresh.Next(&picked))
            << DescribeCase(index, c.options) << " round " << round << " draw " << step;
        if (!more) break;
        ASSERT_EQ(kept.group, picked.group)
            << DescribeCase(index, c.options) << " round " << round << " draw " << step;
        ASSERT_EQ(kept.pods, picked.pods)
            << DescribeCase(index, c.options) << " round " << round << " draw " << step;
        ++draws;
      }
    }
  }
  EXPECT_GE(draws, kCases * 20);
}

// The groups whose pods `state` holds in another state or on another node than `pod_states` and
// `pod_nodes` record (taken before a change).
std::vector<int> ChangedGroups(const kai::Cluster& cluster, const WorkingState& state,
                               const std::vector<PodState>& pod_states,
                               const std::vector<int>& pod_nodes) {
  std::vector<int> groups;
  for (int p = 0; p < cluster.num_pods(); ++p) {
    if (state.pod_state(p) != pod_states[p] || state.pod_node(p) != pod_nodes[p]) {
      groups.push_back(cluster.pod(p).group);
    }
  }
  std::sort(groups.begin(), groups.end());
  groups.erase(std::unique(groups.begin(), groups.end()), groups.end());
  return groups;
}

// The shared order of RECLAIM keeps, per second-level queue, the units its subtree gives (its
// stream) across preemptors: Reset rewinds the streams, an exclusion drops the stream it falls
// in until Reset, and Refresh drops the streams above a changed group. Whatever was kept, each
// preemptor's draws must be those of an order built afresh for it, with its exclusions as the
// filter, on the state as it stands. Checked over rounds that draw part of the order or all of
// it, exclude a leaf and some groups or nothing, and change the state between rounds.
TEST(VictimOrder, StreamsKeptAcrossPreemptorsDrawAsAFreshOrder) {
  int64_t draws = 0;
  int64_t refreshed = 0;
  for (uint64_t index = 0; index < kCases; ++index) {
    KaiCase c(index);
    const kai::Cluster& cluster = c.session.cluster();
    WorkingState& state = c.session.state();
    const kai::QueueChain chain(c.shares);
    generator::Rng rng(index * 7919 + 17);
    kai::VictimOrder shared(c.session, chain, [](int) { return true; }, {});
    std::vector<int> leaves;
    for (int q = 0; q < cluster.tree().size(); ++q) {
      if (cluster.tree().is_leaf(q)) leaves.push_back(q);
    }
    for (int round = 0; round < 12; ++round) {
      // What this round's preemptor takes out: a leaf and a few groups, or nothing.
      int leaf = -1;
      std::set<int> groups_out;
      if (rng.Below(3) != 0) {
        leaf = leaves[rng.Below(leaves.size())];
        for (int k = static_cast<int>(rng.Below(3)); k > 0 && cluster.num_groups() > 0; --k) {
          groups_out.insert(static_cast<int>(rng.Below(cluster.num_groups())));
        }
      }
      const auto kept = [&](int g) {
        return cluster.group(g).queue != leaf && groups_out.count(g) == 0;
      };
      kai::VictimOrder fresh(c.session, chain, kept, {});
      if (leaf >= 0) shared.ExcludeLeaf(leaf);
      for (int g : groups_out) shared.ExcludeGroup(g);
      const int limit = rng.Below(3) == 0 ? 1 << 30 : static_cast<int>(rng.Below(40));
      EvictionUnit from_shared;
      EvictionUnit from_fresh;
      for (int step = 0; step < limit; ++step) {
        const bool more = shared.Next(&from_shared);
        ASSERT_EQ(more, fresh.Next(&from_fresh))
            << DescribeCase(index, c.options) << " round " << round << " draw " << step;
        if (!more) break;
        ASSERT_EQ(from_shared.group, from_fresh.group)
            << DescribeCase(index, c.options) << " round " << round << " draw " << step;
        ASSERT_EQ(from_shared.pods, from_fresh.pods)
            << DescribeCase(index, c.options) << " round " << round << " draw " << step;
        ++draws;
      }
      shared.Reset();
      if (rng.Below(2) == 0) {
        // A committed change, as a placed preemptor makes, passed to Refresh.
        std::vector<PodState> pod_states(cluster.num_pods());
        std::vector<int> pod_nodes(cluster.num_pods());
        for (int p = 0; p < cluster.num_pods(); ++p) {
          pod_states[p] = state.pod_state(p);
          pod_nodes[p] = state.pod_node(p);
        }
        MutateWorkingState(c.session, rng, 4);
        const std::vector<int> changed = ChangedGroups(cluster, state, pod_states, pod_nodes);
        shared.Refresh(changed);
        refreshed += static_cast<int64_t>(changed.size());
      }
    }
  }
  EXPECT_GE(draws, kCases * 50);
  EXPECT_GE(refreshed, kCases);
}

}  // namespace
}  // namespace arbiter::testing
