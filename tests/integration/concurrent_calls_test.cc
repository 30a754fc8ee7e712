// Many client threads calling the real arbiter-server (in-process on 127.0.0.1:0) at once, over
// shared and private channels: every answer must equal the one computed alone, byte for byte
// (SEMANTICS.md §0.5: equal requests give byte-identical responses, whatever else runs).
// `make test-sanitize` runs this test under ThreadSanitizer.
#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "arbiter/v1/arbiter.pb.h"
#include "edge/calls.h"
#include "edge/wire.h"
#include "gtest/gtest.h"
#include "tests/integration/server_harness.h"

namespace arbiter::testing {
namespace {

constexpr char kComputeFairShares[] = "/arbiter.v1.Arbiter/ComputeFairShares";
constexpr char kSchedule[] = "/arbiter.v1.Arbiter/Schedule";

// One call and the answer it must get: the response bytes, or "CODE: message" for an error.
struct Call {
  std::string label;
  std::string method;
  std::string request;
  std::string expected;
};

std::string Describe(const grpc::Status& status) {
  return absl::StrCat(static_cast<int>(status.error_code()), ": ", status.error_message());
}

template <typename Response>
std::string Expected(const absl::StatusOr<Response>& answer) {
  if (answer.ok()) return edge::SerializeDeterministic(*answer);
  // The server maps absl codes to the gRPC codes of the same number.
  return absl::StrCat(static_cast<int>(answer.status().code()), ": ", answer.status().message());
}

// The requests of the repository (KAI and Kueue examples, the scenario requests, generated
// snapshots) plus one invalid request, each for both methods, with the answers computed alone.
std::vector<Call> Calls() {
  const std::vector<std::string> files = {
      "examples/demo.json",
      "examples/kep1714-story3.json",
      "tests/scenarios/kai/binpack/request.json",
      "tests/scenarios/kai/gang_fits_only_whole/request.json",
      "tests/scenarios/kai/limit_up_the_tree/request.json",
      "tests/scenarios/kai/non_preemptible_over_quota/request.json",
      "tests/scenarios/kai/pipelined_onto_releasing/request.json",
      "tests/scenarios/kai/selectors_and_taints/request.json",
      "tests/scenarios/kai/spread/request.json",
      "tests/fuzz/corpus/generated-kai-s-1.pb",
      "tests/fuzz/corpus/generated-kai-tiny-reclaim.pb",
      "tests/fuzz/corpus/generated-kueue-s-1.pb",
  };
  std::vector<v1::ScheduleRequest> requests;
  std::vector<std::string> labels;
  for (const std::string& file : files) {
    requests.emplace_back();
    ReadSourceMessage(file, &requests.back());
    labels.push_back(file);
  }
  v1::ScheduleRequest invalid = requests.front();
  invalid.mutable_snapshot()->mutable_queues(1)->set_parent("no-such-queue");
  requests.push_back(invalid);
  labels.push_back("examples/demo.json with an unknown parent");

  std::vector<Call> calls;
  for (size_t i = 0; i < requests.size(); ++i) {
    const v1::ScheduleRequest& schedule = requests[i];
    v1::FairShareRequest fair_share;
    *fair_share.mutable_snapshot() = schedule.snapshot();
    *fair_share.mutable_policy() = schedule.policy();
    calls.push_back({labels[i] + " (ComputeFairShares)", kComputeFairShares,
                     edge::SerializeDeterministic(fair_share),
                     Expected(edge::CallComputeFairShares(fair_share))});
    calls.push_back({labels[i] + " (Schedule)", kSchedule, edge::SerializeDeterministic(schedule),
                     Expected(edge::CallSchedule(schedule))});
  }
  return calls;
}

std::string Answer(const std::shared_ptr<grpc::Channel>& channel, const Call& call) {
  const RawAnswer answer = CallRaw(channel, call.method, call.request);
  return answer.status.ok() ? answer.bytes : Describe(answer.status);
}

class ConcurrentCallsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server::ServerOptions options;
    options.host = "127.0.0.1";
    options.port = 0;
    options.metrics_port = 0;  // the metrics are updated by every call, from every worker
    options.workers = 4;       // more decisions in flight than cores
    absl::StatusOr<std::unique_ptr<server::ArbiterServer>> started =
        server::ArbiterServer::Start(options);
    ASSERT_TRUE(started.ok()) << started.status();
    server_ = *std::move(started);
    ASSERT_TRUE(WaitUntilServing(Connect(server_->address())));
  }

  std::unique_ptr<server::ArbiterServer> server_;
};

