// KAI fair shares for large queue trees (SEMANTICS.md §2, §3), measured in the core from the
// model: protobuf conversion is excluded. Target: 10,000 queues in <= 5 ms.
//
// The snapshot is built here, deterministically, so the figures depend on nothing else:
//   - a queue tree four levels deep (top level, two middle levels with 10 children each, then
//     the leaves spread round-robin over the third level), `queues` queues in all;
//   - 4 resources (cpu, memory, nvidia.com/gpu, example.com/fpga);
//   - queue attributes varied by index: deserved on some resources, a limit on a few, weights
//     1 to 4, priorities 0 to 2, distinct creation times;
//   - per leaf one pod group with one RUNNING and one PENDING pod (plus a second PENDING pod on
//     every third leaf); one node per 10 queues;
//   - usage for every queue and usage_capacity, so the time-aware variant runs its full path.
//
// Benchmarks:
//   BM_KaiFairShare            ComputeKaiFairShare only;
//   BM_KaiFairShareTimeAware   the same with k_value = 1;
//   BM_ValidateAndFairShare    ValidateRequest + ComputeKaiFairShare;
//   BM_ValidateFairShareRespond  the above + ToQueueShares (the queue list as QueueShares);
//   BM_ComputeFairShares       the entry point, end to end in the core: validate, divide, and
//                              the answer's queue list in the form the core gives it;
//   BM_ComputeFairSharesBytes  the above + the answer's bytes as the server writes them
//                              (edge/answer_writer.h: straight from a KAI queue list's rows;
//                              before it, edge::ToProto and protobuf's deterministic
//                              serialisation).
#include <cstdint>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "core/api/arbiter.h"
#include "core/kai/fair_share_answer.h"
#include "core/kai/kai_fair_share.h"
#include "core/model.h"
#include "core/validated_snapshot.h"
#include "edge/answer_writer.h"

