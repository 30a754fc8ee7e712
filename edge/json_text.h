// JSON text: the one string writer of the JSON that arbiter writes by hand (the CLI's what-if
// answer, the simulator's output, the KAI scenario files of the tests). Messages written through
// protobuf's JSON printer (wire.h) do not use it.
#pragma once

#include <string>
#include <string_view>

namespace arbiter::edge {

// `text` as a JSON string, quotes included (RFC 8259): `"` and `\` escaped, newline, carriage
// return and tab as \n, \r and \t, other control characters below 0x20 as \u00XX; every other
// byte as it is (the callers' strings are UTF-8). Thread-safe; linear in the length of `text`.
std::string JsonString(std::string_view text);

}  // namespace arbiter::edge
