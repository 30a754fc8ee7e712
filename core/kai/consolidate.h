// The CONSOLIDATE action (SEMANTICS.md §4.9): a pending preemptible group that would fit if
// preemptible running pods moved. Every victim must be re-placed in the same response (an
// eviction with reason CONSOLIDATION plus a new binding), so nobody loses allocation. At most
// Policy.max_consolidation_preemptees victim groups (absent 16, 0 disables, -1 no cap).
#pragma once

#include "core/kai/session.h"

namespace arbiter::kai {

void Consolidate(Session& session);

}  // namespace arbiter::kai
