// The server's logfmt lines: quoting, levels, and the fields of a call's line.
#include "server/call_log.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace arbiter::server {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::Pair;
using ::testing::StartsWith;

const absl::Time kNoon = absl::FromUnixSeconds(1767268800) + absl::Milliseconds(5);

TEST(FormatLogLine, StartsWithTimeLevelAndMessage) {
  EXPECT_EQ(FormatLogLine(kNoon, LogLevel::kInfo, "serving", {{"address", "127.0.0.1:50051"}}),
            "ts=2026-01-01T12:00:00.005Z level=info msg=serving address=127.0.0.1:50051");
}

TEST(FormatLogLine, QuotesValuesWithSpacesQuotesEqualsOrControlCharacters) {
  struct Case {
    std::string value;
    std::string written;
  };
  const std::vector<Case> cases = {
      {"plain-value_1.2", "plain-value_1.2"},
      {"", "\"\""},
      {"two words", "\"two words\""},
      {"say \"hi\"", "\"say \\\"hi\\\"\""},
      {"a=b", "\"a=b\""},
      {"back\\slash", "\"back\\\\slash\""},
      {"line\nbreak\ttab\rreturn", "\"line\\nbreak\\ttab\\rreturn\""},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(FormatLogLine(kNoon, LogLevel::kWarn, "m", {{"k", c.value}}),
              "ts=2026-01-01T12:00:00.005Z level=warn msg=m k=" + c.written)
        << c.value;
  }
}

TEST(FormatLogLine, AForgedLineInAValueStaysOnOneLine) {
  const std::string line =
      FormatLogLine(kNoon, LogLevel::kError, "call", {{"error", "x\nts=0 level=info msg=fake"}});
  EXPECT_EQ(line.find('\n'), std::string::npos);
}

TEST(ParseLogLevel, AcceptsTheFourNamesOnly) {
  for (const LogLevel level :
       {LogLevel::kDebug, LogLevel::kInfo, LogLevel::kWarn, LogLevel::kError}) {
    const absl::StatusOr<LogLevel> parsed = ParseLogLevel(LogLevelName(level));
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(*parsed, level);
  }
  const absl::StatusOr<LogLevel> bad = ParseLogLevel("verbose");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("debug, info, warn or error"));
}

TEST(CallLogLevel, InfoOnSuccessErrorOnOwnFailuresWarnOnRefusals) {
  EXPECT_EQ(CallLogLevel(absl::StatusCode::kOk), LogLevel::kInfo);
  EXPECT_EQ(CallLogLevel(absl::StatusCode::kInternal), LogLevel::kError);
  EXPECT_EQ(CallLogLevel(absl::StatusCode::kUnknown), LogLevel::kError);
  EXPECT_EQ(CallLogLevel(absl::StatusCode::kDataLoss), LogLevel::kError);
  EXPECT_EQ(CallLogLevel(absl::StatusCode::kInvalidArgument), LogLevel::kWarn);
  EXPECT_EQ(CallLogLevel(absl::StatusCode::kResourceExhausted), LogLevel::kWarn);
  EXPECT_EQ(CallLogLevel(absl::StatusCode::kDeadlineExceeded), LogLevel::kWarn);
}

CallRecord SuccessfulSchedule() {
  CallRecord call;
  call.method = "Schedule";
  call.request_id = "req-1";
  call.request_bytes = 1234;
  call.response_bytes = 567;
  call.parsed = true;
  call.size.nodes = 10;
  call.size.pods = 50;
  call.size.queues = 5;
  call.size.pod_groups = 12;
  call.decisions.bindings = 7;
  call.decisions.evictions = 2;
  call.decisions.pending = 3;
  call.decisions.admissions = 0;
  call.phase_seconds = {{"parse", 0.001}, {"validate", 0.0025}};
  call.seconds = 0.0125;
  return call;
}

TEST(CallLogFields, SuccessListsMethodIdCodeDurationSizesAndDecisions) {
  EXPECT_THAT(
      CallLogFields(SuccessfulSchedule(), /*with_phases=*/false),
      ElementsAre(Pair("method", "Schedule"), Pair("request_id", "req-1"), Pair("code", "OK"),
                  Pair("duration_ms", "12.500"), Pair("request_bytes", "1234"),
                  Pair("response_bytes", "567"), Pair("nodes", "10"), Pair("pods", "50"),
                  Pair("queues", "5"), Pair("pod_groups", "12"), Pair("decoded_bytes", "0"),
                  Pair("bindings", "7"), Pair("evictions", "2"), Pair("pending", "3"),
                  Pair("admissions", "0")));
}

