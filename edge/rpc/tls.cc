#include "edge/rpc/tls.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "edge/wire.h"

namespace arbiter::rpc {
namespace {

// Reads the PEM file at `path` for `flag`; "" when the path is empty.
absl::StatusOr<std::string> ReadPem(const std::string& flag, const std::string& path) {
  if (path.empty()) return std::string();
  absl::StatusOr<std::string> pem = edge::ReadFile(path);
  if (!pem.ok()) {
    return absl::Status(pem.status().code(), absl::StrCat(flag, ": ", pem.status().message()));
  }
  if (pem->empty()) return absl::InvalidArgumentError(absl::StrCat(flag, ": ", path, " is empty"));
  return pem;
}

absl::Status CheckPair(const std::string& cert, const std::string& key) {
  if (!cert.empty() && key.empty()) {
    return absl::InvalidArgumentError("--tls-key: required with --tls-cert");
  }
  if (cert.empty() && !key.empty()) {
    return absl::InvalidArgumentError("--tls-cert: required with --tls-key");
  }
  return absl::OkStatus();
}

}  // namespace

bool UsesTls(const ServerTlsFiles& files) {
  return !files.cert.empty() || !files.key.empty() || !files.client_ca.empty();
}

bool UsesTls(const ClientTlsFiles& files) {
  return !files.ca.empty() || !files.cert.empty() || !files.key.empty();
}

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeServerCredentials(
    const ServerTlsFiles& files) {
  if (!UsesTls(files)) return grpc::InsecureServerCredentials();
  if (absl::Status pair = CheckPair(files.cert, files.key); !pair.ok()) return pair;
  if (files.cert.empty()) {
    return absl::InvalidArgumentError("--tls-client-ca: needs --tls-cert and --tls-key");
  }
  absl::StatusOr<std::string> cert = ReadPem("--tls-cert", files.cert);
  if (!cert.ok()) return cert.status();
  absl::StatusOr<std::string> key = ReadPem("--tls-key", files.key);
  if (!key.ok()) return key.status();
  absl::StatusOr<std::string> client_ca = ReadPem("--tls-client-ca", files.client_ca);
  if (!client_ca.ok()) return client_ca.status();

  grpc::SslServerCredentialsOptions options(
      client_ca->empty() ? GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE
                         : GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  options.pem_root_certs = *std::move(client_ca);
  options.pem_key_cert_pairs.push_back({*std::move(key), *std::move(cert)});
  return grpc::SslServerCredentials(options);
}

absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> MakeChannelCredentials(
    const ClientTlsFiles& files) {
  if (!UsesTls(files)) return grpc::InsecureChannelCredentials();
  if (absl::Status pair = CheckPair(files.cert, files.key); !pair.ok()) return pair;
  absl::StatusOr<std::string> ca = ReadPem("--tls-ca", files.ca);
  if (!ca.ok()) return ca.status();
  absl::StatusOr<std::string> cert = ReadPem("--tls-cert", files.cert);
  if (!cert.ok()) return cert.status();
  absl::StatusOr<std::string> key = ReadPem("--tls-key", files.key);
  if (!key.ok()) return key.status();

  grpc::SslCredentialsOptions options;
  options.pem_root_certs = *std::move(ca);
  options.pem_cert_chain = *std::move(cert);
  options.pem_private_key = *std::move(key);
  return grpc::SslCredentials(options);
}

}  // namespace arbiter::rpc
