#include "core/resource_interner.h"

#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

namespace arbiter {
namespace {

// Whether Intern accepts a name of type T (false when the call would not compile).
template <typename T, typename = void>
struct Internable : std::false_type {};
template <typename T>
struct Internable<T, std::void_t<decltype(std::declval<ResourceInterner&>().Intern(
                         std::declval<T>(), std::declval<int&>()))>> : std::true_type {};

// The interner keeps a pointer to each name: a temporary (a literal's std::string among them)
// would leave it dangling, as the GPU name of a sharing pod once did, so such calls do not compile.
TEST(ResourceInternerTest, RefusesNamesThatDoNotOutliveIt) {
  static_assert(Internable<const std::string&>::value);
  static_assert(Internable<std::string&>::value);
  static_assert(!Internable<std::string&&>::value);
  static_assert(!Internable<const char*>::value);
  static_assert(!Internable<const char(&)[4]>::value);
}

TEST(ResourceInternerTest, GivesIdsInTheOrderNamesAreFirstMet) {
  const std::vector<std::string> first = {"cpu", "memory"};
  const std::vector<std::string> second = {"cpu", "gpu", "memory"};
  ResourceInterner interner;
  int hint = 0;
  EXPECT_EQ(interner.Intern(first[0], hint), 0);
  EXPECT_EQ(interner.Intern(first[1], hint), 1);
  hint = 0;
  EXPECT_EQ(interner.Intern(second[0], hint), 0);
  EXPECT_EQ(interner.Intern(second[1], hint), 2);  // the hint (memory) misses: a new id
  EXPECT_EQ(interner.Intern(second[2], hint), 1);
  EXPECT_EQ(interner.size(), 3);
  EXPECT_EQ(interner.name(2), "gpu");
}

TEST(ResourceInternerTest, SortedGivesEachIdItsPositionInBytewiseOrder) {
  const std::vector<std::string> names = {"nvidia.com/gpu", "cpu", "Memory"};
  ResourceInterner interner;
  int hint = 0;
  for (const std::string& name : names) interner.Intern(name, hint);
  std::vector<int> position;
  const ResourceSet sorted = interner.Sorted(position);
  EXPECT_EQ(position, (std::vector<int>{2, 1, 0}));
  EXPECT_EQ(sorted.name(0), "Memory");
  EXPECT_EQ(sorted.name(2), "nvidia.com/gpu");
}

// Past 16 names the lookup switches to a hash index; ids stay the same on both sides of it.
TEST(ResourceInternerTest, ManyNamesKeepTheirIds) {
  std::vector<std::string> names;
  for (int i = 0; i < 40; ++i) names.push_back("r" + std::to_string(i));
  ResourceInterner interner;
  for (int i = 0; i < 40; ++i) {
    int hint = 0;
    EXPECT_EQ(interner.Intern(names[i], hint), i);
  }
  for (int i = 39; i >= 0; --i) {
    int hint = 0;
    EXPECT_EQ(interner.Intern(names[i], hint), i) << names[i];
  }
  EXPECT_EQ(interner.size(), 40);
}

}  // namespace
}  // namespace arbiter
