// Division by a per-row value as multiplication by its reciprocal.
//
// In a kernel with a shared outer nest, a pointwise member often divides by
// a value of the current outer index (softmax: exp(x - max) / sum). A
// vector division costs about ten times a multiplication (AVX-512 vdivps:
// ~0.21 ns per float32 element on the dev VM, against 0.02 for vmulps), so
// the codegen computes r = 1 / d once per row and multiplies by it. The
// result differs from x / d by rounding only (within an ulp or so), except
// where 1 / d overflows (d nonzero and below ~2^-128, a subnormal): those
// rows run the original division (CpuKernelSource emits both loops behind a
// per-row test), so no infinity appears where x / d is finite.
#ifndef KILN_BACKENDS_CPU_ROW_RECIPROCALS_H_
#define KILN_BACKENDS_CPU_ROW_RECIPROCALS_H_

#include <vector>

#include "lowering/loop_ir.h"

namespace kiln::backends::cpu {

// The float divisions of `body` whose divisor reads no index variable from
// `first_inner_var` on (the member's own loops) while the dividend does:
// the divisor is fixed for a whole row. Distinct nodes, in no fixed order.
std::vector<lowering::ExprPtr> RowInvariantDivisions(const lowering::ExprPtr& body, int first_inner_var);

}  // namespace kiln::backends::cpu

#endif  // KILN_BACKENDS_CPU_ROW_RECIPROCALS_H_
