// The one macro family for propagating absl::Status / absl::StatusOr.
#ifndef KILN_SUPPORT_STATUS_H_
#define KILN_SUPPORT_STATUS_H_

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define KILN_STATUS_CONCAT_INNER_(a, b) a##b
#define KILN_STATUS_CONCAT_(a, b) KILN_STATUS_CONCAT_INNER_(a, b)

// Returns from the enclosing function when `expr` (an absl::Status) is not OK.
#define RETURN_IF_ERROR(expr)                          \
  do {                                                 \
    ::absl::Status kiln_status_ = (expr);              \
    if (!kiln_status_.ok()) return kiln_status_;       \
  } while (0)

// `ASSIGN_OR_RETURN(auto x, MakeX());` declares/assigns `x` from a StatusOr,
// or returns its error.
#define ASSIGN_OR_RETURN(lhs, expr)                                          \
  ASSIGN_OR_RETURN_IMPL_(KILN_STATUS_CONCAT_(kiln_statusor_, __LINE__), lhs, \
                         expr)

#define ASSIGN_OR_RETURN_IMPL_(statusor, lhs, expr) \
  auto statusor = (expr);                           \
  if (!statusor.ok()) return statusor.status();     \
  lhs = std::move(statusor).value()

#endif  // KILN_SUPPORT_STATUS_H_
