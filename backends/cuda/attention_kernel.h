// kiln::attention (passes/fuse_attention.h) as a generated CUDA kernel:
// flash attention, every shape, stride and the scale baked into the source
// like the generated fused kernels. Per (batch index, block of query rows)
// it streams blocks of keys through shared memory and keeps an online
// softmax (running max and sum per row, FlashAttention's rescaling of the
// accumulator), fp32 accumulation, the output written once: no [.., S, T]
// scores exist in global memory.
//
// Two paths:
// - float16/bfloat16 operands: tensor cores (mma.sync m16n8k16, fp32
//   accumulation); 4 warps per block, 16 query rows per warp, 64 keys per
//   block; q fragments in registers, the probabilities go from the score
//   accumulators straight into the second product's A fragments (rounded
//   to the operands' dtype, as the unfused chain rounds them), v's B
//   fragments by ldmatrix.x4.trans.
// - float32 operands: CUDA-core FMAs in exact float32 (no TF32): 4 warps,
//   16 query rows per block (4 per warp, computed together), 32 keys per
//   block, a lane per key for the scores, a lane per output column for the
//   accumulation.
// q, kt and v are read at their strides (transposed head views of a QKV
// projection are not copied); the mask broadcasts to [.., S, T] and is
// float32 or the operands' dtype.
//
// The PTX (mma, ldmatrix, 16-bit conversions) sits in a few `kiln_attn_*` helpers at
// the top of the source, defined unless KILN_ATTN_HOST_HELPERS is: the
// emulation test (kernel_emulation.h) supplies host versions of the same.
#ifndef KILN_BACKENDS_CUDA_ATTENTION_KERNEL_H_
#define KILN_BACKENDS_CUDA_ATTENTION_KERNEL_H_

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "backends/cuda/kernel_codegen.h"
#include "lowering/loop_ir.h"

namespace kiln::backends::cuda {

struct AttentionKernelShape {
  lowering::Layout q, kt, v, out;        // [.., S, D], [.., D, T], [.., T, Dv], [.., S, Dv]
  std::optional<lowering::Layout> mask;  // broadcasts to [.., S, T]
  double scale = 1.0;
};

// Head dims the kernel takes (both paths).
inline constexpr int64_t kAttentionMaxHeadDim = 128;

// The kernel `extern "C" __global__ NAME(const E* q, const E* kt, const E*
// v, [const M* mask,] E* out)` (buffer bases, in this order; no mask
// parameter without a mask), a translation unit of its own (no prelude).
// Unimplemented, with the reason, for what it does not take: operands of
// different dtypes or other than float32/float16/bfloat16, a mask of
// another dtype or not broadcasting, head dims above
// kAttentionMaxHeadDim, mismatched shapes, 16-bit operands below sm_80.
absl::StatusOr<CudaKernelSource> GenerateAttentionKernel(const AttentionKernelShape& shape,
                                                         const CudaTarget& target = CudaTarget());

}  // namespace kiln::backends::cuda

#endif  // KILN_BACKENDS_CUDA_ATTENTION_KERNEL_H_
