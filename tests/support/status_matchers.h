// gMock matchers for absl::Status and absl::StatusOr<T>, named like upstream Abseil's
// (absl/status/status_matchers.h, which Debian's Abseil 20220623 lacks), so that an upgrade is
// a rename:
//
//   EXPECT_THAT(ValidateRequest(s, p, kind), IsOk());
//   EXPECT_THAT(Schedule(s, p), StatusIs(absl::StatusCode::kInvalidArgument));
//   EXPECT_THAT(ApplyDecisions(s, p, r),
//               StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("bound twice")));
//
// A failed match prints the status (code and message).
#pragma once

#include <ostream>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gmock/gmock.h"

namespace arbiter::testing {
namespace internal {

inline const absl::Status& StatusOf(const absl::Status& status) { return status; }

template <typename T>
const absl::Status& StatusOf(const absl::StatusOr<T>& status_or) {
  return status_or.status();
}

}  // namespace internal

// Matches an OK absl::Status, or an absl::StatusOr<T> that holds a value.
MATCHER(IsOk, negation ? "is not OK" : "is OK") {
  const absl::Status& status = internal::StatusOf(arg);
  if (!status.ok()) *result_listener << "whose status is " << status;
  return status.ok();
}

// Matches a status (or a StatusOr's status) whose code matches `code` (a code or a matcher of
// absl::StatusCode) and whose message matches `message` (a string or a matcher of std::string,
// such as HasSubstr).
MATCHER_P2(StatusIs, code, message,
           (negation ? "has a status whose code is not " : "has a status whose code is ") +
               ::testing::DescribeMatcher<absl::StatusCode>(code) + " and whose message " +
               ::testing::DescribeMatcher<const std::string&>(message)) {
  const absl::Status& status = internal::StatusOf(arg);
  *result_listener << "whose status is " << status;
  return ::testing::Matches(::testing::MatcherCast<absl::StatusCode>(code))(status.code()) &&
         ::testing::Matches(::testing::MatcherCast<const std::string&>(message))(
             std::string(status.message()));
}

// The same with any message.
template <typename CodeMatcher>
auto StatusIs(CodeMatcher code) {
  return StatusIs(code, ::testing::_);
}

}  // namespace arbiter::testing
