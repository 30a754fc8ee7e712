#include "core/pending_reasons.h"

#include "absl/strings/str_cat.h"

namespace arbiter {

std::string Counted(int64_t count, std::string_view noun) {
  std::string text = absl::StrCat(count, " ");
  text.append(noun);
  if (count != 1) text.push_back('s');
  return text;
}

const char* IsOrAre(int64_t count) { return count == 1 ? "is" : "are"; }

}  // namespace arbiter
