// Why a Kueue workload stays pending (SEMANTICS.md §6): the sentences that name the blocking
// queue, resource and amounts, beside the stable reason codes (core/pending_reasons.h, the list
// both models share). Numbers are written in shortest round-trip form, in the caller's units
// (never converted).
#pragma once

#include <string>

#include "core/kueue/quota_tree.h"
#include "core/pending_reasons.h"
#include "core/quantity_format.h"  // FormatQuantity, for the sentences

namespace arbiter::kueue {

// "cluster queue team-a" / "cohort research".
std::string NodeLabel(const QuotaTree& tree, int node);

// Why `amount` of resource r does not fit in cq now, naming the constraint that binds:
// "cohort research would exceed its borrowing limit on cpu by 2000".
std::string ShortfallMessage(const QuotaTree& tree, int cq, int r, double amount);

}  // namespace arbiter::kueue
