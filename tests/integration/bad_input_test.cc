// The bad-input catalogue: malformed requests sent as bytes over a real channel to the real
// arbiter-server, each answered with the right gRPC code and a message that starts with the
// offending field's path (SEMANTICS.md §1), and the server still SERVING after all of them.
//
// Bytes that are not a request at all are parsed by the server itself (it serves raw byte
// buffers), so they answer INVALID_ARGUMENT with the path "request" instead of gRPC's INTERNAL.
// Requests above --max-message-bytes are refused by gRPC before the handler: RESOURCE_EXHAUSTED.
#include <cmath>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "arbiter/v1/arbiter.pb.h"
#include "edge/calls.h"
#include "edge/wire.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/integration/server_harness.h"
#include "tests/integration/subprocess.h"

namespace arbiter::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr char kComputeFairShares[] = "/arbiter.v1.Arbiter/ComputeFairShares";
constexpr char kSchedule[] = "/arbiter.v1.Arbiter/Schedule";
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInfinity = std::numeric_limits<double>::infinity();
// Requests above this size are refused by the small-limit server.
constexpr int64_t kSmallMessageLimit = 64 << 10;

enum class Methods { kBoth, kFairSharesOnly, kScheduleOnly };
enum class Target { kDefaultServer, kSmallLimitServer };

struct BadInput {
  std::string name;
  // The request as sent; see Mutated and the raw-bytes cases below.
  std::function<std::string()> bytes;
  grpc::StatusCode code;
  // The message starts with this: a field path and ": ", "request: " for bytes that do not
  // parse, or gRPC's own phrase when gRPC refuses the call before the server sees it.
  std::string message_prefix;
  Methods methods = Methods::kBoth;
  Target target = Target::kDefaultServer;
};

v1::ScheduleRequest Demo() {
  v1::ScheduleRequest request;
  ReadSourceMessage("examples/demo.json", &request);
  return request;
}

// examples/demo.json with `change` applied, as bytes. Its queues: research (0) > vision (1),
// nlp (2); product (3) > serving (4). Nodes gpu-1..gpu-4 (gpu-4 tainted). Pod groups:
// vision-train (0, two RUNNING pods), serving-api (1, RUNNING), nlp-finetune (2), serving-canary
// (3), vision-hpo (4), nlp-eval (5), the last four PENDING.
std::function<std::string()> Mutated(std::function<void(v1::ScheduleRequest&)> change) {
  return [change] {
    v1::ScheduleRequest request = Demo();
    change(request);
    return edge::SerializeDeterministic(request);
  };
}

std::function<std::string()> Raw(std::string bytes) {
  return [bytes] { return bytes; };
}

v1::Queue& QueueAt(v1::ScheduleRequest& r, int i) {
  return *r.mutable_snapshot()->mutable_queues(i);
}
v1::Node& NodeAt(v1::ScheduleRequest& r, int i) { return *r.mutable_snapshot()->mutable_nodes(i); }
v1::PodGroup& GroupAt(v1::ScheduleRequest& r, int i) {
  return *r.mutable_snapshot()->mutable_pod_groups(i);
}
v1::Pod& PodAt(v1::ScheduleRequest& r, int group, int pod) {
  return *GroupAt(r, group).mutable_pods(pod);
}

