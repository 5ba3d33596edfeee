// Convolutions through cuDNN 9 (loaded with dlopen, cuda_loader.h): its
// graph API first (cudnn_graph_conv.h; KILN_CUDNN_BACKEND=0 skips it), its
// legacy convolution API for the shapes the graph API refuses. Legacy: float32 (TF32 tensor cores unless ConvContext::tf32 is
// false, as torch.backends.cudnn.allow_tf32), float16 and bfloat16 (tensor
// cores through the TENSOR_OP math type, float accumulation), any strides of input and output, groups and dilation. The
// algorithm is found once per shape, dtype, math mode and alignment
// (cudnnFindConvolutionForwardAlgorithmEx timing the candidates on the
// call's own buffers; under a CUDA graph capture, where that cannot run,
// cuDNN's heuristics) and kept with the shape's descriptors for the life of
// the process. A bias is added by cuDNN (cudnnAddTensor). Channels-last
// convolutions (x and y in NHWC strides, the weight KRSC) use the NHWC
// filter format, as PyTorch describes channels-last convolutions.
#ifndef KILN_BACKENDS_CUDA_CUDNN_CONV_H_
#define KILN_BACKENDS_CUDA_CUDNN_CONV_H_

#include <optional>

#include "absl/status/status.h"
#include "backends/cuda/cuda_conv.h"

namespace kiln::backends::cuda {

// The preconditions every cuDNN convolution shares (a handle, a dtype
// cuDNN takes, a packed filter, a bias of x's dtype); cuDNN's data type
// when they are met.
std::optional<int> CudnnSupported(const ConvProblem& problem, const ConvContext& ctx);

// Runs `problem` with cuDNN (ctx.cudnn must be set; *ctx.used_cudnn_graph
// set when the graph API ran it); nullopt when cuDNN
// takes no such convolution (a dtype it lacks, a weight that is not packed,
// a bias of another dtype), so the caller falls back.
std::optional<absl::Status> CudnnConvolution(const ConvProblem& problem, const ConvContext& ctx);

// Opt-in (KILN_CUDNN_FUSED=1; unmeasured): a fused convolution whose
// epilogue is bias [+ residual z] [+ relu] runs as one
// cudnnConvolutionBiasActivationForward, z described like y. nullopt when
// it does not apply; an error (NOT_SUPPORTED, ...) leaves y to be written
// by the caller's unfused path.
bool CudnnFusedEnabled();
std::optional<absl::Status> CudnnFusedConvolution(const ConvProblem& problem, const ConvContext& ctx, bool relu,
                                                  const DeviceView* z);

// Bytes of workspace the algorithm search may use.
inline constexpr int64_t kCudnnFindWorkspaceBytes = int64_t{512} << 20;

}  // namespace kiln::backends::cuda

#endif  // KILN_BACKENDS_CUDA_CUDNN_CONV_H_
