// Taints and tolerations (SEMANTICS.md §4.5), as both models read them: KAI to place a pod on a
// node, Kueue to match a pod set to a resource flavor (§5.8.5).
#pragma once

#include "core/model.h"

namespace arbiter {

// True when `toleration` tolerates `taint`: the effect matches (an empty effect matches all),
// and the key and value are equal (`Equal`, or no operator), or the key is (`Exists`; an empty
// key with `Exists` tolerates every taint).
bool Tolerates(const Toleration& toleration, const Taint& taint);

}  // namespace arbiter
