// Request validation (SEMANTICS.md §1): every rejected input answers InvalidArgument with a
// message that starts with the field path of the first offence; the "not errors" list passes.
#include "core/validation.h"

#include <cmath>
#include <functional>
#include <limits>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/snapshot_builder.h"
#include "tests/support/status_matchers.h"

namespace arbiter {
namespace {

using ::arbiter::testing::IsOk;
using ::arbiter::testing::StatusIs;

using ::arbiter::testing::SnapshotBuilder;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// A valid request that every case below breaks in one place:
//   queues[0] dept, queues[1] team-a (dept), queues[2] team-b (dept)
//   nodes[0] n1, nodes[1] n2
//   pod_groups[0] job-1 in team-a: pods[0] RUNNING on n1, pods[1] PENDING
//   pod_groups[1] job-2 in team-b: pods[0] PENDING
//   usage[0] team-a
Snapshot BaseSnapshot() {
  return SnapshotBuilder()
      .Now(1000)
      .Capacity({{"cpu", 16000}})
      .UsageCapacity({{"gpu", 100}})
      .Usage("team-a", {{"gpu", 10}})
      .Node("n1", {{"cpu", 8000}, {"gpu", 4}})
      .Taint("dedicated", "ml", "NoSchedule")
      .Node("n2", {{"cpu", 8000}})
      .Queue("dept")
      .Queue("team-a", "dept")
      .Deserved({{"cpu", 4000}, {"gpu", -1}})
      .Limit({{"cpu", -1}})
      .Queue("team-b", "dept")
      .Weight({{"gpu", 2}})
      .Group("job-1", "team-a")
      .Pod({{"cpu", 1000}}, "n1", PodPhase::kRunning)
      .Tolerate("dedicated", "Equal", "ml", "NoSchedule")
      .Pod({{"cpu", 1000}})
      .Group("job-2", "team-b")
      .Pod({{"cpu", 500}})
      .Build();
}

struct InvalidCase {
  std::string name;
  std::function<void(Snapshot&, Policy&)> mutate;
  std::string path_prefix;  // the message must start with this
  RequestKind kind = RequestKind::kFairShares;
};

std::ostream& operator<<(std::ostream& os, const InvalidCase& c) { return os << c.name; }

template <typename E>
E Raw(int32_t value) {
  return static_cast<E>(value);
}

std::vector<InvalidCase> InvalidCases() {
  return {
      // ---- §1 rule 1: enums (any message) and policy ----
      {"FairnessModelOutOfRange",
       [](Snapshot&, Policy& p) { p.fairness_model = Raw<FairnessModel>(3); },
       "policy.fairness_model: "},
      {"FairnessModelNegative",
       [](Snapshot&, Policy& p) { p.fairness_model = Raw<FairnessModel>(-1); },
       "policy.fairness_model: "},
      {"PlacementOutOfRange", [](Snapshot&, Policy& p) { p.placement = Raw<Placement>(3); },
       "policy.placement: "},
      {"ActionOutOfRange",
       [](Snapshot&, Policy& p) {
         p.actions = {Action::kAllocate, Raw<Action>(5)};
       },
       "policy.actions[1]: unknown enum value 5"},
      {"StrategyOutOfRange",
       [](Snapshot&, Policy& p) {
         p.kueue_preemption_strategies = {Raw<KueuePreemptionStrategy>(3)};
       },
       "policy.kueue_preemption_strategies[0]: "},
      {"WithinClusterQueueOutOfRange",
       [](Snapshot& s, Policy&) {
         s.queues[1].kueue_preemption.within_cluster_queue = Raw<WithinClusterQueue>(4);
       },
       "snapshot.queues[1].kueue_preemption.within_cluster_queue: "},
      {"ReclaimWithinCohortOutOfRange",
       [](Snapshot& s, Policy&) {
         s.queues[2].kueue_preemption.reclaim_within_cohort = Raw<ReclaimWithinCohort>(-2);
       },
       "snapshot.queues[2].kueue_preemption.reclaim_within_cohort: "},
      {"PreemptibilityOutOfRange",
       [](Snapshot& s, Policy&) { s.pod_groups[1].preemptibility = Raw<Preemptibility>(3); },
       "snapshot.pod_groups[1].preemptibility: "},
      {"PodPhaseOutOfRange",
       [](Snapshot& s, Policy&) { s.pod_groups[0].pods[1].phase = Raw<PodPhase>(4); },
       "snapshot.pod_groups[0].pods[1].phase: "},
      {"EnumsAreCheckedBeforeOtherPolicyFields",
       [](Snapshot& s, Policy& p) {
         p.k_value = -1;
         s.pod_groups[0].pods[0].phase = Raw<PodPhase>(9);
       },
       "snapshot.pod_groups[0].pods[0].phase: "},
      {"ActionUnspecified",
       [](Snapshot&, Policy& p) {
         p.actions = {Action::kAllocate, Action::kUnspecified};
       },
       "policy.actions[1]: "},
      {"ActionDuplicate",
       [](Snapshot&, Policy& p) {
         p.actions = {Action::kReclaim, Action::kAllocate, Action::kReclaim};
       },
       "policy.actions[2]: "},
      {"StrategiesReversed",
       [](Snapshot&, Policy& p) {
         p.kueue_preemption_strategies = {KueuePreemptionStrategy::kLessThanInitialShare,
                                          KueuePreemptionStrategy::kLessThanOrEqualToFinalShare};
       },
       "policy.kueue_preemption_strategies: "},
      {"StrategiesDuplicate",
       [](Snapshot&, Policy& p) {
         p.kueue_preemption_strategies = {KueuePreemptionStrategy::kLessThanInitialShare,
                                          KueuePreemptionStrategy::kLessThanInitialShare};
       },
       "policy.kueue_preemption_strategies: "},
      {"StrategyUnspecified",
       [](Snapshot&, Policy& p) {
         p.kueue_preemption_strategies = {KueuePreemptionStrategy::kUnspecified};
       },
       "policy.kueue_preemption_strategies: "},
      {"StrategiesThree",
       [](Snapshot&, Policy& p) {
         p.kueue_preemption_strategies = {KueuePreemptionStrategy::kLessThanOrEqualToFinalShare,
                                          KueuePreemptionStrategy::kLessThanInitialShare,
                                          KueuePreemptionStrategy::kLessThanInitialShare};
       },
       "policy.kueue_preemption_strategies: "},
      {"KValueNegative", [](Snapshot&, Policy& p) { p.k_value = -0.5; }, "policy.k_value: "},
      {"KValueNaN", [](Snapshot&, Policy& p) { p.k_value = kNaN; }, "policy.k_value: "},
      {"KValueInfinite", [](Snapshot&, Policy& p) { p.k_value = kInf; }, "policy.k_value: "},
      {"MultiplierBelowOne", [](Snapshot&, Policy& p) { p.reclaimer_utilization_multiplier = 0.5; },
       "policy.reclaimer_utilization_multiplier: "},
      {"MultiplierNegative", [](Snapshot&, Policy& p) { p.reclaimer_utilization_multiplier = -1; },
       "policy.reclaimer_utilization_multiplier: "},
      {"MultiplierNaN", [](Snapshot&, Policy& p) { p.reclaimer_utilization_multiplier = kNaN; },
       "policy.reclaimer_utilization_multiplier: "},
      {"MultiplierInfinite",
       [](Snapshot&, Policy& p) { p.reclaimer_utilization_multiplier = kInf; },
       "policy.reclaimer_utilization_multiplier: "},
      {"MaxConsolidationPreempteesBelowMinusOne",
       [](Snapshot&, Policy& p) { p.max_consolidation_preemptees = -2; },
       "policy.max_consolidation_preemptees: "},
      {"PolicyIsCheckedBeforeQueues",
       [](Snapshot& s, Policy& p) {
         s.queues[0].name = "";
         p.k_value = -1;
       },
       "policy.k_value: "},

      // ---- §1 rule 2: queues ----
      {"NowOutsideTimestampRange",
       [](Snapshot& s, Policy&) {
         s.now = Timestamp{253402300800, 0};
       },
       "snapshot.now: "},
      {"QueueEmptyName", [](Snapshot& s, Policy&) { s.queues[2].name = ""; },
       "snapshot.queues[2].name: "},
      {"QueueDuplicateNameReportsTheLaterOne",
       [](Snapshot& s, Policy&) {
         Queue copy = s.queues[1];
         s.queues.push_back(copy);
       },
       "snapshot.queues[3].name: duplicate queue \"team-a\""},
      {"QueueUnknownParent", [](Snapshot& s, Policy&) { s.queues[2].parent = "team-x"; },
       "snapshot.queues[2].parent: unknown queue \"team-x\""},
      {"QueueIsItsOwnParent", [](Snapshot& s, Policy&) { s.queues[0].parent = "dept"; },
       "snapshot.queues[0].parent: "},
      {"QueueParentCycle",
       [](Snapshot& s, Policy&) {
         // dept -> team-b -> dept; team-a hangs below the cycle.
         s.queues[0].parent = "team-b";
       },
       "snapshot.queues[0].parent: "},
      {"QueueBelowCycleIsNotTheOffence",
       [](Snapshot& s, Policy&) {
         s.queues.push_back(Queue{});
         s.queues.back().name = "x";
         s.queues.push_back(Queue{});
         s.queues.back().name = "y";
         s.queues.back().parent = "x";
         s.queues[3].parent = "y";
         s.queues[1].parent = "x";  // team-a sits under the x <-> y cycle
       },
       "snapshot.queues[3].parent: "},
      {"DeservedNaN", [](Snapshot& s, Policy&) { s.queues[1].deserved["cpu"] = kNaN; },
       "snapshot.queues[1].deserved[\"cpu\"]: "},
      {"LimitInfinite", [](Snapshot& s, Policy&) { s.queues[1].limit["cpu"] = kInf; },
       "snapshot.queues[1].limit[\"cpu\"]: "},
      {"OverQuotaWeightNaN",
       [](Snapshot& s, Policy&) { s.queues[2].over_quota_weight["gpu"] = kNaN; },
       "snapshot.queues[2].over_quota_weight[\"gpu\"]: "},
      {"BorrowingLimitNegativeInfinite",
       [](Snapshot& s, Policy&) { s.queues[2].borrowing_limit["gpu"] = -kInf; },
       "snapshot.queues[2].borrowing_limit[\"gpu\"]: "},
      {"LendingLimitNaN", [](Snapshot& s, Policy&) { s.queues[2].lending_limit["gpu"] = kNaN; },
       "snapshot.queues[2].lending_limit[\"gpu\"]: "},
      {"DeservedNegativeOtherThanMinusOne",
       [](Snapshot& s, Policy&) { s.queues[1].deserved["gpu"] = -2; },
       "snapshot.queues[1].deserved[\"gpu\"]: "},
      {"LimitNegativeFraction", [](Snapshot& s, Policy&) { s.queues[1].limit["cpu"] = -0.5; },
       "snapshot.queues[1].limit[\"cpu\"]: "},
      {"BorrowingLimitNegative",
       [](Snapshot& s, Policy&) { s.queues[2].borrowing_limit["cpu"] = -3; },
       "snapshot.queues[2].borrowing_limit[\"cpu\"]: "},
      {"LendingLimitNegative",
       [](Snapshot& s, Policy&) { s.queues[2].lending_limit["cpu"] = -1.5; },
       "snapshot.queues[2].lending_limit[\"cpu\"]: "},
      {"OverQuotaWeightMinusOne",
       [](Snapshot& s, Policy&) { s.queues[2].over_quota_weight["gpu"] = -1; },
       "snapshot.queues[2].over_quota_weight[\"gpu\"]: "},
      {"NonFiniteQuotaIsReportedBeforeNegative",
       [](Snapshot& s, Policy&) {
         s.queues[1].deserved["cpu"] = -5;
         s.queues[1].lending_limit["cpu"] = kInf;
       },
       "snapshot.queues[1].lending_limit[\"cpu\"]: "},
      {"FairSharingWeightNaN", [](Snapshot& s, Policy&) { s.queues[1].fair_sharing_weight = kNaN; },
       "snapshot.queues[1].fair_sharing_weight: "},
      {"FairSharingWeightInfinite",
       [](Snapshot& s, Policy&) { s.queues[1].fair_sharing_weight = kInf; },
       "snapshot.queues[1].fair_sharing_weight: "},
      {"FairSharingWeightNegative",
       [](Snapshot& s, Policy&) { s.queues[1].fair_sharing_weight = -1; },
       "snapshot.queues[1].fair_sharing_weight: "},
      {"FairSharingWeightAtKueueBound",
       [](Snapshot& s, Policy&) { s.queues[1].fair_sharing_weight = 1e-9; },
       "snapshot.queues[1].fair_sharing_weight: "},
      {"FairSharingWeightBelowKueueBound",
       [](Snapshot& s, Policy&) { s.queues[1].fair_sharing_weight = 1e-12; },
       "snapshot.queues[1].fair_sharing_weight: "},
      {"ReclaimMinRuntimeNegative",
       [](Snapshot& s, Policy&) {
         s.queues[1].reclaim_min_runtime = Duration{-1, 0};
       },
       "snapshot.queues[1].reclaim_min_runtime: "},
      {"PreemptMinRuntimeNegativeNanos",
       [](Snapshot& s, Policy&) {
         s.queues[2].preempt_min_runtime = Duration{0, -5};
       },
       "snapshot.queues[2].preempt_min_runtime: "},
      {"QueueCreationTimeBeforeYearOne",
       [](Snapshot& s, Policy&) {
         s.queues[0].creation_time = Timestamp{-62135596801, 0};
       },
       "snapshot.queues[0].creation_time: "},
      {"QueueCreationTimeNanosOutOfRange",
       [](Snapshot& s, Policy&) {
         s.queues[0].creation_time = Timestamp{0, 1000000000};
       },
       "snapshot.queues[0].creation_time: "},
      {"KueueDeservedMinusOne",
       [](Snapshot&, Policy& p) { p.fairness_model = FairnessModel::kKueue; },
       "snapshot.queues[1].deserved[\"gpu\"]: "},
      {"FirstQueueInInputOrderIsReported",
       [](Snapshot& s, Policy&) {
         s.queues[2].parent = "nowhere";
         s.queues[1].deserved["cpu"] = kNaN;
       },
       "snapshot.queues[1].deserved[\"cpu\"]: "},

      // ---- §1 rule 3: nodes ----
      {"NodeEmptyName", [](Snapshot& s, Policy&) { s.nodes[1].name = ""; },
       "snapshot.nodes[1].name: "},
      {"NodeDuplicateName", [](Snapshot& s, Policy&) { s.nodes[1].name = "n1"; },
       "snapshot.nodes[1].name: duplicate node \"n1\""},
      {"AllocatableNegative", [](Snapshot& s, Policy&) { s.nodes[0].allocatable["gpu"] = -1; },
       "snapshot.nodes[0].allocatable[\"gpu\"]: "},
      {"AllocatableNaN", [](Snapshot& s, Policy&) { s.nodes[1].allocatable["cpu"] = kNaN; },
       "snapshot.nodes[1].allocatable[\"cpu\"]: "},
      {"AllocatableInfinite", [](Snapshot& s, Policy&) { s.nodes[1].allocatable["cpu"] = kInf; },
       "snapshot.nodes[1].allocatable[\"cpu\"]: "},
      {"TaintEmptyKey", [](Snapshot& s, Policy&) { s.nodes[0].taints[0].key = ""; },
       "snapshot.nodes[0].taints[0].key: "},
      {"TaintUnknownEffect", [](Snapshot& s, Policy&) { s.nodes[0].taints[0].effect = "Evict"; },
       "snapshot.nodes[0].taints[0].effect: "},
      {"TaintEmptyEffect", [](Snapshot& s, Policy&) { s.nodes[0].taints[0].effect = ""; },
       "snapshot.nodes[0].taints[0].effect: "},
      {"QueuesAreCheckedBeforeNodes",
       [](Snapshot& s, Policy&) {
         s.nodes[0].name = "";
         s.queues[2].parent = "nowhere";
       },
       "snapshot.queues[2].parent: "},

      // ---- §1 rule 4: pod groups ----
      {"GroupEmptyName", [](Snapshot& s, Policy&) { s.pod_groups[1].name = ""; },
       "snapshot.pod_groups[1].name: "},
      {"GroupDuplicateName", [](Snapshot& s, Policy&) { s.pod_groups[1].name = "job-1"; },
       "snapshot.pod_groups[1].name: duplicate pod group \"job-1\""},
      {"GroupEmptyQueue", [](Snapshot& s, Policy&) { s.pod_groups[0].queue = ""; },
       "snapshot.pod_groups[0].queue: "},
      {"GroupUnknownQueue", [](Snapshot& s, Policy&) { s.pod_groups[0].queue = "team-x"; },
       "snapshot.pod_groups[0].queue: unknown queue \"team-x\""},
      {"GroupInNonLeafQueue", [](Snapshot& s, Policy&) { s.pod_groups[1].queue = "dept"; },
       "snapshot.pod_groups[1].queue: "},
      {"MinMemberNegative", [](Snapshot& s, Policy&) { s.pod_groups[0].min_member = -1; },
       "snapshot.pod_groups[0].min_member: "},
      {"GroupCreationTimeOutOfRange",
       [](Snapshot& s, Policy&) {
         s.pod_groups[0].creation_time = Timestamp{0, -1};
       },
       "snapshot.pod_groups[0].creation_time: "},
      {"GroupAdmissionTimeOutOfRange",
       [](Snapshot& s, Policy&) {
         s.pod_groups[1].admission_time = Timestamp{1LL << 40, 0};
       },
       "snapshot.pod_groups[1].admission_time: "},
      {"PodEmptyName", [](Snapshot& s, Policy&) { s.pod_groups[0].pods[1].name = ""; },
       "snapshot.pod_groups[0].pods[1].name: "},
      {"PodDuplicateNameInGroup",
       [](Snapshot& s, Policy&) { s.pod_groups[0].pods[1].name = s.pod_groups[0].pods[0].name; },
       "snapshot.pod_groups[0].pods[1].name: "},
      {"RequestNegative",
       [](Snapshot& s, Policy&) { s.pod_groups[1].pods[0].requests["cpu"] = -1; },
       "snapshot.pod_groups[1].pods[0].requests[\"cpu\"]: "},
      {"RequestNaN", [](Snapshot& s, Policy&) { s.pod_groups[1].pods[0].requests["gpu"] = kNaN; },
       "snapshot.pod_groups[1].pods[0].requests[\"gpu\"]: "},
      {"RequestInfinite",
       [](Snapshot& s, Policy&) { s.pod_groups[1].pods[0].requests["gpu"] = kInf; },
       "snapshot.pod_groups[1].pods[0].requests[\"gpu\"]: "},
      {"RunningWithoutNode",
       [](Snapshot& s, Policy&) { s.pod_groups[1].pods[0].phase = PodPhase::kRunning; },
       "snapshot.pod_groups[1].pods[0].node_name: "},
      {"ReleasingWithoutNode",
       [](Snapshot& s, Policy&) { s.pod_groups[1].pods[0].phase = PodPhase::kReleasing; },
       "snapshot.pod_groups[1].pods[0].node_name: "},
      {"PendingWithNode",
       [](Snapshot& s, Policy&) {
         s.pod_groups[1].pods[0].phase = PodPhase::kPending;
         s.pod_groups[1].pods[0].node_name = "n1";
       },
       "snapshot.pod_groups[1].pods[0].node_name: "},
      {"UnknownNode", [](Snapshot& s, Policy&) { s.pod_groups[1].pods[0].node_name = "n9"; },
       "snapshot.pod_groups[1].pods[0].node_name: unknown node \"n9\""},
      {"TolerationUnknownOperator",
       [](Snapshot& s, Policy&) { s.pod_groups[0].pods[0].tolerations[0].op = "In"; },
       "snapshot.pod_groups[0].pods[0].tolerations[0].operator: "},
      {"TolerationExistsWithValue",
       [](Snapshot& s, Policy&) { s.pod_groups[0].pods[0].tolerations[0].op = "Exists"; },
       "snapshot.pod_groups[0].pods[0].tolerations[0].value: "},
      {"TolerationUnknownEffect",
       [](Snapshot& s, Policy&) { s.pod_groups[0].pods[0].tolerations[0].effect = "Never"; },
       "snapshot.pod_groups[0].pods[0].tolerations[0].effect: "},
      {"PodStartTimeOutOfRange",
       [](Snapshot& s, Policy&) {
         s.pod_groups[0].pods[0].start_time = Timestamp{0, 2000000000};
       },
       "snapshot.pod_groups[0].pods[0].start_time: "},
      {"NodesAreCheckedBeforePodGroups",
       [](Snapshot& s, Policy&) {
         s.pod_groups[0].name = "";
         s.nodes[1].allocatable["cpu"] = -1;
       },
       "snapshot.nodes[1].allocatable[\"cpu\"]: "},

      // ---- §1 rule 5: usage ----
      {"UsageUnknownQueue", [](Snapshot& s, Policy&) { s.usage[0].queue = "team-x"; },
       "snapshot.usage[0].queue: unknown queue \"team-x\""},
      {"UsageDuplicateQueue",
       [](Snapshot& s, Policy&) {
         s.usage.push_back(QueueUsage{"team-a", {}});
       },
       "snapshot.usage[1].queue: "},
      {"UsageNegative", [](Snapshot& s, Policy&) { s.usage[0].usage["gpu"] = -1; },
       "snapshot.usage[0].usage[\"gpu\"]: "},
      {"UsageNaN", [](Snapshot& s, Policy&) { s.usage[0].usage["cpu"] = kNaN; },
       "snapshot.usage[0].usage[\"cpu\"]: "},
      {"UsageCapacityNegative", [](Snapshot& s, Policy&) { s.usage_capacity["gpu"] = -100; },
       "snapshot.usage_capacity[\"gpu\"]: "},
      {"UsageCapacityInfinite", [](Snapshot& s, Policy&) { s.usage_capacity["gpu"] = kInf; },
       "snapshot.usage_capacity[\"gpu\"]: "},
      {"CapacityNegative", [](Snapshot& s, Policy&) { s.capacity["cpu"] = -1; },
       "snapshot.capacity[\"cpu\"]: "},
      {"CapacityNaN", [](Snapshot& s, Policy&) { s.capacity["gpu"] = kNaN; },
       "snapshot.capacity[\"gpu\"]: "},
      {"PodGroupsAreCheckedBeforeUsage",
       [](Snapshot& s, Policy&) {
         s.capacity["cpu"] = -1;
         s.pod_groups[1].min_member = -3;
       },
       "snapshot.pod_groups[1].min_member: "},

      // ---- Sums of quantities (issue 11): each kind of quantity sums to at most 1e300 ----
      {"TwoHugeRequestsInOneQueue",
       [](Snapshot& s, Policy&) {
         s.pod_groups[0].pods[0].requests["cpu"] = 1e308;
         s.pod_groups[0].pods[1].requests["cpu"] = 1e308;
       },
       "snapshot.pod_groups[0].pods[0].requests[\"cpu\"]: the requests of all pods for \"cpu\" "
       "sum to more than 1e+300"},
      {"RequestsOfOneGroupSumPastTheBound",
       [](Snapshot& s, Policy&) {
         s.pod_groups[0].pods[0].requests["cpu"] = 6e299;
         s.pod_groups[0].pods[1].requests["cpu"] = 6e299;
       },
       "snapshot.pod_groups[0].pods[1].requests[\"cpu\"]: the requests of all pods for \"cpu\" "
       "sum to more than 1e+300"},
      {"RequestsOfTwoQueuesSumPastTheBound",
       [](Snapshot& s, Policy&) {
         s.pod_groups[0].pods[1].requests["gpu"] = 6e299;
         s.pod_groups[1].pods[0].requests["gpu"] = 6e299;
       },
       "snapshot.pod_groups[1].pods[0].requests[\"gpu\"]: the requests of all pods for \"gpu\" "
       "sum to more than 1e+300"},
      {"PodChecksComeBeforeTheRequestSum",
       [](Snapshot& s, Policy&) {
         s.pod_groups[0].pods[0].requests["cpu"] = 1e308;
         s.pod_groups[1].pods[0].requests["cpu"] = -1;
       },
       "snapshot.pod_groups[1].pods[0].requests[\"cpu\"]: must be finite and not negative"},
      {"AllocatableOfAllNodesSumsPastTheBound",
       [](Snapshot& s, Policy&) {
         s.nodes[0].allocatable["cpu"] = 6e299;
         s.nodes[1].allocatable["cpu"] = 6e299;
       },
       "snapshot.nodes[1].allocatable[\"cpu\"]: the allocatable amounts of all nodes for \"cpu\" "
       "sum to more than 1e+300"},
      {"UnschedulableNodesCountInTheAllocatableSum",
       [](Snapshot& s, Policy&) {
         s.nodes[0].unschedulable = true;
         s.nodes[0].allocatable["gpu"] = 1e301;
       },
       "snapshot.nodes[0].allocatable[\"gpu\"]: the allocatable amounts of all nodes"},
      {"NodeChecksComeBeforeTheAllocatableSum",
       [](Snapshot& s, Policy&) {
         s.nodes[0].allocatable["cpu"] = 1e308;
         s.nodes[1].name = "";
       },
       "snapshot.nodes[1].name: empty name"},
      {"KueueNominalQuotasSumPastTheBound",
       [](Snapshot& s, Policy& p) {
         p.fairness_model = FairnessModel::kKueue;
         s.queues[1].deserved = {{"cpu", 6e299}};
         s.queues[2].deserved = {{"cpu", 6e299}};
       },
       "snapshot.queues[2].deserved[\"cpu\"]: the nominal quotas (deserved) of all queues for "
       "\"cpu\" sum to more than 1e+300"},

      // ---- §1 rule 6: Schedule under KAI ----
      {"ScheduleWithoutNowAndReclaimMinRuntime",
       [](Snapshot& s, Policy&) {
         s.now.reset();
         s.queues[2].reclaim_min_runtime = Duration{60, 0};
       },
       "snapshot.now: ", RequestKind::kSchedule},
      {"ScheduleWithoutNowAndPreemptMinRuntime",
       [](Snapshot& s, Policy& p) {
         p.fairness_model = FairnessModel::kKai;
         s.now.reset();
         s.queues[0].preempt_min_runtime = Duration{0, 1};
       },
       "snapshot.now: ", RequestKind::kSchedule},
      {"UsageIsCheckedBeforeNow",
       [](Snapshot& s, Policy&) {
         s.now.reset();
         s.queues[2].reclaim_min_runtime = Duration{60, 0};
         s.capacity["cpu"] = -1;
       },
       "snapshot.capacity[\"cpu\"]: ", RequestKind::kSchedule},
  };
}

class ValidationRejectsTest : public ::testing::TestWithParam<InvalidCase> {};

TEST_P(ValidationRejectsTest, InvalidArgumentWithFieldPath) {
  const InvalidCase& c = GetParam();
  Snapshot snapshot = BaseSnapshot();
  Policy policy;
  ASSERT_THAT(ValidateRequest(snapshot, policy, c.kind), IsOk())
      << "the base request must be valid";
  c.mutate(snapshot, policy);
  absl::Status status = ValidateRequest(snapshot, policy, c.kind);
  EXPECT_THAT(status, StatusIs(absl::StatusCode::kInvalidArgument)) << status;
  EXPECT_TRUE(absl::StartsWith(status.message(), c.path_prefix))
      << "message: " << status.message() << "\nexpected prefix: " << c.path_prefix;
  // Deterministic: the same input gives the same message.
  EXPECT_EQ(ValidateRequest(snapshot, policy, c.kind).message(), status.message());
}

INSTANTIATE_TEST_SUITE_P(Semantics1, ValidationRejectsTest, ::testing::ValuesIn(InvalidCases()),
                         [](const ::testing::TestParamInfo<InvalidCase>& case_info) {
                           return case_info.param.name;
                         });

struct ValidCase {
  std::string name;
  std::function<void(Snapshot&, Policy&)> mutate;
  RequestKind kind = RequestKind::kFairShares;
};

std::ostream& operator<<(std::ostream& os, const ValidCase& c) { return os << c.name; }

std::vector<ValidCase> ValidCases() {
  return {
      // §1 "not errors".
      {"EmptySnapshot", [](Snapshot& s, Policy&) { s = Snapshot{}; }},
      {"EmptySnapshotSchedule", [](Snapshot& s, Policy&) { s = Snapshot{}; },
       RequestKind::kSchedule},
      {"QueuesWithoutPodGroups", [](Snapshot& s, Policy&) { s.pod_groups.clear(); }},
      {"MinMemberAboveNumberOfPods", [](Snapshot& s, Policy&) { s.pod_groups[0].min_member = 10; }},
      {"OversubscribedDeserved",
       [](Snapshot& s, Policy&) {
         s.queues[1].deserved["cpu"] = 1e9;
         s.queues[2].deserved["cpu"] = 1e9;
       }},
      {"ZeroCapacityNodesAndResources",
       [](Snapshot& s, Policy&) {
         s.nodes[1].allocatable = {{"cpu", 0}, {"gpu", 0}};
         s.capacity["gpu"] = 0;
       }},
      {"RequestForResourceNoNodeHas",
       [](Snapshot& s, Policy&) { s.pod_groups[1].pods[0].requests["example.com/fpga"] = 1; }},
      // Boundaries of the rejected ranges.
      {"MinusOneInEveryQuotaMapUnderKai",
       [](Snapshot& s, Policy&) {
         s.queues[2].deserved["cpu"] = -1;
         s.queues[2].limit["cpu"] = -1;
         s.queues[2].borrowing_limit["cpu"] = -1;
         s.queues[2].lending_limit["cpu"] = -1;
       }},
      {"ZeroWeightsAndLimits",
       [](Snapshot& s, Policy&) {
         s.queues[2].over_quota_weight["cpu"] = 0;
         s.queues[2].limit["cpu"] = 0;
         s.queues[2].fair_sharing_weight = 0;
       }},
      {"FairSharingWeightJustAboveKueueBound",
       [](Snapshot& s, Policy&) { s.queues[2].fair_sharing_weight = 1.5e-9; }},
      {"MultiplierZeroMeansOne",
       [](Snapshot&, Policy& p) { p.reclaimer_utilization_multiplier = 0; }},
      {"MultiplierOne", [](Snapshot&, Policy& p) { p.reclaimer_utilization_multiplier = 1; }},
      {"MultiplierAboveOne",
       [](Snapshot&, Policy& p) { p.reclaimer_utilization_multiplier = 1.2; }},
      {"MaxConsolidationPreempteesUnlimited",
       [](Snapshot&, Policy& p) { p.max_consolidation_preemptees = -1; }},
      {"MaxConsolidationPreempteesZero",
       [](Snapshot&, Policy& p) { p.max_consolidation_preemptees = 0; }},
      {"KValuePositive", [](Snapshot&, Policy& p) { p.k_value = 2.5; }},
      {"EveryActionOnce",
       [](Snapshot&, Policy& p) {
         p.actions = {Action::kPreempt, Action::kReclaim, Action::kConsolidate, Action::kAllocate};
       }},
      {"StrategyFinalShareOnly",
       [](Snapshot&, Policy& p) {
         p.kueue_preemption_strategies = {KueuePreemptionStrategy::kLessThanOrEqualToFinalShare};
       }},
      {"StrategyInitialShareOnly",
       [](Snapshot&, Policy& p) {
         p.kueue_preemption_strategies = {KueuePreemptionStrategy::kLessThanInitialShare};
       }},
      {"BothStrategiesInOrder",
       [](Snapshot&, Policy& p) {
         p.kueue_preemption_strategies = {KueuePreemptionStrategy::kLessThanOrEqualToFinalShare,
                                          KueuePreemptionStrategy::kLessThanInitialShare};
       }},
      {"ExistsTolerationWithEmptyKeyAndEffect",
       [](Snapshot& s, Policy&) {
         s.pod_groups[0].pods[0].tolerations[0] = Toleration{"", "Exists", "", ""};
       }},
      {"ReleasingPodOnNode",
       [](Snapshot& s, Policy&) { s.pod_groups[0].pods[0].phase = PodPhase::kReleasing; }},
      {"UnspecifiedPhaseOnNode",
       [](Snapshot& s, Policy&) { s.pod_groups[0].pods[0].phase = PodPhase::kUnspecified; }},
      {"KueueModelWithoutMinusOneDeserved",
       [](Snapshot& s, Policy& p) {
         p.fairness_model = FairnessModel::kKueue;
         s.queues[1].deserved["gpu"] = 4;
       }},
      {"UsageForParentQueue",
       [](Snapshot& s, Policy&) {
         s.usage.push_back(QueueUsage{"dept", {{"gpu", 5}}});
       }},
      {"ZeroDurations",
       [](Snapshot& s, Policy&) {
         s.now.reset();
         s.queues[1].reclaim_min_runtime = Duration{0, 0};
       },
       RequestKind::kSchedule},
      // §1 rule 6 applies to Schedule under KAI only.
      {"FairSharesWithoutNowAndMinRuntime",
       [](Snapshot& s, Policy&) {
         s.now.reset();
         s.queues[2].reclaim_min_runtime = Duration{60, 0};
       }},
      {"KueueScheduleWithoutNowAndMinRuntime",
       [](Snapshot& s, Policy& p) {
         p.fairness_model = FairnessModel::kKueue;
         s.queues[1].deserved["gpu"] = 4;
         s.now.reset();
         s.queues[2].reclaim_min_runtime = Duration{60, 0};
       },
       RequestKind::kSchedule},
      // Sums (issue 11): the bound itself is allowed; KAI never sums deserved quotas.
      {"QuantitiesSumToExactlyTheBound",
       [](Snapshot& s, Policy&) {
         s.nodes[0].allocatable["cpu"] = kMaxQuantitySum;
         s.nodes[1].allocatable["cpu"] = 0;
         s.pod_groups[0].pods[0].requests["cpu"] = kMaxQuantitySum;
         s.pod_groups[0].pods[1].requests["cpu"] = 0;
         s.pod_groups[1].pods[0].requests["cpu"] = 0;
       }},
      {"KaiDeservedQuotasAreNotSummed",
       [](Snapshot& s, Policy&) {
         s.queues[1].deserved["cpu"] = 1e308;
         s.queues[2].deserved["cpu"] = 1e308;
       }},
      {"HugeCapacityAndLimitsAreNotSummed",
       [](Snapshot& s, Policy&) {
         s.capacity["cpu"] = 1e308;
         s.queues[1].limit["cpu"] = 1e308;
         s.queues[2].borrowing_limit["cpu"] = 1e308;
         s.queues[2].lending_limit["cpu"] = 1e308;
       }},
      {"ScheduleWithNowAndMinRuntime",
       [](Snapshot& s, Policy&) {
         s.queues[2].preempt_min_runtime = Duration{60, 0};
       },
       RequestKind::kSchedule},
  };
}

class ValidationAcceptsTest : public ::testing::TestWithParam<ValidCase> {};

TEST_P(ValidationAcceptsTest, Ok) {
  const ValidCase& c = GetParam();
  Snapshot snapshot = BaseSnapshot();
  Policy policy;
  c.mutate(snapshot, policy);
  absl::Status status = ValidateRequest(snapshot, policy, c.kind);
  EXPECT_THAT(status, IsOk());
}

INSTANTIATE_TEST_SUITE_P(Semantics1NotErrors, ValidationAcceptsTest,
                         ::testing::ValuesIn(ValidCases()),
                         [](const ::testing::TestParamInfo<ValidCase>& case_info) {
                           return case_info.param.name;
                         });

TEST(ValidationTest, MessageQuotesTheUnknownParentExactly) {
  Snapshot snapshot = BaseSnapshot();
  snapshot.queues[2].parent = "team-x";
  EXPECT_EQ(ValidateRequest(snapshot, Policy{}, RequestKind::kFairShares).message(),
            "snapshot.queues[2].parent: unknown queue \"team-x\"");
}

// Issue 11: a 100 KB name is echoed capped, so the message stays short and still starts with
// the field path.
std::string LongName(char c) { return std::string(100 * 1024, c); }

TEST(ValidationTest, HundredKilobyteDuplicateQueueNameGivesAShortMessage) {
  Snapshot snapshot = BaseSnapshot();
  snapshot.queues[2].name = LongName('q');
  snapshot.pod_groups[1].queue = LongName('q');
  Queue twin = snapshot.queues[2];
  snapshot.queues.push_back(twin);
  const absl::Status status = ValidateRequest(snapshot, Policy{}, RequestKind::kFairShares);
  EXPECT_THAT(status, StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_LT(status.message().size(), 1024u);
  EXPECT_TRUE(absl::StartsWith(status.message(), "snapshot.queues[3].name: duplicate queue \"qqq"))
      << status.message().substr(0, 100);
  EXPECT_TRUE(absl::StrContains(status.message(), "q...\" (also snapshot.queues[2])"));
}

TEST(ValidationTest, HundredKilobyteUnknownParentGivesAShortMessage) {
  Snapshot snapshot = BaseSnapshot();
  snapshot.queues[2].parent = LongName('p');
  const absl::Status status = ValidateRequest(snapshot, Policy{}, RequestKind::kFairShares);
  EXPECT_THAT(status, StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_LT(status.message().size(), 1024u);
  EXPECT_EQ(status.message(), absl::StrCat("snapshot.queues[2].parent: unknown queue \"",
                                           std::string(256, 'p'), "...\""));
}

TEST(ValidationTest, HundredKilobyteResourceNameIsCappedInThePath) {
  Snapshot snapshot = BaseSnapshot();
  snapshot.pod_groups[1].pods[0].requests[LongName('r')] = -1;
  const absl::Status status = ValidateRequest(snapshot, Policy{}, RequestKind::kFairShares);
  EXPECT_THAT(status, StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_LT(status.message().size(), 1024u);
  EXPECT_EQ(status.message(),
            absl::StrCat("snapshot.pod_groups[1].pods[0].requests[\"", std::string(256, 'r'),
                         "...\"]: must be finite and not negative, got -1"));
}

// Escapes are never cut in half: a name of control bytes keeps whole \ooo sequences.
TEST(ValidationTest, LongBinaryNamesAreCutBetweenEscapes) {
  Snapshot snapshot = BaseSnapshot();
  snapshot.queues[2].parent = std::string(1000, '\x01');
  const absl::Status status = ValidateRequest(snapshot, Policy{}, RequestKind::kFairShares);
  std::string expected_name;
  for (int i = 0; i < 256 / 4; ++i) expected_name += "\\001";
  EXPECT_EQ(status.message(),
            absl::StrCat("snapshot.queues[2].parent: unknown queue \"", expected_name, "...\""));
}

TEST(ValidationTest, NumbersInMessagesRoundTrip) {
  Snapshot snapshot = BaseSnapshot();
  snapshot.pod_groups[0].pods[1].requests["cpu"] = -0.1;
  EXPECT_EQ(ValidateRequest(snapshot, Policy{}, RequestKind::kFairShares).message(),
            "snapshot.pod_groups[0].pods[1].requests[\"cpu\"]: must be finite and not negative, "
            "got -0.1");
}

// A number in a message reads as a decision writes it (FormatQuantity): -100, not -1e+02.
TEST(ValidationTest, NumbersInMessagesAreWrittenAsQuantitiesAre) {
  Snapshot snapshot = BaseSnapshot();
  snapshot.pod_groups[0].pods[1].requests["cpu"] = -100;
  EXPECT_EQ(ValidateRequest(snapshot, Policy{}, RequestKind::kFairShares).message(),
            "snapshot.pod_groups[0].pods[1].requests[\"cpu\"]: must be finite and not negative, "
            "got -100");
}

// ---- The caller's bound on the queue tree's depth (the server's --max-queue-depth) ----

// A chain q0 <- q1 <- ... of `depth` queues, listed deepest first.
Snapshot ChainOf(int depth) {
  Snapshot snapshot;
  for (int i = depth - 1; i >= 0; --i) {
    Queue& queue = snapshot.queues.emplace_back();
    queue.name = "q" + std::to_string(i);
    if (i > 0) queue.parent = "q" + std::to_string(i - 1);
  }
  return snapshot;
}

RequestBounds DepthBound(int64_t levels) {
  RequestBounds bounds;
  bounds.max_queue_depth = levels;
  bounds.max_queue_depth_name = "--max-queue-depth";
  return bounds;
}

TEST(QueueDepthBound, ATreeAtTheBoundIsAccepted) {
  EXPECT_THAT(
      ValidateRequest(ChainOf(5), Policy{}, RequestKind::kFairShares, nullptr, DepthBound(5)),
      IsOk());
}

TEST(QueueDepthBound, OneLevelMoreIsInvalidArgumentNamingTheQueueAndTheBound) {
  EXPECT_THAT(
      ValidateRequest(ChainOf(6), Policy{}, RequestKind::kFairShares, nullptr, DepthBound(5)),
      StatusIs(absl::StatusCode::kInvalidArgument,
               "snapshot.queues[0]: the queue tree is 6 levels deep here; at most 5 "
               "levels are accepted (--max-queue-depth)"));
}

TEST(QueueDepthBound, AChainOfAMillionQueuesIsMeasuredWithoutRecursion) {
  const Snapshot chain = ChainOf(1'000'000);
  EXPECT_THAT(
      ValidateRequest(chain, Policy{}, RequestKind::kFairShares, nullptr, DepthBound(2'000'000)),
      IsOk());
  EXPECT_THAT(ValidateRequest(chain, Policy{}, RequestKind::kFairShares, nullptr, DepthBound(64)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       ::testing::HasSubstr("1000000 levels deep here")));
}

TEST(QueueDepthBound, CyclesAndMissingParentsAreReportedFirst) {
  Snapshot snapshot = ChainOf(6);
  snapshot.queues.back().parent = "missing";  // q0, the top of the chain
  EXPECT_THAT(ValidateRequest(snapshot, Policy{}, RequestKind::kFairShares, nullptr, DepthBound(2)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "snapshot.queues[5].parent: unknown queue \"missing\""));
  snapshot.queues.back().parent = "q5";
  EXPECT_THAT(ValidateRequest(snapshot, Policy{}, RequestKind::kFairShares, nullptr, DepthBound(2)),
              StatusIs(absl::StatusCode::kInvalidArgument, ::testing::HasSubstr("parent cycle")));
}

TEST(QueueDepthBound, WithoutABoundAnyDepthIsValid) {
  EXPECT_THAT(ValidateRequest(ChainOf(10'000), Policy{}, RequestKind::kFairShares), IsOk());
}

// ---- What validation hands to the interned model ----

TEST(RequestIndexTest, NamesEveryParentQueueNodeAndResourceByInputIndex) {
  const Snapshot snapshot = BaseSnapshot();  // the index's names point into it
  RequestIndex index;
  ASSERT_THAT(ValidateRequest(snapshot, Policy{}, RequestKind::kSchedule, nullptr, {}, &index),
              IsOk());
  EXPECT_EQ(index.queue_parent, (std::vector<int>{-1, 0, 0}));
  EXPECT_EQ(index.group_queue, (std::vector<int>{1, 2}));
  EXPECT_EQ(index.pod_node, (std::vector<int>{0, -1, -1}));
  EXPECT_EQ(index.usage_queue, (std::vector<int>{1}));
  std::vector<std::string> names;
  for (int i = 0; i < index.resources.size(); ++i) names.push_back(index.resources.name(i));
  EXPECT_THAT(names, ::testing::UnorderedElementsAre("cpu", "gpu"));
}

// ---- §5.8 resource flavors: 1a, and the new checks of rules 2 and 4 ----

FlavorResourceQuota Quota(double nominal, std::optional<double> borrowing_limit = std::nullopt,
                          std::optional<double> lending_limit = std::nullopt) {
  FlavorResourceQuota quota;
  quota.nominal = nominal;
  quota.borrowing_limit = borrowing_limit;
  quota.lending_limit = lending_limit;
  return quota;
}

// BaseSnapshot with resource flavors, valid under KAI; under KUEUE once team-a's gpu deserved is
// not -1 (KueueFlavoredSnapshot):
//   resource_flavors[0] on-demand, [1] spot (a taint and a toleration)
//   queues[1] team-a keeps its legacy maps; queues[2] team-b is flavored:
//     resource_groups[0] covers cpu, memory: flavors[0] on-demand, [1] spot (limits, -1 too)
//     resource_groups[1] covers gpu: flavors[0] a100 (not declared: no constraints)
//   pod_groups[1] job-2 in team-b is admitted: pods[0] in pod set "workers", requesting cpu,
//     flavors[0] {"workers": {cpu: spot}}
Snapshot FlavoredSnapshot() {
  Snapshot s = BaseSnapshot();
  ResourceFlavor on_demand;
  on_demand.name = "on-demand";
  on_demand.node_labels = {{"zone", "a"}};
  ResourceFlavor spot;
  spot.name = "spot";
  spot.node_labels = {{"zone", "b"}};
  spot.node_taints = {Taint{"spot", "true", "NoSchedule"}};
  spot.tolerations = {Toleration{"spot-ok", "Exists", "", ""}};
  s.resource_flavors = {on_demand, spot};
  Queue& team_b = s.queues[2];
  team_b.resource_groups = {
      ResourceGroup{
          {"cpu", "memory"},
          {FlavorQuotas{"on-demand", {{"cpu", Quota(4000)}, {"memory", Quota(1e9)}}},
           FlavorQuotas{"spot", {{"cpu", Quota(2000, -1, 1000)}, {"memory", Quota(0, 0, -1)}}}}},
      ResourceGroup{{"gpu"}, {FlavorQuotas{"a100", {{"gpu", Quota(8)}}}}},
  };
  PodGroup& job_2 = s.pod_groups[1];
  job_2.admitted = true;
  job_2.pods[0].pod_set = "workers";
  job_2.flavors = {PodSetFlavors{"workers", {{"cpu", "spot"}}}};
  return s;
}

Snapshot KueueFlavoredSnapshot() {
  Snapshot s = FlavoredSnapshot();
  s.queues[1].deserved["gpu"] = 4;
  return s;
}

Policy KueuePolicy() {
  Policy policy;
  policy.fairness_model = FairnessModel::kKueue;
  return policy;
}

ResourceGroup& GroupOf(Snapshot& s, int g) { return s.queues[2].resource_groups[g]; }
FlavorResourceQuota& SpotCpu(Snapshot& s) { return GroupOf(s, 0).flavors[1].resources["cpu"]; }

struct FlavorCase {
  std::string name;
  std::function<void(Snapshot&, Policy&)> mutate;
  std::string message;  // the whole message
};

std::ostream& operator<<(std::ostream& os, const FlavorCase& c) { return os << c.name; }

std::vector<FlavorCase> FlavorInvalidCases() {
  return {
      // ---- Rule 1: the enums of flavor_fungibility ----
      {"WhenCanBorrowOutOfRange",
       [](Snapshot& s, Policy&) {
         s.queues[2].flavor_fungibility.when_can_borrow = Raw<WhenCanBorrow>(3);
       },
       "snapshot.queues[2].flavor_fungibility.when_can_borrow: unknown enum value 3"},
      {"WhenCanPreemptOutOfRange",
       [](Snapshot& s, Policy&) {
         s.queues[1].flavor_fungibility.when_can_preempt = Raw<WhenCanPreempt>(-1);
       },
       "snapshot.queues[1].flavor_fungibility.when_can_preempt: unknown enum value -1"},
      {"PreferenceOutOfRange",
       [](Snapshot& s, Policy&) {
         s.queues[0].flavor_fungibility.preference = Raw<FlavorPreference>(3);
       },
       "snapshot.queues[0].flavor_fungibility.preference: unknown enum value 3"},
      // ---- Rule 1a: resource flavors ----
      {"ResourceFlavorEmptyName", [](Snapshot& s, Policy&) { s.resource_flavors[1].name = ""; },
       "snapshot.resource_flavors[1].name: empty name"},
      {"ResourceFlavorDuplicateName",
       [](Snapshot& s, Policy&) { s.resource_flavors[1].name = "on-demand"; },
       "snapshot.resource_flavors[1].name: duplicate resource flavor \"on-demand\" (also "
       "snapshot.resource_flavors[0])"},
      {"ResourceFlavorEmptyNodeLabelKey",
       [](Snapshot& s, Policy&) { s.resource_flavors[0].node_labels[""] = "x"; },
       "snapshot.resource_flavors[0].node_labels[\"\"]: empty key"},
      {"ResourceFlavorTaintEmptyKey",
       [](Snapshot& s, Policy&) { s.resource_flavors[1].node_taints[0].key = ""; },
       "snapshot.resource_flavors[1].node_taints[0].key: empty key"},
      {"ResourceFlavorTaintUnknownEffect",
       [](Snapshot& s, Policy&) { s.resource_flavors[1].node_taints[0].effect = "NoRun"; },
       "snapshot.resource_flavors[1].node_taints[0].effect: unknown effect \"NoRun\" "
       "(NoSchedule, PreferNoSchedule or NoExecute)"},
      {"ResourceFlavorTolerationUnknownOperator",
       [](Snapshot& s, Policy&) { s.resource_flavors[1].tolerations[0].op = "In"; },
       "snapshot.resource_flavors[1].tolerations[0].operator: unknown operator \"In\" (Equal or "
       "Exists)"},
      {"ResourceFlavorTolerationExistsWithValue",
       [](Snapshot& s, Policy&) { s.resource_flavors[1].tolerations[0].value = "yes"; },
       "snapshot.resource_flavors[1].tolerations[0].value: must be empty with operator Exists"},
      {"ResourceFlavorTolerationUnknownEffect",
       [](Snapshot& s, Policy&) { s.resource_flavors[1].tolerations[0].effect = "Always"; },
       "snapshot.resource_flavors[1].tolerations[0].effect: unknown effect \"Always\" (empty, "
       "NoSchedule, PreferNoSchedule or NoExecute)"},
      // ---- Rule 2, per queue ----
      {"FlavoredQueueWithLegacyDeserved",
       [](Snapshot& s, Policy&) { s.queues[2].deserved["cpu"] = 1000; },
       "snapshot.queues[2].deserved[\"cpu\"]: set on a queue with resource_groups (a queue gives "
       "its quotas either per flavor or in the legacy maps)"},
      {"FlavoredQueueWithLegacyBorrowingLimit",
       [](Snapshot& s, Policy&) { s.queues[2].borrowing_limit["gpu"] = -1; },
       "snapshot.queues[2].borrowing_limit[\"gpu\"]: set on a queue with resource_groups (a "
       "queue gives its quotas either per flavor or in the legacy maps)"},
      {"FlavoredQueueWithLegacyLendingLimit",
       [](Snapshot& s, Policy&) { s.queues[2].lending_limit["memory"] = 0; },
       "snapshot.queues[2].lending_limit[\"memory\"]: set on a queue with resource_groups (a "
       "queue gives its quotas either per flavor or in the legacy maps)"},
      {"ResourceGroupWithoutCoveredResources",
       [](Snapshot& s, Policy&) { GroupOf(s, 1).covered_resources.clear(); },
       "snapshot.queues[2].resource_groups[1].covered_resources: empty (a resource group covers "
       "at least one resource)"},
      {"ResourceGroupWithoutFlavors", [](Snapshot& s, Policy&) { GroupOf(s, 1).flavors.clear(); },
       "snapshot.queues[2].resource_groups[1].flavors: empty (a resource group lists at least "
       "one flavor)"},
      {"CoveredResourceEmpty",
       [](Snapshot& s, Policy&) { GroupOf(s, 0).covered_resources.push_back(""); },
       "snapshot.queues[2].resource_groups[0].covered_resources[2]: empty resource name"},
      {"CoveredResourceDuplicate",
       [](Snapshot& s, Policy&) { GroupOf(s, 0).covered_resources.push_back("cpu"); },
       "snapshot.queues[2].resource_groups[0].covered_resources[2]: duplicate resource \"cpu\" "
       "(also snapshot.queues[2].resource_groups[0].covered_resources[0])"},
      {"ResourceCoveredByTwoGroups",
       [](Snapshot& s, Policy&) { GroupOf(s, 1).covered_resources.push_back("memory"); },
       "snapshot.queues[2].resource_groups[1].covered_resources[1]: resource \"memory\" is "
       "covered by two resource groups (also "
       "snapshot.queues[2].resource_groups[0].covered_resources[1])"},
      {"FlavorEmptyName", [](Snapshot& s, Policy&) { GroupOf(s, 1).flavors[0].flavor = ""; },
       "snapshot.queues[2].resource_groups[1].flavors[0].flavor: empty flavor name (\"\" is the "
       "implicit flavor)"},
      {"FlavorListedTwiceInOneGroup",
       [](Snapshot& s, Policy&) { GroupOf(s, 0).flavors[1].flavor = "on-demand"; },
       "snapshot.queues[2].resource_groups[0].flavors[1].flavor: duplicate flavor \"on-demand\" "
       "(also snapshot.queues[2].resource_groups[0].flavors[0])"},
      {"FlavorListedTwiceAcrossGroups",
       [](Snapshot& s, Policy&) { GroupOf(s, 1).flavors[0].flavor = "spot"; },
       "snapshot.queues[2].resource_groups[1].flavors[0].flavor: duplicate flavor \"spot\" (also "
       "snapshot.queues[2].resource_groups[0].flavors[1])"},
      {"FlavorQuotaForUncoveredResource",
       [](Snapshot& s, Policy&) { GroupOf(s, 0).flavors[1].resources["gpu"] = Quota(1); },
       "snapshot.queues[2].resource_groups[0].flavors[1].resources[\"gpu\"]: resource \"gpu\" is "
       "not covered by the group (snapshot.queues[2].resource_groups[0].covered_resources)"},
      {"FlavorQuotaForResourceOfAnotherGroup",
       [](Snapshot& s, Policy&) { GroupOf(s, 1).flavors[0].resources["cpu"] = Quota(1); },
       "snapshot.queues[2].resource_groups[1].flavors[0].resources[\"cpu\"]: resource \"cpu\" is "
       "not covered by the group (snapshot.queues[2].resource_groups[1].covered_resources)"},
      {"FlavorQuotaMissingForCoveredResource",
       [](Snapshot& s, Policy&) { GroupOf(s, 0).flavors[0].resources.erase("memory"); },
       "snapshot.queues[2].resource_groups[0].flavors[0].resources: no quota for covered "
       "resource \"memory\" (snapshot.queues[2].resource_groups[0].covered_resources[1])"},
      {"FlavorNominalNegative", [](Snapshot& s, Policy&) { SpotCpu(s).nominal = -1; },
       "snapshot.queues[2].resource_groups[0].flavors[1].resources[\"cpu\"].nominal: must be "
       "finite and not negative, got -1"},
      {"FlavorNominalNaN", [](Snapshot& s, Policy&) { SpotCpu(s).nominal = kNaN; },
       "snapshot.queues[2].resource_groups[0].flavors[1].resources[\"cpu\"].nominal: must be "
       "finite and not negative, got NaN"},
      {"FlavorNominalInfinite", [](Snapshot& s, Policy&) { SpotCpu(s).nominal = kInf; },
       "snapshot.queues[2].resource_groups[0].flavors[1].resources[\"cpu\"].nominal: must be "
       "finite and not negative, got +Inf"},
      {"FlavorBorrowingLimitNegativeOtherThanMinusOne",
       [](Snapshot& s, Policy&) { SpotCpu(s).borrowing_limit = -2; },
       "snapshot.queues[2].resource_groups[0].flavors[1].resources[\"cpu\"].borrowing_limit: "
       "negative value other than -1 (unlimited): -2"},
      {"FlavorBorrowingLimitInfinite",
       [](Snapshot& s, Policy&) { SpotCpu(s).borrowing_limit = kInf; },
       "snapshot.queues[2].resource_groups[0].flavors[1].resources[\"cpu\"].borrowing_limit: "
       "must be finite, got +Inf"},
      {"FlavorLendingLimitNaN", [](Snapshot& s, Policy&) { SpotCpu(s).lending_limit = kNaN; },
       "snapshot.queues[2].resource_groups[0].flavors[1].resources[\"cpu\"].lending_limit: must "
       "be finite, got NaN"},
      {"FlavorLendingLimitNegativeOtherThanMinusOne",
       [](Snapshot& s, Policy&) { SpotCpu(s).lending_limit = -0.5; },
       "snapshot.queues[2].resource_groups[0].flavors[1].resources[\"cpu\"].lending_limit: "
       "negative value other than -1 (unlimited): -0.5"},
      {"PreferenceWithDefaultWhenCanBorrow",
       [](Snapshot& s, Policy&) {
         s.queues[2].flavor_fungibility.preference = FlavorPreference::kBorrowingOverPreemption;
       },
       "snapshot.queues[2].flavor_fungibility.preference: set while when_can_borrow is "
       "MAY_STOP_SEARCH (by default); a preference needs when_can_borrow and when_can_preempt "
       "both TRY_NEXT_FLAVOR"},
      {"PreferenceWithWhenCanBorrowMayStopSearch",
       [](Snapshot& s, Policy&) {
         s.queues[2].flavor_fungibility = {WhenCanBorrow::kMayStopSearch,
                                           WhenCanPreempt::kTryNextFlavor,
                                           FlavorPreference::kPreemptionOverBorrowing};
       },
       "snapshot.queues[2].flavor_fungibility.preference: set while when_can_borrow is "
       "MAY_STOP_SEARCH; a preference needs when_can_borrow and when_can_preempt both "
       "TRY_NEXT_FLAVOR"},
      {"PreferenceWithWhenCanPreemptMayStopSearch",
       [](Snapshot& s, Policy&) {
         s.queues[2].flavor_fungibility = {WhenCanBorrow::kTryNextFlavor,
                                           WhenCanPreempt::kMayStopSearch,
                                           FlavorPreference::kPreemptionOverBorrowing};
       },
       "snapshot.queues[2].flavor_fungibility.preference: set while when_can_preempt is "
       "MAY_STOP_SEARCH; a preference needs when_can_borrow and when_can_preempt both "
       "TRY_NEXT_FLAVOR"},
      {"PreferenceIsCheckedOnCohortsAndLegacyQueuesToo",
       [](Snapshot& s, Policy&) {
         s.queues[0].flavor_fungibility.preference = FlavorPreference::kPreemptionOverBorrowing;
       },
       "snapshot.queues[0].flavor_fungibility.preference: set while when_can_borrow is "
       "MAY_STOP_SEARCH (by default); a preference needs when_can_borrow and when_can_preempt "
       "both TRY_NEXT_FLAVOR"},
      // Issue 11 under KUEUE: a resource's nominal quotas summed over queues and flavors.
      {"KueueFlavorNominalsSumPastTheBound",
       [](Snapshot& s, Policy& p) {
         s.queues[1].deserved["gpu"] = 4;
         p.fairness_model = FairnessModel::kKueue;
         GroupOf(s, 0).flavors[0].resources["cpu"].nominal = 6e299;
         SpotCpu(s).nominal = 6e299;
       },
       "snapshot.queues[2].resource_groups[0].flavors[1].resources[\"cpu\"].nominal: the "
       "nominal quotas of all queues and flavors for \"cpu\" sum to more than 1e+300"},
      {"KueueFlavorAndLegacyNominalsSumPastTheBound",
       [](Snapshot& s, Policy& p) {
         s.queues[1].deserved["gpu"] = 4;
         s.queues[1].deserved["cpu"] = 6e299;
         p.fairness_model = FairnessModel::kKueue;
         SpotCpu(s).nominal = 6e299;
       },
       "snapshot.queues[2].resource_groups[0].flavors[1].resources[\"cpu\"].nominal: the "
       "nominal quotas of all queues and flavors for \"cpu\" sum to more than 1e+300"},
      // ---- Rule 4, per pod group ----
      {"PodGroupFlavorsDuplicatePodSet",
       [](Snapshot& s, Policy&) {
         s.pod_groups[1].flavors.push_back(PodSetFlavors{"workers", {}});
       },
       "snapshot.pod_groups[1].flavors[1].pod_set: duplicate pod set \"workers\" (also "
       "snapshot.pod_groups[1].flavors[0])"},
      {"PodGroupFlavorsUnknownPodSet",
       [](Snapshot& s, Policy&) {
         s.pod_groups[1].flavors.push_back(PodSetFlavors{"drivers", {{"cpu", "spot"}}});
       },
       "snapshot.pod_groups[1].flavors[1].pod_set: no pod of the group is in pod set "
       "\"drivers\""},
      {"PodGroupFlavorsEmptyFlavor",
       [](Snapshot& s, Policy&) { s.pod_groups[1].flavors[0].flavors["cpu"] = ""; },
       "snapshot.pod_groups[1].flavors[0].flavors[\"cpu\"]: empty flavor name"},
      {"PodGroupFlavorsEmptyFlavorForAResourceNotRequested",
       [](Snapshot& s, Policy&) { s.pod_groups[1].flavors[0].flavors["gpu"] = ""; },
       "snapshot.pod_groups[1].flavors[0].flavors[\"gpu\"]: empty flavor name"},
      {"AdmittedGroupWithoutFlavorForCoveredResource",
       [](Snapshot& s, Policy&) { s.pod_groups[1].pods[0].requests["memory"] = 100; },
       "snapshot.pod_groups[1].flavors[0].flavors: no flavor for resource \"memory\" of pod set "
       "\"workers\" (queue \"team-b\" covers it, and the group is admitted)"},
      {"AdmittedGroupWithoutEntryForPodSet",
       [](Snapshot& s, Policy&) { s.pod_groups[1].flavors.clear(); },
       "snapshot.pod_groups[1].flavors: no entry for pod set \"workers\", which requests "
       "resource \"cpu\" (queue \"team-b\" covers it, and the group is admitted)"},
      // Pod sets in name order, then resources in name order.
      {"AdmittedGroupMissingFlavorsReportsTheFirstPodSetAndResourceByName",
       [](Snapshot& s, Policy&) {
         PodGroup& job_2 = s.pod_groups[1];
         Pod launcher = job_2.pods[0];
         launcher.name = "launcher";
         launcher.pod_set = "launcher";
         launcher.requests = {{"gpu", 1}, {"memory", 5}};
         job_2.pods.push_back(launcher);
         job_2.pods[0].requests["memory"] = 5;
       },
       "snapshot.pod_groups[1].flavors: no entry for pod set \"launcher\", which requests "
       "resource \"gpu\" (queue \"team-b\" covers it, and the group is admitted)"},
      // The entries of a group in a legacy queue are validated too (§0.6).
      {"PodGroupFlavorsInLegacyQueueAreValidated",
       [](Snapshot& s, Policy&) {
         s.pod_groups[0].flavors = {PodSetFlavors{"", {{"cpu", "spot"}}}, PodSetFlavors{"", {}}};
       },
       "snapshot.pod_groups[0].flavors[1].pod_set: duplicate pod set \"\" (also "
       "snapshot.pod_groups[0].flavors[0])"},
  };
}

class FlavorValidationRejectsTest : public ::testing::TestWithParam<FlavorCase> {};

TEST_P(FlavorValidationRejectsTest, InvalidArgumentWithTheWholeMessage) {
  const FlavorCase& c = GetParam();
  Snapshot snapshot = FlavoredSnapshot();
  Policy policy;
  ASSERT_THAT(ValidateRequest(snapshot, policy, RequestKind::kSchedule), IsOk())
      << "the flavored base request must be valid";
  c.mutate(snapshot, policy);
  EXPECT_THAT(ValidateRequest(snapshot, policy, RequestKind::kSchedule),
              StatusIs(absl::StatusCode::kInvalidArgument, c.message));
  // Both models validate every field (§0.6); the sums are KUEUE's alone.
  if (policy.fairness_model == FairnessModel::kKai ||
      policy.fairness_model == FairnessModel::kUnspecified) {
    snapshot.queues[1].deserved["gpu"] = 4;  // the base's -1 is KAI's only
    EXPECT_THAT(ValidateRequest(snapshot, KueuePolicy(), RequestKind::kSchedule),
                StatusIs(absl::StatusCode::kInvalidArgument, c.message));
  }
}

INSTANTIATE_TEST_SUITE_P(Semantics58, FlavorValidationRejectsTest,
                         ::testing::ValuesIn(FlavorInvalidCases()),
                         [](const ::testing::TestParamInfo<FlavorCase>& case_info) {
                           return case_info.param.name;
                         });

std::vector<ValidCase> FlavorValidCases() {
  return {
      {"FlavoredRequest", [](Snapshot&, Policy&) {}},
      {"FlavoredRequestSchedule", [](Snapshot&, Policy&) {}, RequestKind::kSchedule},
      {"FlavoredRequestUnderKueue",
       [](Snapshot& s, Policy& p) {
         s = KueueFlavoredSnapshot();
         p = KueuePolicy();
       },
       RequestKind::kSchedule},
      {"MinusOneLimitsInFlavorQuotas",
       [](Snapshot& s, Policy& p) {
         s = KueueFlavoredSnapshot();
         p = KueuePolicy();
         SpotCpu(s) = Quota(0, -1, -1);
         GroupOf(s, 1).flavors[0].resources["gpu"] = Quota(8, -1, -1);
       }},
      {"ZeroNominalAndLimits", [](Snapshot& s, Policy&) { SpotCpu(s) = Quota(0, 0, 0); }},
      {"LegacyAndFlavoredQueuesInOneTree",
       [](Snapshot& s, Policy& p) {
         // team-a gives its quotas in the legacy maps, team-b per flavor, both under dept; the
         // cohort itself is flavored too.
         s = KueueFlavoredSnapshot();
         p = KueuePolicy();
         s.queues[1].borrowing_limit["cpu"] = 100;
         s.queues[1].lending_limit["cpu"] = -1;
         s.queues[0].resource_groups = {
             ResourceGroup{{"cpu"}, {FlavorQuotas{"on-demand", {{"cpu", Quota(1000)}}}}}};
       }},
      {"UndeclaredFlavorsAndNoDeclaredFlavors",
       [](Snapshot& s, Policy&) { s.resource_flavors.clear(); }},
      {"DeclaredFlavorsWithoutFlavoredQueues",
       [](Snapshot& s, Policy&) {
         s.queues[2].resource_groups.clear();
         s.pod_groups[1].admitted = false;
       }},
      {"AdmittedGroupFlavorsNameAResourceItsPodsDoNotRequest",
       [](Snapshot& s, Policy&) { s.pod_groups[1].flavors[0].flavors["gpu"] = "a100"; }},
      {"AdmittedGroupFlavorsNameAFlavorTheQueueDoesNotList",
       [](Snapshot& s, Policy&) { s.pod_groups[1].flavors[0].flavors["cpu"] = "retired"; }},
      {"AdmittedGroupNeedsNoFlavorForAnUncoveredResource",
       [](Snapshot& s, Policy&) { s.pod_groups[1].pods[0].requests["example.com/fpga"] = 1; }},
      {"AdmittedGroupNeedsNoFlavorForAZeroRequest",
       [](Snapshot& s, Policy&) { s.pod_groups[1].pods[0].requests["memory"] = 0; }},
      {"PendingGroupInFlavoredQueueWithoutFlavors",
       [](Snapshot& s, Policy&) {
         s.pod_groups[1].admitted = false;
         s.pod_groups[1].flavors.clear();
       }},
      {"AdmittedGroupInLegacyQueueWithoutFlavors",
       [](Snapshot& s, Policy&) { s.pod_groups[0].admitted = true; }},
      {"EmptyPodSetNameIsAPodSet",
       [](Snapshot& s, Policy&) {
         s.pod_groups[1].pods[0].pod_set = "";
         s.pod_groups[1].flavors[0].pod_set = "";
       }},
      {"PreferenceWithBothTryNextFlavor",
       [](Snapshot& s, Policy&) {
         s.queues[2].flavor_fungibility = {WhenCanBorrow::kTryNextFlavor,
                                           WhenCanPreempt::kUnspecified,
                                           FlavorPreference::kPreemptionOverBorrowing};
         s.queues[1].flavor_fungibility = {WhenCanBorrow::kTryNextFlavor,
                                           WhenCanPreempt::kTryNextFlavor,
                                           FlavorPreference::kBorrowingOverPreemption};
       }},
      {"FungibilityWithoutPreference",
       [](Snapshot& s, Policy&) {
         s.queues[2].flavor_fungibility = {WhenCanBorrow::kMayStopSearch,
                                           WhenCanPreempt::kMayStopSearch,
                                           FlavorPreference::kUnspecified};
       }},
      {"FlavorWithoutLabelsTaintsOrTolerations",
       [](Snapshot& s, Policy&) {
         s.resource_flavors[1] = ResourceFlavor{"spot", {}, {}, {}};
       }},
      {"FlavorTolerationWithEmptyKeyAndOperatorExists",
       [](Snapshot& s, Policy&) {
         s.resource_flavors[0].tolerations = {Toleration{"", "Exists", "", "NoExecute"}};
       }},
      // Issue 11: flavor nominals are summed under KUEUE only, and the bound itself is allowed.
      {"KaiFlavorNominalsAreNotSummed",
       [](Snapshot& s, Policy&) {
         GroupOf(s, 0).flavors[0].resources["cpu"].nominal = 1e308;
         SpotCpu(s).nominal = 1e308;
       }},
      {"KueueFlavorNominalsSumToExactlyTheBound",
       [](Snapshot& s, Policy& p) {
         s = KueueFlavoredSnapshot();
         p = KueuePolicy();
         GroupOf(s, 0).flavors[0].resources["cpu"].nominal = kMaxQuantitySum / 2;
         SpotCpu(s).nominal = kMaxQuantitySum / 2;
       }},
  };
}

class FlavorValidationAcceptsTest : public ::testing::TestWithParam<ValidCase> {};

TEST_P(FlavorValidationAcceptsTest, Ok) {
  const ValidCase& c = GetParam();
  Snapshot snapshot = FlavoredSnapshot();
  Policy policy;
  c.mutate(snapshot, policy);
  EXPECT_THAT(ValidateRequest(snapshot, policy, c.kind), IsOk());
}

INSTANTIATE_TEST_SUITE_P(Semantics58NotErrors, FlavorValidationAcceptsTest,
                         ::testing::ValuesIn(FlavorValidCases()),
                         [](const ::testing::TestParamInfo<ValidCase>& case_info) {
                           return case_info.param.name;
                         });

// A request that is not flavored but sets §5.8 fields is validated and accepted (§5.8.1).
TEST(FlavorValidationTest, UnflavoredRequestWithFlavorFieldsIsValidUnderBothModels) {
  Snapshot snapshot = BaseSnapshot();
  snapshot.queues[1].deserved["gpu"] = 4;
  snapshot.pod_groups[0].pods[1].pod_set = "workers";
  snapshot.pod_groups[0].admitted = true;
  snapshot.pod_groups[0].flavors = {PodSetFlavors{"workers", {{"cpu", "any"}}},
                                    PodSetFlavors{"", {{"gpu", "other"}}}};
  snapshot.queues[2].flavor_fungibility = {WhenCanBorrow::kTryNextFlavor,
                                           WhenCanPreempt::kMayStopSearch,
                                           FlavorPreference::kUnspecified};
  EXPECT_THAT(ValidateRequest(snapshot, Policy{}, RequestKind::kSchedule), IsOk());
  EXPECT_THAT(ValidateRequest(snapshot, KueuePolicy(), RequestKind::kSchedule), IsOk());
}

// ---- §5.8 check order: 1a after rule 1, the new queue checks after a queue's existing ones,
// a pod group's after all its pods' checks; an earlier offence wins ----

absl::Status Validate(const Snapshot& snapshot, const Policy& policy = Policy{}) {
  return ValidateRequest(snapshot, policy, RequestKind::kSchedule);
}

TEST(FlavorCheckOrder, EnumsAndPolicyComeBeforeResourceFlavors) {
  Snapshot snapshot = FlavoredSnapshot();
  snapshot.resource_flavors[0].name = "";
  Policy policy;
  policy.k_value = -1;
  EXPECT_THAT(Validate(snapshot, policy),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "policy.k_value: must be finite and not negative, got -1"));
  snapshot.queues[2].flavor_fungibility.preference = Raw<FlavorPreference>(7);
  EXPECT_THAT(Validate(snapshot, policy),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "snapshot.queues[2].flavor_fungibility.preference: unknown enum value 7"));
}

TEST(FlavorCheckOrder, ResourceFlavorsComeBeforeQueuesAndNow) {
  Snapshot snapshot = FlavoredSnapshot();
  snapshot.now = Timestamp{-1'000'000'000'000, 0};
  snapshot.queues[0].name = "";
  snapshot.resource_flavors[1].node_taints[0].key = "";
  EXPECT_THAT(Validate(snapshot), StatusIs(absl::StatusCode::kInvalidArgument,
                                           "snapshot.resource_flavors[1].node_taints[0].key: "
                                           "empty key"));
}

TEST(FlavorCheckOrder, WithinAResourceFlavorInFieldOrder) {
  Snapshot snapshot = FlavoredSnapshot();
  snapshot.resource_flavors[1].tolerations[0].op = "In";
  snapshot.resource_flavors[1].node_taints[0].effect = "";
  snapshot.resource_flavors[1].node_labels[""] = "x";
  snapshot.resource_flavors[1].name = "on-demand";
  const std::vector<std::string> expected = {
      "snapshot.resource_flavors[1].name: duplicate resource flavor \"on-demand\" (also "
      "snapshot.resource_flavors[0])",
      "snapshot.resource_flavors[1].node_labels[\"\"]: empty key",
      "snapshot.resource_flavors[1].node_taints[0].effect: unknown effect \"\" (NoSchedule, "
      "PreferNoSchedule or NoExecute)",
      "snapshot.resource_flavors[1].tolerations[0].operator: unknown operator \"In\" (Equal or "
      "Exists)",
  };
  const std::vector<std::function<void(ResourceFlavor&)>> fixes = {
      [](ResourceFlavor& f) { f.name = "spot"; },
      [](ResourceFlavor& f) { f.node_labels.erase(""); },
      [](ResourceFlavor& f) { f.node_taints[0].effect = "NoSchedule"; },
      [](ResourceFlavor& f) { f.tolerations[0].op = "Exists"; },
  };
  for (size_t n = 0; n < expected.size(); ++n) {
    EXPECT_THAT(Validate(snapshot), StatusIs(absl::StatusCode::kInvalidArgument, expected[n]));
    fixes[n](snapshot.resource_flavors[1]);
  }
  EXPECT_THAT(Validate(snapshot), IsOk());
}

TEST(FlavorCheckOrder, AQueuesExistingChecksComeFirst) {
  Snapshot snapshot = FlavoredSnapshot();
  GroupOf(snapshot, 0).flavors.clear();
  snapshot.queues[2].creation_time = Timestamp{0, -1};
  EXPECT_THAT(Validate(snapshot), StatusIs(absl::StatusCode::kInvalidArgument,
                                           "snapshot.queues[2].creation_time: outside the "
                                           "Timestamp range (seconds 0, nanos -1)"));
  snapshot.queues[2].creation_time.reset();
  snapshot.queues[2].deserved["cpu"] = -1;  // -1 under KUEUE, before "a legacy map is set"
  snapshot.queues[1].deserved["gpu"] = 4;
  EXPECT_THAT(Validate(snapshot, KueuePolicy()),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "snapshot.queues[2].deserved[\"cpu\"]: -1 is not allowed under "
                       "FAIRNESS_MODEL_KUEUE (a nominal quota is finite)"));
}

// One queue with an offence against every new check: each is reported in the order §5.8 lists
// them, then the next once it is fixed.
TEST(FlavorCheckOrder, AQueuesNewChecksRunInTheListedOrder) {
  Snapshot snapshot = FlavoredSnapshot();
  Queue& team_b = snapshot.queues[2];
  team_b.lending_limit["cpu"] = 5;
  team_b.resource_groups.push_back(ResourceGroup{{}, {}});                // groups[2]
  GroupOf(snapshot, 1).covered_resources.push_back("");                   // [1]
  GroupOf(snapshot, 1).covered_resources.push_back("memory");             // [2]: in group 0 too
  GroupOf(snapshot, 1).flavors.push_back(FlavorQuotas{"", {}});           // flavors[1]
  GroupOf(snapshot, 1).flavors.push_back(FlavorQuotas{"on-demand", {}});  // flavors[2]
  GroupOf(snapshot, 0).flavors[0].resources["gpu"] = Quota(1);
  SpotCpu(snapshot) = Quota(-3, -2);
  team_b.flavor_fungibility.preference = FlavorPreference::kPreemptionOverBorrowing;
  const std::string q = "snapshot.queues[2].";
  const std::vector<std::pair<std::string, std::function<void()>>> steps = {
      {q + "lending_limit[\"cpu\"]: set on a queue with resource_groups (a queue gives its "
           "quotas either per flavor or in the legacy maps)",
       [&] { team_b.lending_limit.clear(); }},
      {q + "resource_groups[2].covered_resources: empty (a resource group covers at least one "
           "resource)",
       [&] { team_b.resource_groups.pop_back(); }},
      {q + "resource_groups[1].covered_resources[1]: empty resource name",
       [&] {
         auto& covered = GroupOf(snapshot, 1).covered_resources;
         covered.erase(covered.begin() + 1);
       }},
      {q + "resource_groups[1].covered_resources[1]: resource \"memory\" is covered by two "
           "resource groups (also snapshot.queues[2].resource_groups[0].covered_resources[1])",
       [&] { GroupOf(snapshot, 1).covered_resources.pop_back(); }},
      {q + "resource_groups[1].flavors[1].flavor: empty flavor name (\"\" is the implicit "
           "flavor)",
       [&] { GroupOf(snapshot, 1).flavors[1].flavor = "a10"; }},
      {q + "resource_groups[1].flavors[2].flavor: duplicate flavor \"on-demand\" (also "
           "snapshot.queues[2].resource_groups[0].flavors[0])",
       [&] { GroupOf(snapshot, 1).flavors[2].flavor = "t4"; }},
      {q + "resource_groups[0].flavors[0].resources[\"gpu\"]: resource \"gpu\" is not covered "
           "by the group (snapshot.queues[2].resource_groups[0].covered_resources)",
       [&] { GroupOf(snapshot, 0).flavors[0].resources.erase("gpu"); }},
      {q + "resource_groups[1].flavors[1].resources: no quota for covered resource \"gpu\" "
           "(snapshot.queues[2].resource_groups[1].covered_resources[0])",
       [&] {
         GroupOf(snapshot, 1).flavors[1].resources["gpu"] = Quota(1);
         GroupOf(snapshot, 1).flavors[2].resources["gpu"] = Quota(1);
       }},
      {q + "resource_groups[0].flavors[1].resources[\"cpu\"].nominal: must be finite and not "
           "negative, got -3",
       [&] { SpotCpu(snapshot).nominal = 3; }},
      {q + "resource_groups[0].flavors[1].resources[\"cpu\"].borrowing_limit: negative value "
           "other than -1 (unlimited): -2",
       [&] { SpotCpu(snapshot).borrowing_limit = -1; }},
      {q + "flavor_fungibility.preference: set while when_can_borrow is MAY_STOP_SEARCH (by "
           "default); a preference needs when_can_borrow and when_can_preempt both "
           "TRY_NEXT_FLAVOR",
       [&] { team_b.flavor_fungibility.when_can_borrow = WhenCanBorrow::kTryNextFlavor; }},
  };
  for (const auto& [message, fix] : steps) {
    EXPECT_THAT(Validate(snapshot), StatusIs(absl::StatusCode::kInvalidArgument, message));
    fix();
  }
  EXPECT_THAT(Validate(snapshot), IsOk());
}

TEST(FlavorCheckOrder, QueuesAreCheckedOneAfterAnother) {
  Snapshot snapshot = FlavoredSnapshot();
  snapshot.queues[2].parent = "nowhere";
  snapshot.queues[1].resource_groups = {ResourceGroup{{"cpu"}, {}}};
  EXPECT_THAT(Validate(snapshot),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "snapshot.queues[1].deserved[\"cpu\"]: set on a queue with resource_groups "
                       "(a queue gives its quotas either per flavor or in the legacy maps)"));
}

TEST(FlavorCheckOrder, QueueChecksComeBeforeNodesAndTheKueueSumsLast) {
  Snapshot snapshot = KueueFlavoredSnapshot();
  snapshot.nodes[1].name = "";
  SpotCpu(snapshot).nominal = 1e300;
  GroupOf(snapshot, 0).flavors[0].resources["cpu"].nominal = 1e300;
  snapshot.queues[1].borrowing_limit["cpu"] = -3;
  snapshot.queues[2].resource_groups[1].flavors[0].resources["gpu"].lending_limit = kNaN;
  EXPECT_THAT(Validate(snapshot, KueuePolicy()),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "snapshot.queues[1].borrowing_limit[\"cpu\"]: negative value other than -1 "
                       "(unlimited): -3"));
  snapshot.queues[1].borrowing_limit.clear();
  EXPECT_THAT(Validate(snapshot, KueuePolicy()),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "snapshot.queues[2].resource_groups[1].flavors[0].resources[\"gpu\"]."
                       "lending_limit: must be finite, got NaN"));
  snapshot.queues[2].resource_groups[1].flavors[0].resources["gpu"].lending_limit.reset();
  EXPECT_THAT(Validate(snapshot, KueuePolicy()),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "snapshot.queues[2].resource_groups[0].flavors[1].resources[\"cpu\"]."
                       "nominal: the nominal quotas of all queues and flavors for \"cpu\" sum to "
                       "more than 1e+300"));
  SpotCpu(snapshot).nominal = 0;
  EXPECT_THAT(Validate(snapshot, KueuePolicy()),
              StatusIs(absl::StatusCode::kInvalidArgument, "snapshot.nodes[1].name: empty name"));
}

TEST(FlavorCheckOrder, APodGroupsFlavorsComeAfterAllItsPods) {
  Snapshot snapshot = FlavoredSnapshot();
  PodGroup& job_2 = snapshot.pod_groups[1];
  job_2.flavors.push_back(PodSetFlavors{"workers", {}});
  Pod second = job_2.pods[0];
  second.name = "job-2-1";
  second.requests["cpu"] = -5;
  job_2.pods.push_back(second);
  EXPECT_THAT(Validate(snapshot),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "snapshot.pod_groups[1].pods[1].requests[\"cpu\"]: must be finite and not "
                       "negative, got -5"));
  job_2.pods.pop_back();
  // Before the next group's checks.
  snapshot.pod_groups.push_back(PodGroup{});
  snapshot.pod_groups.back().name = "job-3";
  EXPECT_THAT(Validate(snapshot), StatusIs(absl::StatusCode::kInvalidArgument,
                                           "snapshot.pod_groups[1].flavors[1].pod_set: duplicate "
                                           "pod set \"workers\" (also "
                                           "snapshot.pod_groups[1].flavors[0])"));
}

