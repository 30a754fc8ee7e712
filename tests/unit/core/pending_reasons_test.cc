// The words both models' pending reasons share (core/pending_reasons.h, SEMANTICS.md §6).
#include "core/pending_reasons.h"

#include <string>

#include "gtest/gtest.h"

namespace arbiter {
namespace {

TEST(Counted, OneTakesTheNounAsItIs) { EXPECT_EQ(Counted(1, "node"), "1 node"); }

TEST(Counted, EveryOtherCountTakesAnS) {
  EXPECT_EQ(Counted(0, "node"), "0 nodes");
  EXPECT_EQ(Counted(2, "pod"), "2 pods");
  EXPECT_EQ(Counted(10000000000, "pending workload"), "10000000000 pending workloads");
}

TEST(IsOrAre, AgreesWithTheCount) {
  EXPECT_EQ(std::string(IsOrAre(1)), "is");
  EXPECT_EQ(std::string(IsOrAre(0)), "are");
  EXPECT_EQ(std::string(IsOrAre(3)), "are");
}

}  // namespace
}  // namespace arbiter
