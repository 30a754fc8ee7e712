#include "core/cancel_poll.h"

#include "absl/strings/str_cat.h"

namespace arbiter {

bool CancelPoll::Ask() {
  budget_ = kInterval;
  if (cancelled_fn_ == nullptr || !*cancelled_fn_) return false;
  ++questions_;
  cancelled_ = (*cancelled_fn_)();
  return cancelled_;
}

absl::Status CancelPoll::status() const {
  return absl::CancelledError(absl::StrCat("cancelled in phase ", phase_));
}

}  // namespace arbiter
