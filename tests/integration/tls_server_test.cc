// TLS and mutual TLS, with certificates made by openssl when the test starts: a CA, a server
// certificate for 127.0.0.1 and localhost (subject alternative names), a client certificate
// from the same CA, and a second CA with its own client certificate (the wrong one).
#include <memory>
#include <string>
#include <vector>

#include "arbiter/v1/arbiter.grpc.pb.h"
#include "edge/rpc/tls.h"
#include "edge/wire.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/integration/server_harness.h"
#include "tests/integration/subprocess.h"

namespace arbiter::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

// Makes the certificates in `dir`: ca.pem, server.pem/.key, client.pem/.key, and
// other-ca.pem, other-client.pem/.key signed by another CA. P-256 keys keep it fast.
constexpr char kMakeCertificates[] = R"(set -e
cd "$1"
key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }
ca() {
  key "$1.key"
  openssl req -x509 -new -key "$1.key" -out "$1.pem" -days 2 -subj "/CN=$2" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign"
}
leaf() {  # name, CA, common name, extensions
  key "$1.key"
  openssl req -new -key "$1.key" -out "$1.csr" -subj "/CN=$3"
  printf '%s\n' "$4" > "$1.ext"
  openssl x509 -req -in "$1.csr" -CA "$2.pem" -CAkey "$2.key" -CAcreateserial -days 2 \
    -out "$1.pem" -extfile "$1.ext" 2>/dev/null
}
ca ca "arbiter test CA"
ca other-ca "another CA"
leaf server ca localhost "subjectAltName=DNS:localhost,IP:127.0.0.1
extendedKeyUsage=serverAuth"
leaf client ca "arbiter test client" "extendedKeyUsage=clientAuth"
leaf other-client other-ca "someone else" "extendedKeyUsage=clientAuth"
)";

class Tls : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    const ProcessResult made =
        RunProcess({"/bin/sh", "-c", kMakeCertificates, "make-certificates", dir_->path()});
    ASSERT_EQ(made.exit_code, 0) << made.out << made.err;
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }

  static std::string File(const std::string& name) { return dir_->File(name); }

  static rpc::ServerTlsFiles ServerFiles(bool mutual) {
    rpc::ServerTlsFiles files;
    files.cert = File("server.pem");
    files.key = File("server.key");
    if (mutual) files.client_ca = File("ca.pem");
    return files;
  }

  static std::shared_ptr<grpc::ChannelCredentials> Credentials(const std::string& ca,
                                                               const std::string& client) {
    rpc::ClientTlsFiles files;
    files.ca = File(ca + ".pem");
    if (!client.empty()) {
      files.cert = File(client + ".pem");
      files.key = File(client + ".key");
    }
    absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> credentials =
        rpc::MakeChannelCredentials(files);
    EXPECT_TRUE(credentials.ok()) << credentials.status();
    return credentials.ok() ? *credentials : nullptr;
  }

  // A TLS server (mutual when `mutual`), already SERVING to a client with the right certificate.
  static std::unique_ptr<server::ArbiterServer> StartTlsServer(bool mutual) {
    server::ServerOptions options;
    options.metrics_port = -1;
    options.tls = ServerFiles(mutual);
    return StartTestServer(options, [](const std::string& address) {
      return ConnectWith(address, Credentials("ca", "client"));
    });
  }

  // One Schedule call that fails fast instead of waiting for a connection that cannot succeed.
  static grpc::Status Schedule(const std::shared_ptr<grpc::Channel>& channel) {
    v1::ScheduleRequest request;
    ReadSourceMessage("examples/demo.json", &request);
    std::unique_ptr<v1::Arbiter::Stub> stub = v1::Arbiter::NewStub(channel);
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    v1::ScheduleResponse response;
    const grpc::Status status = stub->Schedule(&context, request, &response);
    if (status.ok()) {
      EXPECT_GT(response.bindings_size(), 0);
    }
    return status;
  }

  static TempDir* dir_;
};

TempDir* Tls::dir_ = nullptr;

TEST_F(Tls, MutualTlsServesAClientWithTheRightCertificate) {
  const std::unique_ptr<server::ArbiterServer> server = StartTlsServer(/*mutual=*/true);
  const grpc::Status status = Schedule(ConnectWith(server->address(), Credentials("ca", "client")));
  EXPECT_TRUE(status.ok()) << status.error_message();
}

TEST_F(Tls, MutualTlsServesLocalhostByName) {
  const std::unique_ptr<server::ArbiterServer> server = StartTlsServer(/*mutual=*/true);
  const std::string address = "localhost:" + std::to_string(server->port());
  const grpc::Status status = Schedule(ConnectWith(address, Credentials("ca", "client")));
  EXPECT_TRUE(status.ok()) << status.error_message();
}

TEST_F(Tls, MutualTlsRefusesAClientWithoutACertificate) {
  const std::unique_ptr<server::ArbiterServer> server = StartTlsServer(/*mutual=*/true);
  const grpc::Status status = Schedule(ConnectWith(server->address(), Credentials("ca", "")));
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE) << status.error_message();
}

