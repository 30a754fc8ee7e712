// The ALLOCATE action (SEMANTICS.md §4.6): place units without evicting anybody.
#pragma once

#include "core/kai/session.h"

namespace arbiter::kai {

// Candidates are the ready groups with a unit. Repeatedly takes the next job in queue order
// (§4.3), checks the quota (§4.4) and places the unit (§4.5): a gang all or nothing, an elastic
// group one pod at a time. On success the unit is committed and a group with PENDING pods left
// competes again; on failure the unit is rolled back, the reason recorded, and the group leaves
// the candidates. O(attempts · (depth · log queues + unit · placement)).
void Allocate(Session& session);

}  // namespace arbiter::kai
