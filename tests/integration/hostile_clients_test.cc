// The server against hostile and careless clients: the built arbiter-server as a child process
// on loopback, so that a crash, a leak or a hang shows as the process dying, growing or not
// answering. Every loop here is bounded in count and time.
//
// Classes covered: empty answers; cancelled calls and expired deadlines, alone and in a mixed
// load; compressed bombs against a memory-capped server; the per-request limits enforced while
// decoding; answers too large to send; a small call next to large ones; bounded shutdown; the
// metrics endpoint under an idle connection and on IPv6; operator mistakes in the flags.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "arbiter/v1/arbiter.pb.h"
#include "edge/wire.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/integration/server_harness.h"
#include "tests/integration/server_process.h"
#include "tests/integration/subprocess.h"
#include "tests/support/wire_bytes.h"

namespace arbiter::testing {
namespace {

using ::testing::AnyOf;
using ::testing::HasSubstr;
using ::testing::Lt;

// AddressSanitizer reserves terabytes of shadow memory, which a data limit refuses, and its
// quarantine keeps freed memory resident: the memory tests run in the plain build only.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAddressSanitizer = true;
#else
constexpr bool kAddressSanitizer = false;
#endif

constexpr char kSchedule[] = "/arbiter.v1.Arbiter/Schedule";
constexpr char kComputeFairShares[] = "/arbiter.v1.Arbiter/ComputeFairShares";

// ---- Requests written byte by byte, as a hostile client would ----

// A length-delimited field.
std::string Field(int number, const std::string& bytes) {
  return Len(static_cast<uint32_t>(number), bytes);
}

// A request whose snapshot is `snapshot_fields` (request field 1), optionally with a policy.
std::string RequestWith(const std::string& snapshot_fields, const std::string& policy = "") {
  return Field(1, snapshot_fields) + (policy.empty() ? "" : Field(2, policy));
}

// Snapshot fields: 2 queues, 3 nodes, 4 pod groups. Pod group field 7 pods; node field 4 taints.
std::string EmptyQueues(int64_t count) { return RequestWith(Repeated(Field(2, ""), count)); }
std::string EmptyPods(int64_t count) {
  return RequestWith(Field(4, Repeated(Field(7, ""), count)));
}
std::string EmptyTaints(int64_t count) {
  return RequestWith(Field(3, Repeated(Field(4, ""), count)));
}

std::string DemoBytes() {
  v1::ScheduleRequest request;
  ReadSourceMessage("examples/demo.json", &request);
  return edge::SerializeDeterministic(request);
}

// A chain of `depth` queues, each the parent of the next (KAI when `kueue` is false).
std::string QueueChain(int depth, bool kueue) {
  v1::ScheduleRequest request;
  for (int i = 0; i < depth; ++i) {
    v1::Queue* queue = request.mutable_snapshot()->add_queues();
    queue->set_name(absl::StrCat("q", i));
    if (i > 0) queue->set_parent(absl::StrCat("q", i - 1));
  }
  if (kueue) request.mutable_policy()->set_fairness_model(v1::FAIRNESS_MODEL_KUEUE);
  return edge::SerializeDeterministic(request);
}

// A running server process with a channel to it.
class Hostile : public ::testing::Test {
 protected:
  void Start(std::vector<std::string> flags, const std::vector<std::string>& prefix = {}) {
    flags.insert(flags.end(), {"--metrics-port", "0"});
    server_ = std::make_unique<ServerProcess>(flags, dir_.File("stderr"), prefix);
    ASSERT_FALSE(server_->address().empty()) << ReadWhole(dir_.File("stderr"));
    channel_ = Connect(server_->address());
    ASSERT_TRUE(WaitUntilServing(channel_)) << ReadWhole(dir_.File("stderr"));
  }

  // A valid call answers OK: the server is up and serving.
  void ExpectServing() {
    ASSERT_TRUE(server_->Alive()) << Log();
    const RawAnswer answer = CallRaw(channel_, kSchedule, DemoBytes(), absl::Seconds(60));
    EXPECT_TRUE(answer.status.ok()) << answer.status.error_message() << "\n" << Log();
  }