TEST(FlavorCheckOrder, APodGroupsNewChecksRunInTheListedOrder) {
  Snapshot snapshot = FlavoredSnapshot();
  PodGroup& job_2 = snapshot.pod_groups[1];
  job_2.pods[0].requests["memory"] = 1;
  job_2.flavors = {PodSetFlavors{"workers", {{"cpu", "spot"}}},
                   PodSetFlavors{"nobody", {{"cpu", "spot"}}},
                   PodSetFlavors{"workers", {{"cpu", ""}}}};
  job_2.flavors[0].flavors["gpu"] = "";
  const std::string g = "snapshot.pod_groups[1].";
  const std::vector<std::pair<std::string, std::function<void()>>> steps = {
      {g + "flavors[2].pod_set: duplicate pod set \"workers\" (also "
           "snapshot.pod_groups[1].flavors[0])",
       [&] { job_2.flavors.pop_back(); }},
      {g + "flavors[1].pod_set: no pod of the group is in pod set \"nobody\"",
       [&] { job_2.flavors.pop_back(); }},
      {g + "flavors[0].flavors[\"gpu\"]: empty flavor name",
       [&] { job_2.flavors[0].flavors.erase("gpu"); }},
      {g + "flavors[0].flavors: no flavor for resource \"memory\" of pod set \"workers\" (queue "
           "\"team-b\" covers it, and the group is admitted)",
       [&] { job_2.flavors[0].flavors["memory"] = "on-demand"; }},
  };
  for (const auto& [message, fix] : steps) {
    EXPECT_THAT(Validate(snapshot), StatusIs(absl::StatusCode::kInvalidArgument, message));
    fix();
  }
  EXPECT_THAT(Validate(snapshot), IsOk());
}

