#include "clients/cli/phase_timer.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace arbiter::cli {

PhaseTimer::PhaseTimer() : start_(Clock::now()), last_(start_) {}

void PhaseTimer::Mark(std::string_view phase) {
  const Clock::time_point now = Clock::now();
  phases_.emplace_back(std::string(phase.data(), phase.size()), Seconds(now - last_));
  last_ = now;
}

void PhaseTimer::Counters(std::string_view phase,
                          const std::vector<std::pair<std::string_view, int64_t>>& counters) {
  std::string text;
  for (const auto& [name, value] : counters) {
    absl::StrAppend(&text, text.empty() ? "" : ", ", absl::string_view(name.data(), name.size()),
                    " ", value);
  }
  counters_[std::string(phase)] = std::move(text);
}

std::string PhaseTimer::Render(std::string_view mode) const {
  std::string out = absl::StrCat("timing (", absl::string_view(mode.data(), mode.size()), "):\n");
  for (const auto& [phase, seconds] : phases_) {
    absl::StrAppendFormat(&out, "  %-12s %10.3f ms\n", phase, seconds * 1e3);
    auto counters = counters_.find(phase);
    if (counters != counters_.end()) absl::StrAppend(&out, "    search: ", counters->second, "\n");
  }
  absl::StrAppendFormat(&out, "  %-12s %10.3f ms\n", "total", Seconds(last_ - start_) * 1e3);
  return out;
}

double PhaseTimer::Seconds(Clock::duration duration) {
  return std::chrono::duration<double>(duration).count();
}

}  // namespace arbiter::cli
