// Why a pod group stays pending (SEMANTICS.md §6), in the words both models share: every reason
// code of the answer's `pending` list, one list for both models (codes are stable API, so each
// is spelled once), and the counting words their sentences use. Each model builds its own
// sentences on these: kai/pending_reasons.h, kueue/pending_reasons.h.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace arbiter {

// Both models: fewer pods than max(min_member, 1) (Kueue: no pods).
inline constexpr char kGangIncomplete[] = "gang-incomplete";

// KAI (§4.4, §4.5, §6).
inline constexpr char kQueueOverLimit[] = "queue-over-limit";
inline constexpr char kNonPreemptibleOverQuota[] = "non-preemptible-over-quota";
inline constexpr char kNoNodeMatchesSelector[] = "no-node-matches-selector";
inline constexpr char kInsufficientResources[] = "insufficient-resources";
inline constexpr char kGangDoesNotFit[] = "gang-does-not-fit";
inline constexpr char kNotAttempted[] = "not-attempted";

// Kueue (§5.4, §5.5, §6).
inline constexpr char kResourceNotCovered[] = "resource-not-covered";
inline constexpr char kExceedsMaxQuota[] = "exceeds-max-quota";
inline constexpr char kInsufficientQuota[] = "insufficient-quota";
inline constexpr char kNoPreemptionCandidates[] = "no-preemption-candidates";
inline constexpr char kWaitingForPreemptions[] = "waiting-for-preemptions";
inline constexpr char kOverlappingPreemptionTargets[] = "overlapping-preemption-targets";
inline constexpr char kNoLongerFits[] = "no-longer-fits";
inline constexpr char kNotReached[] = "not-reached";
// Kueue resource flavors (§5.8.9): no flavor of a resource group suits a pod set's node selector
// and tolerations.
inline constexpr char kNoMatchingFlavor[] = "no-matching-flavor";

// `count` and `noun`, the noun with an "s" unless count is 1: "1 node", "3 nodes",
// "2 preempted workloads".
std::string Counted(int64_t count, std::string_view noun);

// The verb that agrees with `count`: "is" when it is 1, else "are".
const char* IsOrAre(int64_t count);

}  // namespace arbiter
