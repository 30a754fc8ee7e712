#include "edge/wire.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/util/json_util.h"
#include "google/protobuf/util/type_resolver.h"
#include "google/protobuf/util/type_resolver_util.h"

namespace arbiter::edge {
namespace {

namespace pb = ::google::protobuf;

constexpr char kTypeUrlPrefix[] = "type.googleapis.com";

// Resolves the types of every message compiled into the binary. Built once; the resolver only
// reads the generated pool, so sharing it between threads is safe.
pb::util::TypeResolver* GeneratedTypeResolver() {
  static pb::util::TypeResolver* const resolver = pb::util::NewTypeResolverForDescriptorPool(
      kTypeUrlPrefix, pb::DescriptorPool::generated_pool());
  return resolver;
}

std::string Text(pb::StringPiece piece) { return std::string(piece.data(), piece.size()); }

std::string TypeUrl(const pb::Message& message) {
  return absl::StrCat(kTypeUrlPrefix, "/", message.GetDescriptor()->full_name());
}

absl::Status ReadError(const std::string& path, int error) {
  std::string message = absl::StrCat(path, ": ", std::strerror(error));
  if (error == ENOENT) return absl::NotFoundError(message);
  if (error == EACCES) return absl::PermissionDeniedError(message);
  return absl::UnknownError(message);
}

}  // namespace

std::string SerializeDeterministic(const pb::Message& message) {
  std::string bytes;
  // ByteSizeLong also caches the sizes that SerializeWithCachedSizes needs.
  bytes.reserve(message.ByteSizeLong());
  {
    pb::io::StringOutputStream stream(&bytes);
    pb::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    message.SerializeWithCachedSizes(&coded);
  }
  return bytes;
}

absl::StatusOr<std::string> ToJson(const pb::Message& message, JsonStyle style) {
  pb::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  options.add_whitespace = style == JsonStyle::kPretty;
  std::string json;
  const pb::util::Status status = pb::util::BinaryToJsonString(
      GeneratedTypeResolver(), TypeUrl(message), SerializeDeterministic(message), &json, options);
  if (!status.ok()) {
    return absl::InternalError(absl::StrCat("printing ", message.GetDescriptor()->full_name(),
                                            " as JSON: ", Text(status.message())));
  }
  return json;
}

absl::Status ParseJson(std::string_view json, pb::Message* message) {
  pb::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  message->Clear();
  const pb::util::Status status =
      pb::util::JsonStringToMessage(pb::StringPiece(json.data(), json.size()), message, options);
  if (!status.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("not a valid ",
                                                   message->GetDescriptor()->full_name(),
                                                   " in JSON: ", Text(status.message())));
  }
  return absl::OkStatus();
}

absl::Status ParseBinary(std::string_view bytes, pb::Message* message) {
  if (!message->ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return absl::InvalidArgumentError(absl::StrCat("not a valid binary ",
                                                   message->GetDescriptor()->full_name(), " (",
                                                   bytes.size(), " bytes)"));
  }
  return absl::OkStatus();
}

WireFormat FormatForPath(std::string_view path) {
  return absl::EndsWith(absl::string_view(path.data(), path.size()), ".pb") ? WireFormat::kBinary
                                                                            : WireFormat::kJson;
}

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  if (path == "-") {
    std::ostringstream content;
    content << std::cin.rdbuf();
    if (std::cin.bad()) return absl::UnknownError("reading standard input failed");
    return std::move(content).str();
  }
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) return ReadError(path, errno);
  std::string content;
  char chunk[1 << 16];
  size_t n;
  while ((n = std::fread(chunk, 1, sizeof(chunk), file)) > 0) content.append(chunk, n);
  const bool failed = std::ferror(file) != 0;
  const int error = errno;
  std::fclose(file);
  if (failed) return ReadError(path, error);
  return content;
}

absl::Status ReadMessageFile(const std::string& path, pb::Message* message) {
  absl::StatusOr<std::string> content = ReadFile(path);
  if (!content.ok()) return content.status();
  const absl::Status status = FormatForPath(path) == WireFormat::kBinary
                                  ? ParseBinary(*content, message)
                                  : ParseJson(*content, message);
  if (!status.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", status.message()));
  }
  return absl::OkStatus();
}

absl::Status WriteMessageFile(const std::string& path, const pb::Message& message) {
  std::string bytes;
  if (FormatForPath(path) == WireFormat::kBinary) {
    bytes = SerializeDeterministic(message);
  } else {
    absl::StatusOr<std::string> json = ToJson(message, JsonStyle::kPretty);
    if (!json.ok()) return json.status();
    bytes = *std::move(json);
    bytes.push_back('\n');
  }
  if (path == "-") {
    std::cout.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    std::cout.flush();
    if (!std::cout) return absl::UnknownError("writing standard output failed");
    return absl::OkStatus();
  }
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  if (file) file.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (file) file.close();
  if (!file)
    return absl::UnknownError(absl::StrCat(path, ": cannot write: ", std::strerror(errno)));
  return absl::OkStatus();
}

}  // namespace arbiter::edge
