// The real arbiter-server, in-process on 127.0.0.1:0, called over real channels.
#include <string>
#include <vector>

#include "arbiter/v1/arbiter.grpc.pb.h"
#include "edge/calls.h"
#include "edge/wire.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "tests/integration/server_harness.h"

namespace arbiter::testing {
namespace {

using ::google::protobuf::util::MessageDifferencer;
using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr char kComputeFairShares[] = "/arbiter.v1.Arbiter/ComputeFairShares";
constexpr char kSchedule[] = "/arbiter.v1.Arbiter/Schedule";

class ServerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { server_ = StartTestServer().release(); }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }

  void SetUp() override {
    channel_ = Connect(server_->address());
    stub_ = v1::Arbiter::NewStub(channel_);
  }

  static v1::ScheduleRequest Demo() {
    v1::ScheduleRequest request;
    ReadSourceMessage("examples/demo.json", &request);
    return request;
  }

  static v1::FairShareRequest DemoFairShare() {
    const v1::ScheduleRequest demo = Demo();
    v1::FairShareRequest request;
    *request.mutable_snapshot() = demo.snapshot();
    *request.mutable_policy() = demo.policy();
    return request;
  }

  static server::ArbiterServer* server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Arbiter::Stub> stub_;
};

server::ArbiterServer* ServerTest::server_ = nullptr;

TEST_F(ServerTest, ComputeFairSharesAnswersAsTheCoreDoes) {
  const v1::FairShareRequest request = DemoFairShare();
  grpc::ClientContext context;
  v1::FairShareResponse response;
  const grpc::Status status = stub_->ComputeFairShares(&context, request, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();

  const absl::StatusOr<v1::FairShareResponse> expected = edge::CallComputeFairShares(request);
  ASSERT_TRUE(expected.ok()) << expected.status();
  EXPECT_TRUE(MessageDifferencer::Equals(response, *expected));
  EXPECT_EQ(response.queues_size(), request.snapshot().queues_size());
}

TEST_F(ServerTest, ScheduleAnswersAsTheCoreDoes) {
  const v1::ScheduleRequest request = Demo();
  grpc::ClientContext context;
  v1::ScheduleResponse response;
  const grpc::Status status = stub_->Schedule(&context, request, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();

  const absl::StatusOr<v1::ScheduleResponse> expected = edge::CallSchedule(request);
  ASSERT_TRUE(expected.ok()) << expected.status();
  EXPECT_TRUE(MessageDifferencer::Equals(response, *expected));
  EXPECT_GT(response.bindings_size(), 0);
  EXPECT_GT(response.pending_size(), 0);
}

// SEMANTICS.md §0.5: the bytes on the wire are the deterministic serialisation, the same for
// every call with an equal request.
TEST_F(ServerTest, ResponseBytesAreDeterministic) {
  const v1::ScheduleRequest request = Demo();
  const std::string bytes = edge::SerializeDeterministic(request);
  const RawAnswer first = CallRaw(channel_, kSchedule, bytes);
  const RawAnswer second = CallRaw(channel_, kSchedule, bytes);
  ASSERT_TRUE(first.status.ok()) << first.status.error_message();
  ASSERT_TRUE(second.status.ok()) << second.status.error_message();
  EXPECT_EQ(first.bytes, second.bytes);

  const absl::StatusOr<v1::ScheduleResponse> expected = edge::CallSchedule(request);
  ASSERT_TRUE(expected.ok()) << expected.status();
  EXPECT_EQ(first.bytes, edge::SerializeDeterministic(*expected));
}

// SEMANTICS.md §1: bad input is INVALID_ARGUMENT with the field path first in the message.
TEST_F(ServerTest, BadInputAnswersInvalidArgumentWithFieldPath) {
  v1::FairShareRequest request = DemoFairShare();
  request.mutable_snapshot()->mutable_queues(1)->set_parent("no-such-queue");
  grpc::ClientContext context;
  v1::FairShareResponse response;
  const grpc::Status status = stub_->ComputeFairShares(&context, request, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), StartsWith("snapshot.queues[1].parent: "));
  EXPECT_THAT(status.error_message(), HasSubstr("no-such-queue"));
}

TEST_F(ServerTest, ScheduleRejectsBadInputWithFieldPath) {
  v1::ScheduleRequest request = Demo();
  request.mutable_snapshot()->mutable_pod_groups(0)->set_queue("research");  // not a leaf
  grpc::ClientContext context;
  v1::ScheduleResponse response;
  const grpc::Status status = stub_->Schedule(&context, request, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), StartsWith("snapshot.pod_groups[0].queue: "));
}

