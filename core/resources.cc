#include "core/resources.h"

#include <algorithm>
#include <cstddef>
#include <utility>

namespace arbiter {
namespace {

// Merges the keys of `map` (ascending, as std::map iterates) into the sorted, unique `names`.
// Maps usually repeat the same few resources, so the next key is first compared with the name
// after the previous one; a new name is inserted in place. O(|map| + |names|) per map in the
// common case, without allocating for names already present.
void AddKeys(const ResourceMap& map, std::vector<std::string>& names) {
  size_t pos = 0;
  for (const auto& entry : map) {
    const std::string& name = entry.first;
    if (pos < names.size() && names[pos] == name) {
      ++pos;
      continue;
    }
    pos = static_cast<size_t>(
        std::lower_bound(names.begin() + static_cast<std::ptrdiff_t>(pos), names.end(), name) -
        names.begin());
    if (pos == names.size() || names[pos] != name) {
      names.insert(names.begin() + static_cast<std::ptrdiff_t>(pos), name);
    }
    ++pos;
  }
}

}  // namespace

ResourceSet ResourceSet::Collect(const Snapshot& snapshot) {
  std::vector<std::string> names;
  AddKeys(snapshot.capacity, names);
  for (const Node& node : snapshot.nodes) AddKeys(node.allocatable, names);
  for (const PodGroup& group : snapshot.pod_groups) {
    for (const Pod& pod : group.pods) AddKeys(pod.requests, names);
  }
  for (const Queue& queue : snapshot.queues) {
    AddKeys(queue.deserved, names);
    AddKeys(queue.limit, names);
    AddKeys(queue.over_quota_weight, names);
    AddKeys(queue.borrowing_limit, names);
    AddKeys(queue.lending_limit, names);
  }
  ResourceSet set;
  set.names_ = std::move(names);
  return set;
}

ResourceSet ResourceSet::FromSortedNames(std::vector<std::string> names) {
  ResourceSet set;
  set.names_ = std::move(names);
  return set;
}

int ResourceSet::Find(std::string_view name) const {
  auto it = std::lower_bound(names_.begin(), names_.end(), name);
  if (it == names_.end() || *it != name) return -1;
  return static_cast<int>(it - names_.begin());
}

std::vector<double> ResourceSet::Dense(const ResourceMap& map, double absent) const {
  std::vector<double> values(names_.size(), absent);
  for (const auto& [name, value] : map) {
    int index = Find(name);
    if (index >= 0) values[index] = value;
  }
  return values;
}

ResourceMap ResourceSet::ToMap(const std::vector<double>& values) const {
  ResourceMap map;
  for (size_t i = 0; i < names_.size(); ++i) map.emplace_hint(map.end(), names_[i], values[i]);
  return map;
}

}  // namespace arbiter
