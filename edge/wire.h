// Reading and writing arbiter.v1 messages as bytes: binary protobuf and the proto3 JSON mapping.
//
// Both writers are deterministic (SEMANTICS.md §0.5): equal messages give equal bytes whatever
// order their map entries were inserted in. Binary output uses protobuf's deterministic
// serialisation (map entries in key order). Protobuf 3.21's JSON printer writes map entries in
// hash order, so ToJson prints from the deterministic binary form instead, which puts map keys in
// bytewise order and fields in field-number order; field names are the original proto names.
//
// Shared by the server and the CLI. Thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "google/protobuf/message.h"

namespace arbiter::edge {

// Binary protobuf with map entries in key order.
std::string SerializeDeterministic(const google::protobuf::Message& message);

enum class JsonStyle {
  kCompact,  // one line
  kPretty,   // indented, one field per line, ending in a newline
};

// The proto3 JSON mapping of `message` with the original proto field names, fields with default
// values omitted. Internal only if protobuf's printer fails on a message it produced itself.
absl::StatusOr<std::string> ToJson(const google::protobuf::Message& message,
                                   JsonStyle style = JsonStyle::kPretty);

// Replaces `message` with the proto3 JSON `json` (proto or JSON field names; unknown fields are
// rejected). InvalidArgument naming the message type and the parser's complaint.
absl::Status ParseJson(std::string_view json, google::protobuf::Message* message);

// Replaces `message` with the binary protobuf `bytes`. InvalidArgument when they do not parse.
absl::Status ParseBinary(std::string_view bytes, google::protobuf::Message* message);

enum class WireFormat { kJson, kBinary };

// kBinary for a path ending in ".pb", kJson otherwise (including "-").
WireFormat FormatForPath(std::string_view path);

// Reads the whole of `path` ("-" = standard input). NotFound / PermissionDenied / Unknown with the
// path in the message when it cannot be read.
absl::StatusOr<std::string> ReadFile(const std::string& path);

// Reads `path` as FormatForPath says into `message`. The read errors of ReadFile, or
// InvalidArgument (prefixed with the path) when the content does not parse.
absl::Status ReadMessageFile(const std::string& path, google::protobuf::Message* message);

// Writes `message` to `path` ("-" = standard output) as FormatForPath says: deterministic
// binary, or pretty JSON. Unknown (with the path) when the file cannot be written.
absl::Status WriteMessageFile(const std::string& path, const google::protobuf::Message& message);

}  // namespace arbiter::edge