TEST_F(ServerTest, BytesThatAreNoRequestAnswerInvalidArgument) {
  const std::string truncated = edge::SerializeDeterministic(Demo()).substr(0, 100);
  for (const char* method : {kComputeFairShares, kSchedule}) {
    const RawAnswer answer = CallRaw(channel_, method, truncated);
    EXPECT_EQ(answer.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << method;
    EXPECT_THAT(answer.status.error_message(), StartsWith("request: not a valid binary"));
  }
}

TEST_F(ServerTest, HealthReportsServing) {
  for (const char* service : {"", "arbiter.v1.Arbiter"}) {
    const HealthAnswer answer = CheckHealth(channel_, service);
    ASSERT_TRUE(answer.status.ok()) << answer.status.error_message();
    EXPECT_EQ(answer.serving_status, 1) << "service \"" << service << "\"";
  }
}

TEST_F(ServerTest, ReflectionListsTheServices) {
  const absl::StatusOr<std::vector<std::string>> services = ListServicesByReflection(channel_);
  ASSERT_TRUE(services.ok()) << services.status();
  EXPECT_THAT(*services, Contains("arbiter.v1.Arbiter"));
  EXPECT_THAT(*services, Contains("grpc.health.v1.Health"));
}

TEST(ServerMetrics, CountCallsByMethodAndCode) {
  const std::unique_ptr<server::ArbiterServer> server = StartTestServer(/*metrics=*/true);
  std::unique_ptr<v1::Arbiter::Stub> stub = v1::Arbiter::NewStub(Connect(server->address()));
  grpc::ClientContext context;
  v1::FairShareResponse response;
  v1::FairShareRequest request;
  ReadSourceMessage("examples/demo.json", &request);
  ASSERT_TRUE(stub->ComputeFairShares(&context, request, &response).ok());
  grpc::ClientContext bad_context;
  v1::FairShareRequest bad = request;
  bad.mutable_snapshot()->mutable_queues(0)->set_name("");
  ASSERT_FALSE(stub->ComputeFairShares(&bad_context, bad, &response).ok());

  const absl::StatusOr<std::string> metrics = HttpGet(server->metrics_port(), "/metrics");
  ASSERT_TRUE(metrics.ok()) << metrics.status();
  EXPECT_THAT(*metrics,
              HasSubstr("arbiter_rpc_requests_total{code=\"OK\",method=\"ComputeFairShares\"}"));
  EXPECT_THAT(*metrics, HasSubstr("arbiter_rpc_requests_total{code=\"INVALID_ARGUMENT\","
                                  "method=\"ComputeFairShares\"}"));
  EXPECT_THAT(*metrics, HasSubstr("arbiter_rpc_duration_seconds_bucket{code=\"OK\","
                                  "method=\"ComputeFairShares\",le=\"0.0001\"}"));
}

// gRPC's default 4 MB limit is raised (--max-message-bytes): a 60,000-node snapshot passes.
TEST_F(ServerTest, AcceptsRequestsAboveGrpcsDefaultLimit) {
  v1::FairShareRequest request = DemoFairShare();
  for (int i = 0; i < 60000; ++i) {
    v1::Node* node = request.mutable_snapshot()->add_nodes();
    node->set_name("extra-node-" + std::to_string(i));
    (*node->mutable_allocatable())["cpu"] = 64000;
    (*node->mutable_allocatable())["memory"] = 549755813888;
    (*node->mutable_labels())["topology.kubernetes.io/zone"] = "zone-" + std::to_string(i % 3);
  }
  ASSERT_GT(request.ByteSizeLong(), 4u << 20);
  grpc::ClientContext context;
  v1::FairShareResponse response;
  const grpc::Status status = stub_->ComputeFairShares(&context, request, &response);
  EXPECT_TRUE(status.ok()) << status.error_message();
}

TEST_F(ServerTest, ServesConcurrentCalls) {
  const v1::ScheduleRequest request = Demo();
  const absl::StatusOr<v1::ScheduleResponse> expected = edge::CallSchedule(request);
  ASSERT_TRUE(expected.ok());
  const std::string expected_bytes = edge::SerializeDeterministic(*expected);
  const std::string request_bytes = edge::SerializeDeterministic(request);
  std::vector<std::thread> clients;
  std::vector<std::string> answers(8);
  for (int i = 0; i < 8; ++i) {
    clients.emplace_back([&, i] {
      const RawAnswer answer = CallRaw(channel_, kSchedule, request_bytes);
      answers[i] = answer.status.ok() ? answer.bytes : answer.status.error_message();
    });
  }
  for (std::thread& client : clients) client.join();
  for (const std::string& answer : answers) EXPECT_EQ(answer, expected_bytes);
}

}  // namespace
}  // namespace arbiter::testing
