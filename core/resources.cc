#include "core/resources.h"

#include <algorithm>
#include <cstddef>
#include <utility>

namespace arbiter {

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
