// Why a Kueue workload stays pending (SEMANTICS.md §6): the stable reason codes and the sentences
// that name the blocking queue, resource and amounts. Numbers are written in shortest round-trip
// form, in the caller's units (never converted).
#pragma once

#include <string>

#include "core/kueue/quota_tree.h"

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

// Shortest decimal that reads back as the same double ("2000", "0.1", "1e+21", "inf");
// -0 is written as 0.
std::string FormatQuantity(double value);

// "cluster queue team-a" / "cohort research".
std::string NodeLabel(const QuotaTree& tree, int node);

// Why `amount` of resource r does not fit in cq now, naming the constraint that binds:
// "cohort research would exceed its borrowing limit on cpu by 2000".
std::string ShortfallMessage(const QuotaTree& tree, int cq, int r, double amount);

}  // namespace arbiter::kueue
