#include "core/timestamp_format.h"

#include <cstdint>

#include "absl/strings/str_format.h"

namespace arbiter {
namespace {

// The civil date of `days` since 1970-01-01 (Howard Hinnant's days-to-civil algorithm).
void CivilFromDays(int64_t days, int64_t* year, int* month, int* day) {
  days += 719468;
  const int64_t era = (days >= 0 ? days : days - 146096) / 146097;
  const int64_t doe = days - era * 146097;                                    // [0, 146096]
  const int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;  // [0, 399]
  const int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);                // [0, 365]
  const int64_t mp = (5 * doy + 2) / 153;                                     // [0, 11]
  *day = static_cast<int>(doy - (153 * mp + 2) / 5 + 1);
  *month = static_cast<int>(mp < 10 ? mp + 3 : mp - 9);
  *year = yoe + era * 400 + (*month <= 2 ? 1 : 0);
}

}  // namespace

std::string FormatTimestamp(const Timestamp& t) {
  int64_t days = t.seconds / 86400;
  int64_t rest = t.seconds % 86400;
  if (rest < 0) {
    rest += 86400;
    --days;
  }
  int64_t year = 0;
  int month = 0;
  int day = 0;
  CivilFromDays(days, &year, &month, &day);
  std::string out = absl::StrFormat("%04d-%02d-%02dT%02d:%02d:%02d", year, month, day, rest / 3600,
                                    rest / 60 % 60, rest % 60);
  if (t.nanos != 0) {
    if (t.nanos % 1000000 == 0) {
      absl::StrAppendFormat(&out, ".%03d", t.nanos / 1000000);
    } else if (t.nanos % 1000 == 0) {
      absl::StrAppendFormat(&out, ".%06d", t.nanos / 1000);
    } else {
      absl::StrAppendFormat(&out, ".%09d", t.nanos);
    }
  }
  out += "Z";
  return out;
}

}  // namespace arbiter
