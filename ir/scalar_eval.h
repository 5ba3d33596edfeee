// Constant propagation's built-in evaluator for TorchScript's scalar, string
// and list ops (and shape queries on tensors that carry data), so that the
// common int/float/bool arithmetic of scripted code folds without a runtime.
//
// Every op handled here is pure and deterministic by construction; ops that
// would raise at run time (division by zero, index out of range, int
// overflow) are not folded, so the error still happens where it did.
#ifndef KILN_IR_SCALAR_EVAL_H_
#define KILN_IR_SCALAR_EVAL_H_

#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "ir/ivalue.h"
#include "ir/symbol.h"

namespace kiln::ir {

// Evaluates `kind` on `inputs`. UnimplementedError when this evaluator does
// not know the op or these input kinds (the caller may try the op's
// kernel); any other error means the op must not be folded, with the
// reason (e.g. "integer division by zero").
absl::StatusOr<std::vector<ir::IValue>> EvaluateScalarOp(ir::Symbol kind,
                                                         absl::Span<const ir::IValue> inputs);

}  // namespace kiln::ir

#endif  // KILN_IR_SCALAR_EVAL_H_
