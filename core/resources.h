// The resource set R of a request (SEMANTICS.md §0.1), interned once: every resource gets a
// dense index, in bytewise name order, and per-queue or per-pod amounts become vectors over R.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/model.h"

namespace arbiter {

class ResourceSet {
 public:
  ResourceSet() = default;

  // A set of `names` that are already sorted bytewise and unique. R of a request is built once,
  // by ValidatedSnapshot::Validate (core/validated_snapshot.h): the union of the keys of
  // Snapshot.capacity, every Node.allocatable, every Pod.requests and every queue's deserved,
  // limit, over_quota_weight, borrowing_limit and lending_limit, and of Kueue's resource groups
  // (covered_resources and each flavor's quotas, §5.8).
  static ResourceSet FromSortedNames(std::vector<std::string> names);

  int size() const { return static_cast<int>(names_.size()); }
  const std::string& name(int index) const { return names_[index]; }
  const std::vector<std::string>& names() const { return names_; }

  // The index of `name`, or -1 when it is not in R. O(log |R|).
  int Find(std::string_view name) const;

  // `map` as a dense vector over R; keys outside R are ignored, missing keys take `absent`.
  std::vector<double> Dense(const ResourceMap& map, double absent) const;

  // A dense vector back into a map holding every resource of R (0 included).
  ResourceMap ToMap(const std::vector<double>& values) const;

 private:
  std::vector<std::string> names_;  // sorted, unique
};

}  // namespace arbiter