  double Metric(const std::string& series) {
    const absl::StatusOr<std::string> body = HttpGet(server_->metrics_port(), "/metrics");
    return body.ok() ? MetricValue(*body, series) : -1;
  }

  std::string Log() { return ReadWhole(dir_.File("stderr")); }

  TempDir dir_;
  std::unique_ptr<ServerProcess> server_;
  std::shared_ptr<grpc::Channel> channel_;
};

// ---- Empty answers (a zero-byte answer once hit an assertion in gRPC's buffer writer) ----

TEST_F(Hostile, EmptyAnswersAreSentForBothMethods) {
  Start({});
  v1::ScheduleRequest nodes_only;
  v1::Node* node = nodes_only.mutable_snapshot()->add_nodes();
  node->set_name("n1");
  (*node->mutable_allocatable())["cpu"] = 1000;
  for (const char* method : {kSchedule, kComputeFairShares}) {
    for (const std::string& request :
         {std::string(), RequestWith(""), edge::SerializeDeterministic(nodes_only)}) {
      const RawAnswer answer = CallRaw(channel_, method, request);
      EXPECT_TRUE(answer.status.ok()) << method << ": " << answer.status.error_message();
      EXPECT_EQ(answer.bytes, "") << method;
    }
  }
  ExpectServing();
}

// ---- Cancellation and deadlines ----

TEST_F(Hostile, CallsCancelledAtEveryMomentNeverStopTheServer) {
  Start({"--workers", "2"});
  const std::string demo = DemoBytes();
  const std::string medium = GeneratedScheduleBytes("M", /*allocate_only=*/false);
  constexpr int kCallers = 8;
  constexpr int kCallsEach = 40;
  std::vector<std::thread> callers;
  for (int c = 0; c < kCallers; ++c) {
    callers.emplace_back([&, c] {
      for (int i = 0; i < kCallsEach; ++i) {
        RawCallOptions options;
        options.timeout = absl::Seconds(20);
        options.cancel_after = absl::Microseconds((c * kCallsEach + i) % 7 * 300);
        CallRawWith(channel_, kSchedule, i % 2 == 0 ? demo : medium, options);
      }
    });
  }
  for (std::thread& caller : callers) caller.join();
  ExpectServing();
}

TEST_F(Hostile, CallsWithExpiredOrTinyDeadlinesNeverStopTheServer) {
  Start({"--workers", "2"});
  const std::string demo = DemoBytes();
  const std::string medium = GeneratedScheduleBytes("M", /*allocate_only=*/false);
  std::vector<std::thread> callers;
  for (int c = 0; c < 8; ++c) {
    callers.emplace_back([&, c] {
      for (int i = 0; i < 40; ++i) {
        const RawAnswer answer = CallRaw(channel_, kSchedule, (c + i) % 2 == 0 ? demo : medium,
                                         absl::Microseconds(((c + i) % 5) * 500 + 1));
        EXPECT_THAT(answer.status.error_code(),
                    AnyOf(grpc::StatusCode::OK, grpc::StatusCode::DEADLINE_EXCEEDED,
                          grpc::StatusCode::CANCELLED));
      }
    });
  }
  for (std::thread& caller : callers) caller.join();
  ExpectServing();
}

// A call cancelled in the middle of a long reclaim stops there: the server answers it soon after
// the cancellation instead of finishing the cycle (about 5 s for this request).
TEST_F(Hostile, ACallCancelledInTheMiddleOfTheCycleStopsThere) {
  Start({"--workers", "1"});
  const std::string large = GeneratedScheduleBytes("L", /*allocate_only=*/false);
  for (const int after_ms : {800, 1500}) {
    RawCallOptions options;
    options.timeout = absl::Seconds(120);
    options.cancel_after = absl::Milliseconds(after_ms);
    const std::string id = absl::StrCat("cancel-", after_ms);
    options.metadata = {{"x-request-id", id}};
    const absl::Time sent = absl::Now();
    const RawAnswer answer = CallRawWith(channel_, kSchedule, large, options);
    EXPECT_EQ(answer.status.error_code(), grpc::StatusCode::CANCELLED);
    ASSERT_TRUE(PollUntil([&] { return Log().find("request_id=" + id) != std::string::npos; },
                          absl::Seconds(30)));
    const absl::Duration answered = absl::Now() - sent;
    std::cout << "cancelled after " << after_ms << " ms: the server answered after "
              << absl::ToInt64Milliseconds(answered) << " ms\n";
    // The cycle alone takes seconds; a generous margin for a loaded machine.
    EXPECT_LT(answered, absl::Milliseconds(after_ms) + absl::Seconds(1)) << Log();
  }
  ExpectServing();
}

// ---- Requests whose cost is out of proportion to their size ----

// Each bomb below is a few kilobytes once gzip-compressed. The server runs with the Helm chart's
// memory limit as its data limit: a bomb must be refused before it is paid for.
TEST_F(Hostile, CompressedBombsAreRefusedByAMemoryCappedServer) {
  if (kAddressSanitizer) GTEST_SKIP() << "no data limit under AddressSanitizer";
  Start({"--workers", "2"}, {"/usr/bin/prlimit", "--data=1073741824", "--"});
  struct Bomb {
    std::string name;
    std::string bytes;
    grpc::StatusCode code;
    std::string flag;
  };
  v1::ScheduleRequest resource_names;  // 25 names of its own on each of 200 queues
  for (int q = 0; q < 200; ++q) {
    v1::Queue* queue = resource_names.mutable_snapshot()->add_queues();
    queue->set_name(absl::StrCat("q", q));
    for (int r = 0; r < 25; ++r) (*queue->mutable_deserved())[absl::StrCat("r", q * 25 + r)] = 1;
  }
  v1::ScheduleRequest wide_pod;
  for (int n = 0; n < 250; ++n) {
    v1::Node* node = wide_pod.mutable_snapshot()->add_nodes();
    node->set_name(absl::StrCat("n", n));
    (*node->mutable_allocatable())["cpu"] = 1000;
  }
  v1::Pod* pod = wide_pod.mutable_snapshot()->add_pod_groups()->add_pods();
  pod->set_name("p");
  for (int i = 0; i < 20000; ++i) (*pod->mutable_requests())[absl::StrCat("r", i)] = 1;

  const std::vector<Bomb> bombs = {
      {"3,000,000 empty queues", EmptyQueues(3'000'000), grpc::StatusCode::RESOURCE_EXHAUSTED,
       "--max-queues"},
      {"2,000,000 empty pods", EmptyPods(2'000'000), grpc::StatusCode::RESOURCE_EXHAUSTED,
       "--max-pods"},
      {"3,000,000 empty taints", EmptyTaints(3'000'000), grpc::StatusCode::RESOURCE_EXHAUSTED,
       "--max-decoded-bytes"},
      {"5,000 resource names on 200 queues", edge::SerializeDeterministic(resource_names),
       grpc::StatusCode::RESOURCE_EXHAUSTED, "--max-resource-names"},
      {"one pod requesting 20,000 resources", edge::SerializeDeterministic(wide_pod),
       grpc::StatusCode::RESOURCE_EXHAUSTED, "--max-resource-names"},
      {"a 49,000-cohort chain", QueueChain(49'000, /*kueue=*/true),
       grpc::StatusCode::INVALID_ARGUMENT, "--max-queue-depth"},
      {"a 100 KB queue name", RequestWith(Field(2, Field(1, std::string(100'000, 'x')))),
       grpc::StatusCode::INVALID_ARGUMENT, "--max-name-bytes"},
  };
  for (const Bomb& bomb : bombs) {
    RawCallOptions options;
    options.gzip = true;
    options.timeout = absl::Seconds(60);
    const RawAnswer answer = CallRawWith(channel_, kSchedule, bomb.bytes, options);
    EXPECT_EQ(answer.status.error_code(), bomb.code)
        << bomb.name << ": " << answer.status.error_message();
    EXPECT_THAT(answer.status.error_message(), HasSubstr(bomb.flag)) << bomb.name;
    EXPECT_THAT(answer.status.error_message().size(), Lt(1024u)) << bomb.name;
    ASSERT_TRUE(server_->Alive()) << bomb.name << "\n" << Log();
  }
  ExpectServing();
}

// Each limit is named in the answer with its field path, for either method.
TEST_F(Hostile, EveryLimitIsEnforcedWhileDecodingAndNamed) {
  Start({"--max-queues", "10", "--max-pod-groups", "10", "--max-nodes", "10", "--max-pods", "10",
         "--max-resource-names", "3", "--max-name-bytes", "64", "--max-queue-depth", "4",
         "--max-decoded-bytes", "100000"});
  struct Case {
    std::string bytes;
    grpc::StatusCode code;
    std::string message;
  };
  const std::vector<Case> cases = {
      {EmptyQueues(11), grpc::StatusCode::RESOURCE_EXHAUSTED,
       "snapshot.queues: more than 10 queues; this server accepts at most 10 (--max-queues)"},
      {RequestWith(Repeated(Field(4, ""), 11)), grpc::StatusCode::RESOURCE_EXHAUSTED,
       "snapshot.pod_groups: more than 10 pod groups; this server accepts at most 10 "
       "(--max-pod-groups)"},
      {RequestWith(Repeated(Field(3, ""), 11)), grpc::StatusCode::RESOURCE_EXHAUSTED,
       "snapshot.nodes: more than 10 nodes; this server accepts at most 10 (--max-nodes)"},
      {EmptyPods(11), grpc::StatusCode::RESOURCE_EXHAUSTED,
       "snapshot.pod_groups[0].pods: more than 10 pods in all pod groups; this server accepts "
       "at most 10 (--max-pods)"},
      {RequestWith(Field(3, Field(2, Field(1, "a") + "\x11" + std::string(8, '\0')) +
                                Field(2, Field(1, "b") + "\x11" + std::string(8, '\0')) +
                                Field(2, Field(1, "c") + "\x11" + std::string(8, '\0')) +
                                Field(2, Field(1, "d") + "\x11" + std::string(8, '\0')))),
       grpc::StatusCode::RESOURCE_EXHAUSTED,
       "snapshot.nodes[0].allocatable: more than 3 distinct resource names in the request; this "
       "server accepts at most 3 (--max-resource-names)"},
      {RequestWith(Field(4, Field(1, std::string(65, 'g')))), grpc::StatusCode::INVALID_ARGUMENT,
       "snapshot.pod_groups[0].name: 65 bytes; this server accepts names, keys and values of at "
       "most 64 bytes (--max-name-bytes)"},
      {QueueChain(5, false), grpc::StatusCode::INVALID_ARGUMENT,
       "snapshot.queues[4]: the queue tree is 5 levels deep here; at most 4 levels are accepted "
       "(--max-queue-depth)"},
      {EmptyTaints(5000), grpc::StatusCode::RESOURCE_EXHAUSTED, "(--max-decoded-bytes)"},
  };
  for (const char* method : {kSchedule, kComputeFairShares}) {
    for (const Case& c : cases) {
      const RawAnswer answer = CallRaw(channel_, method, c.bytes);
      EXPECT_EQ(answer.status.error_code(), c.code) << answer.status.error_message();
      EXPECT_THAT(answer.status.error_message(), HasSubstr(c.message));
    }
  }
  ASSERT_TRUE(server_->Alive()) << Log();
  EXPECT_TRUE(CallRaw(channel_, kSchedule, "").status.ok());
}

// An answer over --max-message-bytes is refused, and the log and the metrics say so.
TEST_F(Hostile, AnAnswerTooLargeToSendIsRefusedAndCountedAsSuch) {
  // 200 queues on a node with three resources: each queue's share names all three, four times.
  v1::ScheduleRequest shares;
  v1::Node* node = shares.mutable_snapshot()->add_nodes();
  node->set_name("n");
  for (const char* resource : {"cpu", "memory", "nvidia.com/gpu"}) {
    (*node->mutable_allocatable())[resource] = 1000;
  }
  for (int q = 0; q < 200; ++q) shares.mutable_snapshot()->add_queues()->set_name(absl::StrCat(q));
  const std::string request = edge::SerializeDeterministic(shares);
  Start({"--max-message-bytes", absl::StrCat(request.size() + 16)});
  const RawAnswer answer =
      CallRaw(channel_, kSchedule, request, absl::Seconds(30), {{"x-request-id", "too-large"}});
  EXPECT_EQ(answer.status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(answer.status.error_message(), HasSubstr("(--max-message-bytes)"));
  ASSERT_TRUE(PollUntil([&] { return Log().find("request_id=too-large") != std::string::npos; },
                        absl::Seconds(10)));
  EXPECT_THAT(Log(), HasSubstr("request_id=too-large code=RESOURCE_EXHAUSTED"));
  EXPECT_EQ(Metric("arbiter_rpc_requests_total{code=\"RESOURCE_EXHAUSTED\",method=\"Schedule\"}"),
            1);
  EXPECT_LE(Metric("arbiter_rpc_requests_total{code=\"OK\",method=\"Schedule\"}"), 0);
}

// A message that would echo a huge name is cut, so the client gets INVALID_ARGUMENT with the
// field path rather than an error about the size of the trailers.
TEST_F(Hostile, AnErrorAboutAHugeNameIsCappedAndKeepsItsPath) {
  Start({"--max-name-bytes", "1000000"});
  const std::string queue = Field(2, Field(1, std::string(100'000, 'q')));
  const RawAnswer answer = CallRaw(channel_, kSchedule, RequestWith(queue + queue),
                                   absl::Seconds(30), {{"x-request-id", "huge-name"}});
  EXPECT_EQ(answer.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT)
      << answer.status.error_message().substr(0, 300);
  EXPECT_THAT(answer.status.error_message(), ::testing::StartsWith("snapshot.queues[1]"));
  EXPECT_LT(answer.status.error_message().size(), 4096u);
  ASSERT_TRUE(PollUntil([&] { return Log().find("request_id=huge-name") != std::string::npos; },
                        absl::Seconds(10)));
  EXPECT_LT(Log().size(), 64u << 10) << "the log echoes the name whole";
}

// ---- Fair queuing and shutdown ----

// With the only general worker busy on large calls, a small call is answered by the small lane
// before any of them.
TEST_F(Hostile, ASmallCallIsAnsweredBeforeTheLargeOnesAheadOfIt) {
  Start({"--workers", "1", "--small-lane-workers", "1"});
  const std::string large = GeneratedScheduleBytes("L", /*allocate_only=*/false);
  std::atomic<int> large_done{0};
  std::vector<std::thread> callers;
  for (int i = 0; i < 2; ++i) {
    callers.emplace_back([&] {
      CallRaw(channel_, kSchedule, large, absl::Seconds(20));
      ++large_done;
    });
  }
  ASSERT_TRUE(PollUntil([&] { return Metric("arbiter_rpc_in_flight") >= 2; }, absl::Seconds(30)));
  const RawAnswer small = CallRaw(channel_, kSchedule, DemoBytes(), absl::Seconds(120));
  EXPECT_TRUE(small.status.ok()) << small.status.error_message();
  EXPECT_EQ(large_done.load(), 0) << "the small call waited for a large one";
  for (std::thread& caller : callers) caller.join();
}

TEST_F(Hostile, AFullQueueAnswersUnavailableAtOnce) {
  Start({"--workers", "1", "--small-lane-workers", "0", "--max-queued-calls", "1"});
  const std::string large = GeneratedScheduleBytes("L", /*allocate_only=*/false);
  std::vector<std::thread> callers;
  std::atomic<int> unavailable{0};
  for (int i = 0; i < 4; ++i) {
    callers.emplace_back([&] {
      const RawAnswer answer = CallRaw(channel_, kSchedule, large, absl::Seconds(20));
      if (answer.status.error_code() == grpc::StatusCode::UNAVAILABLE) {
        EXPECT_THAT(answer.status.error_message(), HasSubstr("retry"));
        ++unavailable;
      }
    });
  }
  for (std::thread& caller : callers) caller.join();
  // One runs, one waits: at least two of the four found the queue full.
  EXPECT_GE(unavailable.load(), 2);
  // The callers that waited have given up: the server drops their calls and is free again.
  EXPECT_TRUE(PollUntil([&] { return Metric("arbiter_rpc_in_flight") == 0; }, absl::Seconds(120)))
      << Log();
  ExpectServing();
}

// SIGTERM with long calls running and queued: the process is gone within drain + grace + 1 s
// (plus the time to notice it).
TEST_F(Hostile, ShutdownIsBoundedByDrainAndGraceWhateverIsRunning) {
  Start({"--workers", "1", "--drain-seconds", "0.5", "--shutdown-grace-seconds", "0.5"});
  const std::string large = GeneratedScheduleBytes("L", /*allocate_only=*/false);
  std::vector<std::thread> callers;
  for (int i = 0; i < 3; ++i) {
    callers.emplace_back([&] { CallRaw(channel_, kSchedule, large, absl::Seconds(20)); });
  }
  ASSERT_TRUE(PollUntil([&] { return Metric("arbiter_rpc_in_flight") >= 3; }, absl::Seconds(30)));
  const absl::Time signalled = absl::Now();
  server_->process().Signal(SIGTERM);
  EXPECT_EQ(server_->process().Wait(), 0) << Log();
  EXPECT_LT(absl::Now() - signalled, absl::Seconds(0.5 + 0.5 + 1 + 1.5)) << Log();
  for (std::thread& caller : callers) caller.join();
}

// ---- The metrics endpoint ----

TEST_F(Hostile, AnIdleConnectionToTheMetricsPortDoesNotHoldUpScrapes) {
  Start({});
  const int idle = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address = {};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(server_->metrics_port()));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(connect(idle, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  for (int i = 0; i < 5; ++i) {
    const absl::StatusOr<std::string> body = HttpGet(server_->metrics_port(), "/metrics");
    ASSERT_TRUE(body.ok()) << body.status();
    EXPECT_THAT(*body, HasSubstr("arbiter_rpc_in_flight"));
  }
  close(idle);
}

TEST(HostileFlags, AnIpv6HostServesBothPorts) {
  TempDir dir;
  ServerProcess server({"--host", "::1", "--metrics-port", "0"}, dir.File("stderr"));
  ASSERT_THAT(server.address(), ::testing::StartsWith("[::1]:")) << ReadWhole(dir.File("stderr"));
  ASSERT_GT(server.metrics_port(), 0);
  const std::shared_ptr<grpc::Channel> channel = Connect(server.address());
  ASSERT_TRUE(WaitUntilServing(channel));
  EXPECT_TRUE(CallRaw(channel, kSchedule, DemoBytes()).status.ok());
  const ProcessResult scrape = RunProcess(
      {"/bin/bash", "-c",
       absl::StrCat(
           "exec 3<>/dev/tcp/::1/", server.metrics_port(),
           " 2>/dev/null || exit 9; printf 'GET /metrics HTTP/1.0\\r\\n\\r\\n' >&3; cat <&3")});
  if (scrape.exit_code != 9) {  // /bin/sh without /dev/tcp cannot scrape: the bind still counts
    EXPECT_THAT(scrape.out, HasSubstr("arbiter_rpc_in_flight"));
  }
}

// ---- Operator mistakes: refused with the flag's name, never a crash ----

TEST(HostileFlags, BadFlagValuesAreRefusedByName) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--workers", "100000"}, "--workers"},
      {{"--small-lane-workers", "-1"}, "--small-lane-workers"},
      {{"--drain-seconds", "nan"}, "--drain-seconds"},
      {{"--shutdown-grace-seconds", "inf"}, "--shutdown-grace-seconds"},
      {{"--max-queues", "-5"}, "--max-queues"},
      {{"--max-queue-depth", "0"}, "--max-queue-depth"},
      {{"--max-queued-calls", "0"}, "--max-queued-calls"},
  };
  for (const auto& [flags, named] : cases) {
    std::vector<std::string> argv = {ARBITER_SERVER_PATH, "--port", "0", "--metrics-port", "-1"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    const ProcessResult result = RunProcess(argv);
    EXPECT_EQ(result.exit_code, 2) << flags[0] << " " << flags[1] << ": " << result.err;
    EXPECT_THAT(result.err, HasSubstr(named)) << flags[0];
  }
}

TEST(HostileFlags, AKeyThatDoesNotMatchTheCertificateIsNamed) {
  TempDir dir;
  const auto openssl = [&](const std::string& name) {
    return RunProcess({"/usr/bin/openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days",
                       "1", "-subj", "/CN=localhost", "-keyout", dir.File(name + ".key"), "-out",
                       dir.File(name + ".crt")});
  };
  ASSERT_EQ(openssl("a").exit_code, 0);
  ASSERT_EQ(openssl("b").exit_code, 0);
  const ProcessResult result =
      RunProcess({ARBITER_SERVER_PATH, "--port", "0", "--metrics-port", "-1", "--tls-cert",
                  dir.File("a.crt"), "--tls-key", dir.File("b.key")});
  EXPECT_NE(result.exit_code, 0);
  EXPECT_THAT(result.err, HasSubstr("--tls-cert"));
  EXPECT_THAT(result.err, HasSubstr("--tls-key"));
  EXPECT_THAT(result.err, ::testing::Not(HasSubstr("cannot listen")));
}

// ---- The chart's flags and memory limit agree ----

// The server's flags as the Kustomize base (the chart rendered with its defaults) passes them,
// ports left to the test.
std::vector<std::string> ChartServerFlags() {
  std::istringstream manifest(
      ReadWhole(SourcePath("deploy/kustomize/base/server-deployment.yaml")));
  std::vector<std::string> flags;
  for (std::string line; std::getline(manifest, line);) {
    const size_t dash = line.find("- --");
    if (dash == std::string::npos) continue;
    const std::string flag = line.substr(dash + 2);
    if (flag.rfind("--port=", 0) == 0 || flag.rfind("--metrics-port=", 0) == 0) continue;
    flags.push_back(flag);
  }
  return flags;
}

// With the chart's flags and its 1 GiB limit as the data limit: the L preset is served next to a
// small call, XL is refused by name, and the server is still up.
TEST_F(Hostile, TheChartsFlagsServeLAndRefuseXlWithinItsMemoryLimit) {
  if (kAddressSanitizer) GTEST_SKIP() << "no data limit under AddressSanitizer";
  const std::vector<std::string> flags = ChartServerFlags();
  ASSERT_THAT(flags, ::testing::Contains(::testing::StartsWith("--max-decoded-bytes=")));
  Start(flags, {"/usr/bin/prlimit", "--data=1073741824", "--"});
  const std::string large = GeneratedScheduleBytes("L", /*allocate_only=*/false);
  RawAnswer large_answer;
  std::thread caller(
      [&] { large_answer = CallRaw(channel_, kSchedule, large, absl::Seconds(300)); });
  EXPECT_TRUE(CallRaw(channel_, kSchedule, DemoBytes(), absl::Seconds(60)).status.ok());
  caller.join();
  EXPECT_TRUE(large_answer.status.ok()) << large_answer.status.error_message() << "\n" << Log();

  const RawAnswer xl =
      CallRaw(channel_, kSchedule, GeneratedScheduleBytes("XL"), absl::Seconds(300));
  EXPECT_EQ(xl.status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(xl.status.error_message(), HasSubstr("--max-decoded-bytes)"));
  ExpectServing();
}

// ---- A mixed load ----

// Many callers at once, mixing valid calls with cancellations, tiny deadlines, garbage, bombs and
// empty requests. Afterwards the server is up, nothing is in flight, its descriptors are back
// and its memory is near where it started.
TEST_F(Hostile, AMixedLoadLeavesTheServerAsItFoundIt) {
  Start({"--workers", "2"});
  const std::string demo = DemoBytes();
  const std::string medium = GeneratedScheduleBytes("M", /*allocate_only=*/false);
  const std::string bomb = EmptyQueues(3'000'000);
  std::string garbage;
  for (int i = 0; i < 4096; ++i) garbage.push_back(static_cast<char>((i * 7919) % 251));
  // Warm up: the server's pools, arenas and channels as a steady load leaves them.
  for (int i = 0; i < 4; ++i) CallRaw(channel_, kSchedule, medium);
  ExpectServing();
  // The memory the warm-up freed is given back once the server has been idle for a while.
  ASSERT_TRUE(
      PollUntil([&] { return Metric("arbiter_memory_trims_total") >= 1; }, absl::Seconds(30)));
  const int64_t rss_before = server_->ResidentBytes();
  const int fds_before = server_->OpenDescriptors();

  constexpr int kCallers = 24;
  constexpr int kCallsEach = 25;
  std::vector<std::thread> callers;
  for (int c = 0; c < kCallers; ++c) {
    callers.emplace_back([&, c] {
      // Each caller has its own channel, as separate clients do.
      const std::shared_ptr<grpc::Channel> channel = Connect(server_->address());
      for (int i = 0; i < kCallsEach; ++i) {
        RawCallOptions options;
        options.timeout = absl::Seconds(30);
        std::string request = demo;
        switch ((c + i) % 7) {
          case 0:
            request = medium;
            break;
          case 1:
            request = medium;
            options.cancel_after = absl::Milliseconds(i % 5);
            break;
          case 2:
            request = medium;
            options.timeout = absl::Milliseconds(1 + i % 3);
            break;
          case 3:
            request = garbage;
            break;
          case 4:
            request = bomb;
            options.gzip = true;
            break;
          case 5:
            request = "";
            break;
          default:
            break;
        }
        CallRawWith(channel, (c + i) % 2 == 0 ? kSchedule : kComputeFairShares, request, options);
      }
    });
  }
  for (std::thread& caller : callers) caller.join();

  ExpectServing();
  EXPECT_TRUE(PollUntil([&] { return Metric("arbiter_rpc_in_flight") == 0; }, absl::Seconds(30)));
  // Descriptors: the callers' connections close on the server's side a little after the client's.
  EXPECT_TRUE(
      PollUntil([&] { return server_->OpenDescriptors() <= fds_before + 2; }, absl::Seconds(30)))
      << server_->OpenDescriptors() << " open, " << fds_before << " before";
  // Under load the freed memory is kept for the next calls; idle, it is given back.
  const int64_t bound = rss_before + (int64_t{96} << 20);
  if (!kAddressSanitizer) {
    PollUntil([&] { return server_->ResidentBytes() < bound; }, absl::Seconds(30));
  }
  const int64_t rss_after = server_->ResidentBytes();
  std::cout << "mixed load of " << kCallers * kCallsEach << " calls: RSS " << rss_before / (1 << 20)
            << " MiB before, " << rss_after / (1 << 20) << " MiB after; descriptors " << fds_before
            << " before, " << server_->OpenDescriptors() << " after\n";
  if (kAddressSanitizer) return;  // its quarantine keeps freed memory resident
  EXPECT_LT(rss_after, bound) << "RSS " << rss_before / (1 << 20) << " MiB before, "
                              << rss_after / (1 << 20) << " MiB after";
}

}  // namespace
}  // namespace arbiter::testing
