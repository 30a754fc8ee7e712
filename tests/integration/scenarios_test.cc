// Every scenario under tests/scenarios/ (see scenario_matcher.h for the file format): run the
// request through Schedule in-process, compare the decisions with expected.json, and run it a
// second time to check that the answer's bytes are the same (SEMANTICS.md §0.5).
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "edge/calls.h"
#include "edge/wire.h"
#include "gtest/gtest.h"
#include "tests/integration/scenario_matcher.h"

namespace arbiter::testing {
namespace {

std::string ScenarioRoot() { return std::string(ARBITER_SOURCE_DIR) + "/tests/scenarios"; }

std::string ReadAll(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
}

class Scenario : public ::testing::TestWithParam<std::string> {};

TEST_P(Scenario, DecisionsMatchExpectedAndRepeatByteForByte) {
  const std::string& dir = GetParam();
  v1::ScheduleRequest request;
  const absl::Status read = edge::ReadMessageFile(dir + "/request.json", &request);
  ASSERT_TRUE(read.ok()) << read;

  const absl::StatusOr<v1::ScheduleResponse> first = edge::CallSchedule(request);
  ASSERT_TRUE(first.ok()) << first.status();
  const absl::StatusOr<v1::ScheduleResponse> second = edge::CallSchedule(request);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(edge::SerializeDeterministic(*first), edge::SerializeDeterministic(*second))
      << "two runs of the same request gave different bytes";

  const absl::Status matched = MatchExpected(ReadAll(dir + "/expected.json"), *first);
  EXPECT_TRUE(matched.ok()) << dir << "\n"
                            << matched.message() << "\nthe answer was:\n"
                            << edge::ToJson(*first).value_or("<unprintable>");
}

// "tests/scenarios/kai/gang-fits-whole" -> "kai_gang_fits_whole".
std::string TestName(const ::testing::TestParamInfo<std::string>& param) {
  std::string name = param.param.substr(ScenarioRoot().size() + 1);
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

// With no scenario found, googletest reports the suite as uninstantiated, a failing test.
INSTANTIATE_TEST_SUITE_P(Files, Scenario, ::testing::ValuesIn(FindScenarios(ScenarioRoot())),
                         TestName);

// A missing or emptied folder must not pass as "no scenario failed": each model has its folder,
// and every folder holding a request.json also holds the expected.json that makes it a scenario.
TEST(ScenarioFolders, EachModelHasScenariosAndNoneIsHalfWritten) {
  namespace fs = std::filesystem;
  ASSERT_TRUE(fs::is_directory(ScenarioRoot())) << ScenarioRoot() << " is missing";
  for (const char* model : {"kai", "kueue"}) {
    const std::string folder = ScenarioRoot() + "/" + model;
    ASSERT_TRUE(fs::is_directory(folder)) << folder << " is missing";
    EXPECT_FALSE(FindScenarios(folder).empty()) << folder << " holds no scenario";
  }
  for (const fs::directory_entry& entry : fs::recursive_directory_iterator(ScenarioRoot())) {
    if (entry.is_directory() && fs::exists(entry.path() / "request.json")) {
      EXPECT_TRUE(fs::exists(entry.path() / "expected.json"))
          << entry.path() << " has a request.json but no expected.json";
    }
  }
}

}  // namespace
}  // namespace arbiter::testing
