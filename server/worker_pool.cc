#include "server/worker_pool.h"

#include <algorithm>
#include <utility>

#if defined(ARBITER_THREAD_SANITIZER)
#include <sanitizer/tsan_interface.h>
#endif

namespace arbiter::server {
namespace {

// Tells ThreadSanitizer what the pool's mutex orders, for as long as it lives (declare it right
// after the lock, so that it ends first): Debian's Abseil is built without ThreadSanitizer, so the
// hand-over of a task from TrySubmit to a worker would otherwise look like a race.
class OrderedByMutex {
 public:
#if defined(ARBITER_THREAD_SANITIZER)
  explicit OrderedByMutex(const void* mutex) : mutex_(const_cast<void*>(mutex)) {
    __tsan_acquire(mutex_);
  }
  ~OrderedByMutex() { __tsan_release(mutex_); }

 private:
  void* mutex_;
#else
  explicit OrderedByMutex(const void*) {}
#endif
};

}  // namespace

int WorkerPool::DefaultSize() {
  const unsigned cores = std::thread::hardware_concurrency();
  return cores == 0 ? 1 : static_cast<int>(cores);
}

WorkerPool::WorkerPool(const WorkerPoolOptions& options) : options_(options) {
  const int general = options.threads > 0 ? options.threads : DefaultSize();
  const int small = std::max(0, options.small_lane_threads);
  workers_.reserve(general + small);
  for (int i = 0; i < general; ++i) workers_.emplace_back([this] { Work(false); });
  for (int i = 0; i < small; ++i) workers_.emplace_back([this] { Work(true); });
}

WorkerPool::~WorkerPool() {
  {
    absl::MutexLock lock(&mutex_);
    const OrderedByMutex ordered(&mutex_);
    stopping_ = true;
  }
  for (std::thread& worker : workers_) worker.join();
}

bool WorkerPool::TrySubmit(std::function<void()> task, int64_t bytes) {
  absl::MutexLock lock(&mutex_);
  const OrderedByMutex ordered(&mutex_);
  if (static_cast<int64_t>(tasks_.size()) >= options_.max_queued_tasks) return false;
  if (!tasks_.empty() && queued_bytes_ + bytes > options_.max_queued_bytes) return false;
  const bool small = bytes <= options_.small_task_bytes;
  tasks_.push_back({std::move(task), bytes, small});
  queued_bytes_ += bytes;
  if (small) ++small_waiting_;
  return true;
}

int64_t WorkerPool::queued() const {
  absl::MutexLock lock(&mutex_);
  const OrderedByMutex ordered(&mutex_);
  return static_cast<int64_t>(tasks_.size());
}

bool WorkerPool::GeneralReady() const { return stopping_ || HasWork(false); }
bool WorkerPool::SmallLaneReady() const { return stopping_ || HasWork(true); }

bool WorkerPool::HasWork(bool small_only) const {
  return small_only ? small_waiting_ > 0 : !tasks_.empty();
}

void WorkerPool::Work(bool small_only) {
  while (true) {
    Task task;
    {
      absl::MutexLock lock(&mutex_);
      if (small_only) {
        mutex_.Await(absl::Condition(
            +[](WorkerPool* pool) ABSL_NO_THREAD_SAFETY_ANALYSIS { return pool->SmallLaneReady(); },
            this));
      } else {
        mutex_.Await(absl::Condition(
            +[](WorkerPool* pool) ABSL_NO_THREAD_SAFETY_ANALYSIS { return pool->GeneralReady(); },
            this));
      }
      const OrderedByMutex ordered(&mutex_);
      if (!HasWork(small_only)) return;  // stopping, and nothing is left for this lane
      auto next = tasks_.begin();
      if (small_only) {
        while (!next->small) ++next;
      }
      task = std::move(*next);
      tasks_.erase(next);
      queued_bytes_ -= task.bytes;
      if (task.small) --small_waiting_;
    }
    task.run();
  }
}

}  // namespace arbiter::server
