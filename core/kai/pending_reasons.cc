#include "core/kai/pending_reasons.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/echoed_name.h"
#include "core/kai/gpu_devices.h"
#include "core/quantity_format.h"

namespace arbiter::kai {
namespace {

PendingReason NoNodeMatches(const Cluster& cluster, const Feasibility& feasibility, int pod) {
  const std::string name = CappedName(cluster.pod_name(pod));
  if (cluster.num_nodes() == 0) {
    return {kNoNodeMatchesSelector,
            absl::StrCat("pod ", name, " matches no node: there are no nodes")};
  }
  Feasibility::Rejections rejections = feasibility.Explain(feasibility.pod_signature(pod));
  std::vector<std::string> parts;
  if (rejections.unschedulable > 0) {
    parts.push_back(absl::StrCat(Counted(rejections.unschedulable, "node"), " unschedulable"));
  }
  if (rejections.selector > 0) {
    std::vector<std::string> selector;
    for (const auto& [key, value] : cluster.pod(pod).pod->node_selector) {
      selector.push_back(absl::StrCat(CappedName(key), "=", CappedName(value)));
    }
    parts.push_back(absl::StrCat(Counted(rejections.selector, "node"), " without node_selector ",
                                 absl::StrJoin(selector, ",")));
  }
  if (rejections.taint > 0) {
    parts.push_back(
        absl::StrCat(Counted(rejections.taint, "node"), " with a taint it does not tolerate"));
  }
  return {kNoNodeMatchesSelector,
          absl::StrCat("pod ", name, " matches no node: ", absl::StrJoin(parts, ", "))};
}

PendingReason Insufficient(const Cluster& cluster, Feasibility& feasibility, const NodeIndex& index,
                           int pod) {
  const double* requests = cluster.requests(pod);
  const std::string name = CappedName(cluster.pod_name(pod));
  const auto& classes = feasibility.FeasibleClasses(feasibility.pod_signature(pod));
  std::vector<std::string> needs;
  for (int r = 0; r < cluster.num_resources(); ++r) {
    if (!(requests[r] > 0)) continue;
    const std::string resource = CappedName(cluster.resources().name(r));
    needs.push_back(absl::StrCat(FormatQuantity(requests[r]), " ", resource));
    int best_node = -1;
    double best_free = 0;
    const int k = cluster.NodeSpaceOf(r);
    for (const Feasibility::FeasibleClass& feasible : classes) {
      // Outside R_n every node has exactly 0 free: the largest is the class's first node.
      const std::vector<int>& members = feasibility.class_nodes(feasible.node_class);
      const NodeIndex::MaxFree largest =
          k >= 0 ? index.LargestFree(feasible.node_class, k)
                 : (members.empty() ? NodeIndex::MaxFree{} : NodeIndex::MaxFree{0.0, members[0]});
      if (largest.node < 0) continue;
      if (best_node < 0 || largest.free > best_free ||
          (largest.free == best_free && largest.node < best_node)) {
        best_node = largest.node;
        best_free = largest.free;
      }
    }
    if (best_node >= 0 && best_free < requests[r]) {
      return {kInsufficientResources,
              absl::StrCat("pod ", name, " needs ", FormatQuantity(requests[r]), " ", resource,
                           " on one node; the largest free is ", FormatQuantity(best_free),
                           " (node ", CappedName(cluster.node_name(best_node)), ")")};
    }
  }
  return {kInsufficientResources,
          absl::StrCat("pod ", name, " needs ", absl::StrJoin(needs, ", "),
                       " on one node; no feasible node has all of them free")};
}

// §4.13.4: a memory pod with no node whose device memory is known.
bool NoDeviceMemoryKnown(const Cluster& cluster, int pod) {
  if (cluster.pod(pod).gpu_memory == 0) return false;
  for (int n = 0; n < cluster.num_nodes(); ++n) {
    if (cluster.node(n).node->gpu_device_memory > 0) return false;
  }
  return true;
}

// §4.13.4: a pod that shares fits no feasible node; the message names the largest free device
// share (of an active device, or 1 where a whole GPU is free), the first such node in name order.
PendingReason SharingInsufficient(const Cluster& cluster, Placer& placer, int pod) {
  const ClusterPod& info = cluster.pod(pod);
  const std::string name = CappedName(cluster.pod_name(pod));
  const Placer::FreeShare best = placer.LargestFreeShare(pod);
  const std::string asks = info.gpu_memory > 0
                               ? absl::StrCat(info.gpu_memory, " of GPU memory")
                               : absl::StrCat(FormatQuantity(info.gpu_fraction), " of a GPU");
  const std::string devices =
      info.gpu_devices > 1 ? absl::StrCat(" on each of ", info.gpu_devices, " devices") : "";
  std::string largest = best.node < 0 ? std::string("no feasible node")
                                      : absl::StrCat("the largest free GPU device share is ",
                                                     FormatQuantity(best.share), " on ",
                                                     CappedName(cluster.node_name(best.node)));
  return {kInsufficientResources,
          absl::StrCat("pod ", name, " needs ", asks, devices, " on one node; ", largest)};
}

bool SameShape(const Cluster& cluster, const Feasibility& feasibility, int a, int b) {
  if (feasibility.pod_signature(a) != feasibility.pod_signature(b)) return false;
  const ClusterPod& pa = cluster.pod(a);
  const ClusterPod& pb = cluster.pod(b);
  if (pa.gpu_devices != pb.gpu_devices || pa.gpu_fraction != pb.gpu_fraction ||
      pa.gpu_memory != pb.gpu_memory) {
    return false;
  }
  return std::equal(cluster.requests(a), cluster.requests(a) + cluster.num_resources(),
                    cluster.requests(b));
}

}  // namespace

PendingReason GangIncompleteReason(const Cluster& cluster, int group) {
  const ClusterGroup& info = cluster.group(group);
  return {kGangIncomplete,
          absl::StrCat("needs ", Counted(info.gang, "pod"), " to start (min_member ",
                       info.group->min_member, ") but has ", info.non_releasing, " that ",
                       IsOrAre(info.non_releasing), " not releasing")};
}

PendingReason NotAttemptedReason() {
  return {kNotAttempted, "no scheduling action in the policy tried to place it"};
}

PendingReason QuotaReason(const Cluster& cluster, const QuotaBreach& breach) {
  const std::string queue = CappedName(cluster.tree().queue(breach.queue).name);
  const std::string resource = CappedName(cluster.resources().name(breach.resource));
  if (breach.kind == QuotaBreach::kLimit) {
    return {kQueueOverLimit, absl::StrCat("queue ", queue, " would exceed its limit on ", resource,
                                          ": ", FormatQuantity(breach.allocated), " allocated + ",
                                          FormatQuantity(breach.requested), " requested > limit ",
                                          FormatQuantity(breach.bound))};
  }
  return {kNonPreemptibleOverQuota,
          absl::StrCat("queue ", queue, " would exceed its deserved ", resource,
                       " with non-preemptible work: ", FormatQuantity(breach.allocated),
                       " allocated + ", FormatQuantity(breach.requested), " requested > deserved ",
                       FormatQuantity(breach.bound))};
}

PendingReason ExplainPlacementFailure(const Cluster& cluster, Feasibility& feasibility,
                                      const NodeIndex& index, Placer& placer, const Unit& unit,
                                      int placed) {
  for (int pod : unit.pods) {
    if (feasibility.FeasibleNodeCount(feasibility.pod_signature(pod)) == 0) {
      return NoNodeMatches(cluster, feasibility, pod);
    }
    if (NoDeviceMemoryKnown(cluster, pod)) {
      return {kNoNodeMatchesSelector,
              absl::StrCat("pod ", CappedName(cluster.pod_name(pod)),
                           " asks for GPU memory, and no node has a gpu_device_memory")};
    }
  }
  const auto insufficient = [&](int pod) {
    return cluster.pod(pod).shares() ? SharingInsufficient(cluster, placer, pod)
                                     : Insufficient(cluster, feasibility, index, pod);
  };
  // The first pod failed on this very state, so it fits nowhere alone.
  if (placed == 0) return insufficient(unit.pods[0]);
  int previous = -1;
  for (int pod : unit.pods) {
    if (previous >= 0 && SameShape(cluster, feasibility, pod, previous)) continue;
    previous = pod;
    if (placer.Choose(pod).node < 0) return insufficient(pod);
  }
  const int size = static_cast<int>(unit.pods.size());
  return {kGangDoesNotFit,
          absl::StrCat("each of the ", size, " pods of the gang fits on some node alone, but only ",
                       placed, " fit together")};
}

void PendingReasons::Record(int group, PendingReason reason) {
  reasons_[group] = std::move(reason);
}

void PendingReasons::AppendOutcome(int group, std::string_view action, std::string_view outcome) {
  PendingReason& reason = reasons_[group];
  if (reason.code.empty()) return;
  absl::StrAppend(&reason.message, "; ", std::string(action), ": ", std::string(outcome));
}

void PendingReasons::RecordOutcome(int group, std::string_view action, std::string_view outcome,
                                   PendingReason fallback) {
  PendingReason& reason = reasons_[group];
  if (reason.code.empty()) {
    reason = std::move(fallback);
    return;
  }
  absl::StrAppend(&reason.message, "; ", std::string(action), ": ", std::string(outcome));
}

}  // namespace arbiter::kai
