// Status helpers missing from Debian's Abseil (20220623), named as upstream so that an upgrade is
// a rename.
#pragma once

#include "absl/status/status.h"
#include "absl/status/statusor.h"

// Returns from the enclosing function if `expr` (an absl::Status) is not OK.
#define RETURN_IF_ERROR(expr)                                      \
  do {                                                             \
    ::absl::Status arbiter_status_macro_ = (expr);                 \
    if (!arbiter_status_macro_.ok()) return arbiter_status_macro_; \
  } while (0)

#define ARBITER_STATUS_CONCAT_INNER_(a, b) a##b
#define ARBITER_STATUS_CONCAT_(a, b) ARBITER_STATUS_CONCAT_INNER_(a, b)

// `ASSIGN_OR_RETURN(auto x, StatusOrExpr())`: assigns the value or returns the error.
#define ASSIGN_OR_RETURN(lhs, expr) \
  ASSIGN_OR_RETURN_IMPL_(ARBITER_STATUS_CONCAT_(arbiter_statusor_, __LINE__), lhs, expr)
#define ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                           \
  if (!tmp.ok()) return tmp.status();          \
  lhs = std::move(*tmp)
