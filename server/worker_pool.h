// A fixed set of threads that run submitted tasks in submission order.
//
// The server hands every decision (parse, validate, decide, serialise) to this pool so that a
// long Schedule never occupies one of gRPC's own callback threads.
#pragma once

#include <deque>
#include <functional>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace arbiter::server {

class WorkerPool {
 public:
  // Starts `threads` workers; 0 or less means one per core (at least one).
  explicit WorkerPool(int threads);
  // Runs every task already submitted, then joins the workers.
  ~WorkerPool();

  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // Queues `task`; a free worker runs it. Thread-safe. Must not be called once destruction began.
  void Submit(std::function<void()> task);

  int size() const { return static_cast<int>(workers_.size()); }

  // The number of threads `WorkerPool(0)` starts on this machine.
  static int DefaultSize();

 private:
  void Work();

  absl::Mutex mutex_;
  std::deque<std::function<void()>> tasks_ ABSL_GUARDED_BY(mutex_);
  bool stopping_ ABSL_GUARDED_BY(mutex_) = false;

  std::vector<std::thread> workers_;
};

}  // namespace arbiter::server
