// Decoding a binary arbiter.v1 request straight into the core's model (core/model.h): the one way
// a request becomes a model, for the server, the CLI (which serialises a JSON request first), the
// tests and the benchmarks alike.
//
// It reads every field protobuf reads (tests/unit/edge/request_decoder_test.cc walks the proto
// descriptors to make sure a field added later is not dropped), and rejects exactly the bytes
// protobuf rejects, without building the message first: protobuf's map fields are hash maps and
// every string and message is an arena object, which together cost more than decoding itself.
//
// Wire rules followed, as protobuf's parser follows them:
// - unknown fields are skipped (groups included); a known field number with an unexpected wire
//   type counts as unknown;
// - a singular message given twice is merged, a scalar given twice keeps the last value, a
//   repeated field given twice is appended to, a map key given twice keeps the last value; a map
//   entry without key or value takes the default;
// - repeated enums are accepted packed and unpacked; enum values outside the declared range are
//   kept (validation reports them);
// - every string, map keys and string values included, must be valid UTF-8 (RFC 3629);
// - truncated data, lengths past the end of their message, field number 0, a stray end-group
//   tag, wire types 6 and 7, and nesting deeper than 100 are rejected.
// Both request messages hold the snapshot in field 1 and the policy in field 2.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "absl/status/status.h"
#include "core/model.h"
#include "edge/request_limits.h"

namespace arbiter::edge {

// Decodes `bytes` into `snapshot` and `policy`, which should be empty (the request is merged
// into them, as protobuf merges), within `limits`: the counts of queues, nodes, pod groups and
// pods, the distinct resource names, the length of every string and the decoded model's
// accounted memory are checked before the memory is allocated, so a request over a limit costs
// no more than the limit. Returns:
// - ResourceExhausted naming the field path, the limit and its flag when a count or the memory
//   is over its limit (e.g. "snapshot.queues: more than 50000 queues; this server accepts at
//   most 50000 (--max-queues)");
// - InvalidArgument naming the field path and --max-name-bytes for a string over it;
// - InvalidArgument "request: not a valid binary TYPE_NAME (N bytes)" when the bytes do not
//   parse.
// On an error the two are partly filled. `decoded_bytes`, when not null, receives the accounted
// memory of what was decoded. Thread-safe; O(bytes).
absl::Status DecodeRequest(std::string_view bytes, const RequestLimits& limits,
                           std::string_view type_name, Snapshot* snapshot, Policy* policy,
                           int64_t* decoded_bytes = nullptr);

// InvalidArgument "request: not a valid binary TYPE_NAME (SIZE bytes)": the answer to bytes that
// do not parse.
absl::Status NotARequest(std::string_view type_name, size_t size);

// DecodeRequest without limits: false when `bytes` is not a valid binary request.
bool DecodeRequest(std::string_view bytes, Snapshot* snapshot, Policy* policy);

}  // namespace arbiter::edge
