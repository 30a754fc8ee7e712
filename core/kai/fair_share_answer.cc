#include "core/kai/fair_share_answer.h"

#include <algorithm>
#include <utility>

#include "core/kai/kai_fair_share.h"

namespace arbiter::kai {
namespace {

double WithoutNegativeZero(double value) { return value == 0 ? 0.0 : value; }

ResourceMap ToResponseMap(const ResourceSet& resources, Row values) {
  ResourceMap map;
  map.reserve(resources.size());
  for (int r = 0; r < resources.size(); ++r) {
    map.emplace_hint(map.end(), resources.name(r), WithoutNegativeZero(values[r]));
  }
  return map;
}

}  // namespace

std::vector<QueueShare> ToQueueShares(const KaiFairShare& shares) {
  std::vector<QueueShare> result;
  result.reserve(shares.tree().size());
  for (int q = 0; q < shares.tree().size(); ++q) {
    const QueueAmounts& a = shares.queues[q];
    QueueShare share;
    share.queue = shares.tree().queue(q).name;
    share.deserved.reserve(shares.tree().queue(q).deserved.size());
    for (const auto& [name, value] : shares.tree().queue(q).deserved) {
      share.deserved.emplace_hint(share.deserved.end(), name, WithoutNegativeZero(value));
    }
    share.fair_share = ToResponseMap(shares.resources(), a.fair_share);
    share.allocated = ToResponseMap(shares.resources(), a.allocated);
    share.requested = ToResponseMap(shares.resources(), a.requested);
    double saturation = 0;
    for (int r = 0; r < shares.resources().size(); ++r) {
      saturation = std::max(saturation, Saturation(a.allocated[r], a.fair_share[r]));
    }
    share.saturation = WithoutNegativeZero(saturation);
    result.push_back(std::move(share));
  }
  return result;
}

}  // namespace arbiter::kai