namespace arbiter {
namespace {

constexpr const char* kResources[] = {"cpu", "example.com/fpga", "memory", "nvidia.com/gpu"};
constexpr double kNodeAllocatable[] = {64000, 2, 512e9, 8};

std::string Name(const char* prefix, int index) { return prefix + std::to_string(index); }

// A small deterministic mix of an index, so attributes vary without a random generator.
uint32_t Mix(uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352dU;
  x ^= x >> 15;
  x *= 0x846ca68bU;
  x ^= x >> 16;
  return x;
}

Queue MakeQueue(int index, const std::string& parent, bool leaf) {
  Queue queue;
  queue.name = Name(leaf ? "leaf-" : "q-", index);
  queue.parent = parent;
  const uint32_t h = Mix(static_cast<uint32_t>(index));
  queue.priority = static_cast<int32_t>(h % 3);
  queue.creation_time = Timestamp{1700000000 + index, 0};
  for (int r = 0; r < 4; ++r) {
    const uint32_t hr = Mix(h + static_cast<uint32_t>(r));
    if (hr % 4 == 0) queue.deserved[kResources[r]] = kNodeAllocatable[r] * (hr % 5) / 4;
    if (hr % 7 == 0) queue.deserved[kResources[r]] = -1;
    if (hr % 11 == 0) queue.limit[kResources[r]] = kNodeAllocatable[r] * (1 + hr % 3);
    queue.over_quota_weight[kResources[r]] = 1 + hr % 4;
  }
  return queue;
}

Snapshot BuildSnapshot(int queue_count) {
  Snapshot snapshot;
  snapshot.now = Timestamp{1700100000, 0};
  // Level sizes: top, 10x, 10x, then the rest as leaves under the third level.
  const int top = (queue_count + 1110) / 1111;
  const int level1 = top * 10;
  const int level2 = level1 * 10;
  const int leaves = queue_count - top - level1 - level2;
  int index = 0;
  std::vector<std::string> previous;
  std::vector<std::string> current;
  for (int i = 0; i < top; ++i) {
    snapshot.queues.push_back(MakeQueue(index++, "", false));
    current.push_back(snapshot.queues.back().name);
  }
  for (int level_size : {level1, level2}) {
    previous.swap(current);
    current.clear();
    for (int i = 0; i < level_size; ++i) {
      snapshot.queues.push_back(MakeQueue(index++, previous[i % previous.size()], false));
      current.push_back(snapshot.queues.back().name);
    }
  }
  const int node_count = queue_count / 10 + 1;
  for (int n = 0; n < node_count; ++n) {
    Node node;
    node.name = Name("node-", n);
    for (int r = 0; r < 4; ++r) node.allocatable[kResources[r]] = kNodeAllocatable[r];
    snapshot.nodes.push_back(std::move(node));
  }
  for (int i = 0; i < leaves; ++i) {
    snapshot.queues.push_back(MakeQueue(index++, current[i % current.size()], true));
    const Queue& leaf = snapshot.queues.back();
    PodGroup group;
    group.name = Name("job-", i);
    group.queue = leaf.name;
    group.priority = static_cast<int32_t>(Mix(static_cast<uint32_t>(i)) % 3) * 50;
    const int pods = i % 3 == 0 ? 3 : 2;
    for (int p = 0; p < pods; ++p) {
      Pod pod;
      pod.name = Name("pod-", p);
      pod.requests = {{"cpu", 1000.0 * (1 + i % 4)},
                      {"memory", 4e9 * (1 + i % 3)},
                      {"nvidia.com/gpu", static_cast<double>(i % 5 == 0 ? 0 : 1 + i % 2)}};
      if (i % 17 == 0) pod.requests["example.com/fpga"] = 1;
      if (p == 0) {
        pod.phase = PodPhase::kRunning;
        pod.node_name = Name("node-", i % node_count);
      } else {
        pod.phase = PodPhase::kPending;
      }
      group.pods.push_back(std::move(pod));
    }
    snapshot.pod_groups.push_back(std::move(group));
  }
  for (const Queue& queue : snapshot.queues) {
    const uint32_t h = Mix(static_cast<uint32_t>(queue.name.size()) * 31 +
                           static_cast<uint32_t>(queue.creation_time->seconds));
    QueueUsage usage;
    usage.queue = queue.name;
    for (int r = 0; r < 4; ++r) usage.usage[kResources[r]] = kNodeAllocatable[r] * (h % 50);
    snapshot.usage.push_back(std::move(usage));
  }
  for (int r = 0; r < 4; ++r) {
    snapshot.usage_capacity[kResources[r]] = kNodeAllocatable[r] * node_count * 100;
  }
  return snapshot;
}

void SetCounters(benchmark::State& state, const Snapshot& snapshot) {
  size_t pods = 0;
  for (const PodGroup& group : snapshot.pod_groups) pods += group.pods.size();
  state.counters["queues"] = static_cast<double>(snapshot.queues.size());
  state.counters["pods"] = static_cast<double>(pods);
}

void BM_KaiFairShare(benchmark::State& state) {
  const Snapshot snapshot = BuildSnapshot(static_cast<int>(state.range(0)));
  const absl::StatusOr<ValidatedSnapshot> request =
      ValidatedSnapshot::Validate(snapshot, Policy{}, RequestKind::kFairShares);
  if (!request.ok()) {
    state.SkipWithError("the benchmark snapshot is invalid");
    return;
  }
  for (auto _ : state) {
    kai::KaiFairShare shares = kai::ComputeKaiFairShare(*request);
    benchmark::DoNotOptimize(shares);
  }
  SetCounters(state, snapshot);
}

void BM_KaiFairShareTimeAware(benchmark::State& state) {
  const Snapshot snapshot = BuildSnapshot(static_cast<int>(state.range(0)));
  Policy policy;
  policy.k_value = 1;
  const absl::StatusOr<ValidatedSnapshot> request =
      ValidatedSnapshot::Validate(snapshot, policy, RequestKind::kFairShares);
  if (!request.ok()) {
    state.SkipWithError("the benchmark snapshot is invalid");
    return;
  }
  for (auto _ : state) {
    kai::KaiFairShare shares = kai::ComputeKaiFairShare(*request);
    benchmark::DoNotOptimize(shares);
  }
  SetCounters(state, snapshot);
}

void BM_ValidateAndFairShare(benchmark::State& state) {
  const Snapshot snapshot = BuildSnapshot(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    absl::StatusOr<ValidatedSnapshot> request =
        ValidatedSnapshot::Validate(snapshot, Policy{}, RequestKind::kFairShares);
    if (!request.ok()) {
      state.SkipWithError(std::string(request.status().message()).c_str());
      break;
    }
    kai::KaiFairShare shares = kai::ComputeKaiFairShare(*request);
    benchmark::DoNotOptimize(shares);
  }
  SetCounters(state, snapshot);
}

void BM_ValidateFairShareRespond(benchmark::State& state) {
  const Snapshot snapshot = BuildSnapshot(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    absl::StatusOr<ValidatedSnapshot> request =
        ValidatedSnapshot::Validate(snapshot, Policy{}, RequestKind::kFairShares);
    if (!request.ok()) {
      state.SkipWithError(std::string(request.status().message()).c_str());
      break;
    }
    std::vector<QueueShare> queues = kai::ToQueueShares(kai::ComputeKaiFairShare(*request));
    benchmark::DoNotOptimize(queues);
  }
  SetCounters(state, snapshot);
}

void BM_ComputeFairShares(benchmark::State& state) {
  const Snapshot snapshot = BuildSnapshot(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    absl::StatusOr<FairShareResult> result = ComputeFairShares(snapshot, Policy{});
    if (!result.ok()) {
      state.SkipWithError(std::string(result.status().message()).c_str());
      break;
    }
    benchmark::DoNotOptimize(result);
  }
  SetCounters(state, snapshot);
}

void BM_ComputeFairSharesBytes(benchmark::State& state) {
  const Snapshot snapshot = BuildSnapshot(static_cast<int>(state.range(0)));
  size_t bytes = 0;
  for (auto _ : state) {
    absl::StatusOr<FairShareResult> result = ComputeFairShares(snapshot, Policy{});
    if (!result.ok()) {
      state.SkipWithError(std::string(result.status().message()).c_str());
      break;
    }
    std::string wire;
    edge::AppendFairShareResponse(*result, &wire);
    bytes = wire.size();
    benchmark::DoNotOptimize(wire);
  }
  SetCounters(state, snapshot);
  state.counters["response_mb"] = static_cast<double>(bytes) / (1 << 20);
}

BENCHMARK(BM_KaiFairShare)->Arg(1000)->Arg(10000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_KaiFairShareTimeAware)->Arg(1000)->Arg(10000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ValidateAndFairShare)->Arg(1000)->Arg(10000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ValidateFairShareRespond)->Arg(1000)->Arg(10000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ComputeFairShares)->Arg(1000)->Arg(10000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ComputeFairSharesBytes)->Arg(1000)->Arg(10000)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace arbiter

BENCHMARK_MAIN();