std::vector<BadInput> Catalogue() {
  using R = v1::ScheduleRequest;
  constexpr auto kInvalid = grpc::StatusCode::INVALID_ARGUMENT;
  std::vector<BadInput> cases = {
      // ---- §1 rule 1: enums out of range, policy ----
      {"FairnessModelOutOfRange", Mutated([](R& r) {
         r.mutable_policy()->set_fairness_model(static_cast<v1::FairnessModel>(7));
       }),
       kInvalid, "policy.fairness_model: "},
      {"PlacementNegative",
       Mutated([](R& r) { r.mutable_policy()->set_placement(static_cast<v1::Placement>(-1)); }),
       kInvalid, "policy.placement: "},
      {"ActionOutOfRange", Mutated([](R& r) {
         r.mutable_policy()->add_actions(v1::ACTION_ALLOCATE);
         r.mutable_policy()->add_actions(static_cast<v1::Action>(9));
       }),
       kInvalid, "policy.actions[1]: "},
      {"ActionUnspecified",
       Mutated([](R& r) { r.mutable_policy()->add_actions(v1::ACTION_UNSPECIFIED); }), kInvalid,
       "policy.actions[0]: "},
      {"DuplicateAction", Mutated([](R& r) {
         r.mutable_policy()->add_actions(v1::ACTION_ALLOCATE);
         r.mutable_policy()->add_actions(v1::ACTION_RECLAIM);
         r.mutable_policy()->add_actions(v1::ACTION_ALLOCATE);
       }),
       kInvalid, "policy.actions[2]: "},
      {"PodPhaseOutOfRange",
       Mutated([](R& r) { PodAt(r, 0, 1).set_phase(static_cast<v1::PodPhase>(4)); }), kInvalid,
       "snapshot.pod_groups[0].pods[1].phase: "},
      {"PreemptibilityOutOfRange",
       Mutated([](R& r) { GroupAt(r, 2).set_preemptibility(static_cast<v1::Preemptibility>(3)); }),
       kInvalid, "snapshot.pod_groups[2].preemptibility: "},
      {"KueuePreemptionOutOfRange", Mutated([](R& r) {
         QueueAt(r, 1).mutable_kueue_preemption()->set_reclaim_within_cohort(
             static_cast<v1::KueuePreemption::ReclaimWithinCohort>(4));
       }),
       kInvalid, "snapshot.queues[1].kueue_preemption.reclaim_within_cohort: "},
      {"KueueStrategyOutOfRange", Mutated([](R& r) {
         r.mutable_policy()->add_kueue_preemption_strategies(
             static_cast<v1::KueuePreemptionStrategy>(5));
       }),
       kInvalid, "policy.kueue_preemption_strategies[0]: "},
      {"KueueStrategiesReversed", Mutated([](R& r) {
         r.mutable_policy()->add_kueue_preemption_strategies(v1::LESS_THAN_INITIAL_SHARE);
         r.mutable_policy()->add_kueue_preemption_strategies(v1::LESS_THAN_OR_EQUAL_TO_FINAL_SHARE);
       }),
       kInvalid, "policy.kueue_preemption_strategies: "},
      {"KValueNegative", Mutated([](R& r) { r.mutable_policy()->set_k_value(-0.5); }), kInvalid,
       "policy.k_value: "},
      {"KValueNaN", Mutated([](R& r) { r.mutable_policy()->set_k_value(kNaN); }), kInvalid,
       "policy.k_value: "},
      {"MultiplierBelowOne",
       Mutated([](R& r) { r.mutable_policy()->set_reclaimer_utilization_multiplier(0.5); }),
       kInvalid, "policy.reclaimer_utilization_multiplier: "},
      {"MultiplierInfinite",
       Mutated([](R& r) { r.mutable_policy()->set_reclaimer_utilization_multiplier(kInfinity); }),
       kInvalid, "policy.reclaimer_utilization_multiplier: "},
      {"MaxConsolidationPreempteesBelowMinusOne",
       Mutated([](R& r) { r.mutable_policy()->set_max_consolidation_preemptees(-2); }), kInvalid,
       "policy.max_consolidation_preemptees: "},
      // ---- §1 rule 2: queues ----
      {"QueueWithoutName", Mutated([](R& r) { QueueAt(r, 2).set_name(""); }), kInvalid,
       "snapshot.queues[2].name: "},
      {"DuplicateQueueName", Mutated([](R& r) { QueueAt(r, 4).set_name("vision"); }), kInvalid,
       "snapshot.queues[4].name: "},
      {"UnknownParent", Mutated([](R& r) { QueueAt(r, 2).set_parent("no-such-queue"); }), kInvalid,
       "snapshot.queues[2].parent: "},
      {"ParentCycle", Mutated([](R& r) { QueueAt(r, 0).set_parent("vision"); }), kInvalid,
       "snapshot.queues[0].parent: "},
      {"OwnParent", Mutated([](R& r) { QueueAt(r, 3).set_parent("product"); }), kInvalid,
       "snapshot.queues[3].parent: "},
      {"DeservedNaN",
       Mutated([](R& r) { (*QueueAt(r, 1).mutable_deserved())["nvidia.com/gpu"] = kNaN; }),
       kInvalid, "snapshot.queues[1].deserved[\"nvidia.com/gpu\"]: "},
      {"LimitInfinite",
       Mutated([](R& r) { (*QueueAt(r, 1).mutable_limit())["nvidia.com/gpu"] = kInfinity; }),
       kInvalid, "snapshot.queues[1].limit[\"nvidia.com/gpu\"]: "},
      {"DeservedNegative",
       Mutated([](R& r) { (*QueueAt(r, 2).mutable_deserved())["nvidia.com/gpu"] = -2; }), kInvalid,
       "snapshot.queues[2].deserved[\"nvidia.com/gpu\"]: "},
      {"OverQuotaWeightNegative",
       Mutated([](R& r) { (*QueueAt(r, 1).mutable_over_quota_weight())["nvidia.com/gpu"] = -1; }),
       kInvalid, "snapshot.queues[1].over_quota_weight[\"nvidia.com/gpu\"]: "},
      {"FairSharingWeightTooSmall",
       Mutated([](R& r) { QueueAt(r, 0).set_fair_sharing_weight(1e-10); }), kInvalid,
       "snapshot.queues[0].fair_sharing_weight: "},
      {"NegativeMinRuntime",
       Mutated([](R& r) { QueueAt(r, 4).mutable_reclaim_min_runtime()->set_seconds(-1); }),
       kInvalid, "snapshot.queues[4].reclaim_min_runtime: "},
      {"CreationTimeAfterYear9999",
       Mutated([](R& r) { QueueAt(r, 0).mutable_creation_time()->set_seconds(253402300800); }),
       kInvalid, "snapshot.queues[0].creation_time: "},
      {"KueueDeservedMinusOne",
       Mutated([](R& r) { r.mutable_policy()->set_fairness_model(v1::FAIRNESS_MODEL_KUEUE); }),
       kInvalid, "snapshot.queues[0].deserved[\"cpu\"]: "},
      // ---- §1 rule 3: nodes ----
      {"DuplicateNodeName", Mutated([](R& r) { NodeAt(r, 2).set_name("gpu-1"); }), kInvalid,
       "snapshot.nodes[2].name: "},
      {"AllocatableNegative",
       Mutated([](R& r) { (*NodeAt(r, 0).mutable_allocatable())["cpu"] = -1; }), kInvalid,
       "snapshot.nodes[0].allocatable[\"cpu\"]: "},
      {"AllocatableInfinite",
       Mutated([](R& r) { (*NodeAt(r, 1).mutable_allocatable())["memory"] = kInfinity; }), kInvalid,
       "snapshot.nodes[1].allocatable[\"memory\"]: "},
      {"TaintEffectUnknown",
       Mutated([](R& r) { NodeAt(r, 3).mutable_taints(0)->set_effect("NoWay"); }), kInvalid,
       "snapshot.nodes[3].taints[0].effect: "},
      // ---- §1 rule 4: pod groups and pods ----
      {"PodGroupInNonLeafQueue", Mutated([](R& r) { GroupAt(r, 0).set_queue("research"); }),
       kInvalid, "snapshot.pod_groups[0].queue: "},
      {"PodGroupInUnknownQueue", Mutated([](R& r) { GroupAt(r, 1).set_queue("ghost"); }), kInvalid,
       "snapshot.pod_groups[1].queue: "},
      {"DuplicatePodGroupName", Mutated([](R& r) { GroupAt(r, 3).set_name("vision-train"); }),
       kInvalid, "snapshot.pod_groups[3].name: "},
      {"DuplicatePodName", Mutated([](R& r) { PodAt(r, 0, 1).set_name("worker-0"); }), kInvalid,
       "snapshot.pod_groups[0].pods[1].name: "},
      {"MinMemberNegative", Mutated([](R& r) { GroupAt(r, 4).set_min_member(-1); }), kInvalid,
       "snapshot.pod_groups[4].min_member: "},
      {"PodBoundToUnknownNode", Mutated([](R& r) { PodAt(r, 0, 0).set_node_name("gpu-99"); }),
       kInvalid, "snapshot.pod_groups[0].pods[0].node_name: "},
      {"RunningPodWithoutNode", Mutated([](R& r) { PodAt(r, 1, 0).clear_node_name(); }), kInvalid,
       "snapshot.pod_groups[1].pods[0].node_name: "},
      {"PendingPodOnNode", Mutated([](R& r) {
         PodAt(r, 5, 0).set_phase(v1::POD_PHASE_PENDING);
         PodAt(r, 5, 0).set_node_name("gpu-3");
       }),
       kInvalid, "snapshot.pod_groups[5].pods[0].node_name: "},
      {"RequestNaN", Mutated([](R& r) { (*PodAt(r, 2, 0).mutable_requests())["cpu"] = kNaN; }),
       kInvalid, "snapshot.pod_groups[2].pods[0].requests[\"cpu\"]: "},
      {"RequestNegative",
       Mutated([](R& r) { (*PodAt(r, 2, 1).mutable_requests())["memory"] = -1; }), kInvalid,
       "snapshot.pod_groups[2].pods[1].requests[\"memory\"]: "},
      {"RequestMinusInfinity",
       Mutated([](R& r) { (*PodAt(r, 4, 0).mutable_requests())["nvidia.com/gpu"] = -kInfinity; }),
       kInvalid, "snapshot.pod_groups[4].pods[0].requests[\"nvidia.com/gpu\"]: "},
      {"TolerationOperatorUnknown",
       Mutated([](R& r) { PodAt(r, 3, 0).mutable_tolerations(0)->set_operator_("Near"); }),
       kInvalid, "snapshot.pod_groups[3].pods[0].tolerations[0].operator: "},
      // ---- §1 rule 5: usage ----
      {"UsageOfUnknownQueue",
       Mutated([](R& r) { r.mutable_snapshot()->add_usage()->set_queue("ghost"); }), kInvalid,
       "snapshot.usage[0].queue: "},
      {"UsageCapacityInfinite", Mutated([](R& r) {
         (*r.mutable_snapshot()->mutable_usage_capacity())["nvidia.com/gpu"] = kInfinity;
       }),
       kInvalid, "snapshot.usage_capacity[\"nvidia.com/gpu\"]: "},
      // ---- §1 rule 6: Schedule under KAI needs `now` for min runtimes ----
      {"MinRuntimeWithoutNow", Mutated([](R& r) {
         r.mutable_snapshot()->clear_now();
         QueueAt(r, 1).mutable_preempt_min_runtime()->set_seconds(600);
       }),
       kInvalid, "snapshot.now: ", Methods::kScheduleOnly},
      // ---- Bytes that are not a request ----
      {"TruncatedProtobuf", [] { return edge::SerializeDeterministic(Demo()).substr(0, 100); },
       kInvalid, "request: not a valid binary"},
      {"LengthBeyondTheEnd", Raw(std::string("\x0a\x40\x12\x03", 4)), kInvalid,
       "request: not a valid binary"},
      {"InvalidWireType", Raw(std::string("\x0f\xff\xff\xff", 4)), kInvalid,
       "request: not a valid binary"},
      {"QueueNameNotUtf8",
       Mutated([](R& r) { QueueAt(r, 0).set_name(std::string("\xff\xfe", 2)); }), kInvalid,
       "request: not a valid binary"},
      // ---- Over --max-message-bytes ----
      {"OversizedRequest", Mutated([](R& r) {
         for (int i = 0; r.ByteSizeLong() <= static_cast<size_t>(kSmallMessageLimit); ++i) {
           v1::Node* node = r.mutable_snapshot()->add_nodes();
           node->set_name(absl::StrCat("padding-node-", i));
           (*node->mutable_allocatable())["cpu"] = 64000;
           (*node->mutable_labels())["topology.kubernetes.io/zone"] = "zone-a";
         }
       }),
       grpc::StatusCode::RESOURCE_EXHAUSTED, "Received message larger than max", Methods::kBoth,
       Target::kSmallLimitServer},
  };
  return cases;
}

