// Table tests of named cases: each case of a value-parameterised suite is its own test, named
// after the case's `name` field.
//
//   struct DivisionCase { std::string name; Snapshot snapshot; ... };
//   INSTANTIATE_TEST_SUITE_P(KaiFairShareTest, KaiFairShareDivision,
//                            ::testing::ValuesIn(DivisionCases()), CaseName());
//
// A case prints as its name (instead of its bytes) when it also defines
//   void PrintTo(const DivisionCase& c, std::ostream* os) { *os << c.name; }
#pragma once

#include <string>

#include "gtest/gtest.h"

namespace arbiter::testing {

// The test-name generator of a table: the case's `name`, which must be a valid test name
// (letters, digits and underscores) and unique within the table.
struct CaseName {
  template <typename Case>
  std::string operator()(const ::testing::TestParamInfo<Case>& param) const {
    return param.param.name;
  }
};

}  // namespace arbiter::testing
