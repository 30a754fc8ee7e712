// Request ids: the name under which one call appears in the logs, and which the caller can
// correlate with its own (the `x-request-id` metadata, sent and echoed back).
#pragma once

#include <string>
#include <string_view>

namespace arbiter::rpc {

// The metadata key a caller may set, and under which the server echoes the id in its trailers.
inline constexpr char kRequestIdKey[] = "x-request-id";

// A fresh id: 16 lower-case hexadecimal digits from a per-thread random generator seeded from
// the operating system. Thread-safe.
std::string NewRequestId();

// Whether the caller's `id` is used as given: 1 to 128 characters, each a letter, a digit or one
// of "-_.:/+=@". Anything else (control characters, spaces, quotes) is replaced by a fresh id, so
// that a caller cannot forge log lines.
bool IsAcceptableRequestId(std::string_view id);

// `from_caller` when acceptable, NewRequestId() otherwise.
std::string ChooseRequestId(std::string_view from_caller);

}  // namespace arbiter::rpc
