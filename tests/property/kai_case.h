// One generated KAI case of the property tests that work on the working state directly: the
// request, validated, its fair shares and a session over them.
#ifndef ARBITER_TESTS_PROPERTY_KAI_CASE_H_
#define ARBITER_TESTS_PROPERTY_KAI_CASE_H_

#include <cstdint>
#include <functional>

#include "clients/generator/generator.h"
#include "core/kai/kai_fair_share.h"
#include "core/kai/session.h"
#include "core/validated_snapshot.h"
#include "tests/property/property_support.h"
#include "tests/support/validated.h"

namespace arbiter::testing {

// Case `index` of PropertyCaseOptions (KAI). Neither copied nor moved: each member points into
// the ones before it.
struct KaiCase {
  explicit KaiCase(uint64_t index) : KaiCase(index, nullptr) {}
  // The request generated for case `index`, changed by `adjust` (when given) before it is
  // validated.
  KaiCase(uint64_t index, const std::function<void(generator::GeneratedRequest*)>& adjust)
      : options(PropertyCaseOptions(index, generator::GeneratorModel::kKai)),
        request(Adjusted(generator::Generate(options), adjust)),
        validated(MustValidate(request.snapshot, request.policy)),
        shares(kai::ComputeKaiFairShare(validated)),
        session(shares) {}
  static generator::GeneratedRequest Adjusted(
      generator::GeneratedRequest request,
      const std::function<void(generator::GeneratedRequest*)>& adjust) {
    if (adjust) adjust(&request);
    return request;
  }
  KaiCase(const KaiCase&) = delete;
  KaiCase& operator=(const KaiCase&) = delete;

  const generator::GeneratorOptions options;
  const generator::GeneratedRequest request;
  const ValidatedSnapshot validated;
  const kai::KaiFairShare shares;
  kai::Session session;
};

}  // namespace arbiter::testing

#endif  // ARBITER_TESTS_PROPERTY_KAI_CASE_H_