TEST_F(Tls, MutualTlsRefusesAClientCertificateFromAnotherCa) {
  const std::unique_ptr<server::ArbiterServer> server = StartTlsServer(/*mutual=*/true);
  const grpc::Status status =
      Schedule(ConnectWith(server->address(), Credentials("ca", "other-client")));
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE) << status.error_message();
}

TEST_F(Tls, TlsServerRefusesAPlaintextClient) {
  const std::unique_ptr<server::ArbiterServer> server = StartTlsServer(/*mutual=*/true);
  const grpc::Status status = Schedule(Connect(server->address()));
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE) << status.error_message();
}

TEST_F(Tls, TlsWithoutClientCaServesClientsWithoutCertificates) {
  const std::unique_ptr<server::ArbiterServer> server = StartTlsServer(/*mutual=*/false);
  const grpc::Status status = Schedule(ConnectWith(server->address(), Credentials("ca", "")));
  EXPECT_TRUE(status.ok()) << status.error_message();
}

TEST_F(Tls, ClientRefusesAServerSignedByAnUnknownCa) {
  const std::unique_ptr<server::ArbiterServer> server = StartTlsServer(/*mutual=*/false);
  const grpc::Status status = Schedule(ConnectWith(server->address(), Credentials("other-ca", "")));
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE) << status.error_message();
}

// The binaries' flags: arbiter-server --tls-cert/--tls-key/--tls-client-ca and the CLI's
// --tls-ca/--tls-cert/--tls-key.
TEST_F(Tls, ServerAndCliBinariesSpeakMutualTls) {
  BackgroundProcess server({ARBITER_SERVER_PATH, "--host", "127.0.0.1", "--port", "0",
                            "--metrics-port", "-1", "--tls-cert", File("server.pem"), "--tls-key",
                            File("server.key"), "--tls-client-ca", File("ca.pem")});
  std::string listening;
  ASSERT_TRUE(server.ReadLine(&listening));
  ASSERT_THAT(listening, StartsWith("listening on 127.0.0.1:"));
  const std::string address = listening.substr(std::string("listening on ").size());
  const std::string request = SourcePath("examples/demo.json");

  const ProcessResult with_certificate =
      RunProcess({ARBITER_CLI_PATH, "schedule", request, "--server", address, "--tls-ca",
                  File("ca.pem"), "--tls-cert", File("client.pem"), "--tls-key", File("client.key"),
                  "--deadline-seconds", "60"});
  EXPECT_EQ(with_certificate.exit_code, 0) << with_certificate.err;
  EXPECT_THAT(with_certificate.out, HasSubstr("Bindings"));

  const ProcessResult without_certificate =
      RunProcess({ARBITER_CLI_PATH, "schedule", request, "--server", address, "--tls-ca",
                  File("ca.pem"), "--deadline-seconds", "60"});
  EXPECT_EQ(without_certificate.exit_code, 1);
  EXPECT_THAT(without_certificate.err, StartsWith("UNAVAILABLE: "));

  const ProcessResult plaintext = RunProcess(
      {ARBITER_CLI_PATH, "schedule", request, "--server", address, "--deadline-seconds", "60"});
  EXPECT_EQ(plaintext.exit_code, 1);
  EXPECT_THAT(plaintext.err, StartsWith("UNAVAILABLE: "));
}

// --tls-server-name: the name checked against the server's certificate instead of the host.
TEST_F(Tls, CliChecksTheServerNameItIsGiven) {
  const std::unique_ptr<server::ArbiterServer> server = StartTlsServer(/*mutual=*/false);
  const std::string request = SourcePath("examples/demo.json");
  const std::vector<std::string> base = {ARBITER_CLI_PATH, "fairshare",          request,
                                         "--server",       server->address(),    "--tls-ca",
                                         File("ca.pem"),   "--deadline-seconds", "60"};
  std::vector<std::string> named = base;
  named.insert(named.end(), {"--tls-server-name", "localhost"});
  const ProcessResult right = RunProcess(named);
  EXPECT_EQ(right.exit_code, 0) << right.err;

  std::vector<std::string> misnamed = base;
  misnamed.insert(misnamed.end(), {"--tls-server-name", "elsewhere.example"});
  const ProcessResult wrong = RunProcess(misnamed);
  EXPECT_EQ(wrong.exit_code, 1);
  EXPECT_THAT(wrong.err, StartsWith("UNAVAILABLE: "));
}

TEST_F(Tls, ServerRefusesToStartWithACertificateButNoKey) {
  const ProcessResult result =
      RunProcess({ARBITER_SERVER_PATH, "--host", "127.0.0.1", "--port", "0", "--metrics-port", "-1",
                  "--tls-cert", File("server.pem")});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_THAT(result.err, StartsWith("INVALID_ARGUMENT: --tls-key: required with --tls-cert"));
}

}  // namespace
}  // namespace arbiter::testing
