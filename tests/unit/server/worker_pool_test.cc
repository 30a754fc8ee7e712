#include "server/worker_pool.h"

#include <atomic>
#include <set>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"

namespace arbiter::server {
namespace {

TEST(WorkerPool, DefaultSizeIsOnePerCore) {
  WorkerPool pool(0);
  EXPECT_EQ(pool.size(), WorkerPool::DefaultSize());
  EXPECT_GE(pool.size(), 1);
}

TEST(WorkerPool, DestructionRunsEveryQueuedTask) {
  std::atomic<int> done{0};
  {
    WorkerPool pool(2);
    for (int i = 0; i < 1000; ++i) pool.Submit([&done] { done.fetch_add(1); });
  }
  EXPECT_EQ(done.load(), 1000);
}

TEST(WorkerPool, RunsTasksOnSeveralThreadsAtOnce) {
  WorkerPool pool(2);
  absl::Notification both_started;
  absl::Mutex mutex;
  int started = 0;
  std::set<std::thread::id> threads;
  for (int i = 0; i < 2; ++i) {
    pool.Submit([&] {
      absl::MutexLock lock(&mutex);
      threads.insert(std::this_thread::get_id());
      if (++started == 2) both_started.Notify();
      // Each task waits for the other: only two threads running at once get past this.
      mutex.Await(absl::Condition(+[](int* count) { return *count == 2; }, &started));
    });
  }
  both_started.WaitForNotification();
  absl::MutexLock lock(&mutex);
  EXPECT_EQ(threads.size(), 2u);
}

}  // namespace
}  // namespace arbiter::server
