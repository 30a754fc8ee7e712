#include "core/resource_interner.h"

#include <algorithm>
#include <utility>

namespace arbiter {

int ResourceInterner::FindExisting(const std::string& name) const {
  const int n = static_cast<int>(names_.size());
  if (n <= kLinearLimit) {
    for (int i = 0; i < n; ++i) {
      if (*names_[i] == name) return i;
    }
    return -1;
  }
  const auto it = index_.find(name);
  return it == index_.end() ? -1 : it->second;
}

int ResourceInterner::FindOrAdd(const std::string& name) {
  const int n = static_cast<int>(names_.size());
  if (const int id = FindExisting(name); id >= 0) return id;
  names_.push_back(&name);
  if (n + 1 == kLinearLimit + 1) {
    for (int i = 0; i <= n; ++i) index_.emplace(*names_[i], i);
  } else if (n + 1 > kLinearLimit + 1) {
    index_.emplace(name, n);
  }
  return n;
}

ResourceSet ResourceInterner::Sorted(std::vector<int>& position) const {
  std::vector<int> order(names_.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  std::sort(order.begin(), order.end(), [&](int a, int b) { return *names_[a] < *names_[b]; });
  position.assign(names_.size(), 0);
  std::vector<std::string> sorted;
  sorted.reserve(order.size());
  for (size_t i = 0; i < order.size(); ++i) {
    position[order[i]] = static_cast<int>(i);
    sorted.push_back(*names_[order[i]]);
  }
  return ResourceSet::FromSortedNames(std::move(sorted));
}

}  // namespace arbiter
