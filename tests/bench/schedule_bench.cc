// KAI scheduling cycles on generated clusters (docs/generator.md), measured in the core from the
// model: protobuf conversion is excluded. The request is generated once per benchmark, outside
// the timing.
//
// Benchmarks:
//   BM_ScheduleAllocate/{M,L,XL}  Schedule with actions [ALLOCATE] (issue 3). items_per_second
//       is pods bound per second of the whole call; the counters give the time of each phase
//       (validate, fair_share, allocate, respond; ms per call) and `allocate_pods_per_s`, pods
//       bound per second of the allocate phase alone (the "pods placed per second").
//   BM_FairShare/{M,L,XL}        ComputeFairShares alone on the same requests.
//   BM_ReclaimL/...               size L with 100 pending groups that can run only by reclaim
//       (issue 4): `allocate_only` runs [ALLOCATE], `allocate_reclaim` [ALLOCATE, RECLAIM],
//       `default_actions` all four. The target compares the median of the second with
//       the first; the counters give evictions and bindings per call.
//   BM_ScheduleAll/{L,XL}         Schedule with all four actions on the plain presets (issue 19).
//   BM_GpuSharingL/PCT/ALL/SEED   GPU sharing (SEMANTICS §4.13): size L, seed SEED, with PCT% of
//       the GPU pods sharing (`arbiter generate --gpu-sharing PCT`); ALL 0 runs [ALLOCATE], 1 all
//       four actions. PCT 0 is the same snapshot without sharing, the baseline of the issue's
//       targets (allocate-only at most 1.3x, all four at most 1.5x).
//   BM_KaiReclaimShape/N          KAI's reclaim yardstick (docs/generator.md) at N nodes, all four
//       actions: eight running and eight pending one-GPU jobs per node; the counters give
//       bindings and evictions per call (the outcome: every pending job placed after its victim).
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <utility>

#include "benchmark/benchmark.h"
#include "clients/generator/generator.h"
#include "core/api/arbiter.h"
#include "core/model.h"

namespace arbiter {
namespace {

using generator::GeneratedRequest;

// Requests are cached per name: generating XL takes a fraction of a second.
const GeneratedRequest& Request(const std::string& size, int reclaim_groups) {
  static auto* cache = new std::map<std::pair<std::string, int>, GeneratedRequest>();
  auto key = std::make_pair(size, reclaim_groups);
  auto it = cache->find(key);
  if (it == cache->end()) {
    absl::StatusOr<generator::GeneratorOptions> options = generator::SizePreset(size);
    options->reclaim_groups = reclaim_groups;
    it = cache->emplace(key, generator::Generate(*options)).first;
  }
  return it->second;
}

// Accumulates the time of each phase that CycleHooks reports.
class PhaseClock {
 public:
  CycleHooks Hooks() {
    CycleHooks hooks;
    hooks.phase_done = [this](std::string_view phase) {
      const auto now = std::chrono::steady_clock::now();
      totals_[std::string(phase)] += std::chrono::duration<double>(now - last_).count();
      last_ = now;
    };
    return hooks;
  }
  void Start() { last_ = std::chrono::steady_clock::now(); }
  double seconds(const std::string& phase) const {
    auto it = totals_.find(phase);
    return it == totals_.end() ? 0 : it->second;
  }
  const std::map<std::string, double>& totals() const { return totals_; }

