// Caller-supplied names and keys in messages (issue 11). A request may carry a name of 100 KB;
// every message that echoes one (an error's field path and text, a pending reason, an eviction
// sentence) echoes at most kMaxEchoedNameBytes of it, followed by "..." when it was cut, so that
// a message stays short however long the name.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace arbiter {

inline constexpr size_t kMaxEchoedNameBytes = 256;

// For error messages and field paths: `name` C-escaped (absl::CEscape) and, when the escaped
// text is longer than kMaxEchoedNameBytes, cut to at most that many bytes, never inside an
// escape sequence, with "..." appended. A name that needs no cut gives exactly CEscape(name).
std::string EscapedName(std::string_view name);

// EscapedName in double quotes: "team-a", "very-long-na...".
std::string QuotedName(std::string_view name);

// For the sentences of an answer (pending reasons, eviction messages), which echo names as they
// are: `name` itself when it has at most kMaxEchoedNameBytes bytes, else its first bytes up to
// that many, cut at a UTF-8 character boundary, with "..." appended.
std::string CappedName(std::string_view name);

}  // namespace arbiter
