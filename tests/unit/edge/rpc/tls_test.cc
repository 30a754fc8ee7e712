// TLS credentials from flags: which combinations are accepted, and errors that name the flag.
#include "edge/rpc/tls.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace arbiter::rpc {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

TEST(ServerTls, NoFilesMeansPlaintext) {
  EXPECT_FALSE(UsesTls(ServerTlsFiles{}));
  const auto credentials = MakeServerCredentials({});
  ASSERT_TRUE(credentials.ok()) << credentials.status();
  EXPECT_NE(*credentials, nullptr);
}

TEST(ServerTls, CertificateWithoutKeyIsRefused) {
  ServerTlsFiles files;
  files.cert = "/nonexistent/server.pem";
  const auto credentials = MakeServerCredentials(files);
  EXPECT_EQ(credentials.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(credentials.status().message(), "--tls-key: required with --tls-cert");
}

TEST(ServerTls, ClientCaWithoutServerCertificateIsRefused) {
  ServerTlsFiles files;
  files.client_ca = "/nonexistent/ca.pem";
  const auto credentials = MakeServerCredentials(files);
  EXPECT_EQ(credentials.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(credentials.status().message()), StartsWith("--tls-client-ca: "));
}

TEST(ServerTls, UnreadableFileNamesTheFlagAndPath) {
  ServerTlsFiles files;
  files.cert = "/nonexistent/server.pem";
  files.key = "/nonexistent/server.key";
  const auto credentials = MakeServerCredentials(files);
  EXPECT_EQ(credentials.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(credentials.status().message()),
              StartsWith("--tls-cert: /nonexistent/server.pem"));
}

TEST(ClientTls, NoFilesMeansPlaintextAndKeyWithoutCertificateIsRefused) {
  EXPECT_FALSE(UsesTls(ClientTlsFiles{}));
  ASSERT_TRUE(MakeChannelCredentials({}).ok());
  ClientTlsFiles files;
  files.key = "/nonexistent/client.key";
  EXPECT_TRUE(UsesTls(files));
  const auto credentials = MakeChannelCredentials(files);
  EXPECT_EQ(credentials.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(credentials.status().message()), HasSubstr("--tls-cert"));
}

}  // namespace
}  // namespace arbiter::rpc
