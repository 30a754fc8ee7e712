#include "clients/generator/kai_resources.h"

#include "absl/strings/str_cat.h"

namespace arbiter::generator::internal {

KaiResources::KaiResources(int extra) : names_{"cpu", "memory", "nvidia.com/gpu"} {
  for (int i = 0; i < extra; ++i) names_.push_back(absl::StrCat("example.com/res-", i));
}

ResourceMap KaiResources::ToMap(const DenseResources& dense, bool skip_zero) const {
  ResourceMap map;
  for (int r = 0; r < count(); ++r) {
    if (skip_zero && dense[r] == 0) continue;
    map[names_[r]] = dense[r];
  }
  return map;
}

}  // namespace arbiter::generator::internal
