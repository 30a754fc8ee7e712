#include "core/taints.h"

namespace arbiter {

bool Tolerates(const Toleration& toleration, const Taint& taint) {
  if (!toleration.effect.empty() && toleration.effect != taint.effect) return false;
  if (toleration.op == "Exists") return toleration.key.empty() || toleration.key == taint.key;
  return toleration.key == taint.key && toleration.value == taint.value;
}

}  // namespace arbiter
