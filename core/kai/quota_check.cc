#include "core/kai/quota_check.h"

namespace arbiter::kai {

std::optional<QuotaBreach> CheckQuota(const Cluster& cluster, const KaiFairShare& shares,
                                      const WorkingState& state, int group,
                                      const double* unit_requests) {
  return CheckQuotaOn(
      cluster, shares, group, unit_requests, [&state](int q) { return state.allocated(q); },
      [&state](int q) { return state.allocated_np(q); });
}

}  // namespace arbiter::kai
