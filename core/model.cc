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

QueueShare QueueShareRows::Share(int row) const {
  QueueShare share;
  share.queue = std::string(name(row));
  const auto [begin, end] = deserved_run(row);
  share.deserved.reserve(end - begin);
  for (uint32_t i = begin; i < end; ++i) {
    share.deserved.emplace_hint(share.deserved.end(), resources[deserved[i].first],
                                deserved[i].second);
  }
  const size_t first = static_cast<size_t>(row) * resources.size();
  for (ResourceMap* map : {&share.fair_share, &share.allocated, &share.requested}) {
    map->reserve(resources.size());
  }
  for (size_t r = 0; r < resources.size(); ++r) {
    share.fair_share.emplace_hint(share.fair_share.end(), resources[r], fair_share[first + r]);
    share.allocated.emplace_hint(share.allocated.end(), resources[r], allocated[first + r]);
    share.requested.emplace_hint(share.requested.end(), resources[r], requested[first + r]);
  }
  share.saturation = saturation[row];
  return share;
}

std::vector<QueueShare> QueueList(const FairShareResult& result) {
  if (result.rows.size() == 0) return result.queues;
  std::vector<QueueShare> shares;
  shares.reserve(result.rows.size());
  for (int row = 0; row < result.rows.size(); ++row) shares.push_back(result.rows.Share(row));
  return shares;
}

}  // namespace arbiter
