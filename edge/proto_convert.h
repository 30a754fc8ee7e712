// Conversion between the arbiter.v1 protobuf messages and the core's model (core/model.h).
//
// The core never sees a protobuf type: the server and the CLI convert at the edge with these
// functions. The conversion is total and checks nothing; validation is the core's job
// (core/validation.h), so:
// - enum fields keep the caller's raw integer, even one outside the declared range;
// - a Timestamp or Duration message that is present becomes an engaged std::optional, an absent
//   one std::nullopt; `optional` scalars keep their presence the same way;
// - maps become std::map (bytewise key order), repeated fields keep their input order.
//
// ToProto writes every map in key order and turns -0.0 into 0 (SEMANTICS.md §0.5), so that a
// deterministic serialisation of its output (edge/wire.h) depends only on the core's answer.
// All functions are thread-safe and cost O(size of the message).
#pragma once

#include "arbiter/v1/arbiter.pb.h"
#include "core/model.h"

namespace arbiter::server {

// ---- Requests: proto -> core ----

Snapshot FromProto(const v1::Snapshot& proto);
Policy FromProto(const v1::Policy& proto);

// ---- Requests: core -> proto (the generator, tests and round trips) ----

v1::Snapshot ToProto(const Snapshot& snapshot);
v1::Policy ToProto(const Policy& policy);

// ---- Answers: core -> proto ----

v1::FairShareResponse ToProto(const FairShareResult& result);
v1::ScheduleResponse ToProto(const ScheduleResult& result);

// The same answers written into `proto` (which may live on an arena and must be empty), moving
// the strings out of `result` instead of copying them: the server's path, which drops the result
// once it is converted.
void MoveToProto(FairShareResult&& result, v1::FairShareResponse* proto);
void MoveToProto(ScheduleResult&& result, v1::ScheduleResponse* proto);

// ---- Answers: proto -> core (clients and tests that read a response back) ----

FairShareResult FromProto(const v1::FairShareResponse& proto);
ScheduleResult FromProto(const v1::ScheduleResponse& proto);

}  // namespace arbiter::server
