// The epilogue of a fused convolution (kiln::conv_post_ops): a per-channel
// bias, then the post-op chain of ir/post_ops.h, applied in place over the
// convolution's output in whatever layout it has (NCHW or channels-last),
// residual / gate operands read at their own strides (broadcast dims at
// stride 0). float32/float16/bfloat16 storage, float math, one rounding per
// element at the store. One runtime kernel (runtime_kernels.h's unit): the
// chain travels as data, so every epilogue shares one compiled function.
#ifndef KILN_BACKENDS_CUDA_CONV_EPILOGUE_H_
#define KILN_BACKENDS_CUDA_CONV_EPILOGUE_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "backends/cuda/cublas_matmul.h"
#include "ir/post_ops.h"

namespace kiln::backends::cuda {

// Limits of the kernel's by-value arguments.
inline constexpr int kEpilogueMaxSteps = 16;
inline constexpr int kEpilogueMaxScalars = 32;
inline constexpr int kEpilogueMaxOperands = 4;

// The kernel's arguments (passed by value; the source's struct lays them
// out the same). Dims are y's in iteration order, outermost first: the
// innermost is y's smallest stride, so consecutive threads touch
// consecutive addresses whatever the layout.
struct EpilogueArgs {
  long long sizes[4];                                  // NOLINT(runtime/int)
  long long y_strides[4];                              // NOLINT(runtime/int)
  long long operand_strides[kEpilogueMaxOperands][4];  // NOLINT(runtime/int)
  long long bias_dim;                                  // NOLINT(runtime/int): the channel dim, -1: no bias
  long long bias_inner;                                // NOLINT(runtime/int): elements per step of bias_dim
  int dense;                                           // y packed in iteration order: offset = index
  int operand_dense[kEpilogueMaxOperands];             // the same for an operand (and y dense)
  int narrow_index;                                    // every index and offset fits 31 bits: 32-bit math
  int vec4;                                            // groups of 4 in one access (packed alike, aligned)
  int steps;
  int kinds[kEpilogueMaxSteps];        // ir::PostOpKind
  int first_scalar[kEpilogueMaxSteps];
  int operand[kEpilogueMaxSteps];      // index into the operands, -1
  float scalars[kEpilogueMaxScalars];
};

// The arguments for `y` (rank 3 or 4, channels at dim 1) with `post` and
// operands of `operand_layouts` (each broadcasting to y); nullopt when the
// epilogue does not fit the kernel (too many steps, a rank or dtype it does
// not take): the caller runs the op another way.
std::optional<EpilogueArgs> MakeEpilogueArgs(const lowering::Layout& y, bool has_bias,
                                             const std::vector<ir::PostOp>& post,
                                             const std::vector<lowering::Layout>& operand_layouts);

// Launches the epilogue over `y` (in place) on `stream`.
absl::Status LaunchEpilogue(const DeviceView& y, const std::optional<DeviceView>& bias,
                            const std::vector<DeviceView>& operands, const EpilogueArgs& args, int device_index,
                            CUstream stream);

// The kernel's CUDA source (a runtime-kernel unit's body, after the
// prelude: runtime_kernels.h); the post-op numbers come from ir::PostOpKind.
const std::string& EpilogueKernelSource();

}  // namespace kiln::backends::cuda

#endif  // KILN_BACKENDS_CUDA_CONV_EPILOGUE_H_