TEST(CallLogFields, FailureCarriesTheMessageInsteadOfDecisions) {
  CallRecord call = SuccessfulSchedule();
  call.status = absl::InvalidArgumentError("snapshot.queues[1].parent: unknown queue \"x\"");
  call.response_bytes = 0;
  const LogFields fields = CallLogFields(call, /*with_phases=*/false);
  EXPECT_THAT(fields, Contains(Pair("code", "INVALID_ARGUMENT")));
  EXPECT_THAT(fields, Contains(Pair("request_id", "req-1")));
  EXPECT_THAT(fields, Contains(Pair("error", "snapshot.queues[1].parent: unknown queue \"x\"")));
  EXPECT_THAT(fields, Not(Contains(Pair("bindings", ::testing::_))));
}

TEST(CallLogFields, AHugeErrorIsCutSoTheLineStaysShort) {
  CallRecord call = SuccessfulSchedule();
  call.status = absl::InvalidArgumentError("snapshot.queues[1].name: " + std::string(1 << 20, 'q'));
  for (const auto& [key, value] : CallLogFields(call, /*with_phases=*/false)) {
    if (key == "error") {
      EXPECT_LT(value.size(), 4096u);
    }
  }
}

TEST(CallLogFields, UnparsedRequestHasNoSizes) {
  CallRecord call = SuccessfulSchedule();
  call.parsed = false;
  call.status = absl::InvalidArgumentError("request: not a valid binary");
  EXPECT_THAT(CallLogFields(call, false), Not(Contains(Pair("nodes", ::testing::_))));
}

TEST(CallLogFields, PhasesListedInOrderWhenAsked) {
  EXPECT_THAT(CallLogFields(SuccessfulSchedule(), /*with_phases=*/true),
              Contains(Pair("phases_ms", "parse:1.000,validate:2.500")));
}

TEST(CallLogFields, SearchCountersListedPerActionWhenAsked) {
  CallRecord call = SuccessfulSchedule();
  call.phase_counters = {{"reclaim", "candidates=3,placed=1"}, {"preempt", "candidates=0"}};
  EXPECT_THAT(CallLogFields(call, /*with_phases=*/true),
              Contains(Pair("search", "reclaim:candidates=3,placed=1;preempt:candidates=0")));
  EXPECT_THAT(CallLogFields(call, /*with_phases=*/false),
              Not(Contains(Pair("search", ::testing::_))));
}

TEST(Logger, WritesOnlyLinesAtOrAboveItsLevel) {
  std::vector<std::string> lines;
  Logger logger(LogLevel::kWarn, [&lines](std::string_view line) { lines.emplace_back(line); });
  logger.Log(LogLevel::kDebug, "d");
  logger.Log(LogLevel::kInfo, "i");
  logger.Log(LogLevel::kWarn, "w");
  logger.Log(LogLevel::kError, "e");
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_THAT(lines[0], HasSubstr("level=warn msg=w"));
  EXPECT_THAT(lines[1], HasSubstr("level=error msg=e"));
}

TEST(Logger, OneLinePerCallAtTheCallsLevel) {
  std::vector<std::string> lines;
  Logger logger(LogLevel::kInfo, [&lines](std::string_view line) { lines.emplace_back(line); });
  logger.LogCall(SuccessfulSchedule());
  CallRecord failed = SuccessfulSchedule();
  failed.status = absl::InternalError("broken invariant");
  logger.LogCall(failed);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_THAT(lines[0], StartsWith("ts="));
  EXPECT_THAT(lines[0], HasSubstr(" level=info msg=call method=Schedule request_id=req-1 code=OK"));
  EXPECT_THAT(lines[0], Not(HasSubstr("phases_ms")));  // only at debug
  EXPECT_THAT(lines[1], HasSubstr(" level=error msg=call "));
  EXPECT_THAT(lines[1], HasSubstr(" error=\"broken invariant\""));
}

TEST(Logger, DebugLevelAddsThePhases) {
  std::vector<std::string> lines;
  Logger logger(LogLevel::kDebug, [&lines](std::string_view line) { lines.emplace_back(line); });
  logger.LogCall(SuccessfulSchedule());
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_THAT(lines[0], HasSubstr(" phases_ms=parse:1.000,validate:2.500"));
}

}  // namespace
}  // namespace arbiter::server
