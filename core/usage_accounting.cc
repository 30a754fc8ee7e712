#include "core/usage_accounting.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "core/echoed_name.h"

namespace arbiter {
namespace {

absl::Status CheckAmounts(absl::string_view argument, const ResourceMap& map) {
  for (const auto& [name, value] : map) {
    if (!std::isfinite(value) || value < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          argument, "[", QuotedName(name), "]: must be finite and not negative, got ", value));
    }
  }
  return absl::OkStatus();
}

}  // namespace

double UsageDecayFactor(double interval, double half_life) {
  if (!(half_life > 0)) return 1.0;
  return std::pow(0.5, interval / half_life);
}

absl::StatusOr<ResourceMap> AccumulateUsage(const ResourceMap& usage, const ResourceMap& rate,
                                            double interval, double half_life) {
  if (!std::isfinite(interval) || interval < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("interval: must be finite and not negative, got ", interval));
  }
  if (std::isnan(half_life)) return absl::InvalidArgumentError("half_life: NaN");
  if (absl::Status status = CheckAmounts("usage", usage); !status.ok()) return status;
  if (absl::Status status = CheckAmounts("rate", rate); !status.ok()) return status;

  const double factor = UsageDecayFactor(interval, half_life);
  ResourceMap result;
  for (const auto& [name, value] : usage) result.emplace_hint(result.end(), name, value * factor);
  for (const auto& [name, value] : rate) {
    double& entry = result[name];  // 0 when the usage had no such key
    entry = entry + value * interval;
    // Finite inputs, but the product or the sum may still overflow: usage must stay finite.
    if (!std::isfinite(entry)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "rate[", QuotedName(name), "]: usage · decay + rate · interval overflows (rate ", value,
          ", interval ", interval, ")"));
    }
  }
  return result;
}

}  // namespace arbiter
