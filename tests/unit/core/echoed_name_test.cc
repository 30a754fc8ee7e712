#include "core/echoed_name.h"

#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "gtest/gtest.h"

namespace arbiter {
namespace {

TEST(EchoedNameTest, ShortNamesAreEscapedAsBefore) {
  const std::vector<std::string> names = {"team-a", "a\"b", "tab\there", std::string(256, 'x'),
                                          std::string("nul\0byte", 8)};
  for (const std::string& name : names) {
    EXPECT_EQ(EscapedName(name), absl::CEscape(name)) << name;
    EXPECT_EQ(QuotedName(name), "\"" + absl::CEscape(name) + "\"");
  }
}

TEST(EchoedNameTest, LongNamesAreCutWithAnEllipsis) {
  EXPECT_EQ(EscapedName(std::string(257, 'x')), std::string(256, 'x') + "...");
  EXPECT_EQ(QuotedName(std::string(100 * 1024, 'y')), "\"" + std::string(256, 'y') + "...\"");
}

TEST(EchoedNameTest, CutNeverSplitsAnEscape) {
  // 255 plain bytes, then bytes that escape to four characters each: none of them fits.
  const std::string name = std::string(255, 'a') + std::string(10, '\x7f');
  EXPECT_EQ(EscapedName(name), std::string(255, 'a') + "...");
  // A name of 129 bytes whose escaped text (258 bytes) is just over the cap.
  std::string expected;
  for (int i = 0; i < 128; ++i) expected += "\\n";
  EXPECT_EQ(EscapedName(std::string(129, '\n')), expected + "...");
}

TEST(EchoedNameTest, CappedNamesKeepWholeUtf8Characters) {
  EXPECT_EQ(CappedName("team-a"), "team-a");
  EXPECT_EQ(CappedName(std::string(256, 'z')), std::string(256, 'z'));
  EXPECT_EQ(CappedName(std::string(300, 'z')), std::string(256, 'z') + "...");
  // "é" is two bytes: 255 ASCII bytes, then "é" straddling the cap, is cut before it.
  const std::string name = std::string(255, 'a') + "\xc3\xa9" + "tail";
  EXPECT_EQ(CappedName(name), std::string(255, 'a') + "...");
}

}  // namespace
}  // namespace arbiter
