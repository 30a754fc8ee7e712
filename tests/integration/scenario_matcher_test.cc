// The scenario runner's comparison: it must reject every kind of difference it claims to check.
#include "tests/integration/scenario_matcher.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace arbiter::testing {
namespace {

using ::testing::HasSubstr;

v1::ScheduleResponse Answer() {
  v1::ScheduleResponse response;
  v1::Binding* binding = response.add_bindings();
  binding->set_pod_group("g");
  binding->set_pod("g-0");
  binding->set_node("n1");
  v1::PendingPodGroup* pending = response.add_pending();
  pending->set_pod_group("h");
  pending->set_reason("insufficient-resources");
  pending->set_message("needs 4 cpu");
  v1::Eviction* eviction = response.add_evictions();
  eviction->set_pod_group("old");
  eviction->set_pod("old-0");
  eviction->set_reason(v1::FAIR_SHARE_RECLAIM);
  return response;
}

TEST(ScenarioMatcher, AcceptsListedFieldsThatMatch) {
  EXPECT_TRUE(MatchExpected(R"({
    "description": "only what is written is checked",
    "bindings": [{"pod_group": "g", "pod": "g-0", "node": "n1", "after_evictions": false}],
    "pending": [{"pod_group": "h", "reason": "insufficient-resources"}],
    "evictions": [{"pod": "old-0", "reason": "FAIR_SHARE_RECLAIM"}]
  })",
                            Answer())
                  .ok());
}

TEST(ScenarioMatcher, UnlistedListsAreNotChecked) {
  EXPECT_TRUE(MatchExpected(R"({"pending": [{"pod_group": "h"}]})", Answer()).ok());
}

TEST(ScenarioMatcher, RejectsADifferentValue) {
  const absl::Status status =
      MatchExpected(R"({"bindings": [{"pod_group": "g", "node": "n2"}]})", Answer());
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(status.message(), HasSubstr("bindings[0].node: expected \"n2\", got \"n1\""));
}

TEST(ScenarioMatcher, RejectsADefaultThatDiffers) {
  EXPECT_FALSE(
      MatchExpected(R"({"bindings": [{"pod_group": "g", "after_evictions": true}]})", Answer())
          .ok());
}

TEST(ScenarioMatcher, RejectsMissingOrExtraEntries) {
  EXPECT_THAT(MatchExpected(R"({"pending": []})", Answer()).message(),
              HasSubstr("expected 0 entries, got 1"));
  EXPECT_FALSE(MatchExpected(R"({"admissions": [{"pod_group": "g"}]})", Answer()).ok());
}

TEST(ScenarioMatcher, RejectsAnEnumByAnotherName) {
  EXPECT_FALSE(MatchExpected(R"({"evictions": [{"reason": "QUOTA_RECLAIM"}]})", Answer()).ok());
}

TEST(ScenarioMatcher, RejectsUnknownKeysAndBadJson) {
  EXPECT_EQ(MatchExpected(R"({"binding": []})", Answer()).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(MatchExpected("{", Answer()).code(), absl::StatusCode::kInvalidArgument);
}

TEST(ScenarioMatcher, ComparesMapsKeyByKey) {
  v1::ScheduleResponse response;
  v1::QueueShare* share = response.add_queues();
  share->set_queue("a");
  (*share->mutable_fair_share())["cpu"] = 4000;
  (*share->mutable_fair_share())["memory"] = 8;
  EXPECT_TRUE(MatchExpected(R"({"queues": [{"fair_share": {"cpu": 4000}}]})", response).ok());
  EXPECT_FALSE(MatchExpected(R"({"queues": [{"fair_share": {"cpu": 4001}}]})", response).ok());
}

}  // namespace
}  // namespace arbiter::testing
