// Building one pointwise buffer from a node's operands, with PyTorch's
// broadcasting and type promotion: shared by the pointwise, activation and
// normalization lowerings. Internal to the lowering package.
#ifndef KILN_LOWERING_ELEMENTWISE_H_
#define KILN_LOWERING_ELEMENTWISE_H_

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "lowering/lower_context.h"
#include "lowering/loop_ir.h"

namespace kiln::lowering {

// How the computation dtype is chosen.
enum class ComputeKind {
  kResult,   // the node's output dtype (arithmetic, float math, casts)
  kPromoted, // result_type of the operands (comparisons, min/max)
  kBool,     // operands converted to bool (logical ops)
};

// An operand of an elementwise op: a tensor argument or a scalar constant.
struct Operand {
  std::optional<TensorRef> tensor;
  ir::IValue scalar;
};

// The argument `name` as an operand; Unimplemented if it is neither a
// lowered tensor nor a constant number.
absl::StatusOr<Operand> GetOperand(const LowerContext& ctx, const std::string& name);

// The literal `v` in `dtype`.
ExprPtr Literal(double v, DType dtype);

// half/bfloat16 compute in float32, as generated code does.
DType ComputeDType(DType d);

using ElementwiseFn = std::function<absl::StatusOr<ExprPtr>(const std::vector<ExprPtr>& operands,
                                                            DType compute)>;

// Lowers the current node to one pointwise buffer over its output shape:
// each operand is loaded with broadcasting and cast to the compute dtype,
// `fn` combines them, and the result is cast to the output dtype. Binds
// the node's output 0. Operands named but absent from the node use their
// schema defaults.
absl::StatusOr<bool> LowerElementwise(LowerContext& ctx, const std::vector<std::string>& args,
                                      ComputeKind kind, const ElementwiseFn& fn);

}  // namespace kiln::lowering

#endif  // KILN_LOWERING_ELEMENTWISE_H_
