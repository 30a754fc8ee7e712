#include "tests/integration/server_harness.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <iostream>

#include "absl/strings/str_cat.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/dynamic_message.h"
#include "grpcpp/generic/generic_stub.h"
#include "server/wire.h"

namespace arbiter::testing {
namespace {

namespace pb = ::google::protobuf;

std::chrono::system_clock::time_point DeadlineAfter(absl::Duration timeout) {
  return std::chrono::system_clock::now() + absl::ToChronoNanoseconds(timeout);
}

grpc::ByteBuffer ToByteBuffer(const std::string& bytes) {
  grpc::Slice slice(bytes);
  return grpc::ByteBuffer(&slice, 1);
}

std::string FromByteBuffer(const grpc::ByteBuffer& buffer) {
  std::vector<grpc::Slice> slices;
  std::string bytes;
  if (!buffer.Dump(&slices).ok()) return bytes;
  for (const grpc::Slice& slice : slices) {
    bytes.append(reinterpret_cast<const char*>(slice.begin()), slice.size());
  }
  return bytes;
}

// Reads one protobuf varint at `pos`; false when the bytes end first.
bool ReadVarint(const std::string& bytes, size_t* pos, uint64_t* value) {
  *value = 0;
  for (int shift = 0; *pos < bytes.size() && shift < 64; shift += 7) {
    const uint8_t byte = static_cast<uint8_t>(bytes[(*pos)++]);
    *value |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) return true;
  }
  return false;
}

// Waits on `queue` for `tag`; false when the operation did not succeed.
bool Await(grpc::CompletionQueue* queue, intptr_t tag) {
  void* got = nullptr;
  bool ok = false;
  if (!queue->Next(&got, &ok)) return false;
  return ok && reinterpret_cast<intptr_t>(got) == tag;
}

}  // namespace

std::string SourcePath(const std::string& relative) {
  return absl::StrCat(ARBITER_SOURCE_DIR, "/", relative);
}

void ReadSourceMessage(const std::string& relative, pb::Message* message) {
  const absl::Status status = server::ReadMessageFile(SourcePath(relative), message);
  if (!status.ok()) {
    std::cerr << "cannot read " << relative << ": " << status << "\n";
    std::abort();
  }
}

std::shared_ptr<grpc::Channel> Connect(const std::string& address) {
  grpc::ChannelArguments arguments;
  arguments.SetMaxReceiveMessageSize(-1);
  arguments.SetMaxSendMessageSize(-1);
  return grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), arguments);
}

RawAnswer CallRaw(const std::shared_ptr<grpc::Channel>& channel, const std::string& method,
                  const std::string& request, absl::Duration timeout) {
  grpc::GenericStub stub(channel);
  grpc::ClientContext context;
  context.set_deadline(DeadlineAfter(timeout));
  context.set_wait_for_ready(true);
  grpc::CompletionQueue queue;
  const grpc::ByteBuffer request_buffer = ToByteBuffer(request);
  std::unique_ptr<grpc::GenericClientAsyncResponseReader> call =
      stub.PrepareUnaryCall(&context, method, request_buffer, &queue);
  call->StartCall();
  grpc::ByteBuffer response;
  RawAnswer answer;
  call->Finish(&response, &answer.status, reinterpret_cast<void*>(1));
  void* tag = nullptr;
  bool ok = false;
  queue.Next(&tag, &ok);
  if (answer.status.ok()) answer.bytes = FromByteBuffer(response);
  return answer;
}

HealthAnswer CheckHealth(const std::shared_ptr<grpc::Channel>& channel,
                         const std::string& service, absl::Duration timeout) {
  // grpc.health.v1.HealthCheckRequest {string service = 1;}, written by hand: Debian ships no
  // health.proto.
  std::string request;
  if (!service.empty()) {
    request.push_back(0x0a);
    request.push_back(static_cast<char>(service.size()));
    request.append(service);
  }
  const RawAnswer raw = CallRaw(channel, "/grpc.health.v1.Health/Check", request, timeout);
  HealthAnswer answer;
  answer.status = raw.status;
  if (!raw.status.ok()) return answer;
  // HealthCheckResponse {ServingStatus status = 1;}: absent means UNKNOWN (0).
  answer.serving_status = 0;
  size_t pos = 0;
  uint64_t key = 0, value = 0;
  while (pos < raw.bytes.size() && ReadVarint(raw.bytes, &pos, &key)) {
    if (key != 0x08 || !ReadVarint(raw.bytes, &pos, &value)) break;
    answer.serving_status = static_cast<int>(value);
  }
  return answer;
}

bool WaitUntilServing(const std::shared_ptr<grpc::Channel>& channel, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (absl::Now() < deadline) {
    const HealthAnswer answer = CheckHealth(channel, "", deadline - absl::Now());
    if (answer.serving_status == 1) return true;
    if (!answer.status.ok() && answer.status.error_code() == grpc::DEADLINE_EXCEEDED) break;
  }
  return false;
}

