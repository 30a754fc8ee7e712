#include "edge/rpc/command_line.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace arbiter::rpc {
namespace {

struct Parsed {
  std::string server = "default";
  int64_t port = 50051;
  double fraction = 0.5;
  bool timing = false;
  std::vector<std::string> positional;
  absl::Status status;
};

Parsed Parse(std::vector<std::string> args) {
  Parsed parsed;
  CommandLine flags;
  flags.AddString("server", "HOST:PORT", &parsed.server, "where to send the call");
  flags.AddInt("metrics-port", "PORT", &parsed.port, "port");
  flags.AddDouble("pending-fraction", "F", &parsed.fraction, "fraction");
  flags.AddBool("timing", &parsed.timing, "print timings");
  parsed.status = flags.Parse(args, &parsed.positional);
  return parsed;
}

TEST(CommandLine, KeepsDefaultsWhenAbsent) {
  const Parsed parsed = Parse({"request.json"});
  ASSERT_TRUE(parsed.status.ok());
  EXPECT_EQ(parsed.server, "default");
  EXPECT_EQ(parsed.port, 50051);
  EXPECT_FALSE(parsed.timing);
  EXPECT_EQ(parsed.positional, std::vector<std::string>{"request.json"});
}

TEST(CommandLine, AcceptsSeparateAndJoinedValues) {
  const Parsed parsed =
      Parse({"--server", "h:1", "--metrics-port=0", "-", "--pending-fraction", "0.25", "--timing"});
  ASSERT_TRUE(parsed.status.ok()) << parsed.status;
  EXPECT_EQ(parsed.server, "h:1");
  EXPECT_EQ(parsed.port, 0);
  EXPECT_EQ(parsed.fraction, 0.25);
  EXPECT_TRUE(parsed.timing);
  EXPECT_EQ(parsed.positional, std::vector<std::string>{"-"});
}

TEST(CommandLine, RemembersWhichFlagsWereGiven) {
  std::string server;
  bool timing = false;
  CommandLine flags;
  flags.AddString("server", "HOST:PORT", &server, "");
  flags.AddBool("timing", &timing, "");
  std::vector<std::string> positional;
  ASSERT_TRUE(flags.Parse({"--server=x"}, &positional).ok());
  EXPECT_TRUE(flags.IsSet("server"));
  EXPECT_FALSE(flags.IsSet("timing"));
}

TEST(CommandLine, BooleanTakesAnExplicitValueAfterEquals) {
  EXPECT_FALSE(Parse({"--timing=false"}).timing);
  EXPECT_TRUE(Parse({"--timing=true"}).timing);
}

TEST(CommandLine, DoubleDashEndsFlags) {
  const Parsed parsed = Parse({"--", "--timing"});
  ASSERT_TRUE(parsed.status.ok());
  EXPECT_FALSE(parsed.timing);
  EXPECT_EQ(parsed.positional, std::vector<std::string>{"--timing"});
}

TEST(CommandLine, RejectsUnknownFlagsByName) {
  const Parsed parsed = Parse({"--frmat", "json"});
  EXPECT_EQ(parsed.status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(parsed.status.message(), "unknown flag --frmat");
}

TEST(CommandLine, RejectsBadOrMissingValuesByName) {
  EXPECT_EQ(Parse({"--metrics-port", "abc"}).status.message(),
            "--metrics-port: \"abc\" is not an integer");
  EXPECT_EQ(Parse({"--server"}).status.message(), "--server: missing value HOST:PORT");
  EXPECT_EQ(Parse({"--timing=maybe"}).status.code(), absl::StatusCode::kInvalidArgument);
}

TEST(CommandLine, UsageListsFlagsWithDefaults) {
  std::string server = "localhost:50051";
  bool timing = false;
  CommandLine flags;
  flags.AddString("server", "HOST:PORT", &server, "call this server");
  flags.AddBool("timing", &timing, "print timings");
  EXPECT_EQ(flags.Usage(),
            "  --server HOST:PORT  call this server (default: localhost:50051)\n"
            "  --timing            print timings\n");
}

}  // namespace
}  // namespace arbiter::rpc
