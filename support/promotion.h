// PyTorch's type promotion at the dtype level: the one core that the passes
// (passes/type_promotion, over IR types with unknowns) and the runtime
// (reference kernels, over concrete values) both build on.
//
// PromoteTypes is c10::promoteTypes (c10/core/ScalarType.cpp, torch 2.x):
//  * equal dtypes promote to themselves; bool gives way to anything;
//  * uint8 with a signed integer follows NumPy (uint8+int8 -> int16, else the
//    signed type), integers of one signedness take the wider;
//  * float16 with bfloat16 is float32; an integer with a float is the float;
//  * complex wins, except complex64 with float64, which would be complex128
//    (kiln has no such dtype: nullopt);
//  * the "barebones" unsigned types uint16/uint32/uint64 promote only with
//    themselves or with a floating dtype (the floating dtype wins); PyTorch
//    raises "Promotion for uint16, uint32, uint64 types is not supported" for
//    every other pair (bool and uint8 included), and so does kiln (nullopt).
//    So PromoteTypes(uint16, int8) has no result: passes/type_promotion used
//    to answer uint16 and runtime/promotion int32; both were wrong.
//
// ResultType is at::result_type (ATen/native/TypeProperties.cpp): operands
// fall into three priority classes, dimensioned tensors > 0-dim tensors >
// Python scalars ("wrapped numbers"); within a class dtypes combine with
// PromoteTypes; a lower class matters only when it is of a higher category
// (bool < integral < floating < complex) than the higher one. A float scalar
// counts as the default dtype (float32), an int scalar as int64, a complex
// scalar as complex64.
#ifndef KILN_SUPPORT_PROMOTION_H_
#define KILN_SUPPORT_PROMOTION_H_

#include <cstdint>
#include <optional>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "support/dtype.h"

namespace kiln {

enum class PromotionCategory : uint8_t { kBool, kIntegral, kFloating, kComplex };
PromotionCategory CategoryOf(DType t);

// c10::promoteTypes; nullopt where PyTorch raises or the result is a dtype
// kiln does not have.
std::optional<DType> PromoteTypes(DType a, DType b);

// result_type's priority classes.
enum class OperandClass : uint8_t { kDimensioned, kZeroDim, kScalar };

struct DTypeOperand {
  DType dtype;
  // For kScalar: kBool, kInt64, kFloat64 (a Python float) or kComplex64.
  OperandClass cls;
};

// The dtype a Python number of kind `scalar` contributes (float -> float32).
DType WrappedNumberDType(DType scalar);

// result_type's running state: add operands one by one, then ask Result().
class ResultTypeState {
 public:
  void Add(const DTypeOperand& operand);
  // nullopt when there was no operand or some promotion had no result.
  std::optional<DType> Result() const;
  bool failed() const { return failed_; }

 private:
  std::optional<DType> dim_, zero_dim_, wrapped_;
  bool failed_ = false;
};

// result_type over known operands. InvalidArgument naming the dtypes for no
// operands or a promotion without a result.
absl::StatusOr<DType> ResultType(absl::Span<const DTypeOperand> operands);

}  // namespace kiln

#endif  // KILN_SUPPORT_PROMOTION_H_
