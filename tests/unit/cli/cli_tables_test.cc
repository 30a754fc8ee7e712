// The CLI's table format: aligned columns, readable quantities, the queue tree from the request.
#include <string>

#include "clients/cli/response_tables.h"
#include "clients/cli/text_table.h"
#include "edge/wire.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace arbiter::cli {
namespace {

using ::testing::HasSubstr;

TEST(TextTable, AlignsColumnsAndTrimsTrailingSpaces) {
  TextTable table({{"NAME"}, {"COUNT", TextTable::kRight}, {"NOTE"}});
  table.AddRow({"a", "1", ""});
  table.AddRow({"longer-name", "1234", "x"});
  EXPECT_EQ(table.Render(),
            "NAME         COUNT  NOTE\n"
            "a                1\n"
            "longer-name   1234  x\n");
}

struct QuantityCase {
  const char* name;
  std::string resource;
  double value;
  bool quota;
  std::string expected;
};

class FormatQuantityTest : public ::testing::TestWithParam<QuantityCase> {};

TEST_P(FormatQuantityTest, Formats) {
  const QuantityCase& c = GetParam();
  EXPECT_EQ(FormatQuantity(c.resource, c.value, c.quota), c.expected);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, FormatQuantityTest,
    ::testing::Values(
        QuantityCase{"WholeNumber", "cpu", 4000, false, "4000"},
        QuantityCase{"Fraction", "nvidia.com/gpu", 0.5, false, "0.5"},
        QuantityCase{"FractionRoundedToThreeDecimals", "cpu", 2.0 / 3.0, false, "0.667"},
        QuantityCase{"TinyFractionKeepsSignificantDigits", "cpu", 0.0001234, false, "0.00012"},
        QuantityCase{"MinusOneQuotaIsUnlimited", "cpu", -1, true, "unlimited"},
        QuantityCase{"MinusOneElsewhereIsANumber", "cpu", -1, false, "-1"},
        QuantityCase{"MemoryInBinaryUnits", "memory", 549755813888, false, "512Gi"},
        QuantityCase{"MemoryFraction", "memory", 1.5 * 1024 * 1024 * 1024, false, "1.5Gi"},
        QuantityCase{"SmallMemoryInBytes", "memory", 512, false, "512"},
        QuantityCase{"Infinity", "cpu", std::numeric_limits<double>::infinity(), false, "inf"}),
    [](const ::testing::TestParamInfo<QuantityCase>& param) { return param.param.name; });

constexpr char kRequest[] = R"({"snapshot": {
  "queues": [{"name": "zeta"}, {"name": "child", "parent": "zeta"}, {"name": "alpha"}],
  "pod_groups": [{"name": "g", "queue": "child"}]}})";

constexpr char kResponse[] = R"({
  "queues": [
    {"queue": "alpha", "fair_share": {"cpu": 1}, "allocated": {"cpu": 0}, "requested": {"cpu": 0}},
    {"queue": "child", "deserved": {"cpu": -1}, "fair_share": {"cpu": 2},
     "allocated": {"cpu": 1}, "requested": {"cpu": 2}, "saturation": 0.5},
    {"queue": "zeta", "fair_share": {"cpu": 2}, "allocated": {"cpu": 1}, "requested": {"cpu": 2}}],
  "bindings": [{"pod_group": "g", "pod": "g-0", "node": "n1", "after_evictions": true}],
  "evictions": [{"pod_group": "old", "pod": "old-0", "node": "n1", "reason": "FAIR_SHARE_RECLAIM",
                 "preemptor_pod_group": "g", "message": "reclaimed for child/g"}],
  "pending": [{"pod_group": "g", "reason": "gang-does-not-fit", "message": "only 1 of 2 fit"}]
})";

TEST(RenderSchedule, ShowsTheTreeInNameOrderThenTheDecisions) {
  v1::ScheduleRequest request;
  v1::ScheduleResponse response;
  ASSERT_TRUE(edge::ParseJson(kRequest, &request).ok());
  ASSERT_TRUE(edge::ParseJson(kResponse, &response).ok());
  const std::string table = RenderSchedule(request.snapshot(), request.policy(), response);
  EXPECT_EQ(table,
            "Queues (KAI fair share)\n"
            "QUEUE    RESOURCE   DESERVED  FAIR SHARE  ALLOCATED  REQUESTED  SATURATION\n"
            "alpha    cpu               -           1          0          0           0\n"
            "zeta     cpu               -           2          1          2           0\n"
            "  child  cpu       unlimited           2          1          2         0.5\n"
            "- = not set\n"
            "\n"
            "Bindings (1)\n"
            "POD GROUP  POD  NODE  AFTER EVICTIONS\n"
            "g          g-0  n1    yes\n"
            "\n"
            "Evictions (1)\n"
            "POD GROUP  POD    NODE  REASON              FOR  MESSAGE\n"
            "old        old-0  n1    FAIR_SHARE_RECLAIM  g    reclaimed for child/g\n"
            "\n"
            "Pending (1)\n"
            "POD GROUP  QUEUE  REASON             MESSAGE\n"
            "g          child  gang-does-not-fit  only 1 of 2 fit\n");
}

TEST(RenderSchedule, KueueShowsAdmissionsAndHidesEmptyBindings) {
  v1::ScheduleRequest request;
  ASSERT_TRUE(edge::ParseJson(kRequest, &request).ok());
  request.mutable_policy()->set_fairness_model(v1::FAIRNESS_MODEL_KUEUE);
  v1::ScheduleResponse response;
  v1::QueueShare* share = response.add_queues();
  share->set_queue("child");
  (*share->mutable_deserved())["cpu"] = 4;
  (*share->mutable_allocated())["cpu"] = 6;
  share->set_weighted_share(250);
  share->set_dominant_resource("cpu");
  share->set_borrowing(true);
  v1::Admission* admission = response.add_admissions();
  admission->set_pod_group("g");
  admission->set_queue("child");
  const std::string table = RenderSchedule(request.snapshot(), request.policy(), response);
  EXPECT_THAT(table, HasSubstr("Queues (Kueue fair sharing)\n"));
  EXPECT_THAT(table,
              HasSubstr("  child  cpu             4                -              -      6"));
  EXPECT_THAT(table, HasSubstr("250  cpu       yes\n"));
  EXPECT_THAT(table, HasSubstr("\nAdmissions (1)\n"));
  EXPECT_THAT(table, ::testing::Not(HasSubstr("Bindings")));
}

TEST(RenderFairShares, SaysSoWhenThereAreNoQueues) {
  EXPECT_EQ(RenderFairShares(v1::Snapshot(), v1::Policy(), v1::FairShareResponse()),
            "Queues: none\n");
}

}  // namespace
}  // namespace arbiter::cli
