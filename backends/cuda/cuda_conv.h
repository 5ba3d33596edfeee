// Float32 forward convolutions (1-D and 2-D, NCHW, contiguous) on the GPU:
// depthwise ones with a direct kernel, 1x1/stride-1/unpadded ones as one
// strided-batched sgemm over the images, the rest as im2col + sgemm per
// group (runtime_kernels.h). Ops: aten::convolution/_convolution (not
// transposed), aten::conv1d/conv2d, kiln::conv_nd (symmetric pads). Anything
// else returns nullopt and runs on the host.
#ifndef KILN_BACKENDS_CUDA_CUDA_CONV_H_
#define KILN_BACKENDS_CUDA_CUDA_CONV_H_

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "backends/cuda/cublas_matmul.h"

namespace kiln::backends::cuda {

struct ConvContext {
  int device_index = 0;
  CUstream stream = nullptr;
  cublasHandle_t handle = nullptr;
  // Scratch device memory of at least `bytes` (the im2col columns), valid
  // until the next call.
  std::function<absl::StatusOr<CUdeviceptr>(int64_t bytes)> scratch;
};

bool IsConvOp(const std::string& op);

std::optional<absl::Status> TryCudaConv(const std::string& op, const std::vector<lowering::ExternArg>& args,
                                        const std::vector<DeviceView>& buffer_args,
                                        const std::vector<DeviceView>& outputs, const ConvContext& context);

}  // namespace kiln::backends::cuda

#endif  // KILN_BACKENDS_CUDA_CUDA_CONV_H_
