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
// A channels-last x (convnext's first block reads the permuted layer norm's
// NHWC output) is walked channels fastest, so a warp's loads stay adjacent.
// `KILN_CUDA_DEPTHWISE=0` sends them all to cuDNN (before/after figures).
//
// Measured on an NVIDIA H200 at batch 32 (ncu, --clock-control none): the
// first version, with 64-bit index math and a bounds test per load, was
// issue-bound (SM throughput 67%, L1 23%, 95 registers): 210 us a call on
// convnext_tiny's [32,96,56,56] planes, and 657 us for the one that reads
// a channels-last x column by column (L1 95%: a sector per load). With
// 32-bit offsets, per-thread column masks and immediate-offset row loads
// (77 registers): 95 us, and 329 us channels fastest. Whole models, kiln's
// kernel / cuDNN's graph API, ms (one call): float32 convnext_tiny 9.51 /
// 12.50, mobilenet_v3_large 1.19 / 1.53, efficientnet_b0 1.92 / 2.55 (the
// first version: 10.57, 1.36, 2.22); bfloat16 3.70 / 4.03, 1.34 / 1.34,
// 2.32 / 2.31-2.38. So every depthwise convolution the kernel takes goes to
// it, 16-bit ones included (they went to cuDNN before).
//
// A shared-memory tiled version (a block staged the input window of a band
// of rows of one or more channel planes, each input read once, then
// computed strips from shared memory) measured slower on an H200 at batch
// 32 float32 against the first version (one call, whole models):
// mobilenet_v3_large 1.96 ms against 1.36, efficientnet_b0 3.18 against
// 2.22, convnext_tiny 10.53 against 10.57.
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
// The filter taps (channels x K x K) a block stages in shared memory for a
// channels-last x (the kernel's channel order).
inline constexpr int kDepthwiseStagedTaps = 8192;

// The kernel's arguments (passed by value; the source's struct lays them out
// the same). c counts output channels; input channel = output / mult.
struct DepthwiseArgs {
  long long n, c, h, w, oh, ow, ph, pw, mult;  // NOLINT(runtime/int)
  long long x_strides[4];                      // NOLINT(runtime/int): n, c, h, w
  long long y_strides[4];                      // NOLINT(runtime/int)
  int has_bias;
  int channels_inner;  // thread order: channels fastest (x channels-last), else columns
};

// Whether the kernel takes `c` (a 2-D depthwise convolution of a filter size
// and stride above, NCHW [K, 1, R, S] weight, x and y of one storage type
// at any strides) and the switch allows it.
bool DepthwiseKernelTakes(const ConvProblem& c, bool channels_last);

// Whether the kernel walks `c`'s threads channels fastest (x channels-last,
// its filters few enough to stage in shared memory) instead of columns.
bool DepthwiseChannelsInner(const ConvProblem& c);

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
