// `arbiter what-if SNAPSHOT --add GROUP`, the built binary: what one cycle decides for the added
// pod group (placed, admitted, pending), the evictions made for it, its JSON form, the same
// answer in-process and through a real server, and the exit codes.
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "server/arbiter_server.h"
#include "tests/integration/server_harness.h"
#include "tests/integration/subprocess.h"

namespace arbiter::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

std::string Data(const std::string& name) { return SourcePath("tests/testdata/what_if/" + name); }

ProcessResult WhatIf(const std::string& snapshot, const std::string& group,
                     std::vector<std::string> flags = {}) {
  std::vector<std::string> argv = {ARBITER_CLI_PATH, "what-if", Data(snapshot), "--add",
                                   Data(group)};
  argv.insert(argv.end(), flags.begin(), flags.end());
  return RunProcess(argv);
}

// Writes `content` to `name` in `dir` and returns its path.
std::string WriteFile(const TempDir& dir, const std::string& name, const std::string& content) {
  const std::string path = dir.File(name);
  std::ofstream(path, std::ios::binary) << content;
  return path;
}

// The JSON answer parsed into a Struct; fails the test when it does not parse.
google::protobuf::Struct ParseAnswer(const std::string& json) {
  google::protobuf::Struct answer;
  const auto status = google::protobuf::util::JsonStringToMessage(json, &answer);
  EXPECT_TRUE(status.ok()) << status.ToString() << "\n" << json;
  return answer;
}

const google::protobuf::Value& Field(const google::protobuf::Struct& object,
                                     const std::string& key) {
  static const google::protobuf::Value* const kMissing = new google::protobuf::Value();
  auto it = object.fields().find(key);
  EXPECT_NE(it, object.fields().end()) << "no key " << key;
  return it == object.fields().end() ? *kMissing : it->second;
}

class WhatIfTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { server_ = StartTestServer().release(); }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  static std::string Address() { return server_->address(); }

  static server::ArbiterServer* server_;
};

server::ArbiterServer* WhatIfTest::server_ = nullptr;

TEST_F(WhatIfTest, AGroupThatFitsIsPlaced) {
  const ProcessResult result = WhatIf("kai-snapshot.json", "fits.json");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_THAT(result.out, StartsWith("Pod group: a-small\nQueue:     team-a\n"
                                     "Outcome:   placed (1 pod bound)\n"));
  EXPECT_THAT(result.out, HasSubstr("\na-small-0  n2\n"));
  EXPECT_THAT(result.out, HasSubstr("\nEvictions for it: none\n"));
  EXPECT_EQ(result.err, "");
}

