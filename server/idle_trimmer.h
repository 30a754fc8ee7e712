// Gives the memory that calls freed back to the system once the server has been idle for a while.
//
// malloc keeps what a call frees and hands it to the next call; without a trim a server that once
// served large requests would stay that large. Trimming after every large call costs the next
// call its page faults instead (at the L preset, decoding into fresh pages took half the call), so
// the freed memory is kept while calls keep coming and given back (`malloc_trim`) once no call has
// run for `idle_for`, provided some call since the last trim freed more than `min_bytes`.
//
// A thread of its own waits for that moment; it is stopped and joined by the destructor.
// Thread-safe. The lock is the standard library's, which ThreadSanitizer sees (Debian's Abseil is
// not instrumented, tests/sanitizers/tsan.supp).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>

#include "absl/time/time.h"

namespace arbiter::server {

class IdleTrimmer {
 public:
  // `trimmed` (may be empty) is called on the trimmer's thread after each trim.
  IdleTrimmer(absl::Duration idle_for, int64_t min_bytes, std::function<void()> trimmed = {});
  ~IdleTrimmer();

  IdleTrimmer(const IdleTrimmer&) = delete;
  IdleTrimmer& operator=(const IdleTrimmer&) = delete;

  // A call starts running, and a call ended having used `bytes` (its request and model). Every
  // CallStarted is followed by one CallEnded.
  void CallStarted();
  void CallEnded(int64_t bytes);

 private:
  using Clock = std::chrono::steady_clock;
  void Run();

  const Clock::duration idle_for_;
  const int64_t min_bytes_;
  const std::function<void()> trimmed_;

  std::mutex mutex_;
  std::condition_variable changed_;  // a call started or ended, or the trimmer stops
  // Guarded by mutex_:
  int running_ = 0;
  bool pending_ = false;  // a call since the last trim freed min_bytes_
  Clock::time_point idle_since_;
  bool stopping_ = false;
  std::thread thread_;  // last: started once the members above exist
};

}  // namespace arbiter::server
