// The CLI's `--format table` view of answers: a tree of queues (indented by depth, in name order
// at each level) with their shares per resource, then the decisions of a cycle.
//
// KAI shows deserved, fair share, allocated and requested per resource and the saturation; Kueue
// (policy.fairness_model KUEUE) shows nominal quota, borrowing and lending limits, usage and
// requested per resource and the weighted share, dominant resource and borrowing flag. The tree
// comes from the request (QueueShare carries no parent).
#pragma once

#include <string>

#include "arbiter/v1/arbiter.pb.h"

namespace arbiter::cli {

// The queue tree of `response` for the request's `snapshot` and `policy`.
std::string RenderFairShares(const v1::Snapshot& snapshot, const v1::Policy& policy,
                             const v1::FairShareResponse& response);

// The queue tree, then bindings, evictions, admissions and pending pod groups.
std::string RenderSchedule(const v1::Snapshot& snapshot, const v1::Policy& policy,
                           const v1::ScheduleResponse& response);

// The enumerator name of `reason` (e.g. "FAIR_SHARE_RECLAIM"), or its number when this build does
// not know it.
std::string EvictionReasonName(v1::EvictionReason reason);

// A quantity of `resource` for people: "memory" in binary units (e.g. "1.5Gi"), other resources
// as integers when whole and with up to three decimals otherwise; -1 as "unlimited" when
// `minus_one_unlimited`, infinities as "inf".
std::string FormatQuantity(const std::string& resource, double value, bool minus_one_unlimited);

// An admission's flavors (Admission.pod_sets, Kueue resource flavors): "cpu=spot, memory=spot" for
// the unnamed pod set, "main: cpu=spot; workers: cpu=on-demand" for named ones; a queue without
// resource groups has the implicit flavor, written "-".
std::string PodSetFlavorsText(
    const google::protobuf::RepeatedPtrField<v1::PodSetFlavors>& pod_sets);

}  // namespace arbiter::cli
