#include "core/echoed_name.h"

#include "absl/strings/escaping.h"
#include "absl/strings/string_view.h"

namespace arbiter {
namespace {

constexpr char kEllipsis[] = "...";

}  // namespace

std::string EscapedName(std::string_view name) {
  // Escaping never shrinks a byte, so a name this short cannot need a cut.
  if (name.size() <= kMaxEchoedNameBytes) {
    std::string escaped = absl::CEscape(absl::string_view(name.data(), name.size()));
    if (escaped.size() <= kMaxEchoedNameBytes) return escaped;
  }
  // CEscape escapes byte by byte, so the escape of a prefix is a prefix of the escape.
  std::string out;
  for (char c : name) {
    const std::string piece = absl::CEscape(absl::string_view(&c, 1));
    if (out.size() + piece.size() > kMaxEchoedNameBytes) break;
    out += piece;
  }
  out += kEllipsis;
  return out;
}

std::string QuotedName(std::string_view name) {
  std::string out = "\"";
  out += EscapedName(name);
  out += '"';
  return out;
}

std::string CappedName(std::string_view name) {
  if (name.size() <= kMaxEchoedNameBytes) return std::string(name);
  size_t cut = kMaxEchoedNameBytes;
  // Back off continuation bytes (10xxxxxx) so that a multi-byte character is not split.
  while (cut > 0 && (static_cast<unsigned char>(name[cut]) & 0xC0) == 0x80) --cut;
  std::string out(name.substr(0, cut));
  out += kEllipsis;
  return out;
}

}  // namespace arbiter