absl::StatusOr<std::vector<std::string>> ListServicesByReflection(
    const std::shared_ptr<grpc::Channel>& channel) {
  // The reflection messages are compiled into grpc++_reflection and registered in the generated
  // pool; build them dynamically, since Debian ships no reflection headers for clients.
  const pb::DescriptorPool* pool = pb::DescriptorPool::generated_pool();
  const pb::Descriptor* request_type =
      pool->FindMessageTypeByName("grpc.reflection.v1alpha.ServerReflectionRequest");
  const pb::Descriptor* response_type =
      pool->FindMessageTypeByName("grpc.reflection.v1alpha.ServerReflectionResponse");
  if (request_type == nullptr || response_type == nullptr) {
    return absl::NotFoundError("grpc.reflection.v1alpha messages are not linked in");
  }
  pb::DynamicMessageFactory factory(pool);
  std::unique_ptr<pb::Message> request(factory.GetPrototype(request_type)->New());
  request->GetReflection()->SetString(request.get(),
                                      request_type->FindFieldByName("list_services"), "*");

  grpc::GenericStub stub(channel);
  grpc::ClientContext context;
  context.set_deadline(DeadlineAfter(absl::Seconds(10)));
  context.set_wait_for_ready(true);
  grpc::CompletionQueue queue;
  std::unique_ptr<grpc::GenericClientAsyncReaderWriter> call = stub.PrepareCall(
      &context, "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo", &queue);
  call->StartCall(reinterpret_cast<void*>(1));
  if (!Await(&queue, 1)) return absl::UnavailableError("reflection call did not start");
  call->Write(ToByteBuffer(request->SerializeAsString()), reinterpret_cast<void*>(2));
  if (!Await(&queue, 2)) return absl::UnavailableError("reflection request not sent");
  grpc::ByteBuffer response_buffer;
  call->Read(&response_buffer, reinterpret_cast<void*>(3));
  if (!Await(&queue, 3)) return absl::UnavailableError("no reflection response");
  call->WritesDone(reinterpret_cast<void*>(4));
  Await(&queue, 4);
  grpc::Status status;
  call->Finish(&status, reinterpret_cast<void*>(5));
  Await(&queue, 5);

  std::unique_ptr<pb::Message> response(factory.GetPrototype(response_type)->New());
  if (!response->ParseFromString(FromByteBuffer(response_buffer))) {
    return absl::DataLossError("reflection response does not parse");
  }
  const pb::FieldDescriptor* list_field =
      response_type->FindFieldByName("list_services_response");
  if (!response->GetReflection()->HasField(*response, list_field)) {
    return absl::NotFoundError(absl::StrCat("no service list in ", response->DebugString()));
  }
  const pb::Message& list = response->GetReflection()->GetMessage(*response, list_field);
  const pb::FieldDescriptor* service_field = list.GetDescriptor()->FindFieldByName("service");
  std::vector<std::string> names;
  for (int i = 0; i < list.GetReflection()->FieldSize(list, service_field); ++i) {
    const pb::Message& service = list.GetReflection()->GetRepeatedMessage(list, service_field, i);
    names.push_back(service.GetReflection()->GetString(
        service, service.GetDescriptor()->FindFieldByName("name")));
  }
  return names;
}

absl::StatusOr<std::string> HttpGet(int port, const std::string& path) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return absl::UnavailableError("socket() failed");
  sockaddr_in address = {};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    close(fd);
    return absl::UnavailableError(absl::StrCat("cannot connect to 127.0.0.1:", port));
  }
  const std::string request =
      absl::StrCat("GET ", path, " HTTP/1.0\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
  if (write(fd, request.data(), request.size()) != static_cast<ssize_t>(request.size())) {
    close(fd);
    return absl::UnavailableError("cannot send the request");
  }
  std::string response;
  char chunk[65536];
  ssize_t n;
  while ((n = read(fd, chunk, sizeof(chunk))) > 0) response.append(chunk, static_cast<size_t>(n));
  close(fd);
  const size_t body = response.find("\r\n\r\n");
  if (response.compare(0, 12, "HTTP/1.1 200") != 0 && response.compare(0, 12, "HTTP/1.0 200") != 0) {
    return absl::UnavailableError(absl::StrCat("unexpected answer: ", response.substr(0, 80)));
  }
  return body == std::string::npos ? "" : response.substr(body + 4);
}

std::unique_ptr<server::ArbiterServer> StartTestServer(bool metrics) {
  server::ServerOptions options;
  options.host = "127.0.0.1";
  options.port = 0;
  options.metrics_port = metrics ? 0 : -1;
  absl::StatusOr<std::unique_ptr<server::ArbiterServer>> started =
      server::ArbiterServer::Start(options);
  if (!started.ok()) {
    std::cerr << "cannot start arbiter-server: " << started.status() << "\n";
    std::abort();
  }
  if (!WaitUntilServing(Connect((*started)->address()))) {
    std::cerr << "arbiter-server on " << (*started)->address() << " never became SERVING\n";
    std::abort();
  }
  return *std::move(started);
}

}  // namespace arbiter::testing
