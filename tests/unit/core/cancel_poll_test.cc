#include "core/cancel_poll.h"

#include <functional>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"

namespace arbiter {
namespace {

using ::arbiter::testing::StatusIs;

TEST(CancelPollTest, AsksOncePerIntervalOfWork) {
  int asked = 0;
  std::function<bool()> hook = [&asked] {
    ++asked;
    return false;
  };
  CancelPoll poll(&hook);
  for (int64_t i = 1; i < CancelPoll::kInterval; ++i) EXPECT_FALSE(poll.Tick());
  EXPECT_EQ(asked, 0);
  EXPECT_FALSE(poll.Tick());
  EXPECT_EQ(asked, 1);
  EXPECT_FALSE(poll.Tick(5 * CancelPoll::kInterval));  // one large step: one question
  EXPECT_EQ(asked, 2);
  EXPECT_EQ(poll.questions(), 2);
}

TEST(CancelPollTest, LatchesOnceCancelled) {
  int asked = 0;
  std::function<bool()> hook = [&asked] { return ++asked == 1; };  // yes once, then no
  CancelPoll poll(&hook);
  poll.set_phase("reclaim");
  EXPECT_TRUE(poll.Tick(CancelPoll::kInterval));
  EXPECT_TRUE(poll.cancelled());
  EXPECT_TRUE(poll.Tick(CancelPoll::kInterval));
  EXPECT_EQ(asked, 1);
  EXPECT_THAT(poll.status(), StatusIs(absl::StatusCode::kCancelled));
  EXPECT_EQ(poll.status().message(), "cancelled in phase reclaim");
}

TEST(CancelPollTest, WithoutAHookNeverCancels) {
  std::function<bool()> empty;
  CancelPoll with_empty(&empty);
  CancelPoll with_null(nullptr);
  CancelPoll plain;
  for (int i = 0; i < 3; ++i) {
    EXPECT_FALSE(with_empty.Tick(CancelPoll::kInterval));
    EXPECT_FALSE(with_null.Tick(CancelPoll::kInterval));
    EXPECT_FALSE(plain.Tick(CancelPoll::kInterval));
  }
  EXPECT_EQ(with_empty.questions(), 0);
}

}  // namespace
}  // namespace arbiter
