// Every check on request data, in one pass (SEMANTICS.md §1).
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "core/cancel_poll.h"
#include "core/model.h"
#include "core/resource_interner.h"

namespace arbiter {

enum class RequestKind { kFairShares, kSchedule };

// The most that the quantities of one kind may sum to, per resource (issue 11): the requests of
// all pods, the allocatable amounts of all nodes, and under KUEUE the nominal quotas of all
// queues (deserved; in a request with resource flavors, deserved and every flavor's nominal
// quotas summed per resource name, as SEMANTICS.md §5.8.4 sums a resource's flavors). Every
// other sum the core forms (per group, node, queue or cohort, requested = allocated + pending,
// free once victims are gone) is at most a few of these totals, and the largest product (×1000
// in dominant shares) stays finite too, so no amount in an answer is +Inf or NaN. A request past
// it is refused with the path of the value that crossed it, the maps walked in input order.
inline constexpr double kMaxQuantitySum = 1e300;

// A bound the caller puts on requests beyond SEMANTICS.md §1 (the server's --max-queue-depth).
struct RequestBounds {
  // The most levels a queue may lie below the top (a top-level queue is at level 1). Checked
  // last in rule 2, once every parent is known to exist and to form no cycle.
  int64_t max_queue_depth = std::numeric_limits<int64_t>::max();
  // The caller's name for the bound (a flag), echoed in brackets in the message; may be empty.
  std::string max_queue_depth_name;
  // The most devices one GPU-sharing pod may ask for (Pod.gpu_fraction_devices), each named in
  // its binding; checked with the pod's sharing checks (§4.13.6, after rule 4).
  int64_t max_gpu_devices_per_pod = std::numeric_limits<int64_t>::max();
  std::string max_gpu_devices_per_pod_name;
};

// What validation learned about the names of a valid request, by input index, handed to the
// interned model (core/validated_snapshot.h) so that each name is hashed once per call.
struct RequestIndex {
  std::vector<int> queue_parent;  // per queue: its parent's input index, -1 at the top
  std::vector<int> group_queue;   // per pod group: its queue's input index
  std::vector<int> pod_node;      // per pod, numbered flat through the groups: node index or -1
  std::vector<int> usage_queue;   // per Snapshot.usage entry: its queue's input index
  // Every resource name validation met (the nodes' allocatable, the pods' requests and, under
  // KUEUE, the queues' deserved); its names point into the snapshot.
  ResourceInterner resources;
  // The id in `resources` of each entry of every node's allocatable (nodes in input order), and
  // of every pod's requests (pods numbered flat), entries in key order.
  std::vector<int32_t> allocatable_ids;
  std::vector<int32_t> request_ids;
  // The pods that share a GPU (§4.13): each has one entry more in the model's runs.
  size_t sharing_pods = 0;
};

// OK, or InvalidArgument whose message starts with the field path of the first offence in the
// order of SEMANTICS.md §1 (input order within a list), each rule's sum check (kMaxQuantitySum)
// last in its rule, e.g.
// `snapshot.queues[3].parent: unknown queue "team-x"`. Paths use the proto field names
// ("snapshot.pod_groups[2].pods[0].requests[\"cpu\"]", "policy.actions[1]"). Names and keys
// from the request are echoed escaped and capped (core/echoed_name.h), so a message stays short.
// Deterministic: the same input gives the same message. Thread-safe; O(size of the snapshot).
// Cancelled (poll->status()) when `poll` (may be null) reports the call cancelled first.
// A queue deeper than `bounds.max_queue_depth` is InvalidArgument naming the first such queue
// in input order, at the end of rule 2. When OK and `index` is not null, `*index` is filled.
absl::Status ValidateRequest(const Snapshot& snapshot, const Policy& policy, RequestKind kind,
                             CancelPoll* poll = nullptr, const RequestBounds& bounds = {},
                             RequestIndex* index = nullptr);

}  // namespace arbiter
