#include "core/resource_interner.h"

#include <algorithm>
#include <utility>

namespace arbiter {

int ResourceInterner::FindOrAdd(const std::string& name) {
  const int n = static_cast<int>(names_.size());
  if (n <= kLinearLimit) {
    for (int i = 0; i < n; ++i) {
      if (*names_[i] == name) return i;
    }
  } else {
    const auto it = index_.find(name);
    if (it != index_.end()) return it->second;
  }
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
