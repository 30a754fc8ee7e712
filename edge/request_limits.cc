#include "edge/request_limits.h"

#include <limits>

#include "absl/strings/str_cat.h"

namespace arbiter::edge {

RequestLimits RequestLimits::Unlimited() {
  constexpr int64_t kNone = std::numeric_limits<int64_t>::max();
  RequestLimits limits;
  limits.max_nodes = kNone;
  limits.max_pods = kNone;
  limits.max_queues = kNone;
  limits.max_pod_groups = kNone;
  limits.max_resource_names = kNone;
  limits.max_name_bytes = kNone;
  limits.max_queue_depth = kNone;
  limits.max_gpu_devices_per_pod = kNone;
  limits.max_decoded_bytes = kNone;
  return limits;
}

SnapshotSize SizeOf(const Snapshot& snapshot) {
  SnapshotSize size;
  size.nodes = static_cast<int64_t>(snapshot.nodes.size());
  size.queues = static_cast<int64_t>(snapshot.queues.size());
  size.pod_groups = static_cast<int64_t>(snapshot.pod_groups.size());
  for (const PodGroup& group : snapshot.pod_groups) {
    size.pods += static_cast<int64_t>(group.pods.size());
  }
  return size;
}

absl::Status CheckLimitOptions(const RequestLimits& limits) {
  const std::pair<const char*, int64_t> named[] = {
      {"--max-nodes", limits.max_nodes},
      {"--max-pods", limits.max_pods},
      {"--max-queues", limits.max_queues},
      {"--max-pod-groups", limits.max_pod_groups},
      {"--max-resource-names", limits.max_resource_names},
      {"--max-name-bytes", limits.max_name_bytes},
      {"--max-queue-depth", limits.max_queue_depth},
      {"--max-gpu-devices-per-pod", limits.max_gpu_devices_per_pod},
      {"--max-decoded-bytes", limits.max_decoded_bytes},
  };
  for (const auto& [flag, value] : named) {
    if (value < 0)
      return absl::InvalidArgumentError(absl::StrCat(flag, ": ", value, " is negative"));
  }
  if (limits.max_queue_depth < 1) {
    return absl::InvalidArgumentError("--max-queue-depth: must be at least 1");
  }
  return absl::OkStatus();
}

}  // namespace arbiter::edge
