#include "edge/answer_writer.h"

#include <cstdint>
#include <cstring>
#include <string_view>

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

void AppendDouble(double value, std::string* out) {
  uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof bits);
  char bytes[8];
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>(bits >> (8 * i));
  out->append(bytes, 8);
}

// Protobuf writes -0 as 0 only where our ToProto made it so (Canonical): the rows already hold
// no negative zero, and a zero scalar field is left out.
bool IsZero(double value) { return value == 0; }

// One map<string, double> entry: key (field 1) and value (field 2), both always written.
size_t EntrySize(std::string_view key) { return 1 + VarintSize(key.size()) + key.size() + 1 + 8; }

void AppendEntry(uint32_t field, std::string_view key, double value, std::string* out) {
  AppendVarint(Tag(field, kLengthDelimited), out);
  AppendVarint(EntrySize(key), out);
  AppendVarint(Tag(1, kLengthDelimited), out);
  AppendVarint(key.size(), out);
  out->append(key.data(), key.size());
  AppendVarint(Tag(2, kFixed64), out);
  AppendDouble(value, out);
}

size_t FieldSize(size_t payload) { return 1 + VarintSize(payload) + payload; }

// The size of row `row`'s QueueShare message, `column_maps` being the size of one of its three
// full maps (fair_share, allocated, requested: every column listed).
size_t ShareSize(const QueueShareRows& rows, int row, size_t column_maps) {
  const std::string_view name = rows.name(row);
  size_t size = name.empty() ? 0 : FieldSize(name.size());
  const auto [begin, end] = rows.deserved_run(row);
  for (uint32_t i = begin; i < end; ++i) {
    size += FieldSize(EntrySize(rows.resources[rows.deserved[i].first]));
  }
  size += 3 * column_maps;
  if (!IsZero(rows.saturation[row])) size += 1 + 8;
  return size;
}

void AppendRows(const QueueShareRows& rows, std::string* out) {
  const int columns = rows.columns();
  size_t column_maps = 0;
  for (const std::string& resource : rows.resources) column_maps += FieldSize(EntrySize(resource));
  for (int row = 0; row < rows.size(); ++row) {
    AppendVarint(Tag(1, kLengthDelimited), out);
    AppendVarint(ShareSize(rows, row, column_maps), out);
    const std::string_view name = rows.name(row);
    if (!name.empty()) {
      AppendVarint(Tag(1, kLengthDelimited), out);
      AppendVarint(name.size(), out);
      out->append(name.data(), name.size());
    }
    const auto [begin, end] = rows.deserved_run(row);
    for (uint32_t i = begin; i < end; ++i) {
      AppendEntry(2, rows.resources[rows.deserved[i].first], rows.deserved[i].second, out);
    }
    const size_t first = static_cast<size_t>(row) * columns;
    for (int r = 0; r < columns; ++r)
      AppendEntry(3, rows.resources[r], rows.fair_share[first + r], out);
    for (int r = 0; r < columns; ++r)
      AppendEntry(4, rows.resources[r], rows.allocated[first + r], out);
    for (int r = 0; r < columns; ++r)
      AppendEntry(5, rows.resources[r], rows.requested[first + r], out);
    if (!IsZero(rows.saturation[row])) {
      AppendVarint(Tag(6, kFixed64), out);
      AppendDouble(rows.saturation[row], out);
    }
  }
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
