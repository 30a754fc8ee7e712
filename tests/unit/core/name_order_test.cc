// SortByName: the order std::sort by name gives, with keys past the shared prefix.
#include "core/name_order.h"

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace arbiter {
namespace {

using ::testing::ElementsAre;

std::vector<int> Sorted(const std::vector<std::string>& names) {
  std::vector<int> order(names.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  SortByName(order.begin(), order.end(), [&](int i) -> const std::string& { return names[i]; });
  return order;
}

std::vector<int> Expected(const std::vector<std::string>& names) {
  std::vector<int> order(names.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  std::sort(order.begin(), order.end(), [&](int a, int b) { return names[a] < names[b]; });
  return order;
}

TEST(SortByNameTest, AShorterNameBeforeItsExtensionsAndZeroBytesAfterTheEnd) {
  using std::string_literals::operator""s;
  std::vector<std::string> names = {"queue-10", "queue-1",     "queue-1\0"s,
                                    "queue-09", "queue-1\x01", "queue-100000000000",
                                    "queue-"};
  EXPECT_THAT(Sorted(names), ElementsAre(6, 3, 1, 2, 4, 0, 5));
  // Enough names for the keyed sort: the same seven come first, in the same order.
  for (int i = 0; i < 64; ++i) names.push_back("queue-2" + std::to_string(i));
  const std::vector<int> sorted = Sorted(names);
  EXPECT_THAT(std::vector<int>(sorted.begin(), sorted.begin() + 7),
              ElementsAre(6, 3, 1, 2, 4, 0, 5));
  EXPECT_EQ(sorted, Expected(names));
}

TEST(SortByNameTest, OrdersAsStdSortOnRandomNamesWithSharedPrefixes) {
  std::mt19937 random(7);
  for (int round = 0; round < 300; ++round) {
    // Prefixes of different lengths, then few distinct bytes (ties within the 8-byte key, names
    // that end inside it, zero and 0xff bytes).
    const std::string prefix(static_cast<size_t>(random() % 12), 'p');
    const char alphabet[] = {'\0', 'a', 'b', '\xff'};
    std::vector<std::string> names;
    const int n = 1 + static_cast<int>(random() % 300);
    while (static_cast<int>(names.size()) < n) {
      std::string name = prefix.substr(0, random() % (prefix.size() + 1));
      const size_t tail = random() % 14;
      for (size_t k = 0; k < tail; ++k) name += alphabet[random() % 4];
      if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
    }
    ASSERT_EQ(Sorted(names), Expected(names)) << "round " << round;
  }
}

}  // namespace
}  // namespace arbiter
