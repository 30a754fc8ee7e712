// Timestamps in messages: RFC 3339 in UTC, as protobuf's JSON mapping writes them.
#include "core/timestamp_format.h"

#include "gtest/gtest.h"

namespace arbiter {
namespace {

TEST(FormatTimestamp, WholeSecondsHaveNoFraction) {
  EXPECT_EQ(FormatTimestamp({0, 0}), "1970-01-01T00:00:00Z");
  EXPECT_EQ(FormatTimestamp({1500, 0}), "1970-01-01T00:25:00Z");
  EXPECT_EQ(FormatTimestamp({1795867800, 0}), "2026-11-28T12:10:00Z");
}

TEST(FormatTimestamp, LeapDaysAndCenturies) {
  EXPECT_EQ(FormatTimestamp({951782400, 0}), "2000-02-29T00:00:00Z");
  EXPECT_EQ(FormatTimestamp({4107542399, 0}), "2100-02-28T23:59:59Z");
  EXPECT_EQ(FormatTimestamp({4107542400, 0}), "2100-03-01T00:00:00Z");
  EXPECT_EQ(FormatTimestamp({253402300799, 0}), "9999-12-31T23:59:59Z");
}

TEST(FormatTimestamp, BeforeTheEpoch) {
  EXPECT_EQ(FormatTimestamp({-1, 0}), "1969-12-31T23:59:59Z");
  EXPECT_EQ(FormatTimestamp({-62135596800, 0}), "0001-01-01T00:00:00Z");
}

TEST(FormatTimestamp, FractionsTakeThreeSixOrNineDigits) {
  EXPECT_EQ(FormatTimestamp({0, 500000000}), "1970-01-01T00:00:00.500Z");
  EXPECT_EQ(FormatTimestamp({0, 1000}), "1970-01-01T00:00:00.000001Z");
  EXPECT_EQ(FormatTimestamp({0, 1}), "1970-01-01T00:00:00.000000001Z");
}

}  // namespace
}  // namespace arbiter
