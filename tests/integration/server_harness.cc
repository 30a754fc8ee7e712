#include "tests/integration/server_harness.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <iostream>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "arbiter/v1/arbiter.pb.h"
#include "clients/generator/generator.h"
#include "edge/proto_convert.h"
#include "edge/wire.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/dynamic_message.h"
#include "grpcpp/generic/generic_stub.h"

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

std::string GeneratedScheduleBytes(const std::string& size, bool allocate_only) {
  const absl::StatusOr<generator::GeneratorOptions> options = generator::SizePreset(size);
  if (!options.ok()) {
    std::cerr << "no generator size " << size << ": " << options.status() << "\n";
    std::abort();
  }
  const generator::GeneratedRequest generated = generator::Generate(*options);
  v1::ScheduleRequest request;
  *request.mutable_snapshot() = edge::ToProto(generated.snapshot);
  *request.mutable_policy() = edge::ToProto(generated.policy);
  if (allocate_only) {
    request.mutable_policy()->clear_actions();
    request.mutable_policy()->add_actions(v1::ACTION_ALLOCATE);
  }
  return edge::SerializeDeterministic(request);
}

std::string SourcePath(const std::string& relative) {
  return absl::StrCat(ARBITER_SOURCE_DIR, "/", relative);
}

void ReadSourceMessage(const std::string& relative, pb::Message* message) {
  const absl::Status status = edge::ReadMessageFile(SourcePath(relative), message);
  if (!status.ok()) {
    std::cerr << "cannot read " << relative << ": " << status << "\n";
    std::abort();
  }
}

std::shared_ptr<grpc::Channel> Connect(const std::string& address) {
  return ConnectWith(address, grpc::InsecureChannelCredentials());
}

std::shared_ptr<grpc::Channel> ConnectWith(
    const std::string& address, const std::shared_ptr<grpc::ChannelCredentials>& credentials,
    const std::string& server_name) {
  grpc::ChannelArguments arguments;
  arguments.SetMaxReceiveMessageSize(-1);
  arguments.SetMaxSendMessageSize(-1);
  if (!server_name.empty()) arguments.SetSslTargetNameOverride(server_name);
  return grpc::CreateCustomChannel(address, credentials, arguments);
}

RawAnswer CallRaw(const std::shared_ptr<grpc::Channel>& channel, const std::string& method,
                  const std::string& request, absl::Duration timeout,
                  const std::map<std::string, std::string>& metadata) {
  RawCallOptions options;
  options.timeout = timeout;
  options.metadata = metadata;
  return CallRawWith(channel, method, request, options);
}

RawAnswer CallRawWith(const std::shared_ptr<grpc::Channel>& channel, const std::string& method,
                      const std::string& request, const RawCallOptions& options) {
  grpc::GenericStub stub(channel);
  grpc::ClientContext context;
  context.set_deadline(DeadlineAfter(options.timeout));
  context.set_wait_for_ready(true);
  if (options.gzip) context.set_compression_algorithm(GRPC_COMPRESS_GZIP);
  for (const auto& [key, value] : options.metadata) context.AddMetadata(key, value);
  grpc::CompletionQueue queue;
  const grpc::ByteBuffer request_buffer = ToByteBuffer(request);
  std::unique_ptr<grpc::GenericClientAsyncResponseReader> call =
      stub.PrepareUnaryCall(&context, method, request_buffer, &queue);
  call->StartCall();
  grpc::ByteBuffer response;
  RawAnswer answer;
  call->Finish(&response, &answer.status, reinterpret_cast<void*>(1));
  if (options.cancel_after.has_value()) {
    absl::SleepFor(*options.cancel_after);
    context.TryCancel();
  }
  void* tag = nullptr;
  bool ok = false;
  queue.Next(&tag, &ok);
  if (answer.status.ok()) answer.bytes = FromByteBuffer(response);
  for (const auto& [key, value] : context.GetServerTrailingMetadata()) {
    answer.trailers.emplace(std::string(key.data(), key.size()),
                            std::string(value.data(), value.size()));
  }
  return answer;
}

