#include "edge/wire_reader.h"

namespace arbiter::edge {

bool IsValidUtf8(std::string_view text) {
  const size_t size = text.size();
  size_t i = 0;
  // ASCII eight bytes at a time: most names and keys are plain ASCII.
  while (size - i >= 8) {
    uint64_t word = 0;
    std::memcpy(&word, text.data() + i, sizeof(word));
    if ((word & 0x8080808080808080ULL) != 0) break;
    i += 8;
  }
  while (i < size) {
    const auto lead = static_cast<unsigned char>(text[i]);
    if (lead < 0x80) {
      ++i;
      continue;
    }
    size_t length = 0;
    uint32_t code = 0;
    uint32_t least = 0;
    if ((lead & 0xE0) == 0xC0) {
      length = 2;
      code = lead & 0x1F;
      least = 0x80;
    } else if ((lead & 0xF0) == 0xE0) {
      length = 3;
      code = lead & 0x0F;
      least = 0x800;
    } else if ((lead & 0xF8) == 0xF0) {
      length = 4;
      code = lead & 0x07;
      least = 0x10000;
    } else {
      return false;
    }
    if (size - i < length) return false;
    for (size_t k = 1; k < length; ++k) {
      const auto next = static_cast<unsigned char>(text[i + k]);
      if ((next & 0xC0) != 0x80) return false;
      code = (code << 6) | (next & 0x3F);
    }
    if (code < least || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) return false;
    i += length;
  }
  return true;
}

}  // namespace arbiter::edge
