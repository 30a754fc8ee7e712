// The built `arbiter` binary: output, exit codes (0 ok, 2 invalid input, 1 other) and the
// "CODE: message" form of failures, in-process and through a real server.

#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "edge/calls.h"
#include "edge/wire.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "tests/integration/server_harness.h"
#include "tests/integration/subprocess.h"

namespace arbiter::testing {
namespace {

using ::google::protobuf::util::MessageDifferencer;
using ::testing::HasSubstr;
using ::testing::StartsWith;

ProcessResult Cli(std::vector<std::string> args, const std::string& input = "") {
  args.insert(args.begin(), ARBITER_CLI_PATH);
  return RunProcess(args, input);
}

const std::string& DemoPath() {
  static const std::string* const path = new std::string(SourcePath("examples/demo.json"));
  return *path;
}

// A request whose second queue names an unknown parent.
constexpr char kBadParent[] = R"({"snapshot": {"queues": [
  {"name": "a"}, {"name": "b", "parent": "nowhere"}]}})";

class CliTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { server_ = StartTestServer().release(); }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }

  std::string TempPath(const std::string& name) const { return dir_.File(name); }
  std::string WriteTemp(const std::string& name, const std::string& content) {
    const std::string path = TempPath(name);
    std::ofstream(path, std::ios::binary) << content;
    return path;
  }
  static std::string Address() { return server_->address(); }

  static server::ArbiterServer* server_;
  const TempDir dir_;
};

server::ArbiterServer* CliTest::server_ = nullptr;

TEST_F(CliTest, FairShareTableShowsTheQueueTree) {
  const ProcessResult result = Cli({"fairshare", DemoPath()});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_THAT(result.out, StartsWith("Queues (KAI fair share)\n"));
  EXPECT_THAT(result.out, HasSubstr("DESERVED  FAIR SHARE  ALLOCATED  REQUESTED"));
  EXPECT_THAT(result.out, HasSubstr("\nresearch "));
  EXPECT_THAT(result.out, HasSubstr("\n  vision "));  // a child, indented under its parent
  EXPECT_EQ(result.err, "");
}

