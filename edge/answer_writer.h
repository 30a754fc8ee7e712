// The answer of ComputeFairShares written as binary protobuf straight from the core's result, with
// no message in between: a KAI queue list is dense rows (QueueShareRows, core/model.h), and
// building 10,000 QueueShare messages of four string-keyed maps each, then sorting every map for
// deterministic serialisation, cost more than validating and dividing the request.
//
// The bytes are exactly those of protobuf's deterministic serialisation of
// ToProto(result) (edge/proto_convert.h): fields in number order, map entries in key order, each
// with its key and value, zero scalars left out. Thread-safe; O(size of the answer).
#pragma once

#include <string>

#include "core/model.h"

namespace arbiter::edge {

// arbiter.v1.FairShareResponse for `result`, appended to `out`.
void AppendFairShareResponse(const FairShareResult& result, std::string* out);

}  // namespace arbiter::edge
