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

QueueShareRows ToQueueShareRows(const KaiFairShare& shares) {
  const ValidatedSnapshot& request = *shares.request;
  const QueueTree& tree = shares.tree();
  const int columns = shares.resources().size();
  const size_t cells = static_cast<size_t>(tree.size()) * columns;
  QueueShareRows rows;
  rows.resources = shares.resources().names();
  size_t name_bytes = 0;
  size_t deserved_count = 0;
  for (int q = 0; q < tree.size(); ++q) {
    name_bytes += tree.queue(q).name.size();
    deserved_count += request.deserved(q).size();
  }
  rows.names.reserve(name_bytes);
  rows.name_ends.reserve(tree.size());
  rows.deserved.reserve(deserved_count);
  rows.deserved_ends.reserve(tree.size());
  rows.fair_share.reserve(cells);
  rows.allocated.reserve(cells);
  rows.requested.reserve(cells);
  rows.saturation.reserve(tree.size());
  for (int q = 0; q < tree.size(); ++q) {
    const QueueAmounts& a = shares.queues[q];
    rows.names += tree.queue(q).name;
    rows.name_ends.push_back(static_cast<uint32_t>(rows.names.size()));
    for (const Amount& amount : request.deserved(q)) {
      rows.deserved.emplace_back(amount.resource, WithoutNegativeZero(amount.value));
    }
    rows.deserved_ends.push_back(static_cast<uint32_t>(rows.deserved.size()));
    double saturation = 0;
    for (int r = 0; r < columns; ++r) {
      rows.fair_share.push_back(WithoutNegativeZero(a.fair_share[r]));
      rows.allocated.push_back(WithoutNegativeZero(a.allocated[r]));
      rows.requested.push_back(WithoutNegativeZero(a.requested[r]));
      saturation = std::max(saturation, Saturation(a.allocated[r], a.fair_share[r]));
    }
    rows.saturation.push_back(WithoutNegativeZero(saturation));
  }
  return rows;
}

}  // namespace arbiter::kai
