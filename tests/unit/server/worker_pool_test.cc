#include "server/worker_pool.h"

#include <atomic>
#include <set>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"

namespace arbiter::server {
namespace {

WorkerPoolOptions General(int threads, int small_lane = 0) {
  WorkerPoolOptions options;
  options.threads = threads;
  options.small_lane_threads = small_lane;
  return options;
}

TEST(WorkerPool, DefaultSizeIsOnePerCorePlusTheSmallLane) {
  WorkerPool pool(General(0, 1));
  EXPECT_EQ(pool.size(), WorkerPool::DefaultSize() + 1);
  EXPECT_GE(pool.size(), 2);
}

TEST(WorkerPool, DestructionRunsEveryQueuedTask) {
  std::atomic<int> done{0};
  {
    WorkerPoolOptions options = General(2, 1);
    options.max_queued_tasks = 1000;
    WorkerPool pool(options);
    for (int i = 0; i < 1000; ++i) {
      ASSERT_TRUE(pool.TrySubmit([&done] { done.fetch_add(1); }, i % 2 == 0 ? 10 : 1 << 20));
    }
  }
  EXPECT_EQ(done.load(), 1000);
}

TEST(WorkerPool, RunsTasksOnSeveralThreadsAtOnce) {
  WorkerPool pool(General(2));
  absl::Notification both_started;
  absl::Mutex mutex;
  int started = 0;
  std::set<std::thread::id> threads;
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(pool.TrySubmit(
        [&] {
          absl::MutexLock lock(&mutex);
          threads.insert(std::this_thread::get_id());
          if (++started == 2) both_started.Notify();
          // Each task waits for the other: only two threads running at once get past this.
          mutex.Await(absl::Condition(
              +[](int* count) { return *count == 2; }, &started));
        },
        1));
  }
  both_started.WaitForNotification();
  absl::MutexLock lock(&mutex);
  EXPECT_EQ(threads.size(), 2u);
}

// Holds every task that calls Hold() until Release().
class Gate {
 public:
  void Hold() {
    absl::MutexLock lock(&mutex_);
    ++held_;
    mutex_.Await(absl::Condition(&open_));
  }
  void Release() {
    absl::MutexLock lock(&mutex_);
    open_ = true;
  }
  void AwaitHeld(int count) {
    absl::MutexLock lock(&mutex_);
    auto enough = [this, count]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_) { return held_ >= count; };
    mutex_.Await(absl::Condition(&enough));
  }

 private:
  absl::Mutex mutex_;
  bool open_ ABSL_GUARDED_BY(mutex_) = false;
  int held_ ABSL_GUARDED_BY(mutex_) = 0;
};

TEST(WorkerPool, ASmallTaskRunsWhileLargeOnesHoldEveryGeneralWorker) {
  WorkerPoolOptions options = General(1, 1);
  options.small_task_bytes = 100;
  WorkerPool pool(options);
  Gate gate;
  // One large task holds the only general worker; two more wait behind it.
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(pool.TrySubmit([&gate] { gate.Hold(); }, 1 << 20));
  gate.AwaitHeld(1);
  absl::Notification small_ran;
  ASSERT_TRUE(pool.TrySubmit([&small_ran] { small_ran.Notify(); }, 50));
  small_ran.WaitForNotification();  // never returns if the small task waits for the large ones
  EXPECT_EQ(pool.queued(), 2);
  gate.Release();
}

TEST(WorkerPool, TheSmallLaneNeverRunsALargeTask) {
  WorkerPoolOptions options = General(1, 1);
  options.small_task_bytes = 100;
  WorkerPool pool(options);
  Gate gate;
  ASSERT_TRUE(pool.TrySubmit([&gate] { gate.Hold(); }, 1 << 20));
  gate.AwaitHeld(1);
  std::atomic<bool> large_ran{false};
  ASSERT_TRUE(pool.TrySubmit([&large_ran] { large_ran = true; }, 1 << 20));
  // The small lane is idle, yet the large task waits for the general worker.
  absl::Notification small_ran;
  ASSERT_TRUE(pool.TrySubmit([&small_ran] { small_ran.Notify(); }, 1));
  small_ran.WaitForNotification();
  EXPECT_FALSE(large_ran.load());
  EXPECT_EQ(pool.queued(), 1);
  gate.Release();
}

TEST(WorkerPool, AFullQueueRefusesTasks) {
  WorkerPoolOptions options = General(1);
  options.max_queued_tasks = 2;
  WorkerPool pool(options);
  Gate gate;
  ASSERT_TRUE(pool.TrySubmit([&gate] { gate.Hold(); }, 1));
  gate.AwaitHeld(1);  // running, so no longer queued
  EXPECT_TRUE(pool.TrySubmit([] {}, 1));
  EXPECT_TRUE(pool.TrySubmit([] {}, 1));
  EXPECT_FALSE(pool.TrySubmit([] {}, 1));
  EXPECT_EQ(pool.queued(), 2);
  gate.Release();
}

TEST(WorkerPool, QueuedBytesAreBoundedButOneLargeTaskIsAlwaysAccepted) {
  WorkerPoolOptions options = General(1);
  options.max_queued_bytes = 1000;
  WorkerPool pool(options);
  Gate gate;
  ASSERT_TRUE(pool.TrySubmit([&gate] { gate.Hold(); }, 1));
  gate.AwaitHeld(1);
  EXPECT_TRUE(pool.TrySubmit([] {}, 5000));  // alone in the queue: accepted
  EXPECT_FALSE(pool.TrySubmit([] {}, 10));   // over the bound with it
  gate.Release();
}

}  // namespace
}  // namespace arbiter::server
