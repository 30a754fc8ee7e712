#include "core/model.h"

namespace arbiter {

Timestamp AddDuration(const Timestamp& t, const Duration& d) {
  constexpr int64_t kNanosPerSecond = 1000000000;
  int64_t nanos = static_cast<int64_t>(t.nanos) + d.nanos;
  int64_t seconds = t.seconds + d.seconds + nanos / kNanosPerSecond;
  nanos %= kNanosPerSecond;
  if (nanos < 0) {
    nanos += kNanosPerSecond;
    seconds -= 1;
  }
  return Timestamp{seconds, static_cast<int32_t>(nanos)};
}

bool IsPreemptibleUnderKai(const PodGroup& group) {
  switch (group.preemptibility) {
    case Preemptibility::kPreemptible:
      return true;
    case Preemptibility::kNonPreemptible:
      return false;
    default:
      return group.priority < 100;
  }
}

}  // namespace arbiter
