// Timestamps in messages (SEMANTICS.md §0.5): RFC 3339 in UTC, as protobuf's JSON mapping writes
// them. A pure function of the value: no clock, no time zone database.
#pragma once

#include <string>

#include "core/model.h"

namespace arbiter {

// `t` as "2026-11-28T12:10:00Z", with the fraction of a second only when nanos is not 0, written
// with 3, 6 or 9 digits ("…:00.500Z"). Seconds are counted from the Unix epoch, proleptic
// Gregorian calendar; `t` is within the range validation accepts (years 1 to 9999).
std::string FormatTimestamp(const Timestamp& t);

}  // namespace arbiter
