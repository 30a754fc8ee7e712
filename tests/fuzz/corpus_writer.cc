// fuzz_corpus_writer IN.json OUT.pb: rewrites an arbiter.v1.ScheduleRequest given as proto3 JSON
// in deterministic binary protobuf, the form the request fuzzer reads (tests/fuzz/make_corpus.sh).
#include <iostream>

#include "arbiter/v1/arbiter.pb.h"
#include "edge/rpc/grpc_status.h"
#include "edge/wire.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: fuzz_corpus_writer IN.json OUT.pb\n";
    return 2;
  }
  arbiter::v1::ScheduleRequest request;
  absl::Status status = arbiter::edge::ReadMessageFile(argv[1], &request);
  if (status.ok()) status = arbiter::edge::WriteMessageFile(argv[2], request);
  if (!status.ok()) {
    std::cerr << arbiter::rpc::FormatStatus(status) << "\n";
    return 1;
  }
  return 0;
}
