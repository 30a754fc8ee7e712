#include "core/sorted_map.h"

#include <map>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace arbiter {
namespace {

using ::testing::ElementsAre;
using ::testing::Pair;

TEST(SortedMapTest, IteratesInBytewiseKeyOrderWhateverTheInsertionOrder) {
  SortedMap<double> map;
  map["memory"] = 2;
  map["cpu"] = 1;
  map["nvidia.com/gpu"] = 3;
  map["Zeta"] = 4;  // uppercase sorts before lowercase, bytewise
  EXPECT_THAT(map, ElementsAre(Pair("Zeta", 4), Pair("cpu", 1), Pair("memory", 2),
                               Pair("nvidia.com/gpu", 3)));
}

TEST(SortedMapTest, OperatorBracketReturnsTheExistingValueOrInsertsZero) {
  SortedMap<double> map{{"cpu", 1}};
  map["cpu"] += 2;
  EXPECT_EQ(map["gpu"], 0);
  EXPECT_THAT(map, ElementsAre(Pair("cpu", 3), Pair("gpu", 0)));
}

TEST(SortedMapTest, EmplaceKeepsAnExistingKeyLikeStdMap) {
  SortedMap<std::string> map;
  EXPECT_TRUE(map.emplace("zone", "a").second);
  const auto [it, inserted] = map.emplace("zone", "b");
  EXPECT_FALSE(inserted);
  EXPECT_EQ(it->second, "a");
  const SortedMap<std::string> repeated{{"k", "first"}, {"k", "second"}};
  EXPECT_EQ(repeated.at("k"), "first");
}

TEST(SortedMapTest, EmplaceHintAtTheEndAppendsOrFallsBackToASortedInsert) {
  SortedMap<double> map;
  map.emplace_hint(map.end(), "b", 2);
  map.emplace_hint(map.end(), "c", 3);
  map.emplace_hint(map.end(), "a", 1);  // out of order: still sorted
  map.emplace_hint(map.end(), "c", 9);  // present: unchanged
  EXPECT_THAT(map, ElementsAre(Pair("a", 1), Pair("b", 2), Pair("c", 3)));
}

TEST(SortedMapTest, FindCountAtAndErase) {
  SortedMap<double> map{{"a", 1}, {"b", 2}};
  EXPECT_EQ(map.find("b")->second, 2);
  EXPECT_EQ(map.find("c"), map.end());
  EXPECT_EQ(map.count("a"), 1u);
  EXPECT_EQ(map.count(""), 0u);
  EXPECT_THROW(map.at("c"), std::out_of_range);
  EXPECT_EQ(map.erase("a"), 1u);
  EXPECT_EQ(map.erase("a"), 0u);
  EXPECT_THAT(map, ElementsAre(Pair("b", 2)));
}

TEST(SortedMapTest, EqualityComparesEntriesInOrder) {
  const SortedMap<double> a{{"x", 1}, {"y", 2}};
  const SortedMap<double> b{{"y", 2}, {"x", 1}};
  const SortedMap<double> c{{"x", 1}, {"y", 3}};
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
}

// The same operations on a std::map and a SortedMap leave the same entries, in the same order:
// keys that share prefixes, empty keys and bytes above 0x7f (std::string's order is unsigned).
TEST(SortedMapTest, AgreesWithStdMapOnRandomOperations) {
  std::mt19937 random(7);
  const std::vector<std::string> keys = {"",  "a",    "ab",    "abc", "b",
                                         "B", "\xff", "\x80z", "z",   "za"};
  for (int round = 0; round < 200; ++round) {
    std::map<std::string, double> expected;
    SortedMap<double> map;
    for (int step = 0; step < 30; ++step) {
      const std::string& key = keys[random() % keys.size()];
      const double value = static_cast<double>(random() % 100);
      switch (random() % 4) {
        case 0:
          expected[key] = value;
          map[key] = value;
          break;
        case 1:
          expected.emplace(key, value);
          map.emplace(key, value);
          break;
        case 2:
          expected.emplace_hint(expected.end(), key, value);
          map.emplace_hint(map.end(), key, value);
          break;
        default:
          expected.erase(key);
          map.erase(key);
      }
      using Entries = std::vector<std::pair<std::string, double>>;
      ASSERT_EQ(Entries(map.begin(), map.end()), Entries(expected.begin(), expected.end()));
    }
  }
}

}  // namespace
}  // namespace arbiter
