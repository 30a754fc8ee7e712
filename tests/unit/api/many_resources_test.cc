// Issue 11: one pod that requests 20,000 distinct resource names, on 250 nodes. Node-level
// amounts span only the resources some node has or some pod on a node uses (core/kai/cluster.h),
// so the call needs a few MiB instead of 700 MiB, and answers as before: the pod fits nowhere.
#include <malloc.h>

#include <algorithm>
#include <cstddef>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/api/arbiter.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/snapshot_builder.h"

namespace arbiter {
namespace {

using ::arbiter::testing::SnapshotBuilder;
using ::testing::HasSubstr;

// Heap bytes in use, mmapped blocks (the large vectors) included.
size_t BytesInUse() {
  const struct mallinfo2 info = mallinfo2();
  return info.uordblks + info.hblkhd;
}

TEST(ManyResourcesTest, TwentyThousandRequestedResourcesCostNothingPerNode) {
  SnapshotBuilder builder;
  builder.Queue("q").Deserved({{"cpu", -1}});
  for (int i = 0; i < 250; ++i) builder.Node(absl::StrCat("n", i), {{"cpu", 1000}});
  ResourceMap requests{{"cpu", 100}};
  for (int r = 0; r < 20000; ++r) requests[absl::StrCat("example.com/r", r)] = 1;
  builder.Group("exotic", "q").Pod(requests).Group("plain", "q").Pod({{"cpu", 100}});
  const Snapshot snapshot = builder.Build();
  Policy policy;
  policy.fairness_model = FairnessModel::kKai;

  // The hook is asked between phases and inside them (core/cancel_poll.h): sample the heap there.
  const size_t baseline = BytesInUse();
  size_t peak = baseline;
  CycleHooks hooks;
  hooks.cancelled = [&peak] {
    peak = std::max(peak, BytesInUse());
    return false;
  };
  absl::StatusOr<ScheduleResult> result = Schedule(snapshot, policy, hooks);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->bindings.size(), 1u);
  EXPECT_EQ(result->bindings[0].pod_group, "plain");
  ASSERT_EQ(result->pending.size(), 1u);
  EXPECT_EQ(result->pending[0].reason, "insufficient-resources");
  EXPECT_THAT(result->pending[0].message,
              HasSubstr("needs 1 example.com/r0 on one node; the largest free is 0 (node n0)"));
  EXPECT_LT(peak - baseline, size_t{64} << 20);  // 250 nodes × 20,001 resources: about 700 MiB
}

}  // namespace
}  // namespace arbiter