// Validation interns no flavor name into R: the cells of R are the interned model's to name
// (core/validated_snapshot.h), and a legacy request keeps exactly the names it had.
TEST(FlavorValidationTest, FlavorResourcesAreNotInternedByValidation) {
  const Snapshot snapshot = KueueFlavoredSnapshot();
  RequestIndex index;
  ASSERT_THAT(ValidateRequest(snapshot, KueuePolicy(), RequestKind::kSchedule, nullptr, {}, &index),
              IsOk());
  std::vector<std::string> names;
  for (int i = 0; i < index.resources.size(); ++i) names.push_back(index.resources.name(i));
  EXPECT_THAT(names, ::testing::UnorderedElementsAre("cpu", "gpu"));
}

// ---- GPU sharing (§4.13.6, the §0.6 and §1 amendments) ----

// A valid KAI request that uses every sharing field; each case below breaks it in one place:
//   nodes[0] n1: 4 GPUs of 40000 each; nodes[1] n2: 2 GPUs, gpu_device_memory 0 (unknown)
//   pod_groups[0] job-1 in team-a:
//     pods[0] RUNNING on n1, gpu_fraction 0.5, gpu_groups [g0]
//     pods[1] RELEASING on n1, gpu_memory 20000 on 2 devices, gpu_groups [g1, g2]
//     pods[2] RUNNING on n2, gpu_fraction 0.25, gpu_groups [g0] (100 units per device)
//     pods[3] PENDING, gpu_fraction 0.3
//   pod_groups[1] job-2 in team-a:
//     pods[0] PENDING, gpu_memory 10000 on 2 devices
//     pods[1] PENDING, one whole GPU (does not share)
//     pods[2] RUNNING on n1, one whole GPU (does not share)
Snapshot SharingSnapshot() {
  Snapshot s = SnapshotBuilder()
                   .Node("n1", {{"cpu", 8000}, {"nvidia.com/gpu", 4}})
                   .Node("n2", {{"cpu", 8000}, {"nvidia.com/gpu", 2}})
                   .Queue("team-a")
                   .Group("job-1", "team-a")
                   .Pod({{"cpu", 1000}}, "n1", PodPhase::kRunning)
                   .Pod({{"cpu", 1000}}, "n1", PodPhase::kReleasing)
                   .Pod({{"cpu", 1000}}, "n2", PodPhase::kRunning)
                   .Pod({{"cpu", 1000}})
                   .Group("job-2", "team-a")
                   .Pod({{"cpu", 500}})
                   .Pod({{"cpu", 500}, {"nvidia.com/gpu", 1}})
                   .Pod({{"cpu", 500}, {"nvidia.com/gpu", 1}}, "n1", PodPhase::kRunning)
                   .Build();
  s.nodes[0].gpu_device_memory = 40000;
  std::vector<Pod>& job_1 = s.pod_groups[0].pods;
  job_1[0].gpu_fraction = 0.5;
  job_1[0].gpu_groups = {"g0"};
  job_1[1].gpu_memory = 20000;
  job_1[1].gpu_fraction_devices = 2;
  job_1[1].gpu_groups = {"g1", "g2"};
  job_1[2].gpu_fraction = 0.25;
  job_1[2].gpu_groups = {"g0"};
  job_1[3].gpu_fraction = 0.3;
  std::vector<Pod>& job_2 = s.pod_groups[1].pods;
  job_2[0].gpu_memory = 10000;
  job_2[0].gpu_fraction_devices = 2;
  return s;
}

