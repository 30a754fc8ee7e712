// Protobuf wire bytes written by hand, for tests that send what no encoder would: fields repeated
// millions of times, truncated or malformed messages. Header-only.
#pragma once

#include <cstdint>
#include <string>

namespace arbiter::testing {

// A base-128 varint.
inline std::string Varint(uint64_t value) {
  std::string out;
  while (value >= 0x80) {
    out.push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<char>(value));
  return out;
}

// A field's tag: its number and wire type.
inline std::string Tag(uint32_t number, int wire) {
  return Varint((uint64_t{number} << 3) | static_cast<uint64_t>(wire));
}

// A length-delimited field (a string, bytes, or an embedded message).
inline std::string Len(uint32_t number, const std::string& payload) {
  return Tag(number, 2) + Varint(payload.size()) + payload;
}

// `piece` written `times` times in a row.
inline std::string Repeated(const std::string& piece, int64_t times) {
  std::string out;
  out.reserve(piece.size() * static_cast<size_t>(times > 0 ? times : 0));
  for (int64_t i = 0; i < times; ++i) out += piece;
  return out;
}

}  // namespace arbiter::testing
