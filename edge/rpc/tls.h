// TLS and mutual TLS credentials for the server and its clients, from PEM files.
//
// Server: a certificate and its key turn TLS on; a client CA on top turns mutual TLS on, where
// every client must present a certificate signed by that CA (the handshake fails otherwise).
// Client: a CA to verify the server with (empty: the system's roots) turns TLS on; a certificate
// and key on top are presented to a server that asks for one.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/security/server_credentials.h"

namespace arbiter::rpc {

// PEM file paths; an empty path is "not given".
struct ServerTlsFiles {
  std::string cert;       // --tls-cert: the server's certificate chain
  std::string key;        // --tls-key: its private key
  std::string client_ca;  // --tls-client-ca: require client certificates signed by this CA
};

struct ClientTlsFiles {
  std::string ca;    // --tls-ca: verify the server's certificate against this CA
  std::string cert;  // --tls-cert: the client's certificate chain, for mutual TLS
  std::string key;   // --tls-key: its private key
};

// Whether any TLS file is given (TLS is on).
bool UsesTls(const ServerTlsFiles& files);
bool UsesTls(const ClientTlsFiles& files);

// Insecure credentials when no file is given; TLS credentials otherwise. InvalidArgument naming
// the flag when a certificate comes without its key or the other way round, or a client CA
// without a server certificate; the errors of ReadFile (NotFound, PermissionDenied, with the
// path) when a file cannot be read.
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeServerCredentials(
    const ServerTlsFiles& files);

// Insecure credentials when no file is given; TLS credentials otherwise. InvalidArgument when a
// certificate comes without its key or the other way round; the errors of ReadFile.
absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> MakeChannelCredentials(
    const ClientTlsFiles& files);

}  // namespace arbiter::rpc
