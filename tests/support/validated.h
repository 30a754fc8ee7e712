// A test's request validated and interned the way the entry points do it (core/api/arbiter.cc),
// for tests that drive one model's internals. A test request must be valid: an invalid one fails
// the test and aborts it, since there is nothing to test without it. Header-only.
#pragma once

#include <cstdlib>
#include <utility>

#include "core/model.h"
#include "core/validated_snapshot.h"
#include "gtest/gtest.h"

namespace arbiter::testing {

inline ValidatedSnapshot MustValidate(const Snapshot& snapshot, const Policy& policy = Policy{},
                                      RequestKind kind = RequestKind::kSchedule) {
  absl::StatusOr<ValidatedSnapshot> request = ValidatedSnapshot::Validate(snapshot, policy, kind);
  if (!request.ok()) {
    ADD_FAILURE() << "the test's request is invalid: " << request.status();
    std::abort();
  }
  return *std::move(request);
}

}  // namespace arbiter::testing