HealthAnswer CheckHealth(const std::shared_ptr<grpc::Channel>& channel, const std::string& service,
                         absl::Duration timeout) {
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
  request->GetReflection()->SetString(request.get(), request_type->FindFieldByName("list_services"),
                                      "*");

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
  const pb::FieldDescriptor* list_field = response_type->FindFieldByName("list_services_response");
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
  if (response.compare(0, 12, "HTTP/1.1 200") != 0 &&
      response.compare(0, 12, "HTTP/1.0 200") != 0) {
    return absl::UnavailableError(absl::StrCat("unexpected answer: ", response.substr(0, 80)));
  }
  return body == std::string::npos ? "" : response.substr(body + 4);
}

std::unique_ptr<server::ArbiterServer> StartTestServer(bool metrics) {
  server::ServerOptions options;
  options.metrics_port = metrics ? 0 : -1;
  return StartTestServer(options);
}

std::unique_ptr<server::ArbiterServer> StartTestServer(
    server::ServerOptions options,
    const std::function<std::shared_ptr<grpc::Channel>(const std::string&)>& connect) {
  options.host = "127.0.0.1";
  options.port = 0;
  absl::StatusOr<std::unique_ptr<server::ArbiterServer>> started =
      server::ArbiterServer::Start(options);
  if (!started.ok()) {
    std::cerr << "cannot start arbiter-server: " << started.status() << "\n";
    std::abort();
  }
  const std::string& address = (*started)->address();
  if (!WaitUntilServing(connect ? connect(address) : Connect(address))) {
    std::cerr << "arbiter-server on " << address << " never became SERVING\n";
    std::abort();
  }
  return *std::move(started);
}

server::Logger::Sink LogCapture::Sink() {
  return [this](std::string_view line) {
    absl::MutexLock lock(&mutex_);
    lines_.emplace_back(line);
  };
}

std::vector<std::string> LogCapture::Lines() const {
  absl::MutexLock lock(&mutex_);
  return lines_;
}

std::vector<std::string> LogCapture::LinesWith(const std::vector<std::string>& parts) const {
  std::vector<std::string> found;
  for (const std::string& line : Lines()) {
    bool all = true;
    for (const std::string& part : parts) all = all && line.find(part) != std::string::npos;
    if (all) found.push_back(line);
  }
  return found;
}

bool PollUntil(const std::function<bool()>& condition, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (!condition()) {
    if (absl::Now() > deadline) return false;
    absl::SleepFor(absl::Milliseconds(5));
  }
  return true;
}

std::string LogField(const std::string& line, const std::string& key) {
  size_t at = line.compare(0, key.size() + 1, key + "=") == 0 ? 0 : std::string::npos;
  if (at == std::string::npos) {
    const size_t found = line.find(" " + key + "=");
    if (found == std::string::npos) return "";
    at = found + 1;
  }
  size_t pos = at + key.size() + 1;
  std::string value;
  if (pos < line.size() && line[pos] == '"') {
    for (++pos; pos < line.size() && line[pos] != '"'; ++pos) {
      if (line[pos] == '\\' && pos + 1 < line.size()) {
        const char next = line[++pos];
        value.push_back(next == 'n' ? '\n' : next == 't' ? '\t' : next == 'r' ? '\r' : next);
      } else {
        value.push_back(line[pos]);
      }
    }
    return value;
  }
  const size_t end = line.find(' ', pos);
  return line.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
}

double MetricValue(const std::string& metrics, const std::string& series) {
  const std::string head = series + " ";
  size_t at = 0;
  while (at < metrics.size()) {
    const size_t end = metrics.find('\n', at);
    const std::string line =
        metrics.substr(at, end == std::string::npos ? std::string::npos : end - at);
    if (line.compare(0, head.size(), head) == 0) return std::stod(line.substr(head.size()));
    if (end == std::string::npos) break;
    at = end + 1;
  }
  return -1;
}

}  // namespace arbiter::testing
