// Depthwise 2-D convolutions (groups == input channels, one filter plane
// per output channel) with kiln's own runtime kernel instead of cuDNN.
// Why: cuDNN's NCHW depthwise algorithms are slow on the large filters of
// convnext (7x7): on an H200, [32,96,56,56] x [96,1,7,7] in bfloat16 took
// 0.6 ms a call, about 40x its memory traffic. The kernel gives each thread
// a strip of 4 or 8 outputs down one column: it reads each input row
// of the strip's window once (K values) and adds it into every output of the
// strip whose filter covers that row, with the K x K filter in registers, so
// an output costs about (R*S + K) * K / R loads instead of K * K. Filter
// size and stride are template arguments (3, 5, 7; 1, 2: the unrolled
// loops), everything else (shape, pads, x/y strides) is data; float32,
// float16 and bfloat16 storage, float math, the bias added in the kernel.
// `KILN_CUDA_DEPTHWISE=0` sends them all to cuDNN and `=1` all to the
// kernel (before/after measurements); unset, the policy below.
//
// A shared-memory tiled version (a block staged the input window of a band
// of rows of one or more channel planes, each input read once, then
// computed strips from shared memory) measured slower on an H200 at batch
// 32 float32 (one call, whole models): mobilenet_v3_large 1.96 ms against
// 1.36 with this kernel (cuDNN 1.51), efficientnet_b0 3.18 against 2.22
// (cuDNN 2.51), convnext_tiny 10.53 against 10.57; per step it won only
// convnext's 56x56 planes (0.65 against 1.09 ms for 3 calls) and lost the
// 14x14 and 7x7 ones. So this one stays.
//
// Which path, measured on an NVIDIA H200 at batch 32 (whole models, kiln's
// kernel / cuDNN, ms): through cuDNN's legacy API the kernel won five of
// six cells (bfloat16 convnext_tiny 4.28 / 6.03, mobilenet_v3_large 2.61 /
// 2.73, efficientnet_b0 3.36 / 3.77; float32 10.07 / 12.70, 2.04 / 2.19,
// but efficientnet_b0 3.17 / 3.06; the kernel's first version). Through
// the graph API (cudnn_graph_conv.h) cuDNN wins in 16-bit (convnext_tiny
// 4.37 / 4.03, mobilenet 1.43 / 1.30, efficientnet 2.50 / 2.24) and the
// kernel in float32 (10.56 / 12.48, 1.35 / 1.50, 2.23 / 2.48). So the
// kernel takes float32 ones, and 16-bit ones only with the legacy API.
#ifndef KILN_BACKENDS_CUDA_DEPTHWISE_CONV_H_
#define KILN_BACKENDS_CUDA_DEPTHWISE_CONV_H_

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "backends/cuda/cuda_conv.h"

namespace kiln::backends::cuda {

// The filter sizes and strides with a compiled kernel (square filters,
// equal strides, dilation 1).
inline constexpr int kDepthwiseSizes[] = {3, 5, 7};
inline constexpr int kDepthwiseStrides[] = {1, 2};

// The kernel's arguments (passed by value; the source's struct lays them out
// the same). c counts output channels; input channel = output / mult.
struct DepthwiseArgs {
  long long n, c, h, w, oh, ow, ph, pw, mult;  // NOLINT(runtime/int)
  long long x_strides[4];                      // NOLINT(runtime/int): n, c, h, w
  long long y_strides[4];                      // NOLINT(runtime/int)
  int has_bias;
};

// Whether the kernel takes `c` (a 2-D depthwise convolution of a filter size
// and stride above, NCHW [K, 1, R, S] weight, x and y of one storage type
// at any strides) and the switch allows it.
bool DepthwiseKernelTakes(const ConvProblem& c, bool channels_last);

// Runs `c` (DepthwiseKernelTakes) on `stream`.
absl::Status LaunchDepthwise(const ConvProblem& c, int device_index, CUstream stream);

// The kernel's name for a storage type (0 float32, 1 float16, 2 bfloat16),
// filter size and stride.
std::string DepthwiseKernelName(int storage, int size, int stride);

// The kernels' CUDA source (part of the runtime kernels' unit; uses its
// storage helpers kiln_rt_f32 / kiln_rt_f16).
const std::string& DepthwiseKernelSource();

}  // namespace kiln::backends::cuda

#endif  // KILN_BACKENDS_CUDA_DEPTHWISE_CONV_H_
