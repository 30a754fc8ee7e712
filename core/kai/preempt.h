// The PREEMPT action (SEMANTICS.md §4.11): within one leaf, a group may evict preemptible groups
// of strictly lower priority (reason PRIORITY_PREEMPTION), outside their preempt min-runtime.
#pragma once

#include "core/kai/session.h"

namespace arbiter::kai {

void Preempt(Session& session);

}  // namespace arbiter::kai