Policy KaiPolicy() {
  Policy policy;
  policy.fairness_model = FairnessModel::kKai;
  return policy;
}

absl::Status ValidateKai(const Snapshot& snapshot) {
  return ValidateRequest(snapshot, KaiPolicy(), RequestKind::kSchedule);
}

Pod& PodAt(Snapshot& s, int group, int pod) { return s.pod_groups[group].pods[pod]; }

constexpr double kTwoTo53 = 9007199254740992.0;  // 2^53

// Each case names its rule; `message` is the whole message.
std::vector<FlavorCase> SharingInvalidCases() {
  const std::string pod0 = "snapshot.pod_groups[0].pods[0].";
  const std::string pod1 = "snapshot.pod_groups[0].pods[1].";
  const std::string pod3 = "snapshot.pod_groups[0].pods[3].";
  const std::string fraction = "gpu_fraction: must be a positive number smaller than 1, got ";
  const std::string memory = "gpu_memory: must be a whole number in [1, 2^53], got ";
  const std::string node0 =
      "snapshot.nodes[0].gpu_device_memory: must be a whole number in "
      "[0, 2^53] (0 = unknown), got ";
  return {
      // ---- Rule 1: gpu_fraction in (0, 1) ----
      {"Rule1FractionZero", [](Snapshot& s, Policy&) { PodAt(s, 0, 3).gpu_fraction = 0; },
       pod3 + fraction + "0"},
      {"Rule1FractionOne", [](Snapshot& s, Policy&) { PodAt(s, 0, 3).gpu_fraction = 1; },
       pod3 + fraction + "1"},
      {"Rule1FractionAboveOne", [](Snapshot& s, Policy&) { PodAt(s, 0, 0).gpu_fraction = 1.5; },
       pod0 + fraction + "1.5"},
      {"Rule1FractionNegative", [](Snapshot& s, Policy&) { PodAt(s, 0, 3).gpu_fraction = -0.5; },
       pod3 + fraction + "-0.5"},
      {"Rule1FractionNaN", [](Snapshot& s, Policy&) { PodAt(s, 0, 3).gpu_fraction = kNaN; },
       pod3 + fraction + "NaN"},
      {"Rule1FractionPlusInf", [](Snapshot& s, Policy&) { PodAt(s, 0, 3).gpu_fraction = kInf; },
       pod3 + fraction + "+Inf"},
      {"Rule1FractionMinusInf", [](Snapshot& s, Policy&) { PodAt(s, 0, 3).gpu_fraction = -kInf; },
       pod3 + fraction + "-Inf"},
      // ---- Rule 2: gpu_memory an integer in [1, 2^53] ----
      {"Rule2MemoryNotAnInteger", [](Snapshot& s, Policy&) { PodAt(s, 0, 1).gpu_memory = 1.5; },
       pod1 + memory + "1.5"},
      {"Rule2MemoryZero", [](Snapshot& s, Policy&) { PodAt(s, 0, 1).gpu_memory = 0; },
       pod1 + memory + "0"},
      {"Rule2MemoryNegative", [](Snapshot& s, Policy&) { PodAt(s, 0, 1).gpu_memory = -20000; },
       pod1 + memory + "-20000"},
      {"Rule2MemoryAbove2To53",
       [](Snapshot& s, Policy&) { PodAt(s, 0, 1).gpu_memory = 2 * kTwoTo53; },
       pod1 + memory + "18014398509481984"},
      {"Rule2MemoryNaN", [](Snapshot& s, Policy&) { PodAt(s, 0, 1).gpu_memory = kNaN; },
       pod1 + memory + "NaN"},
      {"Rule2MemoryInf", [](Snapshot& s, Policy&) { PodAt(s, 0, 1).gpu_memory = kInf; },
       pod1 + memory + "+Inf"},
      // ---- Rule 3: both ----
      {"Rule3FractionAndMemory", [](Snapshot& s, Policy&) { PodAt(s, 0, 3).gpu_memory = 1000; },
       pod3 + "gpu_memory: set together with gpu_fraction; a pod asks for one"},
      // ---- Rule 4: gpu_fraction_devices ----
      {"Rule4DevicesNegative",
       [](Snapshot& s, Policy&) { PodAt(s, 0, 3).gpu_fraction_devices = -1; },
       pod3 + "gpu_fraction_devices: must not be negative, got -1"},
      {"Rule4DevicesWithoutSharing",
       [](Snapshot& s, Policy&) { PodAt(s, 1, 1).gpu_fraction_devices = 2; },
       "snapshot.pod_groups[1].pods[1].gpu_fraction_devices: set on a pod that does not share a "
       "GPU (set gpu_fraction or gpu_memory)"},
      // ---- Rule 5: a sharing pod requests no whole GPU ----
      {"Rule5GpuRequestOnFractionPod",
       [](Snapshot& s, Policy&) { PodAt(s, 0, 0).requests["nvidia.com/gpu"] = 1; },
       pod0 + "requests[\"nvidia.com/gpu\"]: must be absent or 0 on a pod that shares a GPU "
              "(gpu_fraction or gpu_memory sets its share), got 1"},
      {"Rule5GpuRequestOnMemoryPod",
       [](Snapshot& s, Policy&) { PodAt(s, 1, 0).requests["nvidia.com/gpu"] = 0.5; },
       "snapshot.pod_groups[1].pods[0].requests[\"nvidia.com/gpu\"]: must be absent or 0 on a "
       "pod that shares a GPU (gpu_fraction or gpu_memory sets its share), got 0.5"},
      // ---- Rule 6: gpu_groups ----
      {"Rule6GroupsOnPendingNonSharingPod",
       [](Snapshot& s, Policy&) { PodAt(s, 1, 1).gpu_groups = {"g0"}; },
       "snapshot.pod_groups[1].pods[1].gpu_groups: set on a pod that does not share a GPU"},
      {"Rule6GroupsOnRunningNonSharingPod",
       [](Snapshot& s, Policy&) { PodAt(s, 1, 2).gpu_groups = {"g3"}; },
       "snapshot.pod_groups[1].pods[2].gpu_groups: set on a pod that does not share a GPU"},
      {"Rule6GroupsOnPendingPod", [](Snapshot& s, Policy&) { PodAt(s, 0, 3).gpu_groups = {"g3"}; },
       pod3 + "gpu_groups: set on a PENDING pod"},
      {"Rule6GroupsOnUnspecifiedPhasePodWithoutNode",
       [](Snapshot& s, Policy&) {
         PodAt(s, 1, 0).phase = PodPhase::kUnspecified;
         PodAt(s, 1, 0).gpu_groups = {"g3", "g4"};
       },
       "snapshot.pod_groups[1].pods[0].gpu_groups: set on a PENDING pod"},
      {"Rule6RunningPodWithoutKeys", [](Snapshot& s, Policy&) { PodAt(s, 0, 0).gpu_groups = {}; },
       pod0 + "gpu_groups: has 0 keys; a RUNNING or RELEASING pod that shares lists one per "
              "device, 1"},
      {"Rule6TooFewKeys", [](Snapshot& s, Policy&) { PodAt(s, 0, 1).gpu_groups = {"g1"}; },
       pod1 + "gpu_groups: has 1 keys; a RUNNING or RELEASING pod that shares lists one per "
              "device, 2"},
      {"Rule6TooManyKeys",
       [](Snapshot& s, Policy&) {
         PodAt(s, 0, 0).gpu_groups = {"g0", "g3"};
       },
       pod0 + "gpu_groups: has 2 keys; a RUNNING or RELEASING pod that shares lists one per "
              "device, 1"},
      {"Rule6EmptyKey",
       [](Snapshot& s, Policy&) {
         PodAt(s, 0, 1).gpu_groups = {"g1", ""};
       },
       pod1 + "gpu_groups[1]: empty device key"},
      {"Rule6DuplicateKey",
       [](Snapshot& s, Policy&) {
         PodAt(s, 0, 1).gpu_groups = {"g1", "g1"};
       },
       pod1 + "gpu_groups[1]: duplicate device key \"g1\" (also gpu_groups[0])"},
      {"Rule6DuplicateKeyAfterThreeDevices",
       [](Snapshot& s, Policy&) {
         PodAt(s, 0, 1).gpu_fraction_devices = 3;
         PodAt(s, 0, 1).gpu_groups = {"g1", "g2", "g1"};
       },
       pod1 + "gpu_groups[2]: duplicate device key \"g1\" (also gpu_groups[0])"},
      // ---- Rule 7: a memory pod on a node of unknown device memory ----
      {"Rule7RunningMemoryPodOnUnknownMemoryNode",
       [](Snapshot& s, Policy&) {
         Pod& pod = PodAt(s, 0, 2);
         pod.gpu_fraction.reset();
         pod.gpu_memory = 1000;
       },
       "snapshot.pod_groups[0].pods[2].gpu_memory: the pod runs on node \"n2\", whose "
       "gpu_device_memory is 0 (unknown)"},
      {"Rule7ReleasingMemoryPodOnUnknownMemoryNode",
       [](Snapshot& s, Policy&) { s.nodes[0].gpu_device_memory = 0; },
       pod1 + "gpu_memory: the pod runs on node \"n1\", whose gpu_device_memory is 0 (unknown)"},
      // ---- §1 rule 3: Node.gpu_device_memory ----
      {"NodeDeviceMemoryNegative", [](Snapshot& s, Policy&) { s.nodes[0].gpu_device_memory = -1; },
       node0 + "-1"},
      {"NodeDeviceMemoryNaN", [](Snapshot& s, Policy&) { s.nodes[0].gpu_device_memory = kNaN; },
       node0 + "NaN"},
      {"NodeDeviceMemoryPlusInf", [](Snapshot& s, Policy&) { s.nodes[0].gpu_device_memory = kInf; },
       node0 + "+Inf"},
      {"NodeDeviceMemoryMinusInf",
       [](Snapshot& s, Policy&) { s.nodes[0].gpu_device_memory = -kInf; }, node0 + "-Inf"},
      {"NodeDeviceMemoryNotAnInteger",
       [](Snapshot& s, Policy&) { s.nodes[0].gpu_device_memory = 40000.5; }, node0 + "40000.5"},
      {"NodeDeviceMemoryAbove2To53",
       [](Snapshot& s, Policy&) { s.nodes[0].gpu_device_memory = 2 * kTwoTo53; },
       node0 + "18014398509481984"},
      {"NodeDeviceMemoryOnANodeWithoutGpus",
       [](Snapshot& s, Policy&) {
         s.nodes.push_back(Node{});
         s.nodes.back().name = "cpu-only";
         s.nodes.back().gpu_device_memory = 0.25;
       },
       "snapshot.nodes[2].gpu_device_memory: must be a whole number in [0, 2^53] (0 = unknown), "
       "got 0.25"},
      // ---- §1 rule 1: the enum ----
      {"GpuDevicePlacementOutOfRange",
       [](Snapshot&, Policy& p) { p.gpu_device_placement = Raw<Placement>(3); },
       "policy.gpu_device_placement: unknown enum value 3"},
      {"GpuDevicePlacementNegative",
       [](Snapshot&, Policy& p) { p.gpu_device_placement = Raw<Placement>(-1); },
       "policy.gpu_device_placement: unknown enum value -1"},
  };
}

