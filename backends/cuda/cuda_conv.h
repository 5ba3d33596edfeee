// Forward convolutions (1-D and 2-D, NCHW) on the GPU. With cuDNN 9
// (cudnn_conv.h): float32 (TF32 by default, as PyTorch), float16 and
// bfloat16, any strides of input and output, the algorithm found once per
// shape (cudnnFindConvolutionForwardAlgorithmEx), bias added by cuDNN and a
// following ReLU fused when the lowering attached one. Without cuDNN,
// float32 contiguous ones with kiln's own kernels: depthwise ones with a
// direct kernel, 1x1/stride-1/unpadded ones as one strided-batched sgemm
// over the images, the rest as im2col + sgemm per group (runtime_kernels.h).
// Ops: aten::convolution/_convolution (not transposed), aten::conv1d/conv2d,
// kiln::conv_nd (symmetric pads) and kiln::conv_post_ops (kiln::conv_nd plus
// the epilogue of ir/post_ops.h: inside cuDNN's graph where it maps,
// CudnnGraphFusedConvolution; else the bias and the chain run in place over
// y by one runtime kernel, conv_epilogue.h). Anything else returns nullopt and
// runs on the host.
#ifndef KILN_BACKENDS_CUDA_CUDA_CONV_H_
#define KILN_BACKENDS_CUDA_CUDA_CONV_H_

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "backends/cuda/conv_epilogue.h"
#include "backends/cuda/cublas_matmul.h"
#include "ir/post_ops.h"

namespace kiln::backends::cuda {

struct ConvContext {
  int device_index = 0;
  CUstream stream = nullptr;
  cublasHandle_t handle = nullptr;
  // Null without cuDNN (or with KILN_CUDNN=0): kiln's own kernels.
  cudnnHandle_t cudnn = nullptr;
  // TF32 tensor cores for float32 convolutions.
  bool tf32 = true;
  // The stream is being captured into a CUDA graph: no algorithm search
  // (it synchronizes); cuDNN's heuristics pick for shapes not seen before.
  bool capturing = false;
  // Scratch device memory of at least `bytes` (the im2col columns, cuDNN's
  // workspace), valid until the next call.
  std::function<absl::StatusOr<CUdeviceptr>(int64_t bytes)> scratch;
  // Set to true when cuDNN ran the convolution, and when it ran it through
  // its graph API (cudnn_graph_conv.h).
  bool* used_cudnn = nullptr;
  bool* used_cudnn_graph = nullptr;
  // Set to true when a fused convolution's bias and chain ran inside
  // cuDNN's graph (CudnnGraphFusedConvolution), not as the epilogue kernel.
  bool* used_graph_epilogue = nullptr;
  // A channels-last convolution (channels_last_conv.h): x and y NHWC, the
  // weight KRSC, cuDNN's NHWC filter format (a 1x1 weight's two layouts
  // have the same strides: the flag, not the strides, says which).
  bool channels_last = false;
};

// A convolution's shape (2-D; 1-D ones have h = kh = 1) and operands.
struct ConvProblem {
  int64_t n = 0, cin = 0, h = 1, w = 0, cout = 0, kh = 1, kw = 0, oh = 1, ow = 0;
  int64_t sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1, groups = 1;
  size_t spatial_dims = 2;  // 1 or 2
  // x and y in any strides (NCHW or channels-last); the weight contiguous
  // [K, C, R, S] or, for cuDNN, channels-last (KRSC: strides {RSC, 1, SC, C}).
  DeviceView x, weight, y;
  std::optional<DeviceView> bias;
  // kiln::conv_post_ops: the epilogue after the convolution (with the bias
  // when there is one), its operands and the kernel's arguments.
  std::vector<ir::PostOp> post;
  std::vector<DeviceView> post_operands;
  std::optional<EpilogueArgs> epilogue;
};

bool IsConvOp(const std::string& op);

// The convolution an extern call describes, or nullopt when it is not one
// kiln runs on the GPU (transposed, asymmetric pads, mismatched shapes).
std::optional<ConvProblem> ParseConv(const std::string& op, const std::vector<lowering::ExternArg>& args,
                                     const std::vector<DeviceView>& buffer_args,
                                     const std::vector<DeviceView>& outputs);

std::optional<absl::Status> TryCudaConv(const std::string& op, const std::vector<lowering::ExternArg>& args,
                                        const std::vector<DeviceView>& buffer_args,
                                        const std::vector<DeviceView>& outputs, const ConvContext& context);
// A parsed problem without an epilogue (cuDNN, else kiln's own kernels);
// nullopt when neither takes it.
std::optional<absl::Status> TryCudaConv(ConvProblem problem, const ConvContext& context);
// A parsed problem with an epilogue, written to `y` (problem.y's layout,
// at that or another address): the convolution without its bias, then the
// bias and chain in one pass of conv_epilogue's kernel.
std::optional<absl::Status> ConvThenEpilogue(const ConvProblem& problem, const DeviceView& y,
                                             const ConvContext& context);

}  // namespace kiln::backends::cuda

#endif  // KILN_BACKENDS_CUDA_CUDA_CONV_H_
