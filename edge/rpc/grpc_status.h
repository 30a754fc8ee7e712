// The one mapping between absl::Status (the core's errors) and grpc::Status (the wire's).
#pragma once

#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "grpcpp/support/status.h"

namespace arbiter::rpc {

// The longest error message sent or logged whole: gRPC carries the message in a trailer, and
// trailers over 8 KiB are refused by clients (as RESOURCE_EXHAUSTED about metadata).
constexpr size_t kMaxStatusMessageBytes = 2048;

// `message` cut to kMaxStatusMessageBytes on a character boundary, saying how much was cut.
std::string CappedMessage(std::string_view message);

// The gRPC status for `status`: the same code (the two enumerations share their numbers) and
// its message, capped by CappedMessage. The only place where the server turns a core error into
// an answer.
grpc::Status ToGrpcStatus(const absl::Status& status);

// The inverse, for clients that report a call's outcome with absl vocabulary.
absl::Status FromGrpcStatus(const grpc::Status& status);

// The canonical upper-case name of a code, e.g. "INVALID_ARGUMENT"; "CODE_17" outside the range.
std::string StatusCodeName(absl::StatusCode code);

// "INVALID_ARGUMENT: snapshot.queues[3].parent: ..." as the CLI prints failures.
std::string FormatStatus(const absl::Status& status);

}  // namespace arbiter::rpc