class SharingValidationRejectsTest : public ::testing::TestWithParam<FlavorCase> {};

TEST_P(SharingValidationRejectsTest, InvalidArgumentWithTheWholeMessage) {
  const FlavorCase& c = GetParam();
  Snapshot snapshot = SharingSnapshot();
  Policy policy = KaiPolicy();
  ASSERT_THAT(ValidateRequest(snapshot, policy, RequestKind::kSchedule), IsOk())
      << "the sharing base request must be valid";
  c.mutate(snapshot, policy);
  EXPECT_THAT(ValidateRequest(snapshot, policy, RequestKind::kSchedule),
              StatusIs(absl::StatusCode::kInvalidArgument, c.message));
  // An unspecified model is KAI: the same checks, the same message; the fair-share call too.
  policy.fairness_model = FairnessModel::kUnspecified;
  EXPECT_THAT(ValidateRequest(snapshot, policy, RequestKind::kFairShares),
              StatusIs(absl::StatusCode::kInvalidArgument, c.message));
}

INSTANTIATE_TEST_SUITE_P(Semantics4136, SharingValidationRejectsTest,
                         ::testing::ValuesIn(SharingInvalidCases()),
                         [](const ::testing::TestParamInfo<FlavorCase>& case_info) {
                           return case_info.param.name;
                         });

