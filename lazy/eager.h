// Runs one lazy op at once on the reference kernels (runtime/register_kernels:
// the kernel slot of the op's overload in ir's registry). Used for ops
// without a lowering (the eager fallback) and in EagerModeScope.
#ifndef KILN_LAZY_EAGER_H_
#define KILN_LAZY_EAGER_H_

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "lazy/lazy_ir.h"
#include "lazy/shape.h"
#include "support/tensor.h"

namespace kiln::lazy {

// `operands` are the op's tensor operands (Arg::operand indexes them);
// the result must have `expected` shape and dtype (Internal otherwise: the
// op's shape inference and its kernel disagree).
absl::StatusOr<Tensor> RunReferenceKernel(const OpKind& op, absl::Span<const Tensor> operands,
                                          absl::Span<const Arg> args, const Shape& expected);

}  // namespace kiln::lazy

#endif  // KILN_LAZY_EAGER_H_
