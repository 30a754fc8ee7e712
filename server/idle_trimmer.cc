#include "server/idle_trimmer.h"

#include <malloc.h>

#include <utility>

namespace arbiter::server {

IdleTrimmer::IdleTrimmer(absl::Duration idle_for, int64_t min_bytes, std::function<void()> trimmed)
    : idle_for_(std::chrono::duration_cast<Clock::duration>(absl::ToChronoNanoseconds(idle_for))),
      min_bytes_(min_bytes),
      trimmed_(std::move(trimmed)) {
  thread_ = std::thread([this] { Run(); });
}

IdleTrimmer::~IdleTrimmer() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

void IdleTrimmer::CallStarted() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++running_;
  }
  changed_.notify_all();
}

void IdleTrimmer::CallEnded(int64_t bytes) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    --running_;
    if (bytes > min_bytes_) pending_ = true;
    if (running_ == 0) idle_since_ = Clock::now();
  }
  changed_.notify_all();
}

void IdleTrimmer::Run() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    changed_.wait(lock, [this] { return stopping_ || (pending_ && running_ == 0); });
    if (stopping_) return;
    // Idle, with memory to give back: wait out the idle period unless a call starts (the loop
    // then waits for the workers to fall idle again) or the trimmer stops.
    const Clock::time_point due = idle_since_ + idle_for_;
    if (Clock::now() < due) {
      changed_.wait_until(lock, due, [this] { return stopping_ || running_ > 0; });
      continue;
    }
    pending_ = false;
    lock.unlock();
    malloc_trim(0);
    if (trimmed_) trimmed_();
    lock.lock();
  }
}

}  // namespace arbiter::server