 private:
  std::chrono::steady_clock::time_point last_;
  std::map<std::string, double> totals_;
};

void RunSchedule(benchmark::State& state, const GeneratedRequest& request,
                 std::vector<Action> actions) {
  Policy policy = request.policy;
  policy.actions = std::move(actions);
  PhaseClock clock;
  const CycleHooks hooks = clock.Hooks();
  size_t bindings = 0, evictions = 0, pending = 0;
  for (auto _ : state) {
    clock.Start();
    absl::StatusOr<ScheduleResult> result = Schedule(request.snapshot, policy, hooks);
    if (!result.ok()) {
      state.SkipWithError(std::string(result.status().message()).c_str());
      return;
    }
    bindings += result->bindings.size();
    evictions += result->evictions.size();
    pending += result->pending.size();
    benchmark::DoNotOptimize(result);
  }
  const double n = static_cast<double>(state.iterations());
  state.SetItemsProcessed(static_cast<int64_t>(bindings));
  state.counters["bindings"] = static_cast<double>(bindings) / n;
  state.counters["evictions"] = static_cast<double>(evictions) / n;
  state.counters["pending_groups"] = static_cast<double>(pending) / n;
  for (const auto& [phase, seconds] : clock.totals()) {
    state.counters[phase + "_ms"] = seconds * 1000 / n;
  }
  const double allocate = clock.seconds("allocate");
  if (allocate > 0) {
    state.counters["allocate_pods_per_s"] = static_cast<double>(bindings) / allocate;
  }
}

void BM_ScheduleAllocate(benchmark::State& state, const char* size) {
  RunSchedule(state, Request(size, 0), {Action::kAllocate});
}

void BM_ScheduleAll(benchmark::State& state, const char* size) {
  RunSchedule(state, Request(size, 0), {});
}

void BM_KaiReclaimShape(benchmark::State& state) {
  static auto* cache = new std::map<int64_t, GeneratedRequest>();
  const int64_t nodes = state.range(0);
  auto it = cache->find(nodes);
  if (it == cache->end()) {
    generator::GeneratorOptions options;
    options.shape = generator::GeneratorShape::kKaiReclaim;
    options.nodes = static_cast<int>(nodes);
    it = cache->emplace(nodes, generator::Generate(options)).first;
  }
  RunSchedule(state, it->second, {});
}

void BM_GpuSharingL(benchmark::State& state) {
  static auto* cache = new std::map<std::pair<int64_t, int64_t>, GeneratedRequest>();
  const int64_t percent = state.range(0);
  const int64_t seed = state.range(2);
  auto it = cache->find({percent, seed});
  if (it == cache->end()) {
    absl::StatusOr<generator::GeneratorOptions> options = generator::SizePreset("L");
    options->seed = static_cast<uint64_t>(seed);
    options->gpu_sharing = static_cast<double>(percent);
    it = cache->emplace(std::make_pair(percent, seed), generator::Generate(*options)).first;
  }
  std::vector<Action> actions;
  if (state.range(1) == 0) actions = {Action::kAllocate};
  RunSchedule(state, it->second, std::move(actions));
}

void BM_FairShare(benchmark::State& state, const char* size) {
  const GeneratedRequest& request = Request(size, 0);
  for (auto _ : state) {
    absl::StatusOr<FairShareResult> result = ComputeFairShares(request.snapshot, request.policy);
    if (!result.ok()) {
      state.SkipWithError(std::string(result.status().message()).c_str());
      return;
    }
    benchmark::DoNotOptimize(result);
  }
  state.counters["queues"] = static_cast<double>(request.snapshot.queues.size());
}

constexpr int kReclaimGroups = 100;

void BM_ReclaimL(benchmark::State& state, std::vector<Action> actions) {
  RunSchedule(state, Request("L", kReclaimGroups), std::move(actions));
}

BENCHMARK_CAPTURE(BM_ScheduleAllocate, M, "M")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_ScheduleAllocate, L, "L")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_ScheduleAllocate, XL, "XL")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_ScheduleAll, L, "L")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_ScheduleAll, XL, "XL")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_GpuSharingL)
    ->ArgsProduct({{0, 30}, {0}, {1, 2, 3}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_GpuSharingL)
    ->ArgsProduct({{0, 30}, {1}, {1, 2, 3}})
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_KaiReclaimShape)
    ->Arg(10)
    ->Arg(50)
    ->Arg(100)
    ->Arg(200)
    ->Arg(500)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_FairShare, M, "M")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_FairShare, L, "L")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_FairShare, XL, "XL")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_ReclaimL, allocate_only, std::vector<Action>{Action::kAllocate})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_ReclaimL, allocate_reclaim,
                  std::vector<Action>{Action::kAllocate, Action::kReclaim})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_ReclaimL, default_actions, std::vector<Action>{})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace arbiter

BENCHMARK_MAIN();
