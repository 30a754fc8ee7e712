// Issue 11: the sentences of an answer echo names capped (core/echoed_name.h), so a request
// whose names are 100 KB long gets messages of a few hundred bytes, not one copy of each name
// per pending group.
#include <string>

#include "core/api/arbiter.h"
#include "core/echoed_name.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/snapshot_builder.h"

namespace arbiter {
namespace {

using ::arbiter::testing::SnapshotBuilder;
using ::testing::HasSubstr;

std::string LongName(char c) { return std::string(100 * 1024, c); }

TEST(LongNamesTest, KaiPendingReasonCapsTheQueueAndResourceNames) {
  const std::string queue = LongName('q');
  const std::string resource = LongName('r');
  Policy policy;
  policy.fairness_model = FairnessModel::kKai;
  policy.actions = {Action::kAllocate};
  absl::StatusOr<ScheduleResult> result = Schedule(SnapshotBuilder()
                                                       .Node("n", {{resource, 10}})
                                                       .Queue(queue)
                                                       .Deserved({{resource, -1}})
                                                       .Limit({{resource, 1}})
                                                       .Group("g", queue)
                                                       .Pod({{resource, 2}})
                                                       .Build(),
                                                   policy);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->pending.size(), 1u);
  EXPECT_EQ(result->pending[0].reason, "queue-over-limit");
  EXPECT_LT(result->pending[0].message.size(), 1024u);
  EXPECT_THAT(result->pending[0].message,
              HasSubstr("queue " + std::string(kMaxEchoedNameBytes, 'q') + "... would exceed"));
}

TEST(LongNamesTest, KueuePendingReasonCapsTheClusterQueueName) {
  const std::string queue = LongName('c');
  Policy policy;
  policy.fairness_model = FairnessModel::kKueue;
  absl::StatusOr<ScheduleResult> result = Schedule(SnapshotBuilder()
                                                       .Queue(queue)
                                                       .Deserved({{"cpu", 1}})
                                                       .Group("w", queue)
                                                       .Pod({{"gpu", 1}})
                                                       .Build(),
                                                   policy);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->pending.size(), 1u);
  EXPECT_EQ(result->pending[0].reason, "resource-not-covered");
  EXPECT_LT(result->pending[0].message.size(), 1024u);
  EXPECT_EQ(result->pending[0].message,
            "cluster queue " + std::string(kMaxEchoedNameBytes, 'c') + "... has no quota for gpu");
}

TEST(LongNamesTest, EvictionMessageCapsThePreemptorName) {
  const std::string preemptor = LongName('p');
  Policy policy;
  policy.fairness_model = FairnessModel::kKai;
  policy.actions = {Action::kPreempt};
  absl::StatusOr<ScheduleResult> result = Schedule(SnapshotBuilder()
                                                       .Node("n", {{"cpu", 1000}})
                                                       .Queue("q")
                                                       .Deserved({{"cpu", -1}})
                                                       .Group("low", "q")
                                                       .Priority(10)
                                                       .RunningPods(1, {{"cpu", 1000}}, "n")
                                                       .Group(preemptor, "q")
                                                       .Priority(200)
                                                       .Pod({{"cpu", 1000}})
                                                       .Build(),
                                                   policy);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->evictions.size(), 1u);
  EXPECT_LT(result->evictions[0].message.size(), 1024u);
  EXPECT_THAT(result->evictions[0].message,
              HasSubstr("preempted for " + std::string(kMaxEchoedNameBytes, 'p') + "...: "));
  EXPECT_EQ(result->evictions[0].preemptor_pod_group, preemptor);  // identifiers stay whole
}

}  // namespace
}  // namespace arbiter
