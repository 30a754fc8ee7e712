#include "server/idle_trimmer.h"

#include <malloc.h>

#include <utility>

namespace arbiter::server {

IdleTrimmer::IdleTrimmer(absl::Duration idle_for, int64_t min_bytes, std::function<void()> trimmed)
    : idle_for_(idle_for), min_bytes_(min_bytes), trimmed_(std::move(trimmed)) {
  thread_ = std::thread([this] { Run(); });
}

IdleTrimmer::~IdleTrimmer() {
  {
    absl::MutexLock lock(&mutex_);
    stopping_ = true;
  }
  thread_.join();
}

void IdleTrimmer::CallStarted() {
  absl::MutexLock lock(&mutex_);
  ++running_;
}

void IdleTrimmer::CallEnded(int64_t bytes) {
  absl::MutexLock lock(&mutex_);
  --running_;
  if (bytes > min_bytes_) pending_ = true;
  if (running_ == 0) idle_since_ = absl::Now();
}

void IdleTrimmer::Run() {
  absl::MutexLock lock(&mutex_);
  while (true) {
    mutex_.Await(absl::Condition(this, &IdleTrimmer::TrimDue));
    if (stopping_) return;
    // Idle, with memory to give back: wait out the idle period unless a call starts (the loop
    // then waits for the workers to fall idle again) or the trimmer stops.
    const absl::Time due = idle_since_ + idle_for_;
    if (absl::Now() < due) {
      mutex_.AwaitWithDeadline(absl::Condition(this, &IdleTrimmer::CallOrStop), due);
      continue;
    }
    pending_ = false;
    mutex_.Unlock();
    malloc_trim(0);
    if (trimmed_) trimmed_();
    mutex_.Lock();
  }
}

}  // namespace arbiter::server
