// Which graphs the CUDA device runs with fused convolution epilogues
// (kiln::conv_post_ops: cuDNN, then one epilogue runtime kernel) planned
// channels-last (channels_last_plan.h), and which keep NCHW convolutions
// whose bias and activations are generated kernels (fused by the generic
// fusion with what follows).
//
// Measured on an NVIDIA H100 (cuDNN 9.19, legacy API, batch 32 unless
// said), ms, fused + channels-last / fused NCHW / generated epilogues NCHW:
//   resnet50 float32      3.87 / 5.08 / 4.85   -> fused + channels-last
//   resnet50 float32 b1   1.92 / 1.82 / 1.75   -> generated
//   resnet50 bfloat16     6.45 / 5.56 / 4.99   -> generated
//   mobilenet_v3 float32  5.07 / 2.90 / 2.65   -> generated (grouped)
//   efficientnet float32  9.01 / 4.65 / 3.53   -> generated (grouped)
// (bfloat16 mobilenet_v3 and efficientnet_b0 likewise.) Through cuDNN's
// graph API (cudnn_graph_conv.h; an NVIDIA H200, batch 32): resnet50
// bfloat16 2.44 fused + channels-last against 2.89 generated NCHW (legacy
// API: 7.68 / 4.94), float32 3.31 / 3.47. So the fused, channels-last path
// is taken where every convolution is ungrouped, 2-D, with a batch of at
// least kChannelsLastMinBatch, and float32, or 16-bit while the graph API is
// on (float16 unmeasured; it runs the same tensor-core engines as
// bfloat16): cuDNN's NHWC kernels pay at large batch; the epilogue runtime
// kernel is slower than generated ones where the layout does not change.
// KILN_CUDA_CHANNELS_LAST=1 takes it for every graph, =0 for none
// (before/after measurements).
#ifndef KILN_BACKENDS_CUDA_CONV_FUSION_POLICY_H_
#define KILN_BACKENDS_CUDA_CONV_FUSION_POLICY_H_

#include <cstdint>

namespace kiln::ir {
class Graph;
}  // namespace kiln::ir

namespace kiln::backends::cuda {

// Between the measured batch 1 (slower) and 32 (faster); unmeasured between.
inline constexpr int64_t kChannelsLastMinBatch = 16;

// True when `graph` has convolutions and the policy above (or
// KILN_CUDA_CHANNELS_LAST=1) sends them to the fused, channels-last path.
bool FuseConvolutionEpilogues(const ir::Graph& graph);

}  // namespace kiln::backends::cuda

#endif  // KILN_BACKENDS_CUDA_CONV_FUSION_POLICY_H_
