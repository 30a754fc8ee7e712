// The response's queue list for KAI (SEMANTICS.md §6): a fair share written as QueueShares.
#pragma once

#include <vector>

#include "core/kai/fair_share_rows.h"
#include "core/model.h"

namespace arbiter::kai {

// Name order, every resource of R listed in fair_share, allocated and requested; deserved echoes
// the configured map; saturation the largest of §2.3's per resource. Negative zeros are written
// as 0.
std::vector<QueueShare> ToQueueShares(const KaiFairShare& shares);

// The same list as dense rows (core/model.h), the columns being R: a few allocations in all,
// whatever the number of queues. Rows(shares).Share(q) equals ToQueueShares(shares)[q].
QueueShareRows ToQueueShareRows(const KaiFairShare& shares);

}  // namespace arbiter::kai
