// KeptRoom (core/kai/kept_room.h): the room bound's base kept across searches must equal a fresh
// reading of the working state after any sequence of changes. Checked over generated KAI
// requests: random evictions, moves, restores and bindings, some committed and some rolled back
// (inner statements too), with the kept rows read between them for several pod profiles.
#include "core/kai/kept_room.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "absl/types/span.h"
#include "clients/generator/random.h"
#include "core/kai/kai_fair_share.h"
#include "core/kai/session.h"
#include "core/validation.h"
#include "gtest/gtest.h"
#include "tests/property/kai_case.h"
#include "tests/property/property_support.h"
#include "tests/property/state_mutation.h"
#include "tests/support/validated.h"

namespace arbiter::testing {
namespace {

using generator::GeneratorModel;
using kai::KeptRoom;
using kai::PodState;
using kai::Session;
using kai::WorkingState;

constexpr int kCases = 300;
constexpr int kRoundsPerCase = 8;

// Changes the state at random (MutateWorkingState).
void Mutate(Session& session, generator::Rng& rng) { MutateWorkingState(session, rng, 8); }

// A count that reads every amount of the row: how many pods of `requests` fit, capped at `part`.
int CountOn(const std::vector<double>& requests, int part, int rn, const double* free) {
  int count = part;
  for (int k = 0; k < rn; ++k) {
    if (!(requests[k] > 0)) continue;
    if (!(free[k] >= requests[k])) return 0;
    count = std::min(count, static_cast<int>(std::min(std::floor(free[k] / requests[k]), 1e6)));
  }
  return count;
}

// Compares the kept rows and the counts of `profile` with a fresh reading of the state.
void ExpectKeptEqualsFresh(Session& session, const KeptRoom::Profile& profile) {
  const kai::Cluster& cluster = session.cluster();
  const WorkingState& state = session.state();
  const int rn = cluster.num_node_resources();
  const std::vector<double>& free = session.kept_room().Free(state);
  for (int n = 0; n < cluster.num_nodes(); ++n) {
    for (int k = 0; k < rn; ++k) ASSERT_EQ(free[n * rn + k], state.free(n, k)) << "node " << n;
  }
  const std::vector<double> node_requests(profile.requests.begin(), profile.requests.begin() + rn);
  const KeptRoom::Counts& counts =
      session.kept_room().CountsFor(state, profile, [&](int /*node*/, const double* row) {
        return CountOn(node_requests, profile.part, rn, row);
      });
  int total = 0;
  for (int n = 0; n < cluster.num_nodes(); ++n) {
    const int fresh = CountOn(node_requests, profile.part, rn, &free[n * rn]);
    ASSERT_EQ(counts.count[n], fresh) << "node " << n;
    total += fresh;
  }
  ASSERT_EQ(counts.total, total);
}

TEST(KeptRoom, EqualsAFreshCountAfterRandomCommitsAndRollbacks) {
  int compared = 0;
  for (uint64_t index = 0; index < kCases; ++index) {
    KaiCase c(index);
    Session& session = c.session;
    const kai::Cluster& cluster = session.cluster();
    if (cluster.num_nodes() == 0 || cluster.num_pods() == 0) continue;
    WorkingState& state = session.state();
    generator::Rng rng(index * 7919 + 3);
    // Profiles from a few pods' requests, with parts 1 to 3; more than KeptRoom keeps, so that
    // some are dropped and counted afresh.
    std::vector<KeptRoom::Profile> profiles;
    for (int p = 0; p < 12; ++p) {
      const int pod = static_cast<int>(rng.Below(static_cast<uint64_t>(cluster.num_pods())));
      const double* requests = cluster.requests(pod);
      profiles.push_back(KeptRoom::Profile{
          p, 1 + p % 3, std::vector<double>(requests, requests + cluster.num_resources()), {}});
    }
    for (int round = 0; round < kRoundsPerCase; ++round) {
      const KeptRoom::Profile& profile = profiles[rng.Below(profiles.size())];
      const WorkingState::Mark mark = state.Checkpoint();
      Mutate(session, rng);
      ExpectKeptEqualsFresh(session, profile);  // inside the statement
      const WorkingState::Mark inner = state.Checkpoint();
      Mutate(session, rng);
      ExpectKeptEqualsFresh(session, profile);
      state.Rollback(inner);
      if (rng.Below(2) == 0) {
        state.Commit(mark);
      } else {
        state.Rollback(mark);
      }
      ExpectKeptEqualsFresh(session, profile);
      if (rng.Below(3) == 0) Mutate(session, rng);  // outside any statement
      ExpectKeptEqualsFresh(session, profiles[rng.Below(profiles.size())]);
      ++compared;
    }
  }
  EXPECT_GE(compared, kCases * kRoundsPerCase / 2);
}

// A try's changes: evicts RUNNING pods, then restores some of those it evicted (only those: a
// pod is restored only in the statement that evicted it) or re-places them, and binds PENDING
// pods where they fit.
void TryLike(Session& session, generator::Rng& rng) {
  const kai::Cluster& cluster = session.cluster();
  WorkingState& state = session.state();
  const int pods = cluster.num_pods();
  const int nodes = cluster.num_nodes();
  std::vector<int> evicted;
  for (int c = 0; c < 4; ++c) {
    const int pod = static_cast<int>(rng.Below(static_cast<uint64_t>(pods)));
    if (state.pod_state(pod) == PodState::kRunning) {
      state.Evict(pod);
      evicted.push_back(pod);
    }
  }
  for (int pod : evicted) {
    const int node = static_cast<int>(rng.Below(static_cast<uint64_t>(nodes)));
    if (rng.Below(3) == 0) {
      state.Restore(pod);
    } else if (rng.Below(2) == 0 && state.FitsPipelined(node, cluster.node_requests(pod))) {
      state.Relocate(pod, node);
    }
  }
  const int group = static_cast<int>(rng.Below(static_cast<uint64_t>(cluster.num_groups())));
  const int node = static_cast<int>(rng.Below(static_cast<uint64_t>(nodes)));
  if (state.pending_left(group) > 0) {
    const int next = state.pending_pod(group, 0);
    if (state.FitsPipelined(node, cluster.node_requests(next))) state.Bind(next, node, true);
  }
}

// The kept list of possible victims, walked whole.
std::vector<int> Candidates(Session& session) {
  std::vector<int> list;
  session.kept_room().WalkVictimCandidates(session.state(), [&](int g) {
    list.push_back(g);
    return true;
  });
  return list;
}

// Every group that may be a victim now is in the kept list, and the list is in group order.
void ExpectCandidatesCover(Session& session) {
  const kai::Cluster& cluster = session.cluster();
  const WorkingState& state = session.state();
  const std::vector<int> list = Candidates(session);
  ASSERT_TRUE(std::is_sorted(list.begin(), list.end()));
  for (int g = 0; g < cluster.num_groups(); ++g) {
    if (!cluster.group(g).preemptible || state.running(g) == 0 || state.bound(g) > 0 ||
        state.moved(g) > 0) {
      continue;
    }
    ASSERT_TRUE(std::binary_search(list.begin(), list.end(), g)) << "group " << g;
  }
}

// Runs tries (TryLike) in statements on every case, committed or rolled back, an inner one always
// rolled back, and calls `expect_cover` inside the statement and after it. Returns how many cases
// ended with a shorter list, by `listed`, than they started with.
int CasesWhoseListShrank(const std::function<size_t(Session&)>& listed,
                         const std::function<void(Session&)>& expect_cover) {
  int shrunk = 0;
  for (uint64_t index = 0; index < kCases; ++index) {
    KaiCase c(index);
    Session& session = c.session;
    const kai::Cluster& cluster = session.cluster();
    if (cluster.num_nodes() == 0 || cluster.num_pods() == 0 || cluster.num_groups() == 0) continue;
    WorkingState& state = session.state();
    generator::Rng rng(index * 6151 + 11);
    const size_t first = listed(session);
    for (int round = 0; round < kRoundsPerCase; ++round) {
      const WorkingState::Mark mark = state.Checkpoint();
      TryLike(session, rng);
      expect_cover(session);  // read inside the statement: nothing leaves
      const WorkingState::Mark inner = state.Checkpoint();
      TryLike(session, rng);
      state.Rollback(inner);
      if (rng.Below(2) == 0) {
        state.Commit(mark);
      } else {
        state.Rollback(mark);
      }
      expect_cover(session);
    }
    if (listed(session) < first) ++shrunk;
  }
  return shrunk;
}

TEST(KeptRoom, VictimCandidatesCoverEveryPossibleVictimAfterCommitsAndRollbacks) {
  const int shrunk = CasesWhoseListShrank(
      [](Session& session) { return Candidates(session).size(); }, ExpectCandidatesCover);
  // The list means something only when groups leave it.
  EXPECT_GE(shrunk, kCases / 4);
}

// The kept list of nodes with possible victims, walked whole: each node with its pods. Each
// visit says whether none of the node's pods runs, as RoomBound's does.
std::vector<std::pair<int, std::vector<int>>> VictimNodes(Session& session) {
  const WorkingState& state = session.state();
  std::vector<std::pair<int, std::vector<int>>> list;
  session.kept_room().WalkVictimNodes(
      state, [&](int node, absl::Span<const int> pods, bool* none_running) {
        list.emplace_back(node, std::vector<int>(pods.begin(), pods.end()));
        *none_running = std::none_of(pods.begin(), pods.end(), [&](int p) {
          return state.pod_state(p) == PodState::kRunning;
        });
        return true;
      });
  return list;
}

// Every pod that may be a victim now (RUNNING, of a preemptible group) is listed under its node,
// the nodes ascending and each node's pods in pod order.
void ExpectVictimNodesCover(Session& session) {
  const kai::Cluster& cluster = session.cluster();
  const WorkingState& state = session.state();
  const std::vector<std::pair<int, std::vector<int>>> list = VictimNodes(session);
  std::vector<int> nodes;
  for (const auto& [node, pods] : list) {
    ASSERT_TRUE(std::is_sorted(pods.begin(), pods.end())) << "node " << node;
    nodes.push_back(node);
  }
  ASSERT_TRUE(std::is_sorted(nodes.begin(), nodes.end()));
  for (int p = 0; p < cluster.num_pods(); ++p) {
    if (state.pod_state(p) != PodState::kRunning ||
        !cluster.group(cluster.pod(p).group).preemptible) {
      continue;
    }
    const auto at = std::lower_bound(nodes.begin(), nodes.end(), state.pod_node(p));
    ASSERT_TRUE(at != nodes.end() && *at == state.pod_node(p)) << "pod " << p;
    const std::vector<int>& pods = list[at - nodes.begin()].second;
    ASSERT_TRUE(std::binary_search(pods.begin(), pods.end(), p)) << "pod " << p;
  }
}

TEST(KeptRoom, VictimNodesCoverEveryPossibleVictimAfterCommitsAndRollbacks) {
  const int shrunk = CasesWhoseListShrank(
      [](Session& session) { return VictimNodes(session).size(); }, ExpectVictimNodesCover);
  // The list means something only when nodes leave it.
  EXPECT_GE(shrunk, kCases / 8);
}

}  // namespace
}  // namespace arbiter::testing
