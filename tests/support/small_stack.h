// Runs a test body on a thread with a small stack, so that code recursing once per level of a
// deep input crashes in the test (a stack overflow is a SIGSEGV) instead of passing only because
// the main thread's stack happens to be large.
#pragma once

#include <pthread.h>

#include <cstddef>
#include <functional>

#include "gtest/gtest.h"

namespace arbiter::testing {

// 1 MiB: a server worker thread's stack can be this small; the default is 8 MiB.
inline constexpr size_t kSmallStackBytes = size_t{1} << 20;

// Runs `body` on a new thread whose stack is `stack_bytes` and waits for it.
inline void RunOnSmallStack(const std::function<void()>& body,
                            size_t stack_bytes = kSmallStackBytes) {
  pthread_attr_t attr;
  ASSERT_EQ(pthread_attr_init(&attr), 0);
  ASSERT_EQ(pthread_attr_setstacksize(&attr, stack_bytes), 0);
  pthread_t thread;
  auto trampoline = [](void* arg) -> void* {
    (*static_cast<const std::function<void()>*>(arg))();
    return nullptr;
  };
  const int created =
      pthread_create(&thread, &attr, trampoline, const_cast<std::function<void()>*>(&body));
  pthread_attr_destroy(&attr);
  ASSERT_EQ(created, 0);
  ASSERT_EQ(pthread_join(thread, nullptr), 0);
}

}  // namespace arbiter::testing
