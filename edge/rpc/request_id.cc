#include "edge/rpc/request_id.h"

#include <cstdint>
#include <random>

#include "absl/strings/ascii.h"
#include "absl/strings/str_format.h"

namespace arbiter::rpc {

std::string NewRequestId() {
  thread_local std::mt19937_64 generator([] {
    std::random_device device;
    return (static_cast<uint64_t>(device()) << 32) ^ device();
  }());
  return absl::StrFormat("%016x", generator());
}

bool IsAcceptableRequestId(std::string_view id) {
  if (id.empty() || id.size() > 128) return false;
  for (const char c : id) {
    if (absl::ascii_isalnum(static_cast<unsigned char>(c))) continue;
    switch (c) {
      case '-':
      case '_':
      case '.':
      case ':':
      case '/':
      case '+':
      case '=':
      case '@':
        continue;
      default:
        return false;
    }
  }
  return true;
}

std::string ChooseRequestId(std::string_view from_caller) {
  if (IsAcceptableRequestId(from_caller)) return std::string(from_caller);
  return NewRequestId();
}

}  // namespace arbiter::rpc
