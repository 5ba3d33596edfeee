// Building Reduction buffers over chosen dims of a tensor: shared by the
// reduction and normalization lowerings. Internal to the lowering package.
#ifndef KILN_LOWERING_REDUCE_BUILDER_H_
#define KILN_LOWERING_REDUCE_BUILDER_H_

#include <functional>
#include <vector>

#include "absl/status/statusor.h"
#include "lowering/lower_context.h"
#include "lowering/loop_ir.h"

namespace kiln::lowering {

struct ReduceSpec {
  std::vector<int64_t> dims;  // normalized, sorted, unique; empty = every dim
  bool keepdim = false;
  ReductionType type = ReductionType::kSum;
  DType accumulate = DType::kFloat32;  // the body's dtype
  DType stored = DType::kFloat32;      // the buffer's dtype
  // Applied to the (accumulate-typed) loaded element; identity when empty.
  std::function<ExprPtr(const ExprPtr&)> prologue;
};

// Normalizes a dim list against `rank` (None or [] = all dims).
absl::StatusOr<std::vector<int64_t>> ReduceDims(const LowerContext& ctx,
                                                const std::optional<std::vector<int64_t>>& dims,
                                                int64_t rank);

// One Reduction buffer reducing `x` as `spec` says.
absl::StatusOr<TensorRef> AddReduce(LowerContext& ctx, const TensorRef& x, const ReduceSpec& spec);

// log(sum(exp(x - m))) + m over `dims` (m the max, infinities as 0): a max
// reduction, an exp-sum reduction reading it, and the pointwise result of
// shape `out` (keepdim or not).
absl::StatusOr<TensorRef> AddLogSumExp(LowerContext& ctx, const TensorRef& x,
                                       const std::vector<int64_t>& dims, bool keepdim,
                                       const OutputInfo& out);

// The number of elements reduced.
int64_t ReducedCount(const TensorRef& x, const std::vector<int64_t>& dims);

}  // namespace kiln::lowering

#endif  // KILN_LOWERING_REDUCE_BUILDER_H_
