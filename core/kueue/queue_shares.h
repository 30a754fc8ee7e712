// The Kueue response's queue list (SEMANTICS.md §6 KUEUE): one QueueShare per queue, name order.
#pragma once

#include <vector>

#include "core/kueue/quota_tree.h"
#include "core/kueue/workload.h"
#include "core/model.h"

namespace arbiter::kueue {

// For the usage `tree` holds: allocated = Use(n) (bubbled), requested = allocated + the requests
// of the subtree's workloads that hold no quota (`holds_quota[i]` false), the §5.3 share,
// dominant resource and borrowing flag; deserved echoes the queue's map; fair_share stays empty.
std::vector<QueueShare> BuildQueueShares(const QuotaTree& tree,
                                         const std::vector<Workload>& workloads,
                                         const std::vector<char>& holds_quota);

// The Policy's strategies with the default ([LESS_THAN_OR_EQUAL_TO_FINAL_SHARE,
// LESS_THAN_INITIAL_SHARE]) resolved.
std::vector<KueuePreemptionStrategy> ResolveStrategies(const Policy& policy);

}  // namespace arbiter::kueue