class BadInputTest : public ::testing::TestWithParam<BadInput> {
 protected:
  static void SetUpTestSuite() {
    default_server_ = StartTestServer().release();
    server::ServerOptions small;
    small.host = "127.0.0.1";
    small.port = 0;
    small.metrics_port = -1;
    small.max_message_bytes = kSmallMessageLimit;
    absl::StatusOr<std::unique_ptr<server::ArbiterServer>> started =
        server::ArbiterServer::Start(small);
    ASSERT_TRUE(started.ok()) << started.status();
    small_limit_server_ = started->release();
    ASSERT_TRUE(WaitUntilServing(Connect(small_limit_server_->address())));
  }
  static void TearDownTestSuite() {
    delete default_server_;
    delete small_limit_server_;
    default_server_ = small_limit_server_ = nullptr;
  }

  static std::shared_ptr<grpc::Channel> ChannelTo(Target target) {
    return Connect(target == Target::kDefaultServer ? default_server_->address()
                                                    : small_limit_server_->address());
  }

  // Sends the case to every method it names and checks the answers.
  static void Expect(const BadInput& bad) {
    const std::string bytes = bad.bytes();
    const std::shared_ptr<grpc::Channel> channel = ChannelTo(bad.target);
    std::vector<const char*> methods;
    if (bad.methods != Methods::kScheduleOnly) methods.push_back(kComputeFairShares);
    if (bad.methods != Methods::kFairSharesOnly) methods.push_back(kSchedule);
    for (const char* method : methods) {
      const RawAnswer answer = CallRaw(channel, method, bytes);
      EXPECT_EQ(answer.status.error_code(), bad.code)
          << bad.name << " on " << method << ": " << answer.status.error_message();
      EXPECT_THAT(answer.status.error_message(), StartsWith(bad.message_prefix))
          << bad.name << " on " << method;
    }
  }

