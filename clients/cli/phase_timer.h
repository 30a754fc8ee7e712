// The CLI's --timing: durations of consecutive phases of one command, printed on stderr.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace arbiter::cli {

// Durations of consecutive phases, each measured from the end of the one before (the first from
// construction). Not thread-safe.
class PhaseTimer {
 public:
  PhaseTimer();

  // Ends `phase` now.
  void Mark(std::string_view phase);

  // The victim search's counters of an eviction action, shown under its phase.
  void Counters(std::string_view phase,
                const std::vector<std::pair<std::string_view, int64_t>>& counters);

  // "timing (MODE):" then one aligned line per phase and the total, in milliseconds; an eviction
  // action's counters on the line below its own.
  std::string Render(std::string_view mode) const;

 private:
  using Clock = std::chrono::steady_clock;

  static double Seconds(Clock::duration duration);

  Clock::time_point start_;
  Clock::time_point last_;
  std::vector<std::pair<std::string, double>> phases_;
  std::map<std::string, std::string> counters_;
};

}  // namespace arbiter::cli
