// The threads that run the server's calls, and the bounded queue of calls waiting for one.
//
// The server hands every decision (decode, validate, decide, serialise) to this pool so that a
// long Schedule never occupies one of gRPC's own callback threads. Two lanes keep a small call
// from waiting behind large ones: the general workers take waiting tasks in submission order,
// whatever their size, and the small lane's workers take only small tasks (at most
// `small_task_bytes`). A small task therefore waits at most for the small tasks ahead of it,
// never for a large one.
//
// The queue is bounded in tasks and in bytes (the request bytes a waiting call holds): a task
// over either bound is refused, so the caller can answer at once and the client can retry.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace arbiter::server {

struct WorkerPoolOptions {
  int threads = 0;             // general workers; 0 or less = one per core
  int small_lane_threads = 1;  // workers that run only small tasks; 0 = no small lane
  int64_t small_task_bytes = int64_t{64} << 10;
  int64_t max_queued_tasks = 256;                 // waiting, not yet running
  int64_t max_queued_bytes = int64_t{512} << 20;  // the bytes of the waiting tasks
};

class WorkerPool {
 public:
  // Starts the workers. Options must be valid (CheckWorkerPoolOptions).
  explicit WorkerPool(const WorkerPoolOptions& options);
  // Runs every task already queued, then joins the workers.
  ~WorkerPool();

  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // Queues `task`, which holds `bytes` of request, for a free worker. False, without queueing
  // it, when the queue already holds max_queued_tasks tasks or the task's bytes would take it
  // over max_queued_bytes (a task alone over the byte bound is accepted into an empty queue, so
  // that every request the server accepts can run). Thread-safe. Must not be called once
  // destruction began.
  bool TrySubmit(std::function<void()> task, int64_t bytes);

  // Tasks waiting for a worker now.
  int64_t queued() const;

  const WorkerPoolOptions& options() const { return options_; }

  // Every worker, small lane included.
  int size() const { return static_cast<int>(workers_.size()); }

  // The number of general workers `threads = 0` starts on this machine.
  static int DefaultSize();

 private:
  struct Task {
    std::function<void()> run;
    int64_t bytes;
    bool small;
  };

  // Runs tasks until the pool stops; `small_only` for the small lane.
  void Work(bool small_only);
  bool HasWork(bool small_only) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  bool GeneralReady() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  bool SmallLaneReady() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);

  const WorkerPoolOptions options_;

  mutable absl::Mutex mutex_;
  std::deque<Task> tasks_ ABSL_GUARDED_BY(mutex_);  // submission order
  int64_t small_waiting_ ABSL_GUARDED_BY(mutex_) = 0;
  int64_t queued_bytes_ ABSL_GUARDED_BY(mutex_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mutex_) = false;

  std::vector<std::thread> workers_;
};

}  // namespace arbiter::server
