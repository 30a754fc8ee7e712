// The ordered node set behind placement (core/kai/capacity_tree.h).
#include "core/kai/capacity_tree.h"

#include <algorithm>
#include <numeric>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "tests/support/small_stack.h"

namespace arbiter::kai {
namespace {

using ::arbiter::testing::RunOnSmallStack;

// Keys are free amounts, the caller's numbers: with keys ordered like the (fixed) priorities the
// treap degenerates into one path as long as it has nodes. Insertion, moves and searches must
// still work on a small stack.
TEST(CapacityTreeTest, KeysOrderedLikePrioritiesDoNotRecursePerNode) {
  constexpr int kNodes = 10000;
  std::vector<int> members(kNodes);
  std::iota(members.begin(), members.end(), 0);
  // Slots by ascending priority; slot order[k] gets key k.
  std::vector<int> order = members;
  std::sort(order.begin(), order.end(),
            [](int a, int b) { return CapacityTree::Priority(a) < CapacityTree::Priority(b); });
  std::vector<double> key(kNodes);
  for (int k = 0; k < kNodes; ++k) key[order[k]] = k;
  RunOnSmallStack(
      [&] {
        CapacityTree tree;
        tree.Init(members, /*resources=*/1);
        // Highest priority first, each new key the smallest so far: every insertion walks the
        // whole path.
        for (int k = kNodes - 1; k >= 0; --k) {
          const double free = key[order[k]];
          tree.Set(order[k], free, &free, &free);
        }
        EXPECT_EQ(tree.MinKey(), 0);
        EXPECT_EQ(tree.MaxKey(), kNodes - 1);
        const double request = kNodes - 2.5;  // only the last two keys hold it
        CapacityTree::Found found = tree.FindFirst(-1, -1, kNodes, &request, /*now=*/true);
        ASSERT_GE(found.slot, 0);
        EXPECT_EQ(found.key, kNodes - 2);
        EXPECT_EQ(tree.member(found.slot), order[kNodes - 2]);
        // Move the largest key to the front; it becomes the first that holds the request.
        const double moved = 1e9;
        tree.Set(order[kNodes - 1], -1, &moved, &moved);
        found = tree.FindFirst(-2, -1, kNodes, &request, /*now=*/true);
        ASSERT_GE(found.slot, 0);
        EXPECT_EQ(found.key, -1);
        EXPECT_EQ(tree.member(found.slot), order[kNodes - 1]);
      },
      /*stack_bytes=*/256 << 10);
}

// The walks the placer's overlay reads a frozen tree with (Placer::SetOverlay): the members in
// (key, node) order from either end, each step past a member the caller skips.
TEST(CapacityTreeTest, FirstFromAndLastBeforeWalkTheMembersInKeyThenNodeOrder) {
  const std::vector<int> members = {10, 11, 12, 13, 14};
  CapacityTree tree;
  tree.Init(members, /*resources=*/1);
  const std::vector<double> keys = {3, 1, 3, 2, 1};  // slot order
  for (int slot = 0; slot < 5; ++slot) tree.Set(slot, keys[slot], &keys[slot], &keys[slot]);
  // (key, node) order: (1, 11) (1, 14) (2, 13) (3, 10) (3, 12).
  const std::vector<int> expected = {11, 14, 13, 10, 12};
  EXPECT_EQ(tree.member(tree.MinSlot()), 11);
  EXPECT_EQ(tree.member(tree.MaxSlot()), 12);
  std::vector<int> forward;
  for (CapacityTree::Found f = tree.FirstFrom(-1e300, -1); f.slot >= 0;
       f = tree.FirstFrom(f.key, tree.member(f.slot) + 1)) {
    forward.push_back(tree.member(f.slot));
  }
  EXPECT_EQ(forward, expected);
  std::vector<int> backward;
  for (CapacityTree::Found f = tree.LastBefore(1e300, 0); f.slot >= 0;
       f = tree.LastBefore(f.key, tree.member(f.slot))) {
    backward.push_back(tree.member(f.slot));
  }
  EXPECT_EQ(backward, std::vector<int>(expected.rbegin(), expected.rend()));
  // A member moved to a new key moves in both walks, and the ends follow it.
  const double low = 0;
  tree.Set(4, low, &low, &low);
  EXPECT_EQ(tree.member(tree.MinSlot()), 14);
  EXPECT_EQ(tree.FirstFrom(0.5, -1).slot, 1);
}

// The first member at or after (bound_key, bound_node) with key <= max_key that holds `requests`,
// found by visiting every member: what FindFirst must return.
struct Member {
  double key = 0;
  std::vector<double> idle, free;
  bool present = false;
};
int FirstByScan(const std::vector<Member>& members, double bound_key, int bound_node,
                double max_key, const std::vector<double>& requests, bool now) {
  int best = -1;
  for (int slot = 0; slot < static_cast<int>(members.size()); ++slot) {
    const Member& m = members[slot];
    if (!m.present || m.key > max_key) continue;
    if (m.key < bound_key || (m.key == bound_key && slot < bound_node)) continue;
    bool holds = true;
    for (size_t r = 0; r < requests.size(); ++r) {
      const double have = now ? m.idle[r] : m.free[r];
      if (requests[r] > 0 && !(requests[r] <= have)) holds = false;
    }
    if (!holds) continue;
    if (best < 0 || m.key < members[best].key) best = slot;  // slots ascend: ties keep the first
  }
  return best;
}

// The joint amount of a pair rules out subtrees whose members each lack one of the two resources,
// and the quick path of Set updates a member where it stands while it keeps its place: neither
// may change an answer. Random members with few distinct keys (so moves keep and lose their place
// alike) and amounts where each member lacks cpu or memory (the two resources of the pair), checked
// against a scan after every change, and a walk's FindNext against the scan from the member after.
TEST(CapacityTreeTest, JointPairAndInPlaceUpdatesFindWhatAScanFinds) {
  constexpr int kNodes = 300;
  constexpr int kResources = 3;  // 0 and 1 form the pair, 2 is scored
  std::mt19937 random(7);
  std::vector<int> ids(kNodes);
  std::iota(ids.begin(), ids.end(), 0);  // member i is node i, so node order is slot order
  for (const bool with_pair : {true, false}) {
    CapacityTree tree;
    if (with_pair) {
      tree.Init(ids, kResources, CapacityTree::Pair{0, 1, 1.0 / 64, 1.0 / 512});
    } else {
      tree.Init(ids, kResources);
    }
    std::vector<Member> members(kNodes);
    auto amount = [&](double high) {
      // A third of the amounts are short (below every request), the rest plentiful.
      return std::uniform_int_distribution<int>(0, 2)(random) == 0
                 ? std::uniform_real_distribution<double>(0, high / 16)(random)
                 : std::uniform_real_distribution<double>(high / 4, high)(random);
    };
    auto change = [&](int slot) {
      Member& m = members[slot];
      m.key = std::uniform_int_distribution<int>(0, 8)(random);
      m.idle = {amount(64), amount(512), m.key};
      m.free = m.idle;
      for (double& f : m.free) f += std::uniform_int_distribution<int>(0, 3)(random) == 0 ? 8 : 0;
      m.present = true;
      tree.Set(slot, m.key, m.idle.data(), m.free.data());
    };
    for (int slot = 0; slot < kNodes; ++slot) change(slot);
    for (int step = 0; step < 4000; ++step) {
      change(std::uniform_int_distribution<int>(0, kNodes - 1)(random));
      const std::vector<double> requests = {
          std::uniform_int_distribution<int>(0, 3)(random) == 0 ? 0.0 : 6.0 + step % 7,
          std::uniform_int_distribution<int>(0, 3)(random) == 0 ? 0.0 : 40.0 + step % 11,
          static_cast<double>(std::uniform_int_distribution<int>(0, 3)(random))};
      const bool now = step % 2 == 0;
      const double bound_key = requests[2];
      const double max_key = std::uniform_int_distribution<int>(0, 3)(random) == 0 ? 5 : 1e300;
      const int expected = FirstByScan(members, bound_key, -1, max_key, requests, now);
      const CapacityTree::Found found =
          tree.FindFirst(bound_key, -1, max_key, requests.data(), now);
      ASSERT_EQ(found.slot, expected) << "step " << step << ", pair " << with_pair;
      if (expected >= 0) {
        EXPECT_EQ(found.key, members[expected].key);
      }
      // A walk goes on where FindFirst from the position after each member found would start.
      if (step % 40 != 0) continue;
      CapacityTree::Walk walk;
      CapacityTree::Found walked =
          tree.FindFirst(bound_key, -1, max_key, requests.data(), now, &walk);
      int scanned = expected;
      while (scanned >= 0) {
        ASSERT_EQ(walked.slot, scanned) << "step " << step << ", pair " << with_pair;
        scanned = FirstByScan(members, members[scanned].key, scanned + 1, max_key, requests, now);
        walked = tree.FindNext(&walk);
      }
      EXPECT_EQ(walked.slot, -1);
      EXPECT_EQ(tree.FindNext(&walk).slot, -1);  // a walk at its end stays there
    }
    // The ends and the walk in (key, node) order follow the members after the updates.
    std::vector<int> order(kNodes);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](int a, int b) { return members[a].key < members[b].key; });
    std::vector<int> walked;
    for (CapacityTree::Found f = tree.FirstFrom(-1e300, -1); f.slot >= 0;
         f = tree.FirstFrom(f.key, tree.member(f.slot) + 1)) {
      walked.push_back(f.slot);
    }
    EXPECT_EQ(walked, order);
    EXPECT_EQ(tree.MinSlot(), order.front());
    EXPECT_EQ(tree.MaxSlot(), order.back());
  }
}

}  // namespace
}  // namespace arbiter::kai
