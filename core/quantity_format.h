// Numbers in messages (SEMANTICS.md §0.5): the shortest decimal that reads back as the same double.
#pragma once

#include <string>

namespace arbiter {

// The shortest round-trip form of `value` ("4", "0.5", "1e+21"); -0 is written as "0". Messages
// are pure functions of the decision, so every number in them goes through here.
std::string FormatQuantity(double value);

}  // namespace arbiter
