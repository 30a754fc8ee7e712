#include "edge/request_limits.h"

#include <limits>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
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

absl::Status CheckQueueDepth(const Snapshot& snapshot, const RequestLimits& limits) {
  const std::vector<Queue>& queues = snapshot.queues;
  if (static_cast<int64_t>(queues.size()) <= limits.max_queue_depth) return absl::OkStatus();
  absl::flat_hash_map<std::string_view, int> index;
  index.reserve(queues.size());
  for (int i = 0; i < static_cast<int>(queues.size()); ++i) index.emplace(queues[i].name, i);
  // depth[i]: 0 = not known yet, -1 = on the walk in progress; a parent that is missing or on
  // a cycle ends the walk as if the queue were at the top (validation reports it).
  std::vector<int64_t> depth(queues.size(), 0);
  std::vector<int> walk;
  for (int start = 0; start < static_cast<int>(queues.size()); ++start) {
    int at = start;
    int64_t base = 0;
    while (depth[at] == 0) {
      depth[at] = -1;
      walk.push_back(at);
      const auto parent = queues[at].parent.empty() ? index.end() : index.find(queues[at].parent);
      if (parent == index.end()) break;
      at = parent->second;
    }
    if (depth[at] > 0) base = depth[at];
    while (!walk.empty()) {
      depth[walk.back()] = ++base;
      if (base > limits.max_queue_depth) {
        return absl::InvalidArgumentError(
            absl::StrCat("snapshot.queues[", walk.back(), "]: the queue tree is ", base,
                         " levels deep here; this server accepts at most ", limits.max_queue_depth,
                         " (--max-queue-depth)"));
      }
      walk.pop_back();
    }
  }
  return absl::OkStatus();
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
