#include "edge/rpc/grpc_status.h"

#include "absl/strings/str_cat.h"

namespace arbiter::rpc {

std::string CappedMessage(std::string_view message) {
  if (message.size() <= kMaxStatusMessageBytes) return std::string(message);
  // Cut on a UTF-8 character boundary: never inside a multi-byte sequence.
  size_t cut = kMaxStatusMessageBytes;
  while (cut > 0 && (static_cast<unsigned char>(message[cut]) & 0xC0) == 0x80) --cut;
  return absl::StrCat(absl::string_view(message.data(), cut), "... (", message.size() - cut,
                      " more bytes)");
}

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(
      static_cast<grpc::StatusCode>(status.code()),
      CappedMessage(std::string_view(status.message().data(), status.message().size())));
}

absl::Status FromGrpcStatus(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
}

std::string StatusCodeName(absl::StatusCode code) {
  const int number = static_cast<int>(code);
  if (number < 0 || number > static_cast<int>(absl::StatusCode::kUnauthenticated)) {
    return absl::StrCat("CODE_", number);
  }
  return absl::StatusCodeToString(code);
}

std::string FormatStatus(const absl::Status& status) {
  return absl::StrCat(StatusCodeName(status.code()), ": ", status.message());
}

}  // namespace arbiter::rpc
