// 2-D pooling on the GPU (NCHW, any strides of the input, a contiguous
// output): aten::max_pool2d (padding never wins, NaN propagates as in
// PyTorch) and aten::avg_pool2d (count_include_pad, divisor_override and
// ceil_mode's clipped windows as PyTorch's CUDA kernel counts them), over
// float32, float16 and bfloat16 (float math). Anything else returns nullopt
// and runs on the host.
#ifndef KILN_BACKENDS_CUDA_CUDA_POOL_H_
#define KILN_BACKENDS_CUDA_CUDA_POOL_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "backends/cuda/cublas_matmul.h"

namespace kiln::backends::cuda {

bool IsPoolOp(const std::string& op);

std::optional<absl::Status> TryCudaPool(const std::string& op, const std::vector<lowering::ExternArg>& args,
                                        const std::vector<DeviceView>& buffer_args,
                                        const std::vector<DeviceView>& outputs, int device_index, CUstream stream);

}  // namespace kiln::backends::cuda

#endif  // KILN_BACKENDS_CUDA_CUDA_POOL_H_