std::vector<ValidCase> SharingValidCases() {
  return {
      {"SharingBase", [](Snapshot&, Policy&) {}},
      // §4.13.6 "not errors": an over-committed device (3 × 20000 units > 40000) ...
      {"OverCommittedDevice",
       [](Snapshot& s, Policy&) {
         PodAt(s, 0, 1).gpu_groups = {"g0", "g1"};
         PodAt(s, 0, 0).gpu_fraction = 0.9;
       }},
      // ... more active devices than allocatable G (g0..g4 and a whole-GPU pod on 4 GPUs) ...
      {"MoreDevicesThanAllocatableGpus",
       [](Snapshot& s, Policy&) {
         PodAt(s, 0, 1).gpu_fraction_devices = 4;
         PodAt(s, 0, 1).gpu_groups = {"g1", "g2", "g3", "g4"};
       }},
      // ... and keys that look like the ones arbiter gives new devices.
      {"NewKeysInTheSnapshot",
       [](Snapshot& s, Policy&) {
         PodAt(s, 0, 0).gpu_groups = {"new-0"};
         PodAt(s, 0, 1).gpu_groups = {"new-1", "new-0"};
       }},
      // Boundaries of the rejected ranges.
      {"FractionJustAboveZeroAndJustBelowOne",
       [](Snapshot& s, Policy&) {
         PodAt(s, 0, 0).gpu_fraction = std::numeric_limits<double>::denorm_min();
         PodAt(s, 0, 3).gpu_fraction = std::nextafter(1.0, 0.0);
       }},
      {"MemoryOneAndExactly2To53",
       [](Snapshot& s, Policy&) {
         PodAt(s, 0, 1).gpu_memory = 1;
         PodAt(s, 1, 0).gpu_memory = kTwoTo53;
       }},
      {"DeviceMemoryExactly2To53",
       [](Snapshot& s, Policy&) { s.nodes[0].gpu_device_memory = kTwoTo53; }},
      {"ZeroGpuRequestOnASharingPod",
       [](Snapshot& s, Policy&) { PodAt(s, 0, 0).requests["nvidia.com/gpu"] = 0; }},
      {"ExplicitOneDevice", [](Snapshot& s, Policy&) { PodAt(s, 0, 0).gpu_fraction_devices = 1; }},
      {"PendingSharingPodWithoutKeys",
       [](Snapshot& s, Policy&) { PodAt(s, 0, 3).gpu_groups = {}; }},
      // A pending memory pod that no node can hold is a pending reason, not an error (§4.13.4).
      {"PendingMemoryPodLargerThanEveryDevice",
       [](Snapshot& s, Policy&) { PodAt(s, 1, 0).gpu_memory = 1e6; }},
      {"PendingMemoryPodWhenNoNodeKnowsItsMemory",
       [](Snapshot& s, Policy&) {
         for (Node& node : s.nodes) node.gpu_device_memory = 0;
         PodAt(s, 0, 1).phase = PodPhase::kPending;
         PodAt(s, 0, 1).node_name.clear();
         PodAt(s, 0, 1).gpu_groups.clear();
       }},
      // A fraction pod runs on a node of unknown memory (100 units per device).
      {"FractionPodOnUnknownMemoryNode",
       [](Snapshot& s, Policy&) {
         s.nodes[0].gpu_device_memory = 0;
         PodAt(s, 0, 1).gpu_memory.reset();
         PodAt(s, 0, 1).gpu_fraction = 0.5;
       }},
      {"KeysNeedNotBeSorted",
       [](Snapshot& s, Policy&) {
         PodAt(s, 0, 1).gpu_groups = {"g2", "g1"};
       }},
      {"GpuDevicePlacementSpread",
       [](Snapshot&, Policy& p) { p.gpu_device_placement = Placement::kSpread; }},
      {"GpuDevicePlacementBinpackUnderSpread",
       [](Snapshot&, Policy& p) {
         p.placement = Placement::kSpread;
         p.gpu_device_placement = Placement::kBinpack;
       }},
  };
}

