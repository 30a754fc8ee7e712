// Schedule end to end through arbiter-server, as a client sees it (issue 3: at L, at most
// 500 ms at the median): the request is generated once and serialised to binary protobuf outside
// the timing; each iteration sends those bytes over a gRPC channel on loopback, the server parses,
// decides and serialises, and the client receives and parses the ScheduleResponse. gRPC's 4 MB
// message limits are raised on both sides (an L request is about 12 MB).
//
// The server runs in this process on 127.0.0.1:0 with its default options, unless
// ARBITER_SERVER=HOST:PORT names a running one. ARBITER_SEED=N generates the requests with seed N
// instead of the presets' seed 1.
//
// Benchmarks (median of 5 repetitions):
//   BM_ScheduleThroughServer/{S,M,L}           the generator's policy (all four actions)
//   BM_ScheduleThroughServer/{S,M,L}_allocate  actions [ALLOCATE], the issue-3 cycle
// Counters: request_mb and response_mb per call, pods in the request.
#include <chrono>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "arbiter/v1/arbiter.pb.h"
#include "benchmark/benchmark.h"
#include "clients/generator/generator.h"
#include "edge/proto_convert.h"
#include "edge/wire.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/grpcpp.h"
#include "server/arbiter_server.h"

namespace arbiter {
namespace {

constexpr char kSchedule[] = "/arbiter.v1.Arbiter/Schedule";

struct Target {
  std::unique_ptr<server::ArbiterServer> server;  // null when ARBITER_SERVER is set
  std::shared_ptr<grpc::Channel> channel;
};

// The server and a channel without message limits, made once.
Target& TheTarget() {
  static Target* target = [] {
    auto* made = new Target();
    std::string address;
    if (const char* external = std::getenv("ARBITER_SERVER"); external != nullptr) {
      address = external;
    } else {
      server::ServerOptions options;
      options.host = "127.0.0.1";
      options.port = 0;
      options.metrics_port = -1;
      absl::StatusOr<std::unique_ptr<server::ArbiterServer>> started =
          server::ArbiterServer::Start(options);
      if (!started.ok()) return made;
      made->server = *std::move(started);
      address = made->server->address();
    }
    grpc::ChannelArguments arguments;
    arguments.SetMaxReceiveMessageSize(-1);
    arguments.SetMaxSendMessageSize(-1);
    made->channel =
        grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), arguments);
    return made;
  }();
  return *target;
}

struct Prepared {
  grpc::ByteBuffer bytes;
  size_t size = 0;
  int pods = 0;
};

// The binary request for `size`, generated once per (size, allocate_only).
const Prepared& Request(const std::string& size, bool allocate_only) {
  static auto* cache = new std::map<std::pair<std::string, bool>, Prepared>();
  const auto key = std::make_pair(size, allocate_only);
  auto it = cache->find(key);
  if (it != cache->end()) return it->second;
  absl::StatusOr<generator::GeneratorOptions> options = generator::SizePreset(size);
  if (const char* seed = std::getenv("ARBITER_SEED"); seed != nullptr) {
    options->seed = std::strtoull(seed, nullptr, 10);
  }
  generator::GeneratedRequest generated = generator::Generate(*options);
  if (allocate_only) generated.policy.actions = {Action::kAllocate};
  v1::ScheduleRequest request;
  *request.mutable_snapshot() = edge::ToProto(generated.snapshot);
  *request.mutable_policy() = edge::ToProto(generated.policy);
  const std::string serialised = edge::SerializeDeterministic(request);
  Prepared prepared;
  grpc::Slice slice(serialised);
  prepared.bytes = grpc::ByteBuffer(&slice, 1);
  prepared.size = serialised.size();
  for (const PodGroup& group : generated.snapshot.pod_groups) {
    prepared.pods += static_cast<int>(group.pods.size());
  }
  return cache->emplace(key, std::move(prepared)).first->second;
}

// One unary call with raw bytes; false (and `error`) when it fails.
bool Call(grpc::GenericStub& stub, const grpc::ByteBuffer& request, grpc::ByteBuffer* response,
          std::string* error) {
  grpc::ClientContext context;
  context.set_wait_for_ready(true);
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::minutes(5));
  grpc::CompletionQueue queue;
  std::unique_ptr<grpc::GenericClientAsyncResponseReader> call =
      stub.PrepareUnaryCall(&context, kSchedule, request, &queue);
  call->StartCall();
  grpc::Status status;
  call->Finish(response, &status, reinterpret_cast<void*>(1));
  void* tag = nullptr;
  bool ok = false;
  queue.Next(&tag, &ok);
  if (!status.ok()) *error = status.error_message();
  return status.ok();
}

void BM_ScheduleThroughServer(benchmark::State& state, std::string size, bool allocate_only) {
  Target& target = TheTarget();
  if (target.channel == nullptr) {
    state.SkipWithError("cannot start arbiter-server");
    return;
  }
  const Prepared& request = Request(size, allocate_only);
  grpc::GenericStub stub(target.channel);
  size_t response_size = 0;
  for (auto _ : state) {
    grpc::ByteBuffer response;
    std::string error;
    if (!Call(stub, request.bytes, &response, &error)) {
      state.SkipWithError(error.c_str());
      break;
    }
    // The client's share of the work: read the answer into a message.
    std::vector<grpc::Slice> slices;
    (void)response.Dump(&slices);
    std::string bytes;
    for (const grpc::Slice& slice : slices) {
      bytes.append(reinterpret_cast<const char*>(slice.begin()), slice.size());
    }
    v1::ScheduleResponse parsed;
    if (!parsed.ParseFromString(bytes)) {
      state.SkipWithError("the response does not parse");
      break;
    }
    response_size = bytes.size();
    benchmark::DoNotOptimize(parsed.bindings_size());
  }
  state.counters["request_mb"] = static_cast<double>(request.size) / (1 << 20);
  state.counters["response_mb"] = static_cast<double>(response_size) / (1 << 20);
  state.counters["pods"] = request.pods;
}

#define ARBITER_CLIENT_BENCH(name, size, allocate_only)                  \
  BENCHMARK_CAPTURE(BM_ScheduleThroughServer, name, size, allocate_only) \
      ->Unit(benchmark::kMillisecond)                                    \
      ->UseRealTime()                                                    \
      ->Repetitions(5)                                                   \
      ->ReportAggregatesOnly(true)

ARBITER_CLIENT_BENCH(S, "S", false);
ARBITER_CLIENT_BENCH(S_allocate, "S", true);
ARBITER_CLIENT_BENCH(M, "M", false);
ARBITER_CLIENT_BENCH(M_allocate, "M", true);
ARBITER_CLIENT_BENCH(L, "L", false);
ARBITER_CLIENT_BENCH(L_allocate, "L", true);

}  // namespace
}  // namespace arbiter

BENCHMARK_MAIN();
