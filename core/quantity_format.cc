#include "core/quantity_format.h"

#include <charconv>

namespace arbiter {

std::string FormatQuantity(double value) {
  if (value == 0) return "0";  // also -0
  char buffer[64];
  // Without a precision, to_chars writes the shortest form that round-trips.
  std::to_chars_result result = std::to_chars(buffer, buffer + sizeof(buffer), value);
  return std::string(buffer, result.ptr);
}

}  // namespace arbiter