class SharingValidationAcceptsTest : public ::testing::TestWithParam<ValidCase> {};

TEST_P(SharingValidationAcceptsTest, Ok) {
  const ValidCase& c = GetParam();
  Snapshot snapshot = SharingSnapshot();
  Policy policy = KaiPolicy();
  c.mutate(snapshot, policy);
  EXPECT_THAT(ValidateRequest(snapshot, policy, RequestKind::kSchedule), IsOk());
}

INSTANTIATE_TEST_SUITE_P(Semantics4136NotErrors, SharingValidationAcceptsTest,
                         ::testing::ValuesIn(SharingValidCases()),
                         [](const ::testing::TestParamInfo<ValidCase>& case_info) {
                           return case_info.param.name;
                         });

// §4.13.6: for each pod, rules 1 to 7 in this order; fixing each offence reveals the next.
TEST(SharingCheckOrder, RulesOneToSevenRunInTheListedOrder) {
  Snapshot snapshot = SharingSnapshot();
  snapshot.nodes[1].gpu_device_memory = 0;
  Pod& pod = PodAt(snapshot, 0, 2);  // RUNNING on n2 (unknown memory)
  pod.gpu_fraction = 1;
  pod.gpu_memory = 0.5;
  pod.gpu_fraction_devices = -2;
  pod.requests["nvidia.com/gpu"] = 1;
  pod.gpu_groups = {"", "g0", "g0"};
  const std::string at = "snapshot.pod_groups[0].pods[2].";
  const std::vector<std::pair<std::string, std::function<void()>>> steps = {
      {at + "gpu_fraction: must be a positive number smaller than 1, got 1",
       [&] { pod.gpu_fraction = 0.5; }},
      {at + "gpu_memory: must be a whole number in [1, 2^53], got 0.5",
       [&] { pod.gpu_memory = 1000; }},
      {at + "gpu_memory: set together with gpu_fraction; a pod asks for one",
       [&] { pod.gpu_fraction.reset(); }},
      {at + "gpu_fraction_devices: must not be negative, got -2",
       [&] { pod.gpu_fraction_devices = 3; }},
      {at + "requests[\"nvidia.com/gpu\"]: must be absent or 0 on a pod that shares a GPU "
            "(gpu_fraction or gpu_memory sets its share), got 1",
       [&] { pod.requests.erase("nvidia.com/gpu"); }},
      {at + "gpu_groups[0]: empty device key", [&] { pod.gpu_groups[0] = "g1"; }},
      {at + "gpu_groups[2]: duplicate device key \"g0\" (also gpu_groups[1])",
       [&] { pod.gpu_groups[2] = "g2"; }},
      {at + "gpu_memory: the pod runs on node \"n2\", whose gpu_device_memory is 0 (unknown)",
       [&] { snapshot.nodes[1].gpu_device_memory = 80000; }},
  };
  for (const auto& [message, fix] : steps) {
    EXPECT_THAT(ValidateKai(snapshot), StatusIs(absl::StatusCode::kInvalidArgument, message));
    fix();
  }
  EXPECT_THAT(ValidateKai(snapshot), IsOk());
}

