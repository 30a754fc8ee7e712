// Numbers in messages (SEMANTICS.md §0.5): shortest round-trip decimals, -0 as 0.
#include "core/quantity_format.h"

#include <cstdlib>
#include <limits>
#include <string>

#include "gtest/gtest.h"

namespace arbiter {
namespace {

TEST(FormatQuantity, WholeNumbersHaveNoDecimals) {
  EXPECT_EQ(FormatQuantity(4), "4");
  EXPECT_EQ(FormatQuantity(96000), "96000");
}

TEST(FormatQuantity, FractionsAreTheShortestThatReadBack) {
  EXPECT_EQ(FormatQuantity(0.5), "0.5");
  EXPECT_EQ(FormatQuantity(0.1), "0.1");
  EXPECT_EQ(FormatQuantity(1.0 / 3.0), "0.3333333333333333");
  for (double value : {0.1, 1.0 / 3.0, 1e-7, 123456.789, 5e300}) {
    EXPECT_EQ(std::strtod(FormatQuantity(value).c_str(), nullptr), value) << value;
  }
}

TEST(FormatQuantity, NegativeZeroIsWrittenAsZero) { EXPECT_EQ(FormatQuantity(-0.0), "0"); }

TEST(FormatQuantity, LargeValuesUseAnExponent) {
  EXPECT_EQ(FormatQuantity(1e21), "1e+21");
  EXPECT_EQ(FormatQuantity(std::numeric_limits<double>::infinity()), "inf");
}

}  // namespace
}  // namespace arbiter
