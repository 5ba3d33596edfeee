// PyTorch's type promotion (c10::promoteTypes and at::result_type) at the
// dtype level, for runtime values.
//
// Operands fall into three priority classes: dimensioned tensors > 0-dim
// tensors > Python scalars ("wrapped numbers"). Within a class dtypes combine
// with PromoteDTypes; a lower class matters only when it is of a higher
// category (bool < integral < floating < complex) than the higher class.
// A float scalar counts as the default dtype (float32), an int scalar as
// int64, a bool scalar as bool.
//
// passes/type_promotion implements the same rules over IR types with
// unknowns; both should later share one dtype-level core in support/.
#ifndef KILN_RUNTIME_PROMOTION_H_
#define KILN_RUNTIME_PROMOTION_H_

#include <optional>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "support/dtype.h"

namespace kiln::runtime {

enum class OperandClass : uint8_t { kDimensioned, kZeroDim, kScalar };

struct DTypeOperand {
  DType dtype;
  // For kScalar: kBool, kInt64, kFloat64 (a Python float) or kComplex64.
  OperandClass cls;
};

// The dtype both convert to; nullopt when kiln has no such dtype
// (complex64 with float64 would be complex128).
std::optional<DType> PromoteDTypes(DType a, DType b);

// result_type over the operands. InvalidArgument for no operands or an
// unrepresentable result.
absl::StatusOr<DType> ResultType(absl::Span<const DTypeOperand> operands);

}  // namespace kiln::runtime

#endif  // KILN_RUNTIME_PROMOTION_H_
