// The server's limits: --max-nodes and --max-pods answer RESOURCE_EXHAUSTED with a clear
// message, and a client's deadline stops the work between phases with DEADLINE_EXCEEDED (the
// calls are held between two phases by ServerOptions::phase_observer until the deadline has
// passed, so that no test depends on how fast this machine is).
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "arbiter/v1/arbiter.pb.h"
#include "edge/wire.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/integration/server_harness.h"

namespace arbiter::testing {
namespace {

using ::testing::AnyOf;
using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::SizeIs;
using ::testing::StartsWith;

constexpr char kSchedule[] = "/arbiter.v1.Arbiter/Schedule";
constexpr char kComputeFairShares[] = "/arbiter.v1.Arbiter/ComputeFairShares";

v1::ScheduleRequest Demo() {
  v1::ScheduleRequest request;
  ReadSourceMessage("examples/demo.json", &request);
  return request;
}

int PodCount(const v1::ScheduleRequest& request) {
  int pods = 0;
  for (const v1::PodGroup& group : request.snapshot().pod_groups()) pods += group.pods_size();
  return pods;
}

TEST(Limits, DefaultsAcceptLargeSnapshots) {
  const server::ServerOptions options;
  EXPECT_EQ(options.limits.max_nodes, 100000);
  EXPECT_EQ(options.limits.max_pods, 1000000);
}

TEST(Limits, MoreNodesThanTheLimitIsResourceExhaustedForBothMethods) {
  const v1::ScheduleRequest demo = Demo();
  const int nodes = demo.snapshot().nodes_size();
  server::ServerOptions options;
  options.metrics_port = -1;
  options.limits.max_nodes = nodes - 1;
  std::unique_ptr<server::ArbiterServer> server = StartTestServer(options);
  const std::shared_ptr<grpc::Channel> channel = Connect(server->address());
  for (const char* method : {kComputeFairShares, kSchedule}) {
    const RawAnswer answer = CallRaw(channel, method, edge::SerializeDeterministic(demo));
    EXPECT_EQ(answer.status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << method;
    // Refused while decoding, at the first node over the limit.
    EXPECT_EQ(answer.status.error_message(), "snapshot.nodes: more than " +
                                                 std::to_string(nodes - 1) +
                                                 " nodes; this server accepts at most " +
                                                 std::to_string(nodes - 1) + " (--max-nodes)")
        << method;
  }
}

TEST(Limits, MorePodsThanTheLimitIsResourceExhaustedAndAtTheLimitIsServed) {
  const v1::ScheduleRequest demo = Demo();
  const int pods = PodCount(demo);
  server::ServerOptions options;
  options.metrics_port = -1;
  options.limits.max_pods = pods;
  std::unique_ptr<server::ArbiterServer> server = StartTestServer(options);
  const std::shared_ptr<grpc::Channel> channel = Connect(server->address());
  EXPECT_TRUE(CallRaw(channel, kSchedule, edge::SerializeDeterministic(demo)).status.ok());

  v1::ScheduleRequest above = demo;
  v1::Pod* extra = above.mutable_snapshot()->mutable_pod_groups(0)->add_pods();
  extra->set_name("one-too-many");
  const RawAnswer answer = CallRaw(channel, kSchedule, edge::SerializeDeterministic(above));
  EXPECT_EQ(answer.status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  // Refused while decoding, in the pod group where the count passes the limit.
  EXPECT_THAT(answer.status.error_message(), StartsWith("snapshot.pod_groups["));
  EXPECT_THAT(answer.status.error_message(),
              EndsWith("].pods: more than " + std::to_string(pods) +
                       " pods in all pod groups; this server accepts at most " +
                       std::to_string(pods) + " (--max-pods)"));
}

// ---- Deadlines ----

// Holds calls between two phases: the worker that ends phase `after` waits until Release.
class PhaseGate {
 public:
  explicit PhaseGate(std::string after) : after_(std::move(after)) {}

  server::PhaseObserver Observer() {
    return [this](std::string_view, std::string_view phase) {
      if (phase != after_) return;
      absl::MutexLock lock(&mutex_);
      held_ = true;
      mutex_.Await(absl::Condition(&released_));
    };
  }
  // Waits until a call is held; false after `timeout`.
  bool WaitUntilHeld(absl::Duration timeout) {
    absl::MutexLock lock(&mutex_);
    return mutex_.AwaitWithTimeout(absl::Condition(&held_), timeout);
  }
  void Release() {
    absl::MutexLock lock(&mutex_);
    released_ = true;
  }

 private:
  const std::string after_;
  absl::Mutex mutex_;
  bool held_ ABSL_GUARDED_BY(mutex_) = false;
  bool released_ ABSL_GUARDED_BY(mutex_) = false;
};

class Deadlines : public ::testing::Test {
 protected:
  // A server with one worker, whose calls wait after phase `gate_after` (none when empty).
  void Start(const std::string& gate_after = "") {
    server::ServerOptions options;
    options.metrics_port = 0;
    options.workers = 1;
    options.small_lane_workers = 0;
    options.log_sink = logs_.Sink();
    if (!gate_after.empty()) {
      gate_ = std::make_unique<PhaseGate>(gate_after);
      options.phase_observer = gate_->Observer();
    }
    server_ = StartTestServer(options);
    channel_ = Connect(server_->address());
  }

  void TearDown() override {
    if (gate_ != nullptr) gate_->Release();
    server_.reset();
  }

  // The server's log line for `request_id`, once the call has finished there.
  std::string CallLine(const std::string& request_id) {
    std::vector<std::string> lines;
    PollUntil(
        [&] {
          lines = logs_.LinesWith({" msg=call ", " request_id=" + request_id + " "});
          return !lines.empty();
        },
        absl::Seconds(120));
    EXPECT_THAT(lines, SizeIs(1)) << request_id;
    return lines.empty() ? "" : lines.front();
  }

  // A demo Schedule with `deadline`, its request id `id`, while a gate holds it after its phase:
  // the gate is released once the client has seen the deadline pass.
  RawAnswer HeldCall(const std::string& id, absl::Duration deadline) {
    RawAnswer answer;
    const absl::Time sent = absl::Now();
    std::thread caller([&] {
      answer = CallRaw(channel_, kSchedule, edge::SerializeDeterministic(Demo()), deadline,
                       {{"x-request-id", id}});
    });
    EXPECT_TRUE(gate_->WaitUntilHeld(absl::Seconds(60)));
    caller.join();  // returns when the client's deadline passes, the server still holding
    LetTheServersDeadlinePass(sent + deadline);
    gate_->Release();
    return answer;
  }

  // The server's view of a deadline starts when the call arrives, a little after the client's:
  // let it pass too (plus a margin for a loaded machine) before releasing the call, so that the
  // server's check sees it whether or not the client's cancellation has arrived yet.
  static void LetTheServersDeadlinePass(absl::Time client_deadline) {
    const absl::Duration left = client_deadline + absl::Milliseconds(500) - absl::Now();
    if (left > absl::ZeroDuration()) absl::SleepFor(left);
  }

  LogCapture logs_;
  std::unique_ptr<PhaseGate> gate_;
  std::unique_ptr<server::ArbiterServer> server_;
  std::shared_ptr<grpc::Channel> channel_;
};

// The deadline passes while the server decodes the request: it stops before validating it.
TEST_F(Deadlines, DeadlinePassedDuringDecodeStopsBeforeTheNextPhase) {
  Start(/*gate_after=*/"decode");
  const RawAnswer answer = HeldCall("held-after-decode", absl::Milliseconds(500));
  EXPECT_EQ(answer.status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  const std::string line = CallLine("held-after-decode");
  // The client always sees DEADLINE_EXCEEDED. The server's own log may name the client's
  // cancellation instead when it reaches the server before the server's clock passes the
  // deadline (a loaded machine), so the log accepts either.
  EXPECT_THAT(LogField(line, "code"), AnyOf("DEADLINE_EXCEEDED", "CANCELLED")) << line;
  EXPECT_THAT(LogField(line, "error"), HasSubstr("cancelled before phase validate"));
}

// The deadline passes during the core's fair-share phase: the core's cancellation check stops
// the cycle before allocate, and the server answers DEADLINE_EXCEEDED (not CANCELLED).
TEST_F(Deadlines, DeadlinePassedInsideTheCycleStopsBeforeTheNextCorePhase) {
  Start(/*gate_after=*/"fair_share");
  const RawAnswer answer = HeldCall("held-after-fair-share", absl::Milliseconds(500));
  EXPECT_EQ(answer.status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  const std::string line = CallLine("held-after-fair-share");
  EXPECT_THAT(LogField(line, "code"), AnyOf("DEADLINE_EXCEEDED", "CANCELLED")) << line;
  EXPECT_THAT(LogField(line, "error"), HasSubstr("cancelled before phase"));
}

// A large request with a deadline far shorter than its cycle: DEADLINE_EXCEEDED promptly, not a
// hang, the server never answers it OK, and it is free for the next call. The request runs all
// four actions, whose cycle at L takes seconds: an allocate-only L cycle takes under 100 ms on a
// fast machine, and the server then answered it OK within the deadline.
TEST_F(Deadlines, ALargeRequestWithATinyDeadlineFailsPromptly) {
  Start();
  const std::string request = GeneratedScheduleBytes("L", /*allocate_only=*/false);
  const absl::Time sent = absl::Now();
  const RawAnswer answer = CallRaw(channel_, kSchedule, request, absl::Milliseconds(100),
                                   {{"x-request-id", "tiny-deadline"}});
  EXPECT_EQ(answer.status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  EXPECT_LT(absl::Now() - sent, absl::Seconds(10));

  // One worker, calls in order: once this one is answered, the large one is done too.
  ASSERT_TRUE(CallRaw(channel_, kSchedule, edge::SerializeDeterministic(Demo()), absl::Seconds(120),
                      {{"x-request-id", "after-tiny"}})
                  .status.ok());
  for (const std::string& line : logs_.LinesWith({" request_id=tiny-deadline "})) {
    EXPECT_NE(LogField(line, "code"), "OK") << line;  // absent if it never reached a worker
  }
}

// A call whose deadline passes while it waits for the only worker is not started at all.
TEST_F(Deadlines, ACallWhoseDeadlinePassesInTheQueueIsNotStarted) {
  Start(/*gate_after=*/"decode");
  RawAnswer busy;
  std::thread occupier([&] {
    busy = CallRaw(channel_, kSchedule, edge::SerializeDeterministic(Demo()), absl::Seconds(120),
                   {{"x-request-id", "busy"}});
  });
  ASSERT_TRUE(gate_->WaitUntilHeld(absl::Seconds(60)));  // the only worker is held
  const absl::Time sent = absl::Now();
  const RawAnswer queued = CallRaw(channel_, kSchedule, edge::SerializeDeterministic(Demo()),
                                   absl::Milliseconds(200), {{"x-request-id", "queued"}});
  LetTheServersDeadlinePass(sent + absl::Milliseconds(200));
  gate_->Release();
  occupier.join();

  EXPECT_TRUE(busy.status.ok()) << busy.status.error_message();
  EXPECT_EQ(queued.status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  const std::string line = CallLine("queued");
  EXPECT_EQ(LogField(line, "code"), "DEADLINE_EXCEEDED") << line;
  EXPECT_THAT(LogField(line, "error"), HasSubstr("before phase decode")) << line;
}

}  // namespace
}  // namespace arbiter::testing
