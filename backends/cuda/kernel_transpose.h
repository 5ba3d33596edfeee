// Pointwise kernels that read an operand transposed: a 32x32 tile through
// shared memory (issue 15).
//
// convnext's residual add reads its branch (a GEMM result, [N, H, W, C])
// through a permute while it writes the NCHW trunk: with one thread per
// output element, consecutive threads read elements C apart, a sector per
// load. Inductor tiles such kernels in two dimensions; this schedule does the
// same for the space's two innermost non-unit dims (a, then b innermost): a
// block stages each transposed operand's 32x32 tile with loads adjacent in
// a, then computes the tile with stores (and the other loads) adjacent in b,
// reading the staged values from shared memory. On an H200 these adds took
// 0.21 ms for convnext_tiny's first stage at batch 32 in bfloat16 (about
// 0.7 ms over the model), where Inductor's channels-last ones took 0.03.
#ifndef KILN_BACKENDS_CUDA_KERNEL_TRANSPOSE_H_
#define KILN_BACKENDS_CUDA_KERNEL_TRANSPOSE_H_

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "backends/cuda/kernel_loops.h"
#include "lowering/loop_ir.h"

namespace kiln::backends::cuda {

struct TransposeTiling {
  int a = -1, b = -1;                        // dims of the space (b innermost)
  std::vector<lowering::ExprPtr> staged;     // the loads staged per tile
};

// The tiling of a pointwise kernel over `ranges` whose members store with
// unit stride in the innermost non-unit dim, or nullopt: some load of a
// float buffer the kernel only reads has unit stride in the second-innermost
// dim and walks the innermost with another stride (an affine index, no
// gather), and both dims span at least 16.
std::optional<TransposeTiling> PlanTransposeTiling(const std::vector<int64_t>& ranges,
                                                   const std::vector<StoreBody::Member>& members,
                                                   const std::set<std::string>& written);

// The kernel body of the tiled schedule (`threads` = 256 per block) and its
// grid (at most `max_blocks`).
absl::StatusOr<std::string> EmitTransposeTiled(KernelContext& ctx, const std::vector<int64_t>& ranges,
                                               const TransposeTiling& tiling, StoreBody& body,
                                               const std::string& indent, int64_t max_blocks, int64_t* grid);

inline constexpr int kTransposeTileThreads = 256;

// KILN_CUDA_TRANSPOSE_TILES=0 keeps every pointwise kernel on the plain
// grid-stride loop (before/after measurements).
bool TransposeTilesEnabled();

}  // namespace kiln::backends::cuda

#endif  // KILN_BACKENDS_CUDA_KERNEL_TRANSPOSE_H_
