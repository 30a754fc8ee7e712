// The decisions of a KAI cycle as the response of SEMANTICS.md §6: bindings and evictions by
// (pod_group, pod), pending by pod_group. The caller adds `queues`.
#pragma once

#include "core/kai/session.h"
#include "core/model.h"

namespace arbiter::kai {

// Reads the session's final state. Pending lists every group whose active pods are fewer than g,
// except groups with a pod evicted in this response: gang-incomplete when it is not ready, else
// the last recorded reason, else not-attempted. O(pods + groups).
ScheduleResult BuildResponse(Session& session);

}  // namespace arbiter::kai
