#include "core/queue_tree.h"

#include "absl/strings/str_format.h"
#include "core/resources.h"
#include "core/validated_snapshot.h"
#include "gtest/gtest.h"
#include "tests/support/small_stack.h"
#include "tests/support/snapshot_builder.h"

namespace arbiter {
namespace {

using testing::SnapshotBuilder;

TEST(QueueTreeTest, IndexesQueuesInNameOrderWithParents) {
  Snapshot s =
      SnapshotBuilder().Queue("z-team", "dept").Queue("dept").Queue("a-team", "dept").Build();
  QueueTree tree = QueueTree::Build(s);
  ASSERT_EQ(tree.size(), 3);
  EXPECT_EQ(tree.queue(0).name, "a-team");
  EXPECT_EQ(tree.queue(1).name, "dept");
  EXPECT_EQ(tree.roots(), std::vector<int>{1});
  EXPECT_EQ(tree.children(1), (std::vector<int>{0, 2}));
  EXPECT_EQ(tree.top_down(), (std::vector<int>{1, 0, 2}));
  EXPECT_EQ(tree.entry(2).depth, 1);
  EXPECT_EQ(tree.Find("z-team"), 2);
  EXPECT_EQ(tree.Find("nope"), -1);
}

TEST(QueueTreeTest, LowestCommonAncestorAndChildOnPath) {
  Snapshot s = SnapshotBuilder()
                   .Queue("root")
                   .Queue("d1", "root")
                   .Queue("d2", "root")
                   .Queue("a", "d1")
                   .Queue("b", "d2")
                   .Queue("other")
                   .Build();
  QueueTree tree = QueueTree::Build(s);
  int a = tree.Find("a"), b = tree.Find("b"), root = tree.Find("root");
  EXPECT_EQ(tree.LowestCommonAncestor(a, b), root);
  EXPECT_EQ(tree.ChildOnPath(root, a), tree.Find("d1"));
  EXPECT_EQ(tree.LowestCommonAncestor(a, tree.Find("other")), -1);
  EXPECT_EQ(tree.ChildOnPath(-1, a), root);
  EXPECT_EQ(tree.LowestCommonAncestor(a, a), a);
}

TEST(QueueTreeTest, SubtreesAndPathsWithoutRecursion) {
  Snapshot s = SnapshotBuilder()
                   .Queue("root")
                   .Queue("d1", "root")
                   .Queue("d2", "root")
                   .Queue("a", "d1")
                   .Queue("b", "d2")
                   .Queue("other")
                   .Build();
  QueueTree tree = QueueTree::Build(s);
  const int a = tree.Find("a"), b = tree.Find("b"), d1 = tree.Find("d1"), root = tree.Find("root");
  EXPECT_TRUE(tree.InSubtree(a, a));
  EXPECT_TRUE(tree.InSubtree(a, d1));
  EXPECT_TRUE(tree.InSubtree(b, root));
  EXPECT_FALSE(tree.InSubtree(b, d1));
  EXPECT_FALSE(tree.InSubtree(root, a));
  EXPECT_FALSE(tree.InSubtree(a, tree.Find("other")));
  std::vector<int> path;
  tree.PathToRoot(a, &path);
  EXPECT_EQ(path, (std::vector<int>{a, d1, root}));
}

// A chain as deep as the request makes it: positions and paths are computed without recursing.
TEST(QueueTreeTest, DeepChainOnASmallStack) {
  constexpr int kDepth = 200000;
  SnapshotBuilder builder;
  for (int i = 0; i < kDepth; ++i) {
    builder.Queue(absl::StrFormat("q%06d", i), i == 0 ? "" : absl::StrFormat("q%06d", i - 1));
  }
  const Snapshot s = builder.Build();
  testing::RunOnSmallStack([&s] {
    QueueTree tree = QueueTree::Build(s);
    const int bottom = tree.Find(absl::StrFormat("q%06d", kDepth - 1));
    EXPECT_EQ(tree.entry(bottom).depth, kDepth - 1);
    EXPECT_TRUE(tree.InSubtree(bottom, tree.Find("q000000")));
    EXPECT_FALSE(tree.InSubtree(tree.Find("q000001"), bottom));
    EXPECT_EQ(tree.LowestCommonAncestor(bottom, tree.Find("q000007")), tree.Find("q000007"));
  });
}

TEST(ResourceSetTest, CollectsEveryResourceNameSorted) {
  Snapshot s = SnapshotBuilder()
                   .Capacity({{"x", 1}})
                   .Node("n", {{"cpu", 1}, {"nvidia.com/gpu", 2}})
                   .Queue("q")
                   .Limit({{"memory", 3}})
                   .Weight({{"w", 1}})
                   .Group("g", "q")
                   .Pod({{"ephemeral", 1}})
                   .Build();
  const absl::StatusOr<ValidatedSnapshot> request =
      ValidatedSnapshot::Validate(s, Policy{}, RequestKind::kSchedule);
  ASSERT_TRUE(request.ok()) << request.status();
  const ResourceSet& r = request->resources();
  EXPECT_EQ(r.names(),
            (std::vector<std::string>{"cpu", "ephemeral", "memory", "nvidia.com/gpu", "w", "x"}));
  EXPECT_EQ(r.Find("memory"), 2);
  EXPECT_EQ(r.Dense({{"memory", 5}, {"zzz", 1}}, -1)[2], 5);
  EXPECT_EQ(r.ToMap(std::vector<double>(6, 0)).size(), 6u);
}

}  // namespace
}  // namespace arbiter
