// The ordered node set behind placement (core/kai/capacity_tree.h).
#include "core/kai/capacity_tree.h"

#include <algorithm>
#include <numeric>
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

}  // namespace
}  // namespace arbiter::kai
