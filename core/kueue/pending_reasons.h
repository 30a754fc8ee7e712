// Why a Kueue workload stays pending (SEMANTICS.md §6): the stable reason codes and the sentences
// that name the blocking queue, resource and amounts. Numbers are written in shortest round-trip
// form, in the caller's units (never converted).
#pragma once

#include <string>

#include "core/kueue/quota_tree.h"
#include "core/quantity_format.h"  // FormatQuantity, for the sentences

namespace arbiter::kueue {

inline constexpr char kGangIncomplete[] = "gang-incomplete";
inline constexpr char kResourceNotCovered[] = "resource-not-covered";
inline constexpr char kExceedsMaxQuota[] = "exceeds-max-quota";
inline constexpr char kInsufficientQuota[] = "insufficient-quota";
inline constexpr char kNoPreemptionCandidates[] = "no-preemption-candidates";
inline constexpr char kWaitingForPreemptions[] = "waiting-for-preemptions";
inline constexpr char kOverlappingPreemptionTargets[] = "overlapping-preemption-targets";
inline constexpr char kNoLongerFits[] = "no-longer-fits";
inline constexpr char kNotReached[] = "not-reached";

// "cluster queue team-a" / "cohort research".
std::string NodeLabel(const QuotaTree& tree, int node);

// Why `amount` of resource r does not fit in cq now, naming the constraint that binds:
// "cohort research would exceed its borrowing limit on cpu by 2000".
std::string ShortfallMessage(const QuotaTree& tree, int cq, int r, double amount);

}  // namespace arbiter::kueue