  static void ExpectServing(Target target) {
    const HealthAnswer health = CheckHealth(ChannelTo(target), "");
    ASSERT_TRUE(health.status.ok()) << health.status.error_message();
    EXPECT_EQ(health.serving_status, 1);
  }

  static server::ArbiterServer* default_server_;
  static server::ArbiterServer* small_limit_server_;
};

server::ArbiterServer* BadInputTest::default_server_ = nullptr;
server::ArbiterServer* BadInputTest::small_limit_server_ = nullptr;

TEST_P(BadInputTest, AnswersCodeAndFieldPath) {
  Expect(GetParam());
  ExpectServing(GetParam().target);
}

INSTANTIATE_TEST_SUITE_P(Catalogue, BadInputTest, ::testing::ValuesIn(Catalogue()),
                         [](const ::testing::TestParamInfo<BadInput>& test) {
                           return test.param.name;
                         });

// The table holds what the issue asks for: at least 30 malformed requests.
TEST(BadInputCatalogue, HoldsAtLeastThirtyCases) { EXPECT_GE(Catalogue().size(), 30u); }

// The whole catalogue against one server, then a valid request: the server still serves, and
// answers it as the core does.
TEST_F(BadInputTest, StillServesCorrectlyAfterTheWholeCatalogue) {
  for (const BadInput& bad : Catalogue()) Expect(bad);
  ExpectServing(Target::kDefaultServer);
  ExpectServing(Target::kSmallLimitServer);

  const v1::ScheduleRequest request = Demo();
  const RawAnswer answer =
      CallRaw(ChannelTo(Target::kDefaultServer), kSchedule, edge::SerializeDeterministic(request));
  ASSERT_TRUE(answer.status.ok()) << answer.status.error_message();
  const absl::StatusOr<v1::ScheduleResponse> expected = edge::CallSchedule(request);
  ASSERT_TRUE(expected.ok()) << expected.status();
  EXPECT_EQ(answer.bytes, edge::SerializeDeterministic(*expected));
}

