// Protobuf's wire format read as protobuf's own message parser reads it, for a decoder that
// builds its own types instead of protobuf messages (edge/request_decoder.cc): tags, lengths,
// nesting, unknown fields skipped, scalars, and a look at the bytes ahead. It knows no message
// of arbiter.v1; the decoder gives it the field map.
//
// Followed as protobuf's parser follows it: a tag is a varint of at most 5 bytes; a length at
// most 5 bytes, below 2 GiB and within its message; any other varint at most 10 bytes (bits past
// the 64th dropped); field number 0, a stray end-group tag and wire types 6 and 7 are refused;
// nesting (messages and groups) stops at 100 levels; a known field number with an unexpected
// wire type is the handler's to call unknown, and is skipped. Nothing is read past the end of the
// current message (its limit).
//
// The input is one array, so the reader is two pointers into it: where it is and the current
// limit (protobuf's CodedInputStream, which it read through before, costs a call per field).
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

namespace arbiter::edge {

// Wire types (protobuf encoding).
constexpr int kVarint = 0;
constexpr int kFixed64 = 1;
constexpr int kLength = 2;
constexpr int kStartGroup = 3;
constexpr int kEndGroup = 4;
constexpr int kFixed32 = 5;

// Protobuf's default recursion limit.
constexpr int kMaxDepth = 100;

// What a field handler did with one field.
enum class Step {
  kRead,     // the field was read
  kUnknown,  // not a field of this message (or not with this wire type): skip it
  kBad,      // the bytes are not a valid message
};

// Whether `text` is valid UTF-8 (RFC 3629: no overlong forms, no surrogates, at most U+10FFFF).
bool IsValidUtf8(std::string_view text);

// Whether every byte of `text` is below 0x80 (ASCII, so valid UTF-8): the common case, checked in
// line eight bytes at a time before IsValidUtf8 is called.
inline bool IsAscii(const char* text, size_t size) {
  uint64_t high = 0;
  size_t i = 0;
  for (; size - i >= 8; i += 8) {
    uint64_t word = 0;
    std::memcpy(&word, text + i, sizeof(word));
    high |= word;
  }
  for (; i < size; ++i) high |= static_cast<unsigned char>(text[i]);
  return (high & 0x8080808080808080ULL) == 0;
}

// Whether `text` is valid UTF-8, ASCII checked in line first.
inline bool Utf8(std::string_view text) {
  return IsAscii(text.data(), text.size()) || IsValidUtf8(text);
}

class WireReader {
 public:
  // Reads `bytes`, which must outlive the reader and be at most 2 GiB.
  explicit WireReader(std::string_view bytes)
      : at_(reinterpret_cast<const uint8_t*>(bytes.data())), limit_(at_ + bytes.size()) {}

  // ---- Framing ----

  // Reads fields until the current limit, giving each to `handler(number, wire_type)`. False
  // when a field is bad or the fields do not end exactly at the limit.
  template <typename Handler>
  bool Fields(Handler&& handler) {
    while (at_ < limit_) {
      uint32_t tag = 0;
      if (!ReadTag(&tag) || tag == 0) return false;  // a zero or malformed tag
      const uint32_t number = tag >> 3;
      const int wire = static_cast<int>(tag & 7);
      if (number == 0 || wire == kEndGroup) return false;
      switch (handler(number, wire)) {
        case Step::kRead:
          break;
        case Step::kUnknown:
          if (!Skip(number, wire)) return false;
          break;
        case Step::kBad:
          return false;
      }
    }
    return true;
  }

  // Reads a length and runs `body` (which calls Fields) within it.
  template <typename Body>
  Step Embedded(Body&& body) {
    uint32_t length = 0;
    if (!ReadLength(&length)) return Step::kBad;
    if (++depth_ > kMaxDepth) return Step::kBad;
    const bool read = Within(length, body);
    --depth_;
    return read ? Step::kRead : Step::kBad;
  }

