// Cancellation inside long loops (issue 11).
//
// CycleHooks::cancelled (core/cycle_hooks.h) is the caller's: the server reads a clock and its
// client's state there, so it is not free. The entry points ask it between phases; inside a
// phase, a CancelPoll asks it once per kInterval units of work, so that a loop can count every
// step for the price of a decrement. Once the hook has said yes, the poll stays cancelled
// (latched): each loop that sees it stops at its next consistent point (statements rolled back,
// simulations undone), and the entry point returns status() instead of the incomplete answer.
//
// A poll only reads the hook: an uncancelled call computes exactly what it computes without one.
// Not thread-safe: one poll per call.
#pragma once

#include <cstdint>
#include <functional>

#include "absl/status/status.h"

namespace arbiter {

class CancelPoll {
 public:
  // Units of work between two questions to the hook. A unit is a small step: one pod placed,
  // one queue's division of one resource, one node or queue visited (tens of nanoseconds to a
  // few microseconds), so the hook is asked every few milliseconds at most.
  static constexpr int64_t kInterval = 1024;

  // A poll that is never cancelled.
  CancelPoll() = default;
  // Asks `*cancelled` (null or empty: never cancelled), which must outlive the poll.
  explicit CancelPoll(const std::function<bool()>* cancelled) : cancelled_fn_(cancelled) {}
  CancelPoll(const CancelPoll&) = delete;
  CancelPoll& operator=(const CancelPoll&) = delete;

  // The phase status() names: "fair_share", "allocate", "admission", ... A string literal.
  void set_phase(const char* phase) { phase_ = phase; }
  const char* phase() const { return phase_; }

  // Counts `work` units (>= 1); true when the call is cancelled, now or earlier. O(1); calls the
  // hook once every kInterval units.
  bool Tick(int64_t work = 1) {
    if (cancelled_) return true;
    budget_ -= work;
    if (budget_ > 0) return false;
    return Ask();
  }
  bool cancelled() const { return cancelled_; }
  // How many times the hook was asked (for tests and diagnostics).
  int64_t questions() const { return questions_; }

  // CancelledError("cancelled in phase <phase>").
  absl::Status status() const;

 private:
  bool Ask();

  const std::function<bool()>* cancelled_fn_ = nullptr;
  const char* phase_ = "";
  int64_t budget_ = kInterval;
  int64_t questions_ = 0;
  bool cancelled_ = false;
};

}  // namespace arbiter
