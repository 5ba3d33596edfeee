// Merges adjacent dimensions of a pointwise kernel's index space when every
// access walks them as one (NCHW tensors with small H, W: [N, C, 7, 7] ->
// [N, C, 49], or [N*C*49] when nothing broadcasts), so that the innermost
// dimension is long enough for full groups and, where aligned, vectors.
#ifndef KILN_BACKENDS_CUDA_KERNEL_COLLAPSE_H_
#define KILN_BACKENDS_CUDA_KERNEL_COLLAPSE_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "lowering/loop_ir.h"

namespace kiln::backends::cuda {

struct CollapsedSpace {
  std::vector<int64_t> ranges;
  std::vector<lowering::ExprPtr> bodies;  // one per input body, over the new variables
};

// `bodies` run over `ranges` and store contiguously (row-major). Dims i < j
// (adjacent once size-1 dims are dropped) merge when the index variables
// appear only in load offsets, affinely, and every load's coefficients
// satisfy coef_i == coef_j * ranges[j] (a contiguous store always does).
// nullopt when nothing merges (or the bodies use index variables otherwise).
std::optional<CollapsedSpace> CollapsePointwiseSpace(const std::vector<int64_t>& ranges,
                                                     const std::vector<lowering::ExprPtr>& bodies);

}  // namespace kiln::backends::cuda

#endif  // KILN_BACKENDS_CUDA_KERNEL_COLLAPSE_H_
