// KAI fair share (SEMANTICS.md §2, §3, §0.7, §6).
#include "core/kai/kai_fair_share.h"

#include <cmath>
#include <limits>
#include <map>
#include <string>

#include "gtest/gtest.h"
#include "tests/support/snapshot_builder.h"

namespace arbiter::kai {
namespace {

using ::arbiter::testing::SnapshotBuilder;

constexpr double kInf = std::numeric_limits<double>::infinity();

// Fair share of `queue` on `resource`, looked up by name.
double FairShare(const KaiFairShare& shares, const std::string& queue,
                 const std::string& resource) {
  int q = shares.tree.Find(queue);
  int r = shares.resources.Find(resource);
  EXPECT_GE(q, 0) << queue;
  EXPECT_GE(r, 0) << resource;
  if (q < 0 || r < 0) return std::nan("");
  return shares.queues[q].fair_share[r];
}

std::map<std::string, double> GpuShares(const Snapshot& snapshot, const Policy& policy = {}) {
  KaiFairShare shares = ComputeKaiFairShare(snapshot, policy);
  std::map<std::string, double> result;
  int r = shares.resources.Find("gpu");
  for (int q = 0; q < shares.tree.size(); ++q) {
    result[shares.tree.queue(q).name] = r < 0 ? 0 : shares.queues[q].fair_share[r];
  }
  return result;
}

// §2.2 example: whole-unit rounds, then the remainder capped by what a queue still requests.
TEST(KaiFairShareTest, SemanticsExampleRemainderCappedByRequest) {
  Snapshot s = SnapshotBuilder()
                   .Capacity({{"gpu", 7}})
                   .Queue("a").QueueCreated(1)
                   .Queue("b").QueueCreated(2)
                   .Queue("c").QueueCreated(3)
                   .Group("ja", "a").Pod({{"gpu", 2.5}})
                   .Group("jb", "b").Pod({{"gpu", 50}})
                   .Group("jc", "c").Pod({{"gpu", 50}})
                   .Build();
  std::map<std::string, double> expected = {{"a", 2.5}, {"b", 2.5}, {"c", 2}};
  EXPECT_EQ(GpuShares(s), expected);
}

// §3 example: k = 1, U = 0.4 and 0 give portions 0.6 and 1.0; 3.75 and 6.25 floor to 3 and 6,
// and the spare unit goes to the larger fraction.
TEST(KaiFairShareTest, TimeAwareExampleShiftsShareAwayFromHeavyUser) {
  Snapshot s = SnapshotBuilder()
                   .Capacity({{"gpu", 10}})
                   .UsageCapacity({{"gpu", 10}})
                   .Usage("heavy", {{"gpu", 4}})
                   .Queue("heavy")
                   .Queue("light")
                   .Group("jh", "heavy").Pod({{"gpu", 100}})
                   .Group("jl", "light").Pod({{"gpu", 100}})
                   .Build();
  Policy policy;
  policy.k_value = 1;
  KaiFairShare shares = ComputeKaiFairShare(s, policy);
  EXPECT_EQ(FairShare(shares, "heavy", "gpu"), 4);
  EXPECT_EQ(FairShare(shares, "light", "gpu"), 6);
}

}  // namespace
}  // namespace arbiter::kai
