// The KAI generator's resources. It computes on dense vectors indexed cpu, memory,
// nvidia.com/gpu, then the extra kinds, and names the resources only in the snapshot.
#pragma once

#include <string>
#include <vector>

#include "core/model.h"

namespace arbiter::generator::internal {

inline constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// Dense resource indices.
inline constexpr int kCpu = 0;
inline constexpr int kMemory = 1;
inline constexpr int kGpu = 2;
inline constexpr int kFirstExtra = 3;

// An amount per resource, by dense index.
using DenseResources = std::vector<double>;

class KaiResources {
 public:
  // cpu, memory, nvidia.com/gpu and `extra` kinds example.com/res-0, example.com/res-1, ...
  explicit KaiResources(int extra);

  int count() const { return static_cast<int>(names_.size()); }
  const std::string& name(int r) const { return names_[r]; }
  // Zero of every resource.
  DenseResources Zero() const { return DenseResources(names_.size(), 0); }

  // `dense` by name; without its zero amounts when `skip_zero`.
  ResourceMap ToMap(const DenseResources& dense, bool skip_zero) const;

 private:
  std::vector<std::string> names_;
};

}  // namespace arbiter::generator::internal
