// The server's limits on a request's size, checked on the parsed message before any conversion.
#pragma once

#include <cstdint>

#include "absl/status/status.h"
#include "arbiter/v1/arbiter.pb.h"
#include "core/model.h"
#include "server/call_record.h"

namespace arbiter::server {

struct RequestLimits {
  int64_t max_nodes = 100'000;   // --max-nodes
  int64_t max_pods = 1'000'000;  // --max-pods, over all pod groups
};

// Counts the snapshot's nodes, pods, queues and pod groups. O(pod groups).
SnapshotSize SizeOf(const v1::Snapshot& snapshot);
SnapshotSize SizeOf(const Snapshot& snapshot);

// ResourceExhausted when `size` is over a limit, naming the field, the count, the limit and the
// flag, e.g. "snapshot.nodes: 25000 nodes; this server accepts at most 20000 (--max-nodes)".
absl::Status CheckLimits(const SnapshotSize& size, const RequestLimits& limits);

}  // namespace arbiter::server
