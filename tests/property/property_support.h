// What the property tests share: the family of small generated requests they run over, a
// permutation of input order, exact comparison of answers, and the invariants of the issues
// (3, 4, 5) as functions returning OK or a message that names the offending object.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "clients/generator/generator.h"
#include "core/model.h"

namespace arbiter::testing {

// The options of property case `index`: small, varied clusters (a few to tens of nodes and
// queues, tens to hundreds of pods, 0–2 extra resources, depth 1–4, some with reclaim groups),
// drawn from the index so that a failing case can be rerun alone. Deterministic.
generator::GeneratorOptions PropertyCaseOptions(uint64_t index, generator::GeneratorModel model);

// The options of flavored Kueue property case `index`: PropertyCaseOptions(index, kKueue) with
// 1, 2 or 3 resource flavors per resource (index mod 3). Deterministic.
generator::GeneratorOptions FlavoredPropertyCaseOptions(uint64_t index);

// The number of cases a randomised suite runs: environment variable `variable` when it holds a
// whole decimal number from 1 to INT_MAX (a longer run by hand, README "Two commands"), else
// `fallback` (`make test`'s).
int CasesFromEnvironment(const char* variable, int fallback);

// A description of the case for failure messages ("case 17: nodes=12 queues=7 ...").
std::string DescribeCase(uint64_t index, const generator::GeneratorOptions& options);

// The same snapshot with every repeated field shuffled (queues, nodes, pod groups, pods, taints,
// tolerations, usage, and Kueue's resource flavors, resource groups, covered resources and
// admitted flavors, but not a group's flavor order), deterministically per seed. Maps keep their
// (sorted) order.
Snapshot Permuted(const Snapshot& snapshot, uint64_t seed);

// "" when equal in every field (doubles compared exactly, -0.0 unlike 0.0 since the answer must
// be byte-identical), else where they first differ.
std::string DiffResults(const ScheduleResult& a, const ScheduleResult& b);
std::string DiffQueueShares(const std::vector<QueueShare>& a, const std::vector<QueueShare>& b);

// SEMANTICS.md §0.7: NON_PREEMPTIBLE, or UNSPECIFIED with priority >= 100 (KAI); only
// NON_PREEMPTIBLE protects under KUEUE.
bool IsPreemptible(const PodGroup& group, FairnessModel model);

// ---- KAI invariants; `before` is the request's snapshot, `after` the decisions applied ----

// Issue 3: every node holds at most its allocatable per resource, unless it already held more.
absl::Status CheckNodeCapacity(const Snapshot& before, const Snapshot& after);
// Issue 3: every queue's subtree allocation is within its limit (set, not -1), unless it already
// was above it.
absl::Status CheckQueueLimits(const Snapshot& before, const Snapshot& after);
// Issue 3: every group the response touched runs none or at least max(min_member, 1) pods.
absl::Status CheckGangs(const Snapshot& after, const ScheduleResult& result);
// Issue 3: no pod bound twice, and every binding is to a node the pod may use (schedulable,
// selector, NoSchedule/NoExecute taints tolerated; SEMANTICS §4.5).
absl::Status CheckBindings(const Snapshot& before, const ScheduleResult& result);
// Issue 4: no pod of a non-preemptible group is evicted (moves included, §0.7).
absl::Status CheckNonPreemptibleKept(const Snapshot& before, const ScheduleResult& result,
                                     FairnessModel model);
// Issue 4: a group protected by min-runtime (§4.7: preempt from the victim's leaf, reclaim from
// the victim side's child of the lowest common ancestor, walking up) keeps at least
// max(min_member, 1) running pods after reclaim or preempt evictions.
absl::Status CheckMinRuntime(const Snapshot& before, const Snapshot& after,
                             const ScheduleResult& result);
// Issue 4: every eviction names a preemptor that has a binding in the same response.
absl::Status CheckPreemptorsBound(const ScheduleResult& result);

// ---- Kueue invariants ----

// Issue 5: the admitted workloads of `after` fit the quota tree at every level and, in a flavored
// request, per flavor-resource (an independent model of §5.2 and §5.8.2–§5.8.3:
// generator::KueueQuotaTree, charging each admission at its PodGroup.flavors).
absl::Status CheckKueueLimits(const Snapshot& after);
// Issue 5: every evicted workload is evicted whole (every pod listed), each eviction names a
// preemptor that was pending, and no workload is both admitted and evicted.
absl::Status CheckKueueEvictionsWhole(const Snapshot& before, const ScheduleResult& result);
// §5.4, §0.7: decisions only where they may be made. Only workloads pending in `before` are
// admitted, each into its own queue; only admitted ones are evicted; and every workload is in
// exactly one place at the end: an admitted one stays admitted or is evicted (never listed as
// pending or admitted again), a pending one is admitted or listed as pending.
absl::Status CheckKueueDecisionPlaces(const Snapshot& before, const ScheduleResult& result);
// §5.4 step 5.7: every eviction makes room for its preemptor, which is admitted after the
// evictions or, when an entry ordered before it in the next round took the released quota
// first, still pending.
absl::Status CheckKueuePreemptorsServed(const ScheduleResult& result);

// ---- Both models ----

// (victim group, preemptor group) of every eviction other than a CONSOLIDATION move.
std::vector<std::pair<std::string, std::string>> EvictionPairs(const ScheduleResult& result);

// A known, specified reversal: the first call's eviction of V for P and the second call's
// eviction of P for V (each test names the scenario it excuses).
using PingPongExcuse = bool (*)(const Eviction& first, const Eviction& second);

// Issues 4 and 5: no group evicted for P in the first call evicts P in the second, unless
// `excuse` (when given) accepts the pair of evictions.
absl::Status CheckNoPingPong(const ScheduleResult& first, const ScheduleResult& second,
                             PingPongExcuse excuse = nullptr);

}  // namespace arbiter::testing
