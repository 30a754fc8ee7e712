// The answer of `arbiter what-if`: what one scheduling cycle decides for the pod group that was
// added to a snapshot, read from the cycle's ScheduleResponse, and its two printed forms.
//
// The JSON form is a stable interface (docs/what-if.md): one object whose keys always appear, in
// this order:
//
//   {
//     "pod_group": "NAME",
//     "outcome": "placed" | "admitted" | "pending" | "evicted" | "unchanged",
//     "after_evictions": BOOL,
//     "bindings": [{"pod": "NAME", "node": "NAME", "after_evictions": BOOL,
//                   "gpu_groups": ["KEY", ...]}, ...],   // gpu_groups: sharing pods only
//     "evictions": [{"pod_group": "NAME", "pod": "NAME", "node": "NAME",
//                    "reason": "FAIR_SHARE_RECLAIM", "message": "TEXT"}, ...],
//     "pending": null | {"reason": "CODE", "message": "TEXT"}
//   }
//
// A binding's "gpu_groups" (GPU sharing, SEMANTICS §4.13) appears only for a pod that shares
// GPUs: the keys of its devices on its node, ascending; "new-<j>" names a device the cycle opens.
// "pod_sets" appears, before "pending", only for a Kueue admission with resource flavors.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "arbiter/v1/arbiter.pb.h"

namespace arbiter::cli {

// The outcomes, the values of WhatIfAnswer::outcome.
inline constexpr char kOutcomePlaced[] = "placed";        // KAI: pods of the group are bound
inline constexpr char kOutcomeAdmitted[] = "admitted";    // Kueue: quota reserved for it
inline constexpr char kOutcomePending[] = "pending";      // it waits: reason and message
inline constexpr char kOutcomeEvicted[] = "evicted";      // its own running pods are evicted
inline constexpr char kOutcomeUnchanged[] = "unchanged";  // no decision names it

struct WhatIfAnswer {
  std::string pod_group;
  std::string queue;  // the group's queue, for the table
  std::string outcome;
  // placed: some binding waits for evictions; admitted: the admission does.
  bool after_evictions = false;
  std::vector<v1::Binding> bindings;    // the group's, in the response's order
  std::vector<v1::Eviction> evictions;  // those whose preemptor_pod_group is the group
  std::optional<v1::PendingPodGroup> pending;
  // admitted in a request with Kueue resource flavors: each pod set's flavors.
  std::vector<v1::PodSetFlavors> pod_sets;
};

// What `response` (the answer to a request holding `group`) decides for `group`. The outcome is
// the first that holds of: pending (a PendingPodGroup names it), admitted (an Admission does),
// placed (some Binding does), evicted (some Eviction evicts one of its pods), unchanged.
WhatIfAnswer ReadWhatIfAnswer(const v1::PodGroup& group, const v1::ScheduleResponse& response);

// A summary for people: the outcome, then the group's bindings and the evictions made for it.
std::string RenderWhatIfTable(const WhatIfAnswer& answer);

// The JSON object above, indented, ending in a newline.
std::string RenderWhatIfJson(const WhatIfAnswer& answer);

}  // namespace arbiter::cli
