// Writing the core's model (core/model.h) as arbiter.v1 protobuf messages, and reading an answer
// back for the clients that act on one.
//
// There is one way in for a request: the bytes, read by the request decoder
// (edge/request_decoder.h); a message in hand is serialised first (edge/wire.h). What is here
// goes the other way:
// - requests, core -> proto: the generator, the simulator and the tests write the requests they
//   make;
// - answers, core -> proto: the one writer of both answers, for the server and the CLI;
// - a Schedule answer, proto -> core: the simulator acting on a server's answer.
//
// ToProto writes every map in key order and turns -0.0 into 0 (SEMANTICS.md §0.5), so that a
// deterministic serialisation of its output (edge/wire.h) depends only on the core's answer;
// enums are written as the raw integers the model holds. All functions are thread-safe and cost
// O(size of the message).
#pragma once

#include "arbiter/v1/arbiter.pb.h"
#include "core/model.h"

namespace arbiter::edge {

// ---- Requests: core -> proto (the generator, tests and round trips) ----

v1::Snapshot ToProto(const Snapshot& snapshot);
v1::Policy ToProto(const Policy& policy);

// ---- Answers: core -> proto ----

// Writes `result` into `proto` (which may live on an arena and must be empty), moving its
// strings: pass std::move(result) when it is no longer needed, a copy otherwise.
void ToProto(FairShareResult result, v1::FairShareResponse* proto);
void ToProto(ScheduleResult result, v1::ScheduleResponse* proto);

// ---- A Schedule answer: proto -> core (the simulator, acting on a server's answer) ----

ScheduleResult FromProto(const v1::ScheduleResponse& proto);

}  // namespace arbiter::edge
