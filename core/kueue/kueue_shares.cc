// The Kueue model's entry points (SEMANTICS.md §5, §6 KUEUE). Provisional: every queue is listed
// with its configured quota until the quota tree lands.
#include <algorithm>

#include "absl/status/status.h"
#include "core/kueue/kueue.h"

namespace arbiter::kueue {

std::vector<QueueShare> ComputeKueueShares(const Snapshot& snapshot) {
  std::vector<QueueShare> shares;
  shares.reserve(snapshot.queues.size());
  for (const Queue& queue : snapshot.queues) {
    QueueShare share;
    share.queue = queue.name;
    share.deserved = queue.deserved;
    shares.push_back(std::move(share));
  }
  std::sort(shares.begin(), shares.end(),
            [](const QueueShare& a, const QueueShare& b) { return a.queue < b.queue; });
  return shares;
}

absl::StatusOr<ScheduleResult> ScheduleKueue(const Snapshot& snapshot, const Policy& /*policy*/,
                                             const CycleHooks& hooks) {
  if (hooks.cancelled && hooks.cancelled()) {
    return absl::CancelledError("cancelled before phase fair_share");
  }
  ScheduleResult result;
  result.queues = ComputeKueueShares(snapshot);
  return result;
}

}  // namespace arbiter::kueue
