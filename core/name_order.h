// Indices sorted by their names, bytewise (std::string's order), for the thousands of queue, node,
// pod-group and pod names of one request.
//
// Names of one kind share long prefixes ("batch-0001234"), so a plain sort compares the same
// leading bytes again and again, through a pointer per name. Here the names are sorted 8 bytes at
// a time: each index carries the next 8 bytes of its name, big-endian in an integer (zero past the
// name's end), the integers are sorted, and each run of equal integers is sorted again by the 8
// bytes after them (MSD radix order in 8-byte digits). A smaller digit means a smaller name: at
// the first byte where two digits differ, the smaller one either ended there (a prefix of the
// other) or has the smaller byte. In a run whose names all end within the digit, equal digits
// mean one name is the other with zero bytes added, so the shorter comes first. Fewer than 64
// names are sorted as they are. The names must be distinct (validation refuses duplicates), so the
// order is the one std::sort by name gives.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace arbiter {

// Sorts the indices [begin, end) by name_of(index) (a std::string or string_view); a range
// already in order is left as it is after one pass.
template <typename Iterator, typename NameOf>
void SortByName(Iterator begin, Iterator end, NameOf name_of) {
  const auto name = [&](int i) { return std::string_view(name_of(i)); };
  const auto by_name = [&](int a, int b) { return name(a) < name(b); };
  const size_t n = static_cast<size_t>(end - begin);
  if (n < 2 || std::is_sorted(begin, end, by_name)) return;
  // A few names (a pod group's pods) sort faster by the names themselves.
  constexpr size_t kKeyedFrom = 64;
  if (n < kKeyedFrom) {
    std::sort(begin, end, by_name);
    return;
  }
  struct Keyed {
    uint64_t digit;
    int index;
  };
  std::vector<Keyed> keyed(n);
  for (size_t i = 0; i < n; ++i) keyed[i].index = begin[static_cast<std::ptrdiff_t>(i)];
  // Runs still to sort, each of names equal in their first `offset` bytes; a stack, not
  // recursion, since the depth grows with the names' length.
  struct Run {
    size_t begin;
    size_t end;
    size_t offset;
  };
  std::vector<Run> runs = {{0, n, 0}};
  while (!runs.empty()) {
    Run run = runs.back();
    runs.pop_back();
    // Past the bytes all the run's names share (a long common prefix costs one pass, not a digit
    // sort per 8 bytes of it).
    const std::string_view lead = name(keyed[run.begin].index);
    size_t common = lead.size();
    for (size_t i = run.begin + 1; i < run.end && common > run.offset; ++i) {
      const std::string_view s = name(keyed[i].index);
      const size_t limit = std::min(common, s.size());
      size_t k = run.offset;
      while (k < limit && lead[k] == s[k]) ++k;
      common = k;
    }
    run.offset = std::max(run.offset, common);
    bool all_end = true;  // every name of the run ends within this digit
    for (size_t i = run.begin; i < run.end; ++i) {
      const std::string_view s = name(keyed[i].index);
      uint64_t digit = 0;
      for (size_t k = run.offset; k < run.offset + 8; ++k) {
        digit = (digit << 8) | (k < s.size() ? static_cast<unsigned char>(s[k]) : 0U);
      }
      keyed[i].digit = digit;
      all_end = all_end && s.size() <= run.offset + 8;
    }
    const auto first = keyed.begin() + static_cast<std::ptrdiff_t>(run.begin);
    const auto last = keyed.begin() + static_cast<std::ptrdiff_t>(run.end);
    if (all_end) {
      std::sort(first, last, [&](const Keyed& a, const Keyed& b) {
        if (a.digit != b.digit) return a.digit < b.digit;
        return name(a.index).size() < name(b.index).size();
      });
      continue;
    }
    std::sort(first, last, [](const Keyed& a, const Keyed& b) { return a.digit < b.digit; });
    for (size_t i = run.begin; i < run.end;) {
      size_t j = i + 1;
      while (j < run.end && keyed[j].digit == keyed[i].digit) ++j;
      if (j - i > 1) runs.push_back({i, j, run.offset + 8});
      i = j;
    }
  }
  for (size_t i = 0; i < n; ++i) begin[static_cast<std::ptrdiff_t>(i)] = keyed[i].index;
}

}  // namespace arbiter
