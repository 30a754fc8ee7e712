// What a request message looks like once it has crossed the edge and been written back: the
// bytes protobuf's own parser reads, in the form ToProto (edge/proto_convert.h) writes them. The
// decoder's tests compare the one way in against protobuf with it: for bytes protobuf accepts,
// SerializeDeterministic(ToProto(decoded model)) must equal CanonicalRequestBytes(parsed message).
// Header-only.
#pragma once

#include <string>

#include "arbiter/v1/arbiter.pb.h"
#include "edge/wire.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"
#include "google/protobuf/reflection.h"

namespace arbiter::testing {

// Rewrites `message` (any message of a request) in place as ToProto writes a model: unknown fields
// dropped (the model keeps none), every -0.0 written as 0 (SEMANTICS.md §0.5), and a
// KueuePreemption with both policies unspecified, or a FlavorFungibility with all three fields
// unspecified, left out (the model cannot tell either from an absent one).
inline void Canonicalize(google::protobuf::Message* message) {
  namespace pb = ::google::protobuf;
  const pb::Reflection* reflection = message->GetReflection();
  reflection->MutableUnknownFields(message)->Clear();
  const pb::Descriptor* descriptor = message->GetDescriptor();
  for (int i = 0; i < descriptor->field_count(); ++i) {
    const pb::FieldDescriptor* field = descriptor->field(i);
    if (field->cpp_type() == pb::FieldDescriptor::CPPTYPE_DOUBLE) {
      if (field->is_repeated()) {
        for (int k = 0; k < reflection->FieldSize(*message, field); ++k) {
          if (reflection->GetRepeatedDouble(*message, field, k) == 0) {
            reflection->SetRepeatedDouble(message, field, k, 0.0);
          }
        }
      } else if (!field->has_presence() || reflection->HasField(*message, field)) {
        if (reflection->GetDouble(*message, field) == 0) reflection->SetDouble(message, field, 0.0);
      }
      continue;
    }
    if (field->cpp_type() != pb::FieldDescriptor::CPPTYPE_MESSAGE) continue;
    if (field->is_repeated()) {
      // Map entries are messages too: their double values are canonicalised here.
      for (int k = 0; k < reflection->FieldSize(*message, field); ++k) {
        Canonicalize(reflection->MutableRepeatedMessage(message, field, k));
      }
    } else if (reflection->HasField(*message, field)) {
      Canonicalize(reflection->MutableMessage(message, field));
    }
  }
  if (auto* queue = dynamic_cast<v1::Queue*>(message)) {
    if (queue->has_kueue_preemption() && queue->kueue_preemption().within_cluster_queue() == 0 &&
        queue->kueue_preemption().reclaim_within_cohort() == 0) {
      queue->clear_kueue_preemption();
    }
    if (queue->has_flavor_fungibility() && queue->flavor_fungibility().when_can_borrow() == 0 &&
        queue->flavor_fungibility().when_can_preempt() == 0 &&
        queue->flavor_fungibility().preference() == 0) {
      queue->clear_flavor_fungibility();
    }
  }
}

// The deterministic bytes of the request `message` canonicalised, its snapshot and policy present
// (a model always has both).
template <typename Request>
std::string CanonicalRequestBytes(Request message) {
  Canonicalize(&message);
  message.mutable_snapshot();
  message.mutable_policy();
  return edge::SerializeDeterministic(message);
}

}  // namespace arbiter::testing
