// The simulator's yardstick (tests/bench/month_100_nodes.yaml): a 30-day month at one-minute
// steps (43,200 cycles) of 100 nodes and 10 queues, KAI with all four actions, in-process. The
// day-long variant is quick to repeat; docs/benchmarks.md gives the figures and the machine.
#include <string>

#include "benchmark/benchmark.h"
#include "clients/simulator/sim_config.h"
#include "clients/simulator/simulation.h"

namespace arbiter::simulator {
namespace {

void BM_SimulateMonth100Nodes(benchmark::State& state, double horizon) {
  absl::StatusOr<SimConfig> config =
      LoadSimConfig(std::string(ARBITER_SOURCE_DIR) + "/tests/bench/month_100_nodes.yaml");
  if (!config.ok()) {
    state.SkipWithError(std::string(config.status().message()).c_str());
    return;
  }
  config->horizon = horizon;
  int64_t cycles = 0;
  double deciding = 0;
  for (auto _ : state) {
    absl::StatusOr<SimResult> result = Simulate(*config, InProcess());
    if (!result.ok()) {
      state.SkipWithError(std::string(result.status().message()).c_str());
      return;
    }
    cycles += result->cycles;
    deciding += result->decide_seconds;
    benchmark::DoNotOptimize(result->rows.data());
  }
  state.counters["cycles"] =
      benchmark::Counter(static_cast<double>(cycles), benchmark::Counter::kAvgIterations);
  state.counters["deciding_s"] = benchmark::Counter(deciding, benchmark::Counter::kAvgIterations);
  state.counters["us_per_cycle"] = benchmark::Counter(
      cycles > 0 ? 1e6 * deciding / static_cast<double>(cycles) : 0, benchmark::Counter::kDefaults);
}

BENCHMARK_CAPTURE(BM_SimulateMonth100Nodes, day, 86400.0)
    ->Unit(benchmark::kSecond)
    ->UseRealTime()
    ->Iterations(3);
BENCHMARK_CAPTURE(BM_SimulateMonth100Nodes, month, 30 * 86400.0)
    ->Unit(benchmark::kSecond)
    ->UseRealTime()
    ->Iterations(1);

}  // namespace
}  // namespace arbiter::simulator
BENCHMARK_MAIN();