// Fair shares need no `now` even when min runtimes are set (§1 rule 6 is Schedule's alone): the
// Schedule-only case above is a valid fair-share request.
TEST_F(BadInputTest, MinRuntimeWithoutNowIsAValidFairShareRequest) {
  v1::ScheduleRequest request = Demo();
  request.mutable_snapshot()->clear_now();
  QueueAt(request, 1).mutable_preempt_min_runtime()->set_seconds(600);
  const RawAnswer answer = CallRaw(ChannelTo(Target::kDefaultServer), kComputeFairShares,
                                   edge::SerializeDeterministic(request));
  EXPECT_TRUE(answer.status.ok()) << answer.status.error_message();
}

// ---- --max-nodes and --max-pods (issue 6): the arbiter-server binary with the flags ----

// arbiter-server started with `flags` on 127.0.0.1:0; address() is "" if it did not start.
class ServerWithFlags {
 public:
  explicit ServerWithFlags(const std::vector<std::string>& flags) : process_(Command(flags)) {
    std::string line;
    while (process_.ReadLine(&line)) {
      if (line.rfind("listening on ", 0) == 0) {
        address_ = line.substr(std::string("listening on ").size());
        break;
      }
    }
  }
  const std::string& address() const { return address_; }

 private:
  static std::vector<std::string> Command(const std::vector<std::string>& flags) {
    std::vector<std::string> argv = {ARBITER_SERVER_PATH, "--host", "127.0.0.1", "--port", "0",
                                     "--metrics-port",    "-1"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    return argv;
  }

  BackgroundProcess process_;
  std::string address_;
};

int PodCount(const v1::ScheduleRequest& request) {
  int pods = 0;
  for (const v1::PodGroup& group : request.snapshot().pod_groups()) pods += group.pods_size();
  return pods;
}

TEST(BadInputLimits, MoreNodesThanMaxNodesIsResourceExhausted) {
  const v1::ScheduleRequest demo = Demo();
  const int limit = demo.snapshot().nodes_size();
  ServerWithFlags server({"--max-nodes", std::to_string(limit)});
  ASSERT_FALSE(server.address().empty()) << "arbiter-server did not start";
  const std::shared_ptr<grpc::Channel> channel = Connect(server.address());

  // At the limit: served.
  const std::string at_limit = edge::SerializeDeterministic(demo);
  EXPECT_TRUE(CallRaw(channel, kSchedule, at_limit).status.ok());
  // One above: refused, for both methods.
  v1::ScheduleRequest above = demo;
  v1::Node* extra = above.mutable_snapshot()->add_nodes();
  extra->set_name("one-too-many");
  (*extra->mutable_allocatable())["cpu"] = 1000;
  for (const char* method : {kComputeFairShares, kSchedule}) {
    const RawAnswer answer = CallRaw(channel, method, edge::SerializeDeterministic(above));
    EXPECT_EQ(answer.status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << method;
    EXPECT_THAT(answer.status.error_message(), StartsWith("snapshot.nodes")) << method;
    EXPECT_THAT(answer.status.error_message(), HasSubstr(std::to_string(limit))) << method;
  }
  const HealthAnswer health = CheckHealth(channel, "");
  EXPECT_EQ(health.serving_status, 1);
}

TEST(BadInputLimits, MorePodsThanMaxPodsIsResourceExhausted) {
  const v1::ScheduleRequest demo = Demo();
  const int limit = PodCount(demo);
  ServerWithFlags server({"--max-pods", std::to_string(limit)});
  ASSERT_FALSE(server.address().empty()) << "arbiter-server did not start";
  const std::shared_ptr<grpc::Channel> channel = Connect(server.address());

  EXPECT_TRUE(CallRaw(channel, kSchedule, edge::SerializeDeterministic(demo)).status.ok());
  v1::ScheduleRequest above = demo;
  v1::Pod* extra = above.mutable_snapshot()->mutable_pod_groups(5)->add_pods();
  extra->set_name("one-too-many");
  (*extra->mutable_requests())["cpu"] = 1000;
  for (const char* method : {kComputeFairShares, kSchedule}) {
    const RawAnswer answer = CallRaw(channel, method, edge::SerializeDeterministic(above));
    EXPECT_EQ(answer.status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << method;
    EXPECT_THAT(answer.status.error_message(), StartsWith("snapshot.pod_groups")) << method;
    EXPECT_THAT(answer.status.error_message(), HasSubstr(std::to_string(limit))) << method;
  }
  const HealthAnswer health = CheckHealth(channel, "");
  EXPECT_EQ(health.serving_status, 1);
}

}  // namespace
}  // namespace arbiter::testing
