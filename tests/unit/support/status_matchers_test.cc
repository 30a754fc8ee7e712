// The status matchers of tests/support/status_matchers.h, on absl::Status and absl::StatusOr.
#include "tests/support/status_matchers.h"

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace arbiter::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(StatusMatchersTest, IsOkMatchesOkStatusAndStatusOrWithValue) {
  EXPECT_THAT(absl::OkStatus(), IsOk());
  EXPECT_THAT(absl::StatusOr<int>(3), IsOk());
  EXPECT_THAT(absl::InternalError("broken"), Not(IsOk()));
  EXPECT_THAT(absl::StatusOr<int>(absl::NotFoundError("gone")), Not(IsOk()));
}

TEST(StatusMatchersTest, StatusIsComparesTheCode) {
  EXPECT_THAT(absl::InvalidArgumentError("bad"), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(absl::OkStatus(), StatusIs(absl::StatusCode::kOk));
  EXPECT_THAT(absl::StatusOr<std::string>(absl::CancelledError("stop")),
              StatusIs(absl::StatusCode::kCancelled));
  EXPECT_THAT(absl::StatusOr<std::string>("value"), StatusIs(absl::StatusCode::kOk));
  EXPECT_THAT(absl::InvalidArgumentError("bad"), Not(StatusIs(absl::StatusCode::kInternal)));
  EXPECT_THAT(absl::InvalidArgumentError("bad"),
              StatusIs(Not(absl::StatusCode::kOk), ::testing::_));
}

TEST(StatusMatchersTest, StatusIsMatchesTheMessage) {
  const absl::Status status = absl::InvalidArgumentError("snapshot.queues[3].parent: unknown");
  EXPECT_THAT(status, StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("queues[3]")));
  EXPECT_THAT(status,
              StatusIs(absl::StatusCode::kInvalidArgument, "snapshot.queues[3].parent: unknown"));
  EXPECT_THAT(status, Not(StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("nodes"))));
  EXPECT_THAT(status, Not(StatusIs(absl::StatusCode::kInternal, HasSubstr("queues"))));
  const absl::StatusOr<int> failed = absl::ResourceExhaustedError("over the limit of 10");
  EXPECT_THAT(failed, StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("limit")));
}

TEST(StatusMatchersTest, DescriptionsNameTheExpectation) {
  EXPECT_EQ(::testing::DescribeMatcher<absl::Status>(IsOk()), "is OK");
  EXPECT_EQ(::testing::DescribeMatcher<absl::Status>(IsOk(), /*negation=*/true), "is not OK");
  const std::string description = ::testing::DescribeMatcher<absl::Status>(
      StatusIs(absl::StatusCode::kNotFound, HasSubstr("queue")));
  EXPECT_THAT(description, HasSubstr("NOT_FOUND"));
  EXPECT_THAT(description, HasSubstr("has substring \"queue\""));
}

TEST(StatusMatchersTest, AFailedMatchExplainsTheStatus) {
  ::testing::StringMatchResultListener listener;
  EXPECT_FALSE(::testing::ExplainMatchResult(IsOk(), absl::UnavailableError("retry"), &listener));
  EXPECT_THAT(listener.str(), HasSubstr("UNAVAILABLE: retry"));
}

}  // namespace
}  // namespace arbiter::testing