TEST_F(CliTest, FairShareJsonIsTheCoresAnswer) {
  const ProcessResult result = Cli({"fairshare", DemoPath(), "--format", "json"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  v1::FairShareResponse printed;
  ASSERT_TRUE(edge::ParseJson(result.out, &printed).ok()) << result.out;

  v1::FairShareRequest request;
  ReadSourceMessage("examples/demo.json", &request);
  const absl::StatusOr<v1::FairShareResponse> expected = edge::CallComputeFairShares(request);
  ASSERT_TRUE(expected.ok());
  EXPECT_TRUE(MessageDifferencer::Equals(printed, *expected));
  // Original proto field names.
  EXPECT_THAT(result.out, HasSubstr("\"fair_share\""));
}

TEST_F(CliTest, ServerGivesTheSameOutputAsInProcess) {
  for (const char* command : {"fairshare", "schedule"}) {
    for (const char* format : {"table", "json"}) {
      const ProcessResult local = Cli({command, DemoPath(), "--format", format});
      const ProcessResult remote =
          Cli({command, DemoPath(), "--format", format, "--server", Address()});
      ASSERT_EQ(local.exit_code, 0) << local.err;
      ASSERT_EQ(remote.exit_code, 0) << remote.err;
      EXPECT_EQ(local.out, remote.out) << command << " " << format;
    }
  }
}

TEST_F(CliTest, ScheduleTableShowsDecisions) {
  const ProcessResult result = Cli({"schedule", DemoPath()});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_THAT(result.out, HasSubstr("\nBindings ("));
  EXPECT_THAT(result.out, HasSubstr("POD GROUP"));
  EXPECT_THAT(result.out, HasSubstr("\nEvictions"));
  EXPECT_THAT(result.out, HasSubstr("\nPending ("));
  EXPECT_THAT(result.out, HasSubstr("REASON"));
}

TEST_F(CliTest, InvalidRequestExitsTwoWithCodeAndFieldPath) {
  const std::string path = WriteTemp("bad.json", kBadParent);
  for (bool remote : {false, true}) {
    std::vector<std::string> args = {"fairshare", path};
    if (remote) args.insert(args.end(), {"--server", Address()});
    const ProcessResult result = Cli(args);
    EXPECT_EQ(result.exit_code, 2) << (remote ? "remote" : "local");
    EXPECT_THAT(result.err, StartsWith("INVALID_ARGUMENT: snapshot.queues[1].parent: "));
    EXPECT_EQ(result.out, "");
  }
}

TEST_F(CliTest, MalformedJsonExitsTwo) {
  const ProcessResult result = Cli({"schedule", WriteTemp("broken.json", "{\"snapshot\": [")});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_THAT(result.err, StartsWith("INVALID_ARGUMENT: "));
}

TEST_F(CliTest, UnknownFieldExitsTwo) {
  const ProcessResult result = Cli({"schedule", WriteTemp("typo.json", R"({"snapshots": {}})")});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_THAT(result.err, StartsWith("INVALID_ARGUMENT: "));
}

TEST_F(CliTest, MissingFileExitsOneWithNotFound) {
  const ProcessResult result = Cli({"fairshare", TempPath("absent.json")});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_THAT(result.err, StartsWith("NOT_FOUND: "));
}

TEST_F(CliTest, UnreachableServerExitsOneWithUnavailable) {
  // Port 1 on loopback: nothing listens there, so the connection is refused at once.
  const ProcessResult result = Cli({"fairshare", DemoPath(), "--server", "127.0.0.1:1"});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_THAT(result.err, StartsWith("UNAVAILABLE: "));
}

TEST_F(CliTest, UsageMistakesExitTwo) {
  EXPECT_EQ(Cli({"fairshare"}).exit_code, 2);
  EXPECT_EQ(Cli({"fairshare", DemoPath(), "--format", "yaml"}).exit_code, 2);
  EXPECT_EQ(Cli({"schedule", DemoPath(), "--no-such-flag"}).exit_code, 2);
  EXPECT_EQ(Cli({"frobnicate"}).exit_code, 2);
  EXPECT_EQ(Cli({}).exit_code, 2);
  const ProcessResult result = Cli({"schedule", DemoPath(), "--no-such-flag"});
  EXPECT_THAT(result.err, StartsWith("INVALID_ARGUMENT: unknown flag --no-such-flag\n"));
}

TEST_F(CliTest, HelpListsTheCommands) {
  const ProcessResult result = Cli({"help"});
  ASSERT_EQ(result.exit_code, 0);
  for (const char* command : {"fairshare", "schedule", "generate"}) {
    EXPECT_THAT(result.out, HasSubstr(command));
  }
  const ProcessResult schedule_help = Cli({"help", "schedule"});
  ASSERT_EQ(schedule_help.exit_code, 0);
  EXPECT_THAT(schedule_help.out, HasSubstr("--timing"));
}

TEST_F(CliTest, HelpListsEveryFlagOfEveryCommand) {
  const ProcessResult result = Cli({"help"});
  ASSERT_EQ(result.exit_code, 0);
  for (const char* flag :
       {"--format ",           "--server ",     "--timing",    "--trace",
        "--deadline-seconds ", "--tls-ca ",     "--tls-cert ", "--tls-key ",
        "--tls-server-name ",  "--request-id ", "--size ",     "--nodes ",
        "--queues ",           "--depth ",      "--pods ",     "--seed ",
        "--pending-fraction ", "--resources ",  "--model ",    "--reclaim-groups ",
        "--cohorts ",          "--flavors ",    "--out "}) {
    EXPECT_THAT(result.out, HasSubstr(flag));
  }
  EXPECT_EQ(Cli({"--help"}).out, result.out);
}

// --request-id reaches the server as x-request-id and names the call in its log.
TEST(CliRequestId, TheServerLogsTheCallUnderTheGivenId) {
  LogCapture logs;
  server::ServerOptions options;
  options.metrics_port = -1;
  options.log_sink = logs.Sink();
  const std::unique_ptr<server::ArbiterServer> server = StartTestServer(options);
  const ProcessResult result =
      Cli({"schedule", DemoPath(), "--server", server->address(), "--request-id", "cli-request-7"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const std::vector<std::string> lines =
      logs.LinesWith({" msg=call ", " request_id=cli-request-7 "});
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(LogField(lines[0], "method"), "Schedule");
}

TEST_F(CliTest, TlsFlagsNeedAServer) {
  const ProcessResult result = Cli({"schedule", DemoPath(), "--tls-ca", "/nonexistent/ca.pem"});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_THAT(result.err, StartsWith("INVALID_ARGUMENT: --tls-ca, --tls-cert, --tls-key and "
                                     "--request-id need --server"));
}

TEST_F(CliTest, BinaryRequestGivesTheSameAnswerAsJson) {
  v1::ScheduleRequest request;
  ReadSourceMessage("examples/demo.json", &request);
  const std::string pb_path = TempPath("demo.pb");
  ASSERT_TRUE(edge::WriteMessageFile(pb_path, request).ok());
  const ProcessResult from_json = Cli({"schedule", DemoPath(), "--format", "json"});
  const ProcessResult from_pb = Cli({"schedule", pb_path, "--format", "json"});
  ASSERT_EQ(from_pb.exit_code, 0) << from_pb.err;
  EXPECT_EQ(from_json.out, from_pb.out);
}

TEST_F(CliTest, ReadsTheRequestFromStandardInput) {
  std::ifstream file(DemoPath());
  const std::string demo((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  const ProcessResult from_stdin = Cli({"fairshare", "-"}, demo);
  ASSERT_EQ(from_stdin.exit_code, 0) << from_stdin.err;
  EXPECT_EQ(from_stdin.out, Cli({"fairshare", DemoPath()}).out);
}

TEST_F(CliTest, TimingReportsEveryPhaseOnStderr) {
  const ProcessResult local = Cli({"schedule", DemoPath(), "--timing"});
  ASSERT_EQ(local.exit_code, 0) << local.err;
  for (const char* phase : {"parse", "validate", "fair_share", "allocate", "serialise", "total"}) {
    EXPECT_THAT(local.err, HasSubstr(std::string("  ") + phase + " ")) << phase;
  }
  EXPECT_THAT(local.out, ::testing::Not(HasSubstr("timing")));
  // The eviction actions' victim search, under each action's line.
  for (const char* action : {"consolidate", "reclaim", "preempt"}) {
    EXPECT_THAT(local.err, ::testing::ContainsRegex(std::string("  ") + action +
                                                    " +[0-9.]+ ms\n    search: candidates [0-9]+, "
                                                    "placed [0-9]+, failed [0-9]+, tries [0-9]+"))
        << action;
  }

  const ProcessResult remote = Cli({"schedule", DemoPath(), "--timing", "--server", Address()});
  ASSERT_EQ(remote.exit_code, 0) << remote.err;
  for (const char* phase : {"parse", "round_trip", "serialise", "total"}) {
    EXPECT_THAT(remote.err, HasSubstr(std::string("  ") + phase + " ")) << phase;
  }
}

// --trace: every attempt on stderr, in order, and the same answer on stdout; refused with
// --server, whose calls run elsewhere.
TEST_F(CliTest, TraceTellsEveryAttemptOnStderr) {
  const ProcessResult traced = Cli({"schedule", DemoPath(), "--trace"});
  ASSERT_EQ(traced.exit_code, 0) << traced.err;
  EXPECT_EQ(traced.out, Cli({"schedule", DemoPath()}).out);
  EXPECT_THAT(traced.err, ::testing::ContainsRegex("(^|\n)allocate [^ ]+ \\([0-9]+ pods?\\): "
                                                   "(placed|pending)\n"));
  EXPECT_THAT(traced.out, ::testing::Not(HasSubstr("allocate ")));

  const ProcessResult remote = Cli({"schedule", DemoPath(), "--trace", "--server", Address()});
  EXPECT_NE(remote.exit_code, 0);
  EXPECT_THAT(remote.err, HasSubstr("--trace works in-process only"));
}

TEST_F(CliTest, GenerateIsDeterministicPerSeed) {
  const std::vector<std::string> flags = {"generate", "--nodes", "20",     "--queues", "6",
                                          "--depth",  "2",       "--pods", "80"};
  auto with_seed = [&](const char* seed) {
    std::vector<std::string> args = flags;
    args.insert(args.end(), {"--seed", seed});
    return Cli(args);
  };
  const ProcessResult first = with_seed("7");
  const ProcessResult again = with_seed("7");
  const ProcessResult other = with_seed("8");
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_EQ(first.out, again.out);
  EXPECT_NE(first.out, other.out);

  v1::ScheduleRequest request;
  ASSERT_TRUE(edge::ParseJson(first.out, &request).ok());
  EXPECT_EQ(request.snapshot().nodes_size(), 20);
  // What it generates is a valid request that the CLI answers.
  const ProcessResult scheduled = Cli({"schedule", "-"}, first.out);
  EXPECT_EQ(scheduled.exit_code, 0) << scheduled.err;
}

TEST_F(CliTest, GenerateWritesBinaryForPbFiles) {
  const std::string path = TempPath("generated.pb");
  const ProcessResult result = Cli({"generate", "--size", "S", "--seed", "3", "--out", path});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  v1::ScheduleRequest request;
  ASSERT_TRUE(edge::ReadMessageFile(path, &request).ok());
  EXPECT_EQ(request.snapshot().nodes_size(), 10);  // the S preset
  const ProcessResult answered = Cli({"fairshare", path, "--server", Address()});
  EXPECT_EQ(answered.exit_code, 0) << answered.err;
}

TEST_F(CliTest, GenerateRejectsUnknownPresetsAndModels) {
  EXPECT_EQ(Cli({"generate", "--size", "XXL"}).exit_code, 2);
  EXPECT_EQ(Cli({"generate", "--model", "slurm"}).exit_code, 2);
}

TEST_F(CliTest, KueueTableShowsQuotaColumns) {
  const ProcessResult generated =
      Cli({"generate", "--model", "kueue", "--queues", "4", "--pods", "20", "--seed", "2"});
  ASSERT_EQ(generated.exit_code, 0) << generated.err;
  const ProcessResult result = Cli({"schedule", "-"}, generated.out);
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_THAT(result.out, StartsWith("Queues (Kueue fair sharing)\n"));
  for (const char* column :
       {"NOMINAL", "BORROWING LIMIT", "LENDING LIMIT", "USAGE", "WEIGHTED SHARE", "BORROWING\n"}) {
    EXPECT_THAT(result.out, HasSubstr(column));
  }
  EXPECT_THAT(result.out, HasSubstr("\nAdmissions"));
}

}  // namespace
}  // namespace arbiter::testing
