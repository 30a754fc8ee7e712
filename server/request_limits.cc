#include "server/request_limits.h"

#include "absl/strings/str_cat.h"

namespace arbiter::server {

SnapshotSize SizeOf(const v1::Snapshot& snapshot) {
  SnapshotSize size;
  size.nodes = snapshot.nodes_size();
  size.queues = snapshot.queues_size();
  size.pod_groups = snapshot.pod_groups_size();
  for (const v1::PodGroup& group : snapshot.pod_groups()) size.pods += group.pods_size();
  return size;
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

absl::Status CheckLimits(const SnapshotSize& size, const RequestLimits& limits) {
  if (size.nodes > limits.max_nodes) {
    return absl::ResourceExhaustedError(absl::StrCat("snapshot.nodes: ", size.nodes,
                                                     " nodes; this server accepts at most ",
                                                     limits.max_nodes, " (--max-nodes)"));
  }
  if (size.pods > limits.max_pods) {
    return absl::ResourceExhaustedError(absl::StrCat("snapshot.pod_groups: ", size.pods,
                                                     " pods in all; this server accepts at most ",
                                                     limits.max_pods, " (--max-pods)"));
  }
  return absl::OkStatus();
}

}  // namespace arbiter::server