TEST_F(WhatIfTest, AGroupThatNeedsAReclaimListsItsEvictionsAndBindsAfterThem) {
  const ProcessResult result =
      WhatIf("kai-snapshot.json", "needs-reclaim.json", {"--format", "json"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const google::protobuf::Struct answer = ParseAnswer(result.out);
  EXPECT_EQ(Field(answer, "outcome").string_value(), "placed");
  EXPECT_TRUE(Field(answer, "after_evictions").bool_value());
  const auto& bindings = Field(answer, "bindings").list_value().values();
  ASSERT_EQ(bindings.size(), 1);
  EXPECT_EQ(Field(bindings[0].struct_value(), "pod").string_value(), "a-big-0");
  EXPECT_EQ(Field(bindings[0].struct_value(), "node").string_value(), "n2");
  EXPECT_TRUE(Field(bindings[0].struct_value(), "after_evictions").bool_value());
  // team-b holds 6000 cpu of the 8000, above its fair share of 4000 once team-a asks for 4000:
  // the two of its pods on n2 make room.
  const auto& evictions = Field(answer, "evictions").list_value().values();
  ASSERT_EQ(evictions.size(), 2);
  std::vector<std::string> victims;
  for (const google::protobuf::Value& eviction : evictions) {
    const google::protobuf::Struct& e = eviction.struct_value();
    victims.push_back(Field(e, "pod_group").string_value() + "/" + Field(e, "pod").string_value() +
                      "@" + Field(e, "node").string_value());
    EXPECT_EQ(Field(e, "reason").string_value(), "FAIR_SHARE_RECLAIM");
    EXPECT_THAT(Field(e, "message").string_value(),
                StartsWith("reclaimed for a-big: queue team-b holds "));
  }
  EXPECT_THAT(victims, ElementsAre("b-4/b-4-0@n2", "b-5/b-5-0@n2"));
  EXPECT_EQ(Field(answer, "pending").kind_case(), google::protobuf::Value::kNullValue);

  const ProcessResult table = WhatIf("kai-snapshot.json", "needs-reclaim.json");
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_THAT(table.out, HasSubstr("Outcome:   placed (1 pod bound, after evictions)\n"));
  EXPECT_THAT(table.out, HasSubstr("\nEvictions for it (2 pods of 2 other pod groups)\n"));
  EXPECT_THAT(table.out, HasSubstr("FAIR_SHARE_RECLAIM"));
}

TEST_F(WhatIfTest, AGroupOverItsQueueLimitIsPendingWithTheReasonAndTheWholeMessage) {
  const ProcessResult json = WhatIf("kai-snapshot.json", "over-limit.json", {"--format", "json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;  // pending is an answer, not a failure
  const google::protobuf::Struct answer = ParseAnswer(json.out);
  EXPECT_EQ(Field(answer, "outcome").string_value(), "pending");
  EXPECT_FALSE(Field(answer, "after_evictions").bool_value());
  EXPECT_EQ(Field(answer, "bindings").list_value().values_size(), 0);
  EXPECT_EQ(Field(answer, "evictions").list_value().values_size(), 0);
  const google::protobuf::Struct& pending = Field(answer, "pending").struct_value();
  EXPECT_EQ(Field(pending, "reason").string_value(), "queue-over-limit");
  const std::string message = Field(pending, "message").string_value();
  EXPECT_THAT(message, StartsWith("queue capped would exceed its limit on cpu: 0 allocated + 2000 "
                                  "requested > limit 1000"));
  // The whole message, with what each eviction action found.
  EXPECT_THAT(message, HasSubstr("; reclaim: "));

  const ProcessResult table = WhatIf("kai-snapshot.json", "over-limit.json");
  ASSERT_EQ(table.exit_code, 0) << table.err;
  const std::string expected =
      "Outcome:   pending\nReason:    queue-over-limit\nMessage:   " + message + "\n";
  EXPECT_THAT(table.out, HasSubstr(expected));
}

TEST_F(WhatIfTest, AKueueWorkloadIsAdmitted) {
  const ProcessResult result =
      WhatIf("kueue-snapshot.json", "kueue-workload.json", {"--format", "json"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const google::protobuf::Struct answer = ParseAnswer(result.out);
  EXPECT_EQ(Field(answer, "pod_group").string_value(), "w-new");
  EXPECT_EQ(Field(answer, "outcome").string_value(), "admitted");
  EXPECT_FALSE(Field(answer, "after_evictions").bool_value());
  EXPECT_EQ(Field(answer, "evictions").list_value().values_size(), 0);

  const ProcessResult table = WhatIf("kueue-snapshot.json", "kueue-workload.json");
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_THAT(table.out, HasSubstr("Outcome:   admitted\n"));
}

TEST_F(WhatIfTest, AKueueWorkloadThatPreemptsIsAdmittedAfterTheEvictions) {
  const ProcessResult result =
      WhatIf("kueue-snapshot.json", "kueue-preempting.json", {"--format", "json"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const google::protobuf::Struct answer = ParseAnswer(result.out);
  EXPECT_EQ(Field(answer, "outcome").string_value(), "admitted");
  EXPECT_TRUE(Field(answer, "after_evictions").bool_value());
  const auto& evictions = Field(answer, "evictions").list_value().values();
  ASSERT_EQ(evictions.size(), 1);
  EXPECT_EQ(Field(evictions[0].struct_value(), "pod_group").string_value(), "w-running");
  EXPECT_EQ(Field(evictions[0].struct_value(), "reason").string_value(), "KUEUE_IN_CLUSTER_QUEUE");
}

TEST_F(WhatIfTest, ADuplicateNameIsInvalidArgumentNamingAdd) {
  // b-3 is already one of team-b's running groups.
  const std::string duplicate = R"({"name": "b-3", "queue": "team-a",
                                    "pods": [{"name": "x", "requests": {"cpu": 1}}]})";
  TempDir dir;
  const std::string path = WriteFile(dir, "b-3.json", duplicate);
  for (bool remote : {false, true}) {
    std::vector<std::string> argv = {ARBITER_CLI_PATH, "what-if", Data("kai-snapshot.json"),
                                     "--add", path};
    if (remote) argv.insert(argv.end(), {"--server", Address()});
    const ProcessResult result = RunProcess(argv);
    EXPECT_EQ(result.exit_code, 2) << (remote ? "remote" : "local");
    EXPECT_EQ(result.err,
              "INVALID_ARGUMENT: --add: pod group \"b-3\" is already in the snapshot "
              "(snapshot.pod_groups[3])\n");
    EXPECT_EQ(result.out, "");
  }
}

TEST_F(WhatIfTest, OtherInvalidGroupsAreTheCoresOwnFieldPath) {
  TempDir dir;
  const std::string path = WriteFile(
      dir, "nowhere.json", R"({"name": "lost", "queue": "nowhere", "pods": [{"name": "p"}]})");
  const ProcessResult result =
      RunProcess({ARBITER_CLI_PATH, "what-if", Data("kai-snapshot.json"), "--add", path});
  EXPECT_EQ(result.exit_code, 2);
  // The added group is the last of the snapshot's six.
  EXPECT_THAT(result.err, StartsWith("INVALID_ARGUMENT: snapshot.pod_groups[6].queue: "));
}

TEST_F(WhatIfTest, UsageMistakesExitTwo) {
  const ProcessResult no_add = RunProcess({ARBITER_CLI_PATH, "what-if", Data("kai-snapshot.json")});
  EXPECT_EQ(no_add.exit_code, 2);
  EXPECT_THAT(no_add.err, StartsWith("INVALID_ARGUMENT: --add GROUP is required\n"));
  const ProcessResult both_stdin =
      RunProcess({ARBITER_CLI_PATH, "what-if", "-", "--add", "-"}, "{}");
  EXPECT_EQ(both_stdin.exit_code, 2);
  const ProcessResult bad_format = WhatIf("kai-snapshot.json", "fits.json", {"--format", "yaml"});
  EXPECT_EQ(bad_format.exit_code, 2);
  const ProcessResult missing = RunProcess(
      {ARBITER_CLI_PATH, "what-if", Data("kai-snapshot.json"), "--add", Data("absent.json")});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_THAT(missing.err, StartsWith("NOT_FOUND: --add: "));
}

TEST_F(WhatIfTest, TheServerGivesTheSameAnswerAsInProcess) {
  for (const auto& [snapshot, group] : std::vector<std::pair<std::string, std::string>>{
           {"kai-snapshot.json", "fits.json"},
           {"kai-snapshot.json", "needs-reclaim.json"},
           {"kai-snapshot.json", "over-limit.json"},
           {"kueue-snapshot.json", "kueue-workload.json"},
           {"kueue-snapshot.json", "kueue-preempting.json"}}) {
    for (const char* format : {"table", "json"}) {
      const ProcessResult local = WhatIf(snapshot, group, {"--format", format});
      const ProcessResult remote =
          WhatIf(snapshot, group, {"--format", format, "--server", Address()});
      ASSERT_EQ(local.exit_code, 0) << local.err;
      ASSERT_EQ(remote.exit_code, 0) << remote.err;
      EXPECT_EQ(local.out, remote.out) << group << " " << format;
    }
  }
}

TEST_F(WhatIfTest, JsonHasTheDocumentedKeysInTheDocumentedOrder) {
  const ProcessResult result =
      WhatIf("kai-snapshot.json", "needs-reclaim.json", {"--format", "json"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const google::protobuf::Struct answer = ParseAnswer(result.out);
  std::vector<std::string> keys;
  for (const auto& [key, value] : answer.fields()) keys.push_back(key);
  EXPECT_THAT(keys, ::testing::UnorderedElementsAre("pod_group", "outcome", "after_evictions",
                                                    "bindings", "evictions", "pending"));
  size_t last = 0;
  for (const char* key : {"\"pod_group\":", "\"outcome\":", "\"after_evictions\":", "\"bindings\":",
                          "\"evictions\":", "\"pending\":"}) {
    const size_t at = result.out.find(key);
    ASSERT_NE(at, std::string::npos) << key;
    EXPECT_GT(at, last) << key;
    last = at;
  }
  const google::protobuf::Struct& binding =
      Field(answer, "bindings").list_value().values(0).struct_value();
  EXPECT_EQ(binding.fields().size(), 3);
  for (const char* key : {"pod", "node", "after_evictions"}) Field(binding, key);
  const google::protobuf::Struct& eviction =
      Field(answer, "evictions").list_value().values(0).struct_value();
  EXPECT_EQ(eviction.fields().size(), 5);
  for (const char* key : {"pod_group", "pod", "node", "reason", "message"}) Field(eviction, key);
  EXPECT_EQ(result.out.back(), '\n');
}

// GPU sharing (SEMANTICS §4.13): a group of notebooks, one taking a quarter of a GPU and one half
// of each of two GPUs, next to team-b's half-GPU notebook on device "gpu-7f3a". Binpack joins the
// quarter to that device; the other needs two devices and opens two new ones. The bindings show
// the devices, in the table and in the JSON.
TEST_F(WhatIfTest, ASharingGroupsBindingsNameTheirGpuDevices) {
  const ProcessResult table = WhatIf("gpu-sharing-snapshot.json", "notebooks.json");
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_THAT(table.out, HasSubstr("Outcome:   placed (2 pods bound)\n"));
  EXPECT_THAT(table.out, HasSubstr("\nPOD            NODE  AFTER EVICTIONS  GPU DEVICES\n"
                                   "a-notebooks-0  n1                     gpu-7f3a\n"
                                   "a-notebooks-1  n1                     new-0,new-1\n"));

  const ProcessResult json =
      WhatIf("gpu-sharing-snapshot.json", "notebooks.json", {"--format", "json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  EXPECT_THAT(json.out, HasSubstr("{\"pod\": \"a-notebooks-0\", \"node\": \"n1\", "
                                  "\"after_evictions\": false, \"gpu_groups\": [\"gpu-7f3a\"]}"));
  const google::protobuf::Struct answer = ParseAnswer(json.out);
  const auto& bindings = Field(answer, "bindings").list_value();
  ASSERT_EQ(bindings.values_size(), 2);
  const auto& keys = Field(bindings.values(1).struct_value(), "gpu_groups").list_value();
  ASSERT_EQ(keys.values_size(), 2);
  EXPECT_EQ(keys.values(0).string_value(), "new-0");
  EXPECT_EQ(keys.values(1).string_value(), "new-1");

  // Through a server, the same answer.
  for (const char* format : {"table", "json"}) {
    const ProcessResult remote = WhatIf("gpu-sharing-snapshot.json", "notebooks.json",
                                        {"--format", format, "--server", Address()});
    ASSERT_EQ(remote.exit_code, 0) << remote.err;
    EXPECT_EQ(remote.out, std::string(format) == "json" ? json.out : table.out);
  }
}

TEST_F(WhatIfTest, HelpDocumentsTheJsonSchema) {
  const ProcessResult result = RunProcess({ARBITER_CLI_PATH, "help", "what-if"});
  ASSERT_EQ(result.exit_code, 0);
  EXPECT_THAT(result.out, StartsWith("usage: arbiter what-if SNAPSHOT --add GROUP [flags]\n"));
  for (const char* part :
       {"\"pod_group\"", "\"outcome\"", "\"after_evictions\"", "\"bindings\"", "\"evictions\"",
        "\"pending\"", "--add GROUP", "--server ", "--tls-ca "}) {
    EXPECT_THAT(result.out, HasSubstr(part));
  }
  EXPECT_THAT(RunProcess({ARBITER_CLI_PATH, "help"}).out,
              HasSubstr("what-if SNAPSHOT --add GROUP"));
}

}  // namespace
}  // namespace arbiter::testing
