// Request ids: fresh ones are distinct hex strings; a caller's id is kept only when it is safe.
#include "edge/rpc/request_id.h"

#include <set>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace arbiter::rpc {
namespace {

TEST(NewRequestId, IsSixteenHexDigitsAndDistinct) {
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) {
    const std::string id = NewRequestId();
    ASSERT_EQ(id.size(), 16u) << id;
    EXPECT_EQ(id.find_first_not_of("0123456789abcdef"), std::string::npos) << id;
    seen.insert(id);
  }
  EXPECT_EQ(seen.size(), 1000u);
}

TEST(ChooseRequestId, KeepsTheCallersSafeId) {
  for (const std::string& id : std::vector<std::string>{"abc", "7f3e-11aa", "trace:span/1",
                                                        "a_b.c+d=e@f", std::string(128, 'x')}) {
    EXPECT_TRUE(IsAcceptableRequestId(id)) << id;
    EXPECT_EQ(ChooseRequestId(id), id);
  }
}

TEST(ChooseRequestId, ReplacesEmptyLongOrUnsafeIds) {
  for (const std::string& id : std::vector<std::string>{"", std::string(129, 'x'), "two words",
                                                        "quote\"", "new\nline", "tab\t"}) {
    EXPECT_FALSE(IsAcceptableRequestId(id)) << id;
    const std::string chosen = ChooseRequestId(id);
    EXPECT_NE(chosen, id);
    EXPECT_EQ(chosen.size(), 16u);
  }
}

}  // namespace
}  // namespace arbiter::rpc
