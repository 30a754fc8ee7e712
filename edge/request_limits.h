// The server's limits on one request: what a single call may make the server hold and compute.
//
// The counts, the name lengths and the decoded size are enforced by the request decoder
// (edge/request_decoder.h) while it reads the bytes, before the memory they would take is
// allocated; the queue tree's depth by validation (core/validation.h, RequestBounds), which
// walks the parent links anyway.
// Together they bound a call's memory (server/README.md, "What one call may cost").
#pragma once

#include <cstdint>

#include "absl/status/status.h"
#include "core/model.h"

namespace arbiter::edge {

// The sizes of a request's snapshot.
struct SnapshotSize {
  int64_t nodes = 0;
  int64_t pods = 0;  // over every pod group
  int64_t queues = 0;
  int64_t pod_groups = 0;
};

struct RequestLimits {
  int64_t max_nodes = 100'000;       // --max-nodes
  int64_t max_pods = 1'000'000;      // --max-pods, over all pod groups
  int64_t max_queues = 50'000;       // --max-queues (KAI queues and Kueue ClusterQueues + cohorts)
  int64_t max_pod_groups = 500'000;  // --max-pod-groups
  // --max-resource-names: distinct resource names over the whole request (every quantity map).
  int64_t max_resource_names = 64;
  // --max-name-bytes: the longest string: names, label and taint keys and values. Kubernetes
  // allows 253 bytes for a name and 317 for a qualified label key.
  int64_t max_name_bytes = 1024;
  int64_t max_queue_depth = 64;  // --max-queue-depth: levels of the queue (or cohort) tree
  // --max-gpu-devices-per-pod: the largest Pod.gpu_fraction_devices (a GPU-sharing pod's devices,
  // each named in its binding).
  int64_t max_gpu_devices_per_pod = 64;
  // --max-decoded-bytes: the decoded model's accounted memory (the structures, map entries and
  // strings the decoder allocates).
  int64_t max_decoded_bytes = int64_t{256} << 20;

  // No limit at all: for tools that read a caller's own files.
  static RequestLimits Unlimited();
};

// Counts the decoded snapshot's nodes, pods, queues and pod groups (the call log's sizes).
// O(pod groups).
SnapshotSize SizeOf(const Snapshot& snapshot);

// Bad option values (a negative or zero limit), naming the flag; OK otherwise.
absl::Status CheckLimitOptions(const RequestLimits& limits);

}  // namespace arbiter::edge