  // A tag as protobuf's message parser reads it: a varint of at most 5 bytes, keeping its low 32
  // bits (a longer one the parser rejects).
  bool ReadTag(uint32_t* tag) {
    uint64_t value = 0;
    int bytes = 0;
    if (!ReadShortVarint(&value, &bytes)) return false;
    *tag = static_cast<uint32_t>(value);
    return true;
  }

  // A length as protobuf's message parser reads it: at most 5 bytes, below 2 GiB (the fifth
  // byte under 8), and within the current limit.
  bool ReadLength(uint32_t* length) {
    uint64_t value = 0;
    int bytes = 0;
    if (!ReadShortVarint(&value, &bytes)) return false;
    if (bytes == 5 && (value >> 28) >= 8) return false;
    *length = static_cast<uint32_t>(value);
    return value <= Left();
  }

  // A varint of at most 5 bytes before the current limit; `bytes` is how many it took.
  bool ReadShortVarint(uint64_t* value, int* bytes) { return ReadVarint(5, value, bytes); }

  // Skips an unknown field whose tag was just read.
  bool Skip(uint32_t number, int wire) {
    switch (wire) {
      case kVarint: {
        uint64_t ignored = 0;
        return Varint(&ignored);
      }
      case kFixed64:
        return SkipBytes(8);
      case kLength: {
        uint32_t length = 0;
        return ReadLength(&length) && SkipBytes(length);
      }
      case kStartGroup:
        return SkipGroup(number);
      case kFixed32:
        return SkipBytes(4);
      default:
        return false;
    }
  }

  bool SkipGroup(uint32_t number) {
    if (++depth_ > kMaxDepth) return false;
    while (true) {
      uint32_t tag = 0;
      if (!ReadTag(&tag) || tag == 0) return false;  // the group is not closed
      const uint32_t inner = tag >> 3;
      const int wire = static_cast<int>(tag & 7);
      if (inner == 0) return false;
      if (wire == kEndGroup) {
        --depth_;
        return inner == number;
      }
      if (!Skip(inner, wire)) return false;
    }
  }

  // ---- Values (the wire type was checked by the caller) ----

  // `length` bytes (already read with ReadLength) as a string, which must be valid UTF-8.
  Step ReadUtf8(uint32_t length, std::string* out) {
    if (length > Left()) return Step::kBad;
    const char* text = reinterpret_cast<const char*>(at_);
    if (!Utf8(std::string_view(text, length))) return Step::kBad;
    out->assign(text, length);
    at_ += length;
    return Step::kRead;
  }

  // A fixed64, little-endian on the wire whatever the machine's order.
  Step Double(double* out) {
    if (Left() < 8) return Step::kBad;
    uint64_t bits = 0;
    for (int i = 7; i >= 0; --i) bits = (bits << 8) | at_[i];
    at_ += 8;
    std::memcpy(out, &bits, sizeof(*out));
    return Step::kRead;
  }

  // A varint of at most 10 bytes, as protobuf reads one (bits past the 64th are dropped).
  bool Varint(uint64_t* value) {
    int bytes = 0;
    return ReadVarint(10, value, &bytes);
  }

  Step Int32(int32_t* out) {
    uint64_t value = 0;
    if (!Varint(&value)) return Step::kBad;
    *out = static_cast<int32_t>(static_cast<uint32_t>(value));
    return Step::kRead;
  }

  Step Int64(int64_t* out) {
    uint64_t value = 0;
    if (!Varint(&value)) return Step::kBad;
    *out = static_cast<int64_t>(value);
    return Step::kRead;
  }

  Step Bool(bool* out) {
    uint64_t value = 0;
    if (!Varint(&value)) return Step::kBad;
    *out = value != 0;
    return Step::kRead;
  }

  // An enum keeps the caller's raw value (proto3 enums are open).
  template <typename Enum>
  Step EnumValue(Enum* out) {
    int32_t raw = 0;
    const Step step = Int32(&raw);
    *out = static_cast<Enum>(raw);
    return step;
  }

