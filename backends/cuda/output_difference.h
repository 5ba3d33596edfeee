// How far one device tensor is from another, measured on the device: each
// block of one runtime kernel (runtime_kernels.h's unit) sums (a - b)^2,
// b^2 and the elements finite in one but not the other over a grid-stride
// slice; the host adds the blocks' partial sums. cuDNN's fused plans are
// checked with it before they are kept (cudnn_graph_conv.h): copying a
// batch-32 activation to the host per candidate would cost more than the
// plan search itself.
#ifndef KILN_BACKENDS_CUDA_OUTPUT_DIFFERENCE_H_
#define KILN_BACKENDS_CUDA_OUTPUT_DIFFERENCE_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "backends/cuda/cublas_matmul.h"

namespace kiln::backends::cuda {

struct OutputDifference {
  // ||a - b|| / ||b|| over the elements finite in both (0 when both are
  // all zero; infinite when only b is).
  double relative_l2 = 0;
  // Elements finite in exactly one of a and b.
  int64_t finiteness_mismatches = 0;
};

// Blocks the kernel runs (at most) and the device bytes their partial sums take.
inline constexpr int kDifferenceBlocks = 128;
inline constexpr int64_t kDifferencePartialBytes = int64_t{kDifferenceBlocks} * 3 * sizeof(double);

// The difference from the partial sums of `blocks` blocks ({sum (a-b)^2,
// sum b^2, mismatches} per block, as the kernel writes them).
OutputDifference SumDifferencePartials(const double* partials, int blocks);

// a and b: `n` packed elements of `dtype` (float32, float16, bfloat16) on
// device `device_index`; `partials` holds kDifferencePartialBytes. Runs on
// `stream` and waits for it.
absl::StatusOr<OutputDifference> DeviceDifference(CUdeviceptr a, CUdeviceptr b, int64_t n, DType dtype,
                                                  CUdeviceptr partials, int device_index, CUstream stream);

// The kernel's CUDA source (a runtime-kernel unit's body, after the prelude:
// runtime_kernels.h): kiln_rt_difference_{f32,f16,bf16}(a, b, n, partials).
const std::string& DifferenceKernelSource();

}  // namespace kiln::backends::cuda

#endif  // KILN_BACKENDS_CUDA_OUTPUT_DIFFERENCE_H_
