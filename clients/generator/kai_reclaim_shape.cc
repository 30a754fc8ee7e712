// The reclaim yardstick (docs/generator.md, "KAI's reclaim shape"): the shape of KAI
// Scheduler's "reclaims many single GPU jobs" scale test, as an arbiter request.
#include <cstdio>
#include <string>

#include "clients/generator/model_generators.h"

namespace arbiter::generator::internal {
namespace {

constexpr int kGpusPerNode = 8;

std::string Numbered(const char* prefix, int width, int n) {
  char digits[16];
  std::snprintf(digits, sizeof(digits), "%0*d", width, n);
  return std::string(prefix) + digits;
}

// "Govern GPUs only" (SEMANTICS §0.2): cpu and memory deserved and limit -1.
Queue GpuQueue(const std::string& name, double deserved_gpus) {
  Queue queue;
  queue.name = name;
  queue.deserved = {{"cpu", -1}, {"memory", -1}, {"nvidia.com/gpu", deserved_gpus}};
  queue.limit = {{"cpu", -1}, {"memory", -1}, {"nvidia.com/gpu", -1}};
  return queue;
}

PodGroup OneGpuJob(const std::string& name, const std::string& queue, int64_t created) {
  PodGroup group;
  group.name = name;
  group.queue = queue;
  group.min_member = 1;
  group.creation_time = Timestamp{created, 0};
  Pod pod;
  pod.name = name + "-0";
  pod.requests = {{"cpu", 1000}, {"memory", 4.0 * (1 << 30)}, {"nvidia.com/gpu", 1}};
  group.pods.push_back(std::move(pod));
  return group;
}

}  // namespace

GeneratedRequest GenerateKaiReclaimShape(const GeneratorOptions& options) {
  const int nodes = options.nodes;
  const int width = nodes >= 10000 ? 5 : 4;
  GeneratedRequest out;
  Snapshot& s = out.snapshot;
  s.now = Timestamp{kNowSeconds, 0};
  // "running" holds the cluster with no deserved GPUs; "reclaimer" deserves all of them, so
  // every pending job may reclaim and every running job is above its queue's fair share.
  s.queues.push_back(GpuQueue("reclaimer", static_cast<double>(kGpusPerNode) * nodes));
  s.queues.push_back(GpuQueue("running", 0));
  for (int n = 0; n < nodes; ++n) {
    Node node;
    node.name = Numbered("node-", width, n);
    node.allocatable = {
        {"cpu", 128000}, {"memory", 1024.0 * (1 << 30)}, {"nvidia.com/gpu", kGpusPerNode}};
    s.nodes.push_back(std::move(node));
  }
  for (int n = 0; n < nodes; ++n) {
    for (int j = 0; j < kGpusPerNode; ++j) {
      const int index = n * kGpusPerNode + j;
      PodGroup running =
          OneGpuJob(Numbered("running-", width + 1, index), "running", kNowSeconds - 3600);
      running.pods[0].node_name = s.nodes[n].name;
      running.pods[0].phase = PodPhase::kRunning;
      running.pods[0].start_time = Timestamp{kNowSeconds - 3600, 0};
      s.pod_groups.push_back(std::move(running));
    }
  }
  for (int index = 0; index < nodes * kGpusPerNode; ++index) {
    s.pod_groups.push_back(
        OneGpuJob(Numbered("pending-", width + 1, index), "reclaimer", kNowSeconds - 60));
  }
  out.policy.fairness_model = FairnessModel::kKai;
  return out;
}

}  // namespace arbiter::generator::internal