  // A Timestamp or Duration (seconds = 1, nanos = 2), merged into `*out`.
  template <typename Time>
  Step TimeValue(std::optional<Time>* out) {
    if (!out->has_value()) out->emplace();
    Time& time = **out;
    return Embedded([&] {
      return Fields([&](uint32_t number, int wire) {
        if (wire != kVarint) return Step::kUnknown;
        if (number == 1) return Int64(&time.seconds);
        if (number == 2) return Int32(&time.nanos);
        return Step::kUnknown;
      });
    });
  }

  // ---- Looking ahead ----

  // The bytes left up to the current limit.
  std::string_view Ahead() const {
    return std::string_view(reinterpret_cast<const char*>(at_), Left());
  }

  // How many times each field number below kCounted occurs among the fields ahead, up to the
  // current limit: a hint for reserving vectors, read without decoding the fields. The scan
  // stops early (undercounting) at a group or at bytes that do not parse, which the decoding
  // itself then reports.
  static constexpr uint32_t kCounted = 16;
  std::array<int64_t, kCounted> CountAhead() {
    std::array<int64_t, kCounted> counts{};
    const std::string_view bytes = Ahead();
    size_t pos = 0;
    while (pos < bytes.size()) {
      uint64_t tag = 0;
      if (!RawVarint(bytes, &pos, &tag)) break;
      const uint64_t number = tag >> 3;
      if (number < kCounted) ++counts[number];
      uint64_t skip = 0;
      switch (tag & 7) {
        case kVarint:
          if (!RawVarint(bytes, &pos, &skip)) return counts;
          skip = 0;
          break;
        case kFixed64:
          skip = 8;
          break;
        case kLength:
          if (!RawVarint(bytes, &pos, &skip)) return counts;
          break;
        case kFixed32:
          skip = 4;
          break;
        default:
          return counts;
      }
      if (skip > bytes.size() - pos) break;
      pos += skip;
    }
    return counts;
  }

  static bool RawVarint(std::string_view bytes, size_t* pos, uint64_t* value) {
    *value = 0;
    for (int shift = 0; shift < 64 && *pos < bytes.size(); shift += 7) {
      const auto byte = static_cast<uint8_t>(bytes[(*pos)++]);
      *value |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if ((byte & 0x80) == 0) return true;
    }
    return false;
  }

  // Runs `body` (which reads up to the limit) within the next `length` bytes (at most to the
  // current limit), then restores the limit.
  template <typename Body>
  bool Within(uint32_t length, Body&& body) {
    const uint8_t* const outer = limit_;
    limit_ = at_ + std::min<size_t>(length, Left());
    const bool read = body();
    limit_ = outer;
    return read;
  }

  // Whether the current message (or packed run) has no bytes left.
  bool AtLimit() const { return at_ >= limit_; }

  // Skips `bytes` bytes that a look at Ahead() has already read.
  void Advance(int bytes) { at_ += std::min<size_t>(static_cast<size_t>(bytes), Left()); }

 private:
  // The bytes left before the current limit.
  size_t Left() const { return static_cast<size_t>(limit_ - at_); }

  // Skips `count` bytes; false (at the limit) when fewer are left.
  bool SkipBytes(uint64_t count) {
    if (count > Left()) {
      at_ = limit_;
      return false;
    }
    at_ += count;
    return true;
  }

  // A varint of at most `most` bytes before the current limit; `bytes` is how many it took.
  bool ReadVarint(int most, uint64_t* value, int* bytes) {
    const size_t left = Left();
    uint64_t result = 0;
    for (int i = 0; i < most && static_cast<size_t>(i) < left; ++i) {
      const uint8_t byte = at_[i];
      result |= static_cast<uint64_t>(byte & 0x7f) << (7 * i);
      if (byte < 0x80) {
        *value = result;
        *bytes = i + 1;
        at_ += i + 1;
        return true;
      }
    }
    *value = 0;
    return false;
  }

  const uint8_t* at_;     // the next byte to read
  const uint8_t* limit_;  // the end of the current message (or packed run)
  int depth_ = 0;
};

}  // namespace arbiter::edge
