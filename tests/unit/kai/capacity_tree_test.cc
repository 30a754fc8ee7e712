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

}  // namespace
}  // namespace arbiter::kai
