// One channels-last convolution (channels_last_plan.h) on the GPU: the
// weight permuted to KRSC at load, x and y as NHWC views; an input or
// output the plan left plain (the chain's boundary) is converted by one
// transpose into scratch (the copy kernel of runtime_kernels.h) around
// cuDNN's NHWC convolution and its fused epilogue.
#ifndef KILN_BACKENDS_CUDA_CHANNELS_LAST_CONV_H_
#define KILN_BACKENDS_CUDA_CHANNELS_LAST_CONV_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "backends/cuda/cuda_conv.h"
#include "support/tensor.h"

namespace kiln::backends::cuda {

// `w` ([K, C, R, S], contiguous, any element size) as KRSC bytes on the host.
absl::StatusOr<Tensor> PermuteToKrsc(const Tensor& w);

// Runs the convolution extern channels-last with the KRSC weight at
// `krsc_weight`. `allocate` gives scratch that lives to the end of the call
// (the transposed input and output). Ok: it ran. An error: cuDNN refused
// it (NOT_SUPPORTED, no algorithm) or the problem is not one this path
// takes; nothing was written to y, and the caller runs the plain path.
absl::Status RunChannelsLastConv(const std::string& op, const std::vector<lowering::ExternArg>& args,
                                 std::vector<DeviceView> buffer_args, const DeviceView& y, CUdeviceptr krsc_weight,
                                 const ConvContext& ctx,
                                 const std::function<absl::StatusOr<CUdeviceptr>(int64_t)>& allocate);

}  // namespace kiln::backends::cuda

#endif  // KILN_BACKENDS_CUDA_CHANNELS_LAST_CONV_H_
