#include "edge/answer_writer.h"

#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

#include "arbiter/v1/arbiter.pb.h"
#include "edge/proto_convert.h"
#include "edge/wire.h"

namespace arbiter::edge {
namespace {

// Wire types and the tags of arbiter.v1.QueueShare and FairShareResponse.
constexpr uint32_t kLengthDelimited = 2;
constexpr uint32_t kFixed64 = 1;
constexpr uint32_t Tag(uint32_t field, uint32_t wire_type) { return field << 3 | wire_type; }

size_t VarintSize(uint64_t value) {
  size_t size = 1;
  while (value >= 0x80) {
    value >>= 7;
    ++size;
  }
  return size;
}

void AppendVarint(uint64_t value, std::string* out) {
  while (value >= 0x80) {
    out->push_back(static_cast<char>(value | 0x80));
    value >>= 7;
  }
  out->push_back(static_cast<char>(value));
}

// Little-endian, as protobuf writes a double: the value's own bytes on a little-endian machine
// (one store; the byte loop was not merged into one and cost most of the answer's writing).
char* WriteDouble(double value, char* at) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  std::memcpy(at, &value, sizeof value);
#else
  uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof bits);
  for (int i = 0; i < 8; ++i) at[i] = static_cast<char>(bits >> (8 * i));
#endif
  return at + 8;
}

char* WriteBytes(const std::string& bytes, char* at) {
  std::memcpy(at, bytes.data(), bytes.size());
  return at + bytes.size();
}

char* WriteVarint(uint64_t value, char* at) {
  while (value >= 0x80) {
    *at++ = static_cast<char>(value | 0x80);
    value >>= 7;
  }
  *at++ = static_cast<char>(value);
  return at;
}

// One map<string, double> entry is the key (field 1) and the value (field 2), both always
// written. Everything but the value's 8 bytes depends only on the map's field and the key, so it
// is made once per (field, column): the entry's tag, length, key, and the value's tag.
std::string EntryPrefix(uint32_t field, const std::string& key) {
  const size_t entry_size = 1 + VarintSize(key.size()) + key.size() + 1 + 8;
  std::string prefix;
  AppendVarint(Tag(field, kLengthDelimited), &prefix);
  AppendVarint(entry_size, &prefix);
  AppendVarint(Tag(1, kLengthDelimited), &prefix);
  AppendVarint(key.size(), &prefix);
  prefix += key;
  AppendVarint(Tag(2, kFixed64), &prefix);
  return prefix;
}

// A zero scalar field is left out, as protobuf does (the rows hold no negative zero).
bool IsZero(double value) { return value == 0; }

// The prefixes of the deserved map (field 2) per column, and the three full maps (fields 3 to 5,
// every column listed) of any row as one template with the values left to fill in.
struct Prefixes {
  explicit Prefixes(const std::vector<std::string>& resources) {
    for (const std::string& resource : resources) deserved.push_back(EntryPrefix(2, resource));
    for (uint32_t field = 3; field <= 5; ++field) {
      for (const std::string& resource : resources) {
        full_maps += EntryPrefix(field, resource);
        value_offsets.push_back(full_maps.size());
        full_maps.append(8, '\0');
      }
    }
  }

  std::vector<std::string> deserved;
  std::string full_maps;
  std::vector<size_t> value_offsets;  // per (field, column): where its value goes in full_maps
};

// The size of row `row`'s QueueShare message.
size_t ShareSize(const QueueShareRows& rows, const Prefixes& prefixes, int row) {
  const std::string_view name = rows.name(row);
  size_t size = name.empty() ? 0 : 1 + VarintSize(name.size()) + name.size();
  const auto [begin, end] = rows.deserved_run(row);
  for (uint32_t i = begin; i < end; ++i)
    size += prefixes.deserved[rows.deserved[i].first].size() + 8;
  size += prefixes.full_maps.size();
  if (!IsZero(rows.saturation[row])) size += 1 + 8;
  return size;
}

char* WriteRow(const QueueShareRows& rows, const Prefixes& prefixes, int row, size_t size,
               char* at) {
  at = WriteVarint(Tag(1, kLengthDelimited), at);
  at = WriteVarint(size, at);
  const std::string_view name = rows.name(row);
  if (!name.empty()) {
    at = WriteVarint(Tag(1, kLengthDelimited), at);
    at = WriteVarint(name.size(), at);
    std::memcpy(at, name.data(), name.size());
    at += name.size();
  }
  const auto [begin, end] = rows.deserved_run(row);
  for (uint32_t i = begin; i < end; ++i) {
    at = WriteBytes(prefixes.deserved[rows.deserved[i].first], at);
    at = WriteDouble(rows.deserved[i].second, at);
  }
  const int columns = rows.columns();
  const size_t first = static_cast<size_t>(row) * columns;
  const std::vector<double>* maps[] = {&rows.fair_share, &rows.allocated, &rows.requested};
  WriteBytes(prefixes.full_maps, at);
  const size_t* offset = prefixes.value_offsets.data();
  for (const std::vector<double>* values : maps) {
    for (int r = 0; r < columns; ++r) WriteDouble((*values)[first + r], at + *offset++);
  }
  at += prefixes.full_maps.size();
  if (!IsZero(rows.saturation[row])) {
    at = WriteVarint(Tag(6, kFixed64), at);
    at = WriteDouble(rows.saturation[row], at);
  }
  return at;
}

// Sizes every row first, so that the answer is written into one allocation.
void AppendRows(const QueueShareRows& rows, std::string* out) {
  const Prefixes prefixes(rows.resources);
  std::vector<size_t> sizes(rows.size());
  size_t total = 0;
  for (int row = 0; row < rows.size(); ++row) {
    sizes[row] = ShareSize(rows, prefixes, row);
    total += 1 + VarintSize(sizes[row]) + sizes[row];
  }
  const size_t old_size = out->size();
  out->resize(old_size + total);
  char* at = out->data() + old_size;
  for (int row = 0; row < rows.size(); ++row) at = WriteRow(rows, prefixes, row, sizes[row], at);
}

}  // namespace

void AppendFairShareResponse(const FairShareResult& result, std::string* out) {
  if (result.rows.size() == 0) {
    // QueueShares (Kueue): through the message.
    v1::FairShareResponse proto;
    ToProto(result, &proto);
    out->append(SerializeDeterministic(proto));
    return;
  }
  AppendRows(result.rows, out);
}

}  // namespace arbiter::edge
