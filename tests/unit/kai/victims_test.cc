// Victim order and eviction units (SEMANTICS.md §4.7): drawn with every §4.3 comparison reversed,
// reversed job order in a leaf, elastic groups shrinking one pod at a time down to g.
#include "core/kai/victims.h"

#include <functional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/kai/kai_fair_share.h"
#include "core/kai/queue_order.h"
#include "core/kai/session.h"
#include "core/validation.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/small_stack.h"
#include "tests/support/snapshot_builder.h"
#include "tests/support/status_matchers.h"
#include "tests/unit/kai/kai_test_util.h"

namespace arbiter::kai {
namespace {

using ::arbiter::testing::IsOk;

using ::arbiter::testing::SnapshotBuilder;
using ::testing::ElementsAre;

// Every draw as "pod+pod", until no victim is left; `before` may change the working state first
// (decisions already made in the response).
std::vector<std::string> Draws(const Snapshot& snapshot,
                               const std::function<void(Session&)>& before = nullptr) {
  Policy policy;
  EXPECT_THAT(ValidateRequest(snapshot, policy, RequestKind::kSchedule), IsOk());
  KaiFairShare shares = ::arbiter::testing::KaiFairShareOf(snapshot, policy);
  Session session{shares};
  if (before) before(session);
  QueueChain chain(shares);
  VictimOrder order(session, chain, [](int) { return true; }, {});
  std::vector<std::string> draws;
  EvictionUnit unit;
  while (order.Next(&unit)) {
    std::vector<std::string> pods;
    for (int pod : unit.pods) pods.push_back(session.cluster().pod_name(pod));
    draws.push_back(absl::StrJoin(pods, "+"));
  }
  return draws;
}

// The victim order keeps a stream per queue, each merged from its children's: a draw may have
// to merge down the whole path to a leaf. The depth of the tree is the caller's to choose, so
// that walk must not recurse once per level (a chain of 200,000 queues, on a 1 MiB stack).
TEST(VictimOrder, DrawsDownAChainOf200000QueuesOnASmallStack) {
  ::arbiter::testing::RunOnSmallStack([] {
    constexpr int kDepth = 200000;
    SnapshotBuilder builder;
    for (int i = 0; i < kDepth; ++i) {
      builder.Queue(absl::StrFormat("level-%06d", i),
                    i == 0 ? "" : absl::StrFormat("level-%06d", i - 1));
    }
    const std::string leaf = absl::StrFormat("level-%06d", kDepth - 1);
    const Snapshot s = builder.Node("n1", {{"cpu", 4}})
                           .Group("a", leaf)
                           .RunningPods(2, {{"cpu", 1}}, "n1")
                           .Group("b", leaf)
                           .RunningPods(1, {{"cpu", 1}}, "n1")
                           .Build();
    // a (g = 1) runs more than g pods and gives one first; then b, at g, before a at g.
    EXPECT_THAT(Draws(s), ElementsAre("a-1", "b-0", "a-0"));
  });
}

TEST(VictimOrder, QueueServedLastGivesFirst) {
  // team-b is over its fair share (it holds 6 of a total 8 with equal deserved), so it would be
  // served last and gives first; then the order follows the remaining allocations.
  Snapshot s = SnapshotBuilder()
                   .Node("n1", {{"cpu", 8}})
                   .Queue("team-a")
                   .Deserved({{"cpu", 4}})
                   .Queue("team-b")
                   .Deserved({{"cpu", 4}})
                   .Group("a", "team-a")
                   .RunningPods(2, {{"cpu", 1}}, "n1")
                   .Group("b", "team-b")
                   .RunningPods(6, {{"cpu", 1}}, "n1")
                   .Build();
  std::vector<std::string> draws = Draws(s);
  // b shrinks one pod at a time down to g = 1 and then gives its last pod; a likewise.
  ASSERT_EQ(draws.size(), 8u);
  EXPECT_EQ(draws[0], "b-5");
  EXPECT_EQ(draws[1], "b-4");
}

TEST(VictimOrder, ReversedJobOrderInALeaf) {
  // Lower priority first; then > g before = g; then newer; then the larger name.
  Snapshot s = SnapshotBuilder()
                   .Node("n1", {{"cpu", 100}})
                   .Queue("team")
                   .Group("high", "team")
                   .Priority(5)
                   .MinMember(1)
                   .RunningPods(1, {{"cpu", 1}}, "n1")
                   .Group("at-gang", "team")
                   .MinMember(1)
                   .RunningPods(1, {{"cpu", 1}}, "n1")
                   .Group("above-gang", "team")
                   .MinMember(1)
                   .RunningPods(2, {{"cpu", 1}}, "n1")
                   .Group("new", "team")
                   .Created(9)
                   .MinMember(1)
                   .RunningPods(1, {{"cpu", 1}}, "n1")
                   .Group("z-name", "team")
                   .MinMember(1)
                   .RunningPods(1, {{"cpu", 1}}, "n1")
                   .Build();
  // above-gang (> g) gives its last pod and drops to = g; then among = g: newest first ("new"),
  // then larger names ("z-name", "at-gang", "above-gang"); "high" (priority 5) last.
  EXPECT_THAT(Draws(s), ElementsAre("above-gang-1", "new-0", "z-name-0", "at-gang-0",
                                    "above-gang-0", "high-0"));
}

TEST(VictimOrder, ElasticGroupShrinksToGangThenGivesTheWholeGang) {
  Snapshot s = SnapshotBuilder()
                   .Node("n1", {{"cpu", 100}})
                   .Queue("team")
                   .Group("elastic", "team")
                   .MinMember(2)
                   .RunningPods(4, {{"cpu", 1}}, "n1")
                   .Build();
  EXPECT_THAT(Draws(s), ElementsAre("elastic-3", "elastic-2", "elastic-0+elastic-1"));
}

// §4.7, pinned: while victims are drawn, an elastic victim's drawn pods count as gone for its
// rank (> g, = g, < g) as well as for its eviction unit, as KAI re-queues the drawn job with its
// remaining pods. "elastic" (older) starts above g and gives one pod; at g it ranks with "newer"
// (= g), and the newer group gives first. Were the rank taken from the pods it started with,
// "elastic" would stay above g and give its last pod before "newer".
TEST(VictimOrder, DrawnPodsCountAsGoneForTheRankAsWellAsTheUnit) {
  Snapshot s = SnapshotBuilder()
                   .Node("n1", {{"cpu", 100}})
                   .Queue("team")
                   .Group("elastic", "team")
                   .Created(1)
                   .MinMember(1)
                   .RunningPods(2, {{"cpu", 1}}, "n1")
                   .Group("newer", "team")
                   .Created(5)
                   .MinMember(1)
                   .RunningPods(1, {{"cpu", 1}}, "n1")
                   .Build();
  EXPECT_THAT(Draws(s), ElementsAre("elastic-1", "newer-0", "elastic-0"));
}

// §4.7, pinned: a group with a pod moved (or bound) in this response has no eviction unit, elastic
// or not: evicting the rest would break what the move kept whole.
TEST(VictimOrder, GroupWithAMovedPodHasNoEvictionUnit) {
  Snapshot s = SnapshotBuilder()
                   .Node("n1", {{"cpu", 100}})
                   .Node("n2", {{"cpu", 100}})
                   .Queue("team")
                   .Group("moved", "team")
                   .MinMember(1)
                   .RunningPods(3, {{"cpu", 1}}, "n1")
                   .Group("grown", "team")
                   .MinMember(1)
                   .RunningPods(2, {{"cpu", 1}}, "n1")
                   .Pods(1, {{"cpu", 1}})
                   .Group("kept", "team")
                   .MinMember(1)
                   .RunningPods(1, {{"cpu", 1}}, "n1")
                   .Build();
  EXPECT_THAT(Draws(s,
                    [](Session& session) {
                      const Cluster& cluster = session.cluster();
                      WorkingState& state = session.state();
                      for (int g = 0; g < cluster.num_groups(); ++g) {
                        if (cluster.group_name(g) == "moved") {
                          const int pod = cluster.group(g).first_pod;
                          state.Evict(pod);
                          state.Relocate(pod, /*node=*/1);
                        } else if (cluster.group_name(g) == "grown") {
                          state.Bind(state.pending_pod(g, 0), /*node=*/1,
                                     /*after_evictions=*/false);
                        }
                      }
                    }),
              ElementsAre("kept-0"));
}

TEST(VictimOrder, NonPreemptibleGroupsAreNeverDrawn) {
  Snapshot s = SnapshotBuilder()
                   .Node("n1", {{"cpu", 100}})
                   .Queue("team")
                   .Group("np", "team")
                   .Priority(100)
                   .RunningPods(1, {{"cpu", 1}}, "n1")
                   .Group("p", "team")
                   .Priority(99)
                   .RunningPods(1, {{"cpu", 1}}, "n1")
                   .Build();
  EXPECT_THAT(Draws(s), ElementsAre("p-0"));
}

}  // namespace
}  // namespace arbiter::kai
