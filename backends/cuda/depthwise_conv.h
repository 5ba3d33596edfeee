// Depthwise 2-D convolutions (groups == input channels, one filter plane
// per output channel) with kiln's own runtime kernels instead of cuDNN.
// Why: cuDNN's NCHW depthwise algorithms are slow on the large filters of
// convnext (7x7): on an H200, [32,96,56,56] x [96,1,7,7] in bfloat16 took
// 0.6 ms a call, about 40x its memory traffic. Filter size and stride are
// template arguments (3, 5, 7; 1, 2: the unrolled loops), everything else
// (shape, pads, x/y strides) is data; float32, float16 and bfloat16
// storage, float math, the bias added in the kernel. Two kernels:
//
// - x NCHW: the column kernel gives each thread a strip of 4 or 8 outputs
//   down one column: it reads each input row of the strip's window once (K
//   values) and adds it into every output of the strip whose filter covers
//   that row, with the K x K filter in registers, so an output costs about
//   (R*S + K) * K / R loads instead of K * K.
// - x channels-last (convnext's first block reads the permuted layer norm's
//   NHWC output): the channels-last kernel stages a block's input window of
//   16 channels in shared memory (a half warp loads one pixel's 16
//   channels, adjacent in memory), then computes 4 x 4 output tiles of one
//   channel plane per thread from it. Walking such an x by columns reads a
//   sector per element; walking it channels fastest (the column kernel's
//   old second mode) scatters the stores across planes.
//
// `KILN_CUDA_DEPTHWISE=0` sends them all to cuDNN (before/after figures).
//
// Measured on an NVIDIA H200 at batch 32 (ncu, --clock-control none): the
// column kernel's first version, with 64-bit index math and a bounds test
// per load, was issue-bound (SM throughput 67%, L1 23%, 95 registers): 210
// us a call on convnext_tiny's [32,96,56,56] planes. With 32-bit offsets,
// per-thread column masks and immediate-offset row loads (77 registers): 95
// us. Whole models, kiln's kernel / cuDNN's graph API, ms (one call):
// float32 convnext_tiny 9.51 / 12.50, mobilenet_v3_large 1.19 / 1.53,
// efficientnet_b0 1.92 / 2.55; bfloat16 3.70 / 4.03, 1.34 / 1.34, 2.32 /
// 2.31-2.38. So every depthwise convolution the kernels take goes to them,
// 16-bit ones included.
//
// The channels-last kernel, against the column kernel's channels-fastest
// walk, on an H100 (a standalone benchmark of both, CUDA events, medians of
// 7 x 20 calls, 7x7 stride 1 with bias): [32,96,56,56] 332 -> 109 us
// float32, 382 -> 113 us bfloat16; batch 1 17.2 -> 10.7 and 22.7 -> 10.5 us.
// The same staged kernel on NCHW x did not beat the column kernel (7x7 at
// 56x56 107 against 96 us in float32; 14x14 66 against 29; 3x3 and 5x5
// planes two to seven times slower), nor did a version with the filter
// staged in shared memory, so NCHW x stays with the column kernel.
#ifndef KILN_BACKENDS_CUDA_DEPTHWISE_CONV_H_
#define KILN_BACKENDS_CUDA_DEPTHWISE_CONV_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "backends/cuda/cuda_conv.h"

namespace kiln::backends::cuda {

// The filter sizes and strides with a compiled kernel (square filters,
// equal strides, dilation 1).
inline constexpr int kDepthwiseSizes[] = {3, 5, 7};
inline constexpr int kDepthwiseStrides[] = {1, 2};
// The floats the channels-last kernel stages per block (40 KiB of shared
// memory: its 16 channels' input windows).
inline constexpr int kDepthwiseStagedFloats = 10240;

// The kernel's arguments (passed by value; the source's struct lays them out
// the same). c counts output channels; input channel = output / mult.
struct DepthwiseArgs {
  long long n, c, h, w, oh, ow, ph, pw, mult;  // NOLINT(runtime/int)
  long long x_strides[4];                      // NOLINT(runtime/int): n, c, h, w
  long long y_strides[4];                      // NOLINT(runtime/int)
  int has_bias;
  // The channels-last kernel's blocks: tile rows and tiles across a block
  // computes, the bands of each, and its staged window's rows, row pitch
  // and channel pitch (floats).
  int band_tiles, block_tiles_w, row_bands, col_bands, staged_rows, pitch, channel_pitch;
};

// Whether the kernel takes `c` (a 2-D depthwise convolution of a filter size
// and stride above, NCHW [K, 1, R, S] weight, x and y of one storage type
// at any strides) and the switch allows it.
bool DepthwiseKernelTakes(const ConvProblem& c, bool channels_last);

// Whether `c`'s x is channels-last (unit channel stride): the channels-last
// kernel runs it, else the column kernel.
bool DepthwiseReadsChannelsLast(const ConvProblem& c);

// How `c` (DepthwiseKernelTakes) launches: the kernel for its x layout,
// the arguments, the grid and the block.
struct DepthwiseLaunch {
  bool x_channels_last = false;
  DepthwiseArgs args{};
  int64_t blocks = 0;
  int threads = 256;
};
DepthwiseLaunch PlanDepthwise(const ConvProblem& c);

// Compiles and loads, in parallel, the units of the problems the kernels
// take (each distinct shape once), so that a program's first call does not
// compile them one after another (about 0.6 s each on an H200 host).
absl::Status PrefetchDepthwiseUnits(int device_index, const std::vector<ConvProblem>& problems);

// Runs `c` (DepthwiseKernelTakes) on `stream`.
absl::Status LaunchDepthwise(const ConvProblem& c, int device_index, CUstream stream);

// A kernel's name for a storage type (0 float32, 1 float16, 2 bfloat16),
// filter size, stride and x layout.
std::string DepthwiseKernelName(int storage, int size, int stride, bool x_channels_last);

// The CUDA source of the unit of one storage type (0 float32, 1 float16,
// 2 bfloat16), filter size and stride (indices into kDepthwiseSizes and
// kDepthwiseStrides) and kernel (column or channels-last): a runtime-kernel
// unit's body (after the prelude's storage helpers: runtime_kernels.h).
const std::string& DepthwiseKernelSource(int storage, int size_index, int stride_index, bool x_channels_last);
// Every shape's kernels in one body (tests that compile them all at once).
std::string AllDepthwiseKernelsSource();

}  // namespace kiln::backends::cuda

#endif  // KILN_BACKENDS_CUDA_DEPTHWISE_CONV_H_
