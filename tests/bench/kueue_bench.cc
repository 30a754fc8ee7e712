// The Kueue model on the issue-5 size (docs/generator.md, Kueue preset M): 1,000 ClusterQueues
// under 100 cohorts in three levels, 10,000 admitted and 2,000 pending workloads. Measured in the
// core from the model (protobuf conversion excluded); the request is generated once, outside the
// timing. Target: one Schedule call in <= 500 ms at the median.
//
// (Preset L, 5,000 ClusterQueues and 60,000 workloads, is left out: it takes tens of seconds a
// call today; run it with a local registration when working on the admission loop.)
//
// Benchmarks:
//   BM_KueueSchedule/M   Schedule (all admission rounds and preemptions); counters give the
//                            admissions, evictions and pending workloads per call, and the time
//                            of each phase the core reports (ms per call).
//   BM_KueueShares/M   ComputeFairShares (dominant resource shares of every queue).
//   BM_KueueScheduleFlavors/flavors:F/seed:S   Schedule at M generated with F resource flavors
//                            per resource (docs/generator.md, `flavors`; 0 = legacy quotas) and
//                            seed S, with the same counters as BM_KueueSchedule. Targets: F = 3
//                            at most 1.5x F = 1 on the same seed, and at most 500 ms.
#include <chrono>
#include <map>
#include <string>
#include <utility>

#include "benchmark/benchmark.h"
#include "clients/generator/generator.h"
#include "core/api/arbiter.h"
#include "core/model.h"

namespace arbiter {
namespace {

using generator::GeneratedRequest;

const GeneratedRequest& Request(const std::string& size) {
  static auto* cache = new std::map<std::string, GeneratedRequest>();
  auto it = cache->find(size);
  if (it == cache->end()) {
    absl::StatusOr<generator::GeneratorOptions> options =
        generator::SizePreset(size, generator::GeneratorModel::kKueue);
    it = cache->emplace(size, generator::Generate(*options)).first;
  }
  return it->second;
}

// Preset M with `flavors` flavors per resource and seed `seed`, generated once.
const GeneratedRequest& FlavoredRequest(int flavors, int seed) {
  static auto* cache = new std::map<std::pair<int, int>, GeneratedRequest>();
  auto it = cache->find({flavors, seed});
  if (it == cache->end()) {
    absl::StatusOr<generator::GeneratorOptions> options =
        generator::SizePreset("M", generator::GeneratorModel::kKueue);
    options->flavors = flavors;
    options->seed = static_cast<uint64_t>(seed);
    it = cache->emplace(std::make_pair(flavors, seed), generator::Generate(*options)).first;
  }
  return it->second;
}

void RunSchedule(benchmark::State& state, const GeneratedRequest& request) {
  std::map<std::string, double> phases;
  std::chrono::steady_clock::time_point last;
  CycleHooks hooks;
  hooks.phase_done = [&](std::string_view phase) {
    const auto now = std::chrono::steady_clock::now();
    phases[std::string(phase)] += std::chrono::duration<double>(now - last).count();
    last = now;
  };
  size_t admissions = 0, evictions = 0, pending = 0;
  for (auto _ : state) {
    last = std::chrono::steady_clock::now();
    absl::StatusOr<ScheduleResult> result = Schedule(request.snapshot, request.policy, hooks);
    if (!result.ok()) {
      state.SkipWithError(std::string(result.status().message()).c_str());
      return;
    }
    admissions += result->admissions.size();
    evictions += result->evictions.size();
    pending += result->pending.size();
    benchmark::DoNotOptimize(result);
  }
  const double n = static_cast<double>(state.iterations());
  state.counters["admissions"] = static_cast<double>(admissions) / n;
  state.counters["evictions"] = static_cast<double>(evictions) / n;
  state.counters["pending"] = static_cast<double>(pending) / n;
  for (const auto& [phase, seconds] : phases) state.counters[phase + "_ms"] = seconds * 1000 / n;
}

void BM_KueueSchedule(benchmark::State& state, const char* size) {
  RunSchedule(state, Request(size));
}

void BM_KueueScheduleFlavors(benchmark::State& state) {
  const GeneratedRequest& request =
      FlavoredRequest(static_cast<int>(state.range(0)), static_cast<int>(state.range(1)));
  size_t admitted = 0;
  for (const PodGroup& g : request.snapshot.pod_groups) admitted += g.admitted;
  state.counters["admitted_input"] = static_cast<double>(admitted);
  RunSchedule(state, request);
}

void BM_KueueShares(benchmark::State& state, const char* size) {
  const GeneratedRequest& request = Request(size);
  for (auto _ : state) {
    absl::StatusOr<FairShareResult> result = ComputeFairShares(request.snapshot, request.policy);
    if (!result.ok()) {
      state.SkipWithError(std::string(result.status().message()).c_str());
      return;
    }
    benchmark::DoNotOptimize(result);
  }
}

BENCHMARK_CAPTURE(BM_KueueSchedule, M, "M")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_KueueShares, M, "M")->Unit(benchmark::kMillisecond)->UseRealTime();
// Seeds 1–3, each with 0 (legacy), 1 and 3 flavors per resource side by side.
BENCHMARK(BM_KueueScheduleFlavors)
    ->ArgNames({"flavors", "seed"})
    ->ArgsProduct({{0, 1, 3}, {1, 2, 3}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace arbiter

BENCHMARK_MAIN();