TEST_F(ConcurrentCallsTest, EveryAnswerEqualsTheSingleThreadedOne) {
  const std::vector<Call> calls = Calls();
  const std::shared_ptr<grpc::Channel> shared = Connect(server_->address());
  // Alone first: the server answers each call as the core does in-process.
  for (const Call& call : calls) {
    ASSERT_EQ(Answer(shared, call), call.expected) << call.label;
  }

  constexpr int kThreads = 12;
  constexpr int kCallsPerThread = 2 * 26;  // every call twice per thread, in shifted orders
  std::atomic<int> mismatches{0};
  std::vector<std::string> first_mismatch(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      // Half the threads share one channel (one HTTP/2 connection), half have their own.
      const std::shared_ptr<grpc::Channel> channel =
          t % 2 == 0 ? shared : Connect(server_->address());
      for (int i = 0; i < kCallsPerThread; ++i) {
        const Call& call = calls[(t * 7 + i) % calls.size()];
        if (i % 13 == 0) {
          const HealthAnswer health = CheckHealth(channel, "");
          if (health.serving_status != 1) {
            mismatches.fetch_add(1);
            if (first_mismatch[t].empty()) first_mismatch[t] = "health: " + Describe(health.status);
          }
        }
        if (Answer(channel, call) != call.expected) {
          mismatches.fetch_add(1);
          if (first_mismatch[t].empty()) first_mismatch[t] = call.label;
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();

  EXPECT_EQ(mismatches.load(), 0);
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(first_mismatch[t], "") << "thread " << t << " got a different answer";
  }
  const absl::StatusOr<std::string> metrics = HttpGet(server_->metrics_port(), "/metrics");
  ASSERT_TRUE(metrics.ok()) << metrics.status();
  EXPECT_NE(metrics->find("arbiter_rpc_requests_total"), std::string::npos);
}

// Calls still in flight when the server shuts down finish or fail cleanly; none hangs or
// crashes, and the server stops. (The client waits for a ready channel, so calls made after the
// shutdown end at their deadline.) The test waits until the server reports calls in flight and
// has answered each caller, and then checks that some call began before the shutdown and ended
// after it began: without such a call it would test a shutdown of an idle server.
TEST_F(ConcurrentCallsTest, ShutdownWhileCallsAreInFlight) {
  constexpr int kCallers = 6;
  const std::vector<Call> calls = Calls();
  std::atomic<bool> stop{false};
  std::atomic<bool> shutting_down{false};
  std::atomic<int> answered{0};        // right answers before the shutdown began
  std::atomic<int> callers_served{0};  // callers with at least one of them
  std::atomic<int> across{0};          // calls begun before the shutdown and ended after it began
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kCallers; ++t) {
    threads.emplace_back([&, t] {
      const std::shared_ptr<grpc::Channel> channel = Connect(server_->address());
      bool served = false;
      for (int i = 0; !stop.load(); ++i) {
        const Call& call = calls[(t + i) % calls.size()];
        const bool begun_before = !shutting_down.load();
        const RawAnswer answer = CallRaw(channel, call.method, call.request, absl::Seconds(3));
        if (begun_before && shutting_down.load()) across.fetch_add(1);
        const std::string got = answer.status.ok() ? answer.bytes : Describe(answer.status);
        if (got == call.expected) {
          if (!shutting_down.load()) answered.fetch_add(1);
          if (!served) callers_served.fetch_add(1);
          served = true;
          continue;
        }
        // A call refused or cut off by the shutdown is fine; any other answer must be the right
        // one.
        const grpc::StatusCode code = answer.status.error_code();
        if (code == grpc::StatusCode::UNAVAILABLE || code == grpc::StatusCode::CANCELLED ||
            code == grpc::StatusCode::DEADLINE_EXCEEDED) {
          break;
        }
        wrong.fetch_add(1);
      }
    });
  }
  // Every caller has been answered, and the server counts calls accepted and not yet answered.
  const bool busy = PollUntil(
      [&] {
        if (callers_served.load() < kCallers) return false;
        const absl::StatusOr<std::string> metrics = HttpGet(server_->metrics_port(), "/metrics");
        return metrics.ok() && MetricValue(*metrics, "arbiter_rpc_in_flight") >= 1;
      },
      absl::Seconds(60));
  shutting_down.store(true);
  if (busy) {
    server_->Shutdown(absl::Seconds(5));
    server_->Wait();
  }
  stop.store(true);
  for (std::thread& thread : threads) thread.join();
  ASSERT_TRUE(busy) << "no call in flight within 60 s: " << callers_served.load() << " of "
                    << kCallers << " callers answered, " << answered.load() << " answers";
  EXPECT_GE(across.load(), 1) << "no call was in flight when the shutdown began";
  EXPECT_EQ(wrong.load(), 0);
}

}  // namespace
}  // namespace arbiter::testing