// Rule 6's own order: a non-sharing pod first, then PENDING, then the count before the keys.
TEST(SharingCheckOrder, GpuGroupsChecksRunInTheListedOrder) {
  Snapshot snapshot = SharingSnapshot();
  Pod& pod = PodAt(snapshot, 0, 3);  // PENDING, gpu_fraction 0.3
  pod.gpu_fraction.reset();
  pod.gpu_groups = {"", ""};
  const std::string at = "snapshot.pod_groups[0].pods[3].gpu_groups";
  EXPECT_THAT(ValidateKai(snapshot), StatusIs(absl::StatusCode::kInvalidArgument,
                                              at + ": set on a pod that does not share a GPU"));
  pod.gpu_fraction = 0.3;
  EXPECT_THAT(ValidateKai(snapshot),
              StatusIs(absl::StatusCode::kInvalidArgument, at + ": set on a PENDING pod"));
  pod.node_name = "n1";
  pod.phase = PodPhase::kRunning;
  EXPECT_THAT(ValidateKai(snapshot),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       at + ": has 2 keys; a RUNNING or RELEASING pod that shares lists one per "
                            "device, 1"));
  pod.gpu_fraction_devices = 2;
  EXPECT_THAT(ValidateKai(snapshot),
              StatusIs(absl::StatusCode::kInvalidArgument, at + "[0]: empty device key"));
  pod.gpu_groups = {"g0", "g3"};
  EXPECT_THAT(ValidateKai(snapshot), IsOk());
}

// §1 check 4: a pod's sharing checks run after its existing checks ...
TEST(SharingCheckOrder, APodsSharingChecksComeAfterItsOtherChecks) {
  Snapshot snapshot = SharingSnapshot();
  Pod& pod = PodAt(snapshot, 0, 0);
  pod.gpu_fraction = kNaN;
  pod.requests["cpu"] = -1;
  EXPECT_THAT(ValidateKai(snapshot),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "snapshot.pod_groups[0].pods[0].requests[\"cpu\"]: must be finite and not "
                       "negative, got -1"));
  pod.requests["cpu"] = 1000;
  pod.tolerations.push_back(Toleration{"k", "Exists", "v", ""});
  EXPECT_THAT(ValidateKai(snapshot),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       ::testing::StartsWith("snapshot.pod_groups[0].pods[0].tolerations[0]"
                                             ".value: ")));
  pod.tolerations.clear();
  pod.node_name = "unknown-node";
  EXPECT_THAT(ValidateKai(snapshot),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       ::testing::StartsWith("snapshot.pod_groups[0].pods[0].node_name: ")));
  pod.node_name = "n1";
  EXPECT_THAT(ValidateKai(snapshot),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "snapshot.pod_groups[0].pods[0].gpu_fraction: must be a positive number "
                       "smaller than 1, got NaN"));
}

// ... and before the next pod's checks (the group's name checks precede every pod's).
TEST(SharingCheckOrder, APodsSharingChecksComeBeforeTheNextPods) {
  Snapshot snapshot = SharingSnapshot();
  PodAt(snapshot, 0, 0).gpu_groups = {"g0", "g0"};
  PodAt(snapshot, 0, 1).requests["cpu"] = kInf;
  PodAt(snapshot, 0, 2).name = PodAt(snapshot, 0, 0).name;
  EXPECT_THAT(ValidateKai(snapshot),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "snapshot.pod_groups[0].pods[0].gpu_groups: has 2 keys; a RUNNING or "
                       "RELEASING pod that shares lists one per device, 1"));
  snapshot.pod_groups[1].name = "job-1";
  EXPECT_THAT(ValidateKai(snapshot),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "snapshot.pod_groups[0].pods[0].gpu_groups: has 2 keys; a RUNNING or "
                       "RELEASING pod that shares lists one per device, 1"));
  snapshot.pod_groups[0].min_member = -1;
  EXPECT_THAT(ValidateKai(snapshot), StatusIs(absl::StatusCode::kInvalidArgument,
                                              "snapshot.pod_groups[0].min_member: must not be "
                                              "negative, got -1"));
}

// §1 check 3: gpu_device_memory after the node's taints, before the next node and before the
// allocatable sum (which comes last in the rule); the nodes before every pod.
TEST(SharingCheckOrder, DeviceMemoryComesAfterTheNodesTaintsAndBeforeTheNextNode) {
  Snapshot snapshot = SharingSnapshot();
  snapshot.nodes[0].gpu_device_memory = -1;
  snapshot.nodes[0].taints.push_back(Taint{"", "v", "NoSchedule"});
  snapshot.nodes[1].name = "n1";
  PodAt(snapshot, 0, 3).gpu_fraction = 2;
  EXPECT_THAT(ValidateKai(snapshot),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       ::testing::StartsWith("snapshot.nodes[0].taints[0].key: ")));
  snapshot.nodes[0].taints.clear();
  EXPECT_THAT(ValidateKai(snapshot),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "snapshot.nodes[0].gpu_device_memory: must be a whole number in [0, 2^53] "
                       "(0 = unknown), got -1"));
  snapshot.nodes[0].allocatable["cpu"] = 1e300;
  snapshot.nodes[1].allocatable["cpu"] = 1e300;
  snapshot.nodes[1].name = "n2";
  EXPECT_THAT(ValidateKai(snapshot),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "snapshot.nodes[0].gpu_device_memory: must be a whole number in [0, 2^53] "
                       "(0 = unknown), got -1"));
  snapshot.nodes[0].gpu_device_memory = 40000;
  EXPECT_THAT(ValidateKai(snapshot),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       ::testing::StartsWith("snapshot.nodes[1].allocatable")));
  snapshot.nodes[1].allocatable["cpu"] = 8000;
  EXPECT_THAT(ValidateKai(snapshot),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "snapshot.pod_groups[0].pods[3].gpu_fraction: must be a positive number "
                       "smaller than 1, got 2"));
}

// §1 check 1: gpu_device_placement after the other policy enums, before the snapshot's.
TEST(SharingCheckOrder, GpuDevicePlacementIsCheckedWithThePolicyEnums) {
  Snapshot snapshot = SharingSnapshot();
  Policy policy = KaiPolicy();
  policy.gpu_device_placement = Raw<Placement>(7);
  policy.kueue_preemption_strategies = {Raw<KueuePreemptionStrategy>(5)};
  snapshot.pod_groups[0].preemptibility = Raw<Preemptibility>(9);
  EXPECT_THAT(ValidateRequest(snapshot, policy, RequestKind::kSchedule),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "policy.kueue_preemption_strategies[0]: unknown enum value 5"));
  policy.kueue_preemption_strategies.clear();
  EXPECT_THAT(ValidateRequest(snapshot, policy, RequestKind::kSchedule),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "policy.gpu_device_placement: unknown enum value 7"));
  policy.gpu_device_placement = Placement::kSpread;
  EXPECT_THAT(ValidateRequest(snapshot, policy, RequestKind::kSchedule),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "snapshot.pod_groups[0].preemptibility: unknown enum value 9"));
}

// ---- §0.6: the Kueue model refuses the sharing fields ----

// The sharing snapshot without any sharing field on a pod: valid under KUEUE, with
// gpu_device_memory on its nodes and gpu_device_placement in its policy (KUEUE ignores both).
Snapshot KueueSharingSnapshot() {
  Snapshot s = SharingSnapshot();
  for (PodGroup& group : s.pod_groups) {
    for (Pod& pod : group.pods) {
      pod.gpu_fraction.reset();
      pod.gpu_memory.reset();
      pod.gpu_fraction_devices = 0;
      pod.gpu_groups.clear();
    }
  }
  return s;
}

Policy KueueSharingPolicy() {
  Policy policy = KueuePolicy();
  policy.gpu_device_placement = Placement::kSpread;
  return policy;
}

absl::Status ValidateKueue(const Snapshot& snapshot) {
  return ValidateRequest(snapshot, KueueSharingPolicy(), RequestKind::kSchedule);
}

constexpr char kKueueRefusal[] = "GPU sharing is read by the KAI model only";

TEST(KueueRefusesSharing, WithoutSharingFieldsTheRequestIsValid) {
  EXPECT_THAT(ValidateKueue(KueueSharingSnapshot()), IsOk());
}

TEST(KueueRefusesSharing, GpuFractionEvenZero) {
  for (double value : {0.5, 0.0, 7.0, kNaN}) {
    Snapshot snapshot = KueueSharingSnapshot();
    PodAt(snapshot, 1, 1).gpu_fraction = value;
    EXPECT_THAT(
        ValidateKueue(snapshot),
        StatusIs(absl::StatusCode::kInvalidArgument,
                 absl::StrCat("snapshot.pod_groups[1].pods[1].gpu_fraction: ", kKueueRefusal)))
        << value;
  }
}

TEST(KueueRefusesSharing, GpuMemoryEvenZero) {
  for (double value : {20000.0, 0.0, -1.0}) {
    Snapshot snapshot = KueueSharingSnapshot();
    PodAt(snapshot, 0, 0).gpu_memory = value;
    EXPECT_THAT(
        ValidateKueue(snapshot),
        StatusIs(absl::StatusCode::kInvalidArgument,
                 absl::StrCat("snapshot.pod_groups[0].pods[0].gpu_memory: ", kKueueRefusal)))
        << value;
  }
}

TEST(KueueRefusesSharing, GpuFractionDevicesNonZero) {
  for (int32_t value : {2, 1, -1}) {
    Snapshot snapshot = KueueSharingSnapshot();
    PodAt(snapshot, 0, 3).gpu_fraction_devices = value;
    EXPECT_THAT(ValidateKueue(snapshot),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         absl::StrCat("snapshot.pod_groups[0].pods[3].gpu_fraction_devices: ",
                                      kKueueRefusal)))
        << value;
  }
}

TEST(KueueRefusesSharing, GpuGroupsNonEmpty) {
  Snapshot snapshot = KueueSharingSnapshot();
  PodAt(snapshot, 0, 2).gpu_groups = {""};
  EXPECT_THAT(ValidateKueue(snapshot),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       absl::StrCat("snapshot.pod_groups[0].pods[2].gpu_groups: ", kKueueRefusal)));
}

// The first set field in the order gpu_fraction, gpu_memory, gpu_fraction_devices, gpu_groups.
TEST(KueueRefusesSharing, NamesTheFirstFieldSet) {
  Snapshot snapshot = KueueSharingSnapshot();
  Pod& pod = PodAt(snapshot, 0, 1);
  pod.gpu_groups = {"g0"};
  pod.gpu_fraction_devices = 2;
  pod.gpu_memory = 100;
  pod.gpu_fraction = 0.5;
  const std::string at = "snapshot.pod_groups[0].pods[1].";
  const std::vector<std::pair<std::string, std::function<void()>>> steps = {
      {"gpu_fraction", [&] { pod.gpu_fraction.reset(); }},
      {"gpu_memory", [&] { pod.gpu_memory.reset(); }},
      {"gpu_fraction_devices", [&] { pod.gpu_fraction_devices = 0; }},
      {"gpu_groups", [&] { pod.gpu_groups.clear(); }},
  };
  for (const auto& [field, fix] : steps) {
    EXPECT_THAT(ValidateKueue(snapshot), StatusIs(absl::StatusCode::kInvalidArgument,
                                                  absl::StrCat(at, field, ": ", kKueueRefusal)));
    fix();
  }
  EXPECT_THAT(ValidateKueue(snapshot), IsOk());
}

// The refusal replaces the §4.13.6 rules (it comes before them) and, like them, runs after the
// pod's other checks; a sharing pod that KAI accepts is refused too.
TEST(KueueRefusesSharing, BeforeTheSharingRulesAfterThePodsOtherChecks) {
  Snapshot snapshot = KueueSharingSnapshot();
  Pod& pod = PodAt(snapshot, 0, 3);
  pod.gpu_fraction = 2;
  pod.requests["nvidia.com/gpu"] = 1;
  pod.requests["cpu"] = kNaN;
  EXPECT_THAT(ValidateKueue(snapshot),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "snapshot.pod_groups[0].pods[3].requests[\"cpu\"]: must be finite and not "
                       "negative, got NaN"));
  pod.requests["cpu"] = 1000;
  EXPECT_THAT(
      ValidateKueue(snapshot),
      StatusIs(absl::StatusCode::kInvalidArgument,
               absl::StrCat("snapshot.pod_groups[0].pods[3].gpu_fraction: ", kKueueRefusal)));
  const Snapshot accepted_by_kai = SharingSnapshot();
  ASSERT_THAT(ValidateKai(accepted_by_kai), IsOk());
  EXPECT_THAT(
      ValidateKueue(accepted_by_kai),
      StatusIs(absl::StatusCode::kInvalidArgument,
               absl::StrCat("snapshot.pod_groups[0].pods[0].gpu_fraction: ", kKueueRefusal)));
}

// KUEUE ignores Node.gpu_device_memory and Policy.gpu_device_placement, but both models check
// every field's range (§1 checks 1 and 3).
TEST(KueueRefusesSharing, NodeAndPolicyFieldsAreStillRangeChecked) {
  Snapshot snapshot = KueueSharingSnapshot();
  snapshot.nodes[1].gpu_device_memory = kNaN;
  EXPECT_THAT(ValidateKueue(snapshot),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "snapshot.nodes[1].gpu_device_memory: must be a whole number in [0, 2^53] "
                       "(0 = unknown), got NaN"));
  snapshot.nodes[1].gpu_device_memory = 0;
  Policy policy = KueueSharingPolicy();
  policy.gpu_device_placement = Raw<Placement>(3);
  EXPECT_THAT(ValidateRequest(snapshot, policy, RequestKind::kSchedule),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "policy.gpu_device_placement: unknown enum value 3"));
}

}  // namespace
}  // namespace arbiter
